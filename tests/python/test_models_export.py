"""Models, the zyx / xyz exports, and the exact ONNX schema of the exported files."""

import math
import re

import numpy as np
import onnx
import pytest
import torch
from onnx import AttributeProto, TensorProto

from scn_tools import models
from scn_tools import reference as ref
from scn_tools.export_onnx import export_onnx, graph_from_onnx, to_onnx

SMALL_ZYX = (41, 40, 48)  # keeps CenterPoint's z pyramid 41 -> 21 -> 11 -> 5 -> 2 with a small y, x


def surface_voxels(seed, grid_zyx, n_points=1500, batch=1):
    """Voxels of a few random tilted planes (LiDAR-like surfaces), zyx indices int32, unique; + features."""
    rng = np.random.default_rng(seed)
    z, y, x = grid_zyx
    pts = []
    for b in range(batch):
        for _ in range(4):
            yy = rng.uniform(0, y, n_points // 4)
            xx = rng.uniform(0, x, n_points // 4)
            a, c, d = rng.uniform(-0.4, 0.4), rng.uniform(-0.4, 0.4), rng.uniform(5, z - 5)
            zz = np.clip(a * (yy - y / 2) + c * (xx - x / 2) + d, 0, z - 1)
            pts.append(np.stack([np.full_like(yy, b), zz, yy, xx], axis=1).astype(np.int64))
    idx = np.unique(np.concatenate(pts), axis=0)
    idx = idx[rng.permutation(len(idx))].astype(np.int32)
    feats = rng.standard_normal((len(idx), 5)) * np.array(models.NUSCENES_INPUT_SCALE)
    return feats.astype(np.float16), idx


@pytest.fixture(scope="module")
def small_frame():
    return surface_voxels(7, SMALL_ZYX, n_points=600, batch=2)


@pytest.mark.parametrize("model", models.MODELS)
def test_xyz_and_zyx_exports_give_the_same_tensor(model, small_frame):
    feats, idx_zyx = small_frame
    idx_xyz = np.ascontiguousarray(idx_zyx[:, [0, 3, 2, 1]])
    g_zyx = models.build_graph(model, "zyx", SMALL_ZYX, seed=3, batch_size=2)
    g_xyz = models.build_graph(model, "xyz", SMALL_ZYX[::-1], seed=3, batch_size=2)
    out_zyx = models.run_graph(g_zyx, feats, idx_zyx)
    out_xyz = models.run_graph(g_xyz, feats, idx_xyz)
    hw = (5, 6) if model == "centerpoint" else (6, 5)  # CenterPoint: H = y, W = x; BEVFusion: H = x, W = y
    assert out_zyx.shape == out_xyz.shape == g_zyx.output_shape == (2, 256) + hw
    assert float((out_zyx != 0).double().mean()) > 0.02  # a non-trivial map
    torch.testing.assert_close(out_zyx, out_xyz, rtol=1e-12, atol=1e-12)
    # same fp16 weights, kernel axes reversed
    for (wz, bz), (wx, bx) in zip(g_zyx.weights, g_xyz.weights):
        np.testing.assert_array_equal(wz.transpose(0, 3, 2, 1, 4), wx)
        np.testing.assert_array_equal(bz, bx)


def test_tails_match_the_schema():
    def tail(g):
        return [(n.op, n.format or None, tuple(n.dims)) for n in g.nodes if n.op in ("scatter", "transpose", "reshape")]

    cp = dict(seed=0)
    assert tail(models.build_graph("centerpoint", "zyx", (41, 1440, 1440), **cp)) == [
        ("scatter", "zyx", (1, 128, 2, 180, 180)), ("reshape", None, (1, 256, 180, 180))]
    # CenterPoint in xyz: [b,c,x,y,z] -> permute to [b,c,z,y,x] gives the zyx tensor (H = y, W = x)
    assert tail(models.build_graph("centerpoint", "xyz", (1440, 1440, 41), **cp)) == [
        ("scatter", "xyz", (1, 128, 180, 180, 2)), ("transpose", None, (0, 1, 4, 3, 2)),
        ("reshape", None, (1, 256, 180, 180))]
    assert tail(models.build_graph("bevfusion", "xyz", (1440, 1440, 41), **cp)) == [
        ("scatter", "xyz", (1, 128, 180, 180, 2)), ("transpose", None, (0, 1, 4, 2, 3)),
        ("reshape", None, (1, 256, 180, 180))]
    assert tail(models.build_graph("bevfusion", "zyx", (41, 1440, 1440), **cp)) == [
        ("scatter", "zyx", (1, 128, 2, 180, 180)), ("transpose", None, (0, 1, 2, 4, 3)),
        ("reshape", None, (1, 256, 180, 180))]


def test_layer_tables():
    g = models.build_graph("centerpoint", "zyx", (41, 1440, 1440))
    convs = g.convs()
    assert len(convs) == 21
    info = g.value_info()
    conv_nodes = [(j, n.conv) for j, n in enumerate(g.nodes) if n.op == "conv"]
    shapes = [info[j + 1]["spatial_shape"] for j, _ in conv_nodes]
    assert shapes[0] == (41, 1440, 1440) and shapes[5] == (21, 720, 720) and shapes[10] == (11, 360, 360)
    assert shapes[15] == (5, 180, 180) and shapes[20] == (2, 180, 180)
    assert [c.kind for c in convs].count("conv") == 4
    assert {c.key for c in convs if c.kind == "subm"} == {"res0", "res1", "res2", "res3"}
    assert all(c.key is None for c in convs if c.kind == "conv")
    assert convs[15].padding == (0, 1, 1) and convs[20].kernel_size == (3, 1, 1) and convs[20].stride == (2, 1, 1)
    assert [c.activation for c in convs[:3]] == ["ReLU", "ReLU", "None"]
    ops = [n.op for n in g.nodes[:6]]
    assert ops == ["conv", "conv", "conv", "add", "relu", "conv"]
    assert g.nodes[3].inputs == (3, 1)  # Add(block output, identity)

    b = models.build_graph("bevfusion", "xyz", (1440, 1440, 41)).convs()
    assert [c.key for c in b if c.kind == "conv"] == ["spconv1", "spconv2", "spconv3", "spconv_down2"]
    assert [c.padding for c in b if c.kind == "conv"] == [(1, 1, 1), (1, 1, 1), (1, 1, 0), (0, 0, 0)]
    assert b[20].kernel_size == (1, 1, 3) and b[20].stride == (1, 1, 2)
    assert {c.key for c in b if c.kind == "subm"} == {"subm1", "subm2", "subm3", "subm4"}
    assert b[0].key == "subm1"


def test_weights_are_seeded_fp16_and_independent_per_conv():
    a = models.centerpoint(seed=1).weights
    b = models.centerpoint(seed=1).weights
    c = models.centerpoint(seed=2).weights
    assert all(w.dtype == np.float16 and bb.dtype == np.float16 for w, bb in a)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(a, b))
    assert not np.array_equal(a[5][0], c[5][0])
    assert all(np.isfinite(w).all() for w, _ in a)


# ---------------------------------------------------------------------------------------------------
# ONNX schema

CONV_ATTRS = {
    "kernel_size": AttributeProto.INTS, "stride": AttributeProto.INTS, "padding": AttributeProto.INTS,
    "dilation": AttributeProto.INTS, "subm": AttributeProto.INT, "inverse": AttributeProto.INT,
    "activation": AttributeProto.STRING, "output_bound": AttributeProto.INT,
    "precision": AttributeProto.STRING, "output_precision": AttributeProto.STRING, "ndim": AttributeProto.INT,
    "in_channels": AttributeProto.INT, "out_channels": AttributeProto.INT, "transposed": AttributeProto.INT,
    "groups": AttributeProto.INT, "output_padding": AttributeProto.INTS,
    "input_spatial_shape": AttributeProto.INTS, "output_spatial_shape": AttributeProto.INTS,
}


def _attrs(node):
    return {a.name: (a.type, onnx.helper.get_attribute_value(a)) for a in node.attribute}


@pytest.mark.parametrize("model,order,grid", [("centerpoint", "zyx", (41, 1440, 1440)),
                                              ("centerpoint", "xyz", (1440, 1440, 41)),
                                              ("bevfusion", "xyz", (1440, 1440, 41)),
                                              ("bevfusion", "zyx", (41, 1440, 1440))])
def test_onnx_schema(tmp_path, model, order, grid):
    g = models.build_graph(model, order, grid, seed=4)
    path = tmp_path / "m.onnx"
    export_onnx(g, str(path))
    m = onnx.load(str(path))
    assert [(o.domain, o.version) for o in m.opset_import] == [("ai.onnx", 11)]
    assert m.producer_name == "pytorch"
    gr = m.graph

    # input "0": FLOAT16 [N, 5]; output FLOAT16 [1, 256, 180, 180]
    assert len(gr.input) == 1 and gr.input[0].name == "0"
    t = gr.input[0].type.tensor_type
    assert t.elem_type == TensorProto.FLOAT16
    assert t.shape.dim[0].dim_param == "N" and t.shape.dim[1].dim_value == 5
    assert len(gr.output) == 1
    ot = gr.output[0].type.tensor_type
    assert ot.elem_type == TensorProto.FLOAT16 and [d.dim_value for d in ot.shape.dim] == [1, 256, 180, 180]

    # tensor names are decimal counters in node order; node names count per op type
    counters = {}
    prefix = {"SparseConvolution": "conv", "Relu": "relu", "Add": "add", "ScatterDense": "scatter",
              "Reshape": "reshape", "Transpose": "transpose"}
    for j, n in enumerate(gr.node):
        assert list(n.output) == [str(j + 1)]
        assert n.domain == ""
        p = prefix[n.op_type]
        assert n.name == f"{p}{counters.get(p, 0)}"
        counters[p] = counters.get(p, 0) + 1
    assert gr.output[0].name == str(len(gr.node))
    assert counters["conv"] == 21 and counters["add"] == 8 and counters["relu"] == 8

    inits = {i.name: i for i in gr.initializer}
    assert len(inits) == 42
    for i, n in enumerate(x for x in gr.node if x.op_type == "SparseConvolution"):
        a = _attrs(n)
        keyed = g.convs()[i].key is not None
        assert set(a) == set(CONV_ATTRS) | ({"rulebook"} if keyed else set())
        for name, typ in CONV_ATTRS.items():
            assert a[name][0] == typ, name
            if typ == AttributeProto.INTS:
                assert len(a[name][1]) == 3, name
        if keyed:
            assert a["rulebook"] == (AttributeProto.STRING, g.convs()[i].key.encode())
        assert a["output_bound"][1] == 200000 and a["ndim"][1] == 3
        assert a["precision"][1] == b"fp16" and a["output_precision"][1] == b"fp16"
        assert a["transposed"][1] == 0 and a["groups"][1] == 1 and a["output_padding"][1] == [0, 0, 0]
        assert a["activation"][1] in (b"ReLU", b"None") and a["inverse"][1] == 0
        assert list(n.input) == [n.input[0], f"spconv{i}.weight", f"spconv{i}.bias"]
        w, b = inits[f"spconv{i}.weight"], inits[f"spconv{i}.bias"]
        cout, cin, k = a["out_channels"][1], a["in_channels"][1], a["kernel_size"][1]
        assert list(w.dims) == [cout] + k + [cin] and list(b.dims) == [cout]
        for tns in (w, b):
            assert tns.data_type == TensorProto.FLOAT16
            assert len(tns.raw_data) == 2 * math.prod(tns.dims) and not tns.int32_data
        np.testing.assert_array_equal(np.frombuffer(w.raw_data, "<f2").reshape(w.dims), g.weights[i][0])
        np.testing.assert_array_equal(np.frombuffer(b.raw_data, "<f2"), g.weights[i][1])
        # informational shapes are consistent with the formula
        if a["subm"][1]:
            assert a["input_spatial_shape"][1] == a["output_spatial_shape"][1]
            assert a["stride"][1] == [1, 1, 1]
        else:
            assert tuple(a["output_spatial_shape"][1]) == ref.conv_output_shape(
                a["input_spatial_shape"][1], k, a["stride"][1], a["padding"][1], a["dilation"][1])

    for n in gr.node:
        a = _attrs(n)
        if n.op_type == "Add":
            assert a == {"precision": (AttributeProto.STRING, b"fp16"),
                         "output_precision": (AttributeProto.STRING, b"fp16")}
        elif n.op_type == "Relu":
            assert a == {} and len(n.input) == 1
        elif n.op_type == "ScatterDense":
            assert set(a) == {"input_spatial_shape", "output_shape", "format"}
            assert a["format"] == (AttributeProto.STRING, order.encode())
            assert a["input_spatial_shape"][0] == AttributeProto.INTS and len(a["input_spatial_shape"][1]) == 3
            assert a["output_shape"][0] == AttributeProto.INTS and len(a["output_shape"][1]) == 5
        elif n.op_type in ("Reshape", "Transpose"):
            assert set(a) == {"dims"} and a["dims"][0] == AttributeProto.INTS
            assert len(n.input) == 1  # dims is an attribute, not an input


def test_concrete_num_voxels():
    g = models.build_graph("centerpoint", "zyx", SMALL_ZYX)
    m = to_onnx(g, num_voxels=1234)
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 1234


@pytest.mark.parametrize("model,order", [("centerpoint", "xyz"), ("bevfusion", "zyx")])
def test_onnx_round_trip_gives_the_same_reference(tmp_path, small_frame, model, order):
    feats, idx_zyx = small_frame
    idx = idx_zyx if order == "zyx" else np.ascontiguousarray(idx_zyx[:, [0, 3, 2, 1]])
    grid = SMALL_ZYX if order == "zyx" else SMALL_ZYX[::-1]
    g = models.build_graph(model, order, grid, seed=8, batch_size=2)
    export_onnx(g, str(tmp_path / "m.onnx"))
    g2 = graph_from_onnx(str(tmp_path / "m.onnx"))
    assert g2.order == order and g2.grid == grid and g2.batch_size == 2
    assert [n.op for n in g2.nodes] == [n.op for n in g.nodes]
    torch.testing.assert_close(models.run_graph(g2, feats, idx), models.run_graph(g, feats, idx), rtol=0, atol=0)


def test_make_reference_cli(tmp_path, small_frame, capsys):
    from scn_tools import make_reference, tensor_io

    feats, idx_zyx = small_frame
    sel = idx_zyx[:, 0] == 0
    idx_xyz = np.ascontiguousarray(idx_zyx[sel][:, [0, 3, 2, 1]])
    tensor_io.save_tensor(tmp_path / "f.tensor", feats[sel].astype(np.float32))  # float32 input: rounded to fp16
    tensor_io.save_tensor(tmp_path / "i.tensor", idx_xyz)
    grid = "x".join(map(str, SMALL_ZYX[::-1]))
    rc = make_reference.main(["--model", "centerpoint", "--order", "xyz", "--features", str(tmp_path / "f.tensor"),
                              "--indices", str(tmp_path / "i.tensor"), "--grid", grid, "--seed", "5",
                              "--onnx", str(tmp_path / "m.onnx"), "--output", str(tmp_path / "r.tensor")])
    assert rc == 0
    assert "output: std" in capsys.readouterr().out
    out = tensor_io.load_tensor(tmp_path / "r.tensor")
    assert out.dtype == np.float32 and out.shape == (1, 256, 5, 6)
    g = graph_from_onnx(str(tmp_path / "m.onnx"))
    want = models.run_graph(g, feats[sel], idx_xyz).numpy().astype(np.float32)
    np.testing.assert_array_equal(out, want)
    # the same model in zyx gives the same tensor
    g_zyx = models.build_graph("centerpoint", "zyx", SMALL_ZYX, seed=5)
    np.testing.assert_allclose(models.run_graph(g_zyx, feats[sel], idx_zyx[sel]).numpy(), out, rtol=1e-6, atol=1e-6)


def test_make_reference_cli_rejects_bad_input(tmp_path, small_frame):
    from scn_tools import make_reference, tensor_io

    feats, idx = small_frame
    tensor_io.save_tensor(tmp_path / "f.tensor", feats)
    tensor_io.save_tensor(tmp_path / "i.tensor", idx.astype(np.int64))
    args = ["--model", "centerpoint", "--order", "zyx", "--features", str(tmp_path / "f.tensor"),
            "--indices", str(tmp_path / "i.tensor"), "--grid", "41x40x48", "--onnx", str(tmp_path / "m.onnx"),
            "--output", str(tmp_path / "r.tensor")]
    with pytest.raises(SystemExit, match="int32"):
        make_reference.main(args)
    tensor_io.save_tensor(tmp_path / "i.tensor", idx)
    with pytest.raises(SystemExit, match="outside"):
        make_reference.main(args[:-6] + ["--grid", "41x40x20"] + args[-4:])


def test_inverse_conv_export_and_reference(tmp_path):
    """A small encoder/decoder graph with an inverse conv (MinkUNet-style k2 s2 and its inverse)."""
    from scn_tools.models import Conv, Graph, Node

    k2, s2 = (2, 2, 2), (2, 2, 2)
    nodes = [
        Node("conv", (0,), conv=Conv("subm", 4, 8, (3, 3, 3), padding=(1, 1, 1), key="s0", activation="ReLU")),
        Node("conv", (1,), conv=Conv("conv", 8, 16, k2, stride=s2, key="down", activation="ReLU")),
        Node("conv", (2,), conv=Conv("inverse", 16, 8, k2, key="down", activation="None")),
        Node("add", (3, 1)),
        Node("relu", (4,)),
        Node("scatter", (5,), dims=(1, 8, 8, 10, 12), format="zyx"),
        Node("reshape", (6,), dims=(1, 64, 10, 12)),
    ]
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal((c.out_channels,) + c.kernel_size + (c.in_channels,)).astype(np.float16) * 0.2,
                rng.standard_normal(c.out_channels).astype(np.float16) * 0.1)
               for c in (n.conv for n in nodes if n.op == "conv")]
    g = Graph("unet", "zyx", (8, 10, 12), 1, 4, nodes, weights)
    info = g.value_info()
    assert info[2]["spatial_shape"] == (4, 5, 6) and info[3]["spatial_shape"] == (8, 10, 12)
    m = to_onnx(g)
    inv = [n for n in m.graph.node if n.op_type == "SparseConvolution"][2]
    a = {k: v for k, (_, v) in _attrs(inv).items()}
    assert a["inverse"] == 1 and a["subm"] == 0 and a["rulebook"] == b"down"
    assert a["input_spatial_shape"] == [4, 5, 6] and a["output_spatial_shape"] == [8, 10, 12]
    onnx.save_model(m, str(tmp_path / "u.onnx"))
    g2 = graph_from_onnx(str(tmp_path / "u.onnx"))

    idx = ref.keys_to_indices(torch.from_numpy(rng.choice(8 * 10 * 12, 200, replace=False)), (8, 10, 12))
    feats = rng.standard_normal((200, 4)).astype(np.float16)
    out = models.run_graph(g2, feats, idx.numpy())
    torch.testing.assert_close(out, models.run_graph(g, feats, idx.numpy()), rtol=0, atol=0)
    # by hand with the reference ops
    w = [torch.from_numpy(x.astype(np.float64)) for x, _ in weights]
    b = [torch.from_numpy(x.astype(np.float64)) for _, x in weights]
    x = ref.SparseTensor(torch.from_numpy(feats.astype(np.float64)), idx, (8, 10, 12), 1)
    y1 = ref.subm_conv3d(x, w[0], b[0], key="s0", activation="ReLU")
    y2 = ref.sparse_conv3d(y1, w[1], b[1], stride=2, padding=0, key="down", activation="ReLU")
    y3 = ref.sparse_inverse_conv3d(y2, w[2], b[2], key="down")
    want = ref.relu(ref.add(y3, y1)).dense().reshape(1, 64, 10, 12)
    torch.testing.assert_close(out, want, rtol=0, atol=0)


def _two_conv_model():
    """subm 3x3x3 (conv0) -> regular k3 s2 p1 (conv1), as written by to_onnx."""
    from scn_tools.models import Conv, Graph, Node

    nodes = [Node("conv", (0,), conv=Conv("subm", 4, 4, (3, 3, 3), padding=(1, 1, 1))),
             Node("conv", (1,), conv=Conv("conv", 4, 8, (3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1)))]
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal((c.out_channels, 3, 3, 3, c.in_channels)).astype(np.float16),
                rng.standard_normal(c.out_channels).astype(np.float16)) for c in (n.conv for n in nodes)]
    return to_onnx(Graph("t", "zyx", (12, 16, 20), 1, 4, nodes, weights))


def _set_ints(m, node, attr, values):
    a = next(a for a in next(n for n in m.graph.node if n.name == node).attribute if a.name == attr)
    a.ints[:] = values


@pytest.mark.parametrize("node,attr,values,msg", [
    ("conv0", "dilation", [0, 0, 0], r"attribute dilation \[0, 0, 0\] must be >= 1"),
    ("conv0", "dilation", [1, -1, 1], r"attribute dilation \[1, -1, 1\] must be >= 1"),
    ("conv1", "stride", [0, 2, 2], r"attribute stride \[0, 2, 2\] must be >= 1"),
    ("conv1", "padding", [1, -1, 1], r"attribute padding \[1, -1, 1\] must be >= 0"),
    ("conv1", "kernel_size", [0, 3, 3], r"attribute kernel_size \[0, 3, 3\] must be >= 1"),
    ("conv0", "kernel_size", [1, 1, 1], r"weight shape \[4, 3, 3, 3, 4\] disagrees with attribute kernel_size"),
    ("conv1", "kernel_size", [3, 3], r"attribute kernel_size must be 3 ints"),
])
def test_graph_from_onnx_refuses_conv_attributes_the_engine_refuses(tmp_path, node, attr, values, msg):
    # the reference ran these (dilation 0: every offset on the centre; the weight's kernel over the
    # attribute) or failed with a bare ZeroDivisionError (stride 0)
    m = _two_conv_model()
    _set_ints(m, node, attr, values)
    path = tmp_path / "bad.onnx"
    onnx.save_model(m, str(path))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: node {node}: {msg}"):
        graph_from_onnx(str(path))
    with pytest.raises(ValueError, match=rf"^node {node}: {msg}"):  # a ModelProto has no file name
        graph_from_onnx(m)


@pytest.mark.parametrize("drop,role", [("spconv1.weight", "weight"), ("spconv0.bias", "bias")])
def test_graph_from_onnx_names_a_missing_initializer(tmp_path, drop, role):
    m = _two_conv_model()
    keep = [t for t in m.graph.initializer if t.name != drop]
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    path = tmp_path / "noinit.onnx"
    onnx.save_model(m, str(path))
    node = "conv" + drop[len("spconv")]
    msg = rf"^{re.escape(str(path))}: node {node}: {role} '{drop}' is not an initializer"
    with pytest.raises(ValueError, match=msg):  # was a bare KeyError
        graph_from_onnx(str(path))
    with pytest.raises(ValueError, match=msg):  # a Path works as well as a str
        graph_from_onnx(path)
    g = graph_from_onnx(_two_conv_model())
    assert [n.conv.kernel_size for n in g.nodes] == [(3, 3, 3), (3, 3, 3)]


def test_make_reference_cli_batch_size_must_be_positive(tmp_path, capsys):
    from scn_tools import make_reference, tensor_io

    # an empty frame: with --batch-size 0 the files were written, then the summary divided by zero
    tensor_io.save_tensor(tmp_path / "f.tensor", np.zeros((0, 5), np.float16))
    tensor_io.save_tensor(tmp_path / "i.tensor", np.zeros((0, 4), np.int32))
    args = ["--model", "centerpoint", "--order", "zyx", "--features", str(tmp_path / "f.tensor"),
            "--indices", str(tmp_path / "i.tensor"), "--grid", "41x16x16", "--onnx", str(tmp_path / "m.onnx"),
            "--output", str(tmp_path / "r.tensor"), "--quiet"]
    for bad in ("0", "-2", "1.5"):
        with pytest.raises(SystemExit) as e:
            make_reference.main(args + ["--batch-size", bad])
        assert e.value.code == 2
        assert f"argument --batch-size: must be a positive integer, got '{bad}'" in capsys.readouterr().err
        assert not (tmp_path / "m.onnx").exists() and not (tmp_path / "r.tensor").exists()
    assert make_reference.main(args + ["--batch-size", "2"]) == 0
    assert tensor_io.load_tensor(tmp_path / "r.tensor").shape == (2, 256, 2, 2)


def test_make_reference_cli_unreadable_inputs_are_usage_errors(tmp_path, capsys):
    from scn_tools import make_reference, tensor_io

    tensor_io.save_tensor(tmp_path / "f.tensor", np.zeros((1, 5), np.float16))
    tensor_io.save_tensor(tmp_path / "i.tensor", np.zeros((1, 4), np.int32))
    (tmp_path / "bad.tensor").write_bytes(b"\x01\x11")

    def run(features, indices):
        with pytest.raises(SystemExit) as e:
            make_reference.main(["--model", "centerpoint", "--order", "zyx", "--features", str(features),
                                 "--indices", str(indices), "--grid", "41x16x16", "--onnx", str(tmp_path / "m.onnx"),
                                 "--output", str(tmp_path / "r.tensor")])
        assert e.value.code == 2
        return capsys.readouterr().err

    err = run(tmp_path / "missing.tensor", tmp_path / "i.tensor")
    assert "make_reference: error: --features: " in err and "missing.tensor" in err and "Traceback" not in err
    err = run(tmp_path / "f.tensor", tmp_path / "bad.tensor")
    assert f"make_reference: error: --indices: {tmp_path / 'bad.tensor'}: 2 bytes, shorter than" in err
    assert not (tmp_path / "m.onnx").exists()
