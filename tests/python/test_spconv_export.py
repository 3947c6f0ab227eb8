"""The tracing exporter (scn_tools.spconv_export) on spconv-style modules (scn_tools.sparse_nn).

Each model is traced on a small frame, written to ONNX, read back and run by the reference interpreter;
the result must equal the PyTorch forward (float64, weights chosen fp16-exact so the only difference is
float64 rounding order), and the graph must have the expected nodes.
"""

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto
from torch import nn

from scn_tools import graph as G
from scn_tools import reference as ref
from scn_tools import sparse_nn as sp
from scn_tools import tensor_io, zoo
from scn_tools.export_onnx import graph_from_onnx
from scn_tools.frames import plane_sites
from scn_tools.spconv_export import ExportError, export_spconv, export_trace, trace_spconv

GRID = (12, 16, 20)


def frame(seed=0, n=300, grid=GRID, channels=4, batch=1):
    """Unique random sites (clustered on two planes) and fp16-exact features."""
    return plane_sites(seed, n, grid, channels, batch)


def init(model, seed=0):
    return zoo.init_weights(model.double(), seed).eval()


def onnx_outputs(tmp_path, trace, feats, idx, order=None, name="m.onnx"):
    """Export, read back, run the reference on the file; outputs in file order."""
    path = tmp_path / name
    export_trace(trace, path, order)
    same = order in (None, trace.graph.order)
    g = graph_from_onnx(str(path), grid=trace.graph.grid if same else trace.graph.grid[::-1],
                        batch_size=trace.graph.batch_size)
    return g, G.run_graph_outputs(g, feats, idx)


def assert_same(got, want, tol=1e-12):
    """Dense: allclose; sparse ((features, indices) vs reference.SparseTensor): matched by site."""
    if isinstance(want, tuple):
        f, i = want
        ka = ref.linear_keys(got.indices, got.spatial_shape)
        kb = ref.linear_keys(i, got.spatial_shape)
        sa, pa = torch.sort(ka)
        sb, pb = torch.sort(kb)
        assert torch.equal(sa, sb), "different sites"
        got, want = got.features[pa], f[pb]
    scale = float(want.abs().max()) or 1.0
    assert float((got - want).abs().max()) <= tol * scale, float((got - want).abs().max())


def ops(graph):
    return [n.op for n in graph.nodes]


# ---------------------------------------------------------------------------------------------------
# building blocks

class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = sp.SparseSequential(sp.SubMConv3d(4, 8, 3, bias=False, indice_key="s0"), nn.BatchNorm1d(8),
                                       nn.ReLU(),
                                       sp.SparseConv3d(8, 16, 3, stride=2, padding=1, bias=False, indice_key="d1"),
                                       nn.BatchNorm1d(16), nn.ReLU())

    def forward(self, x):
        return self.net(x)


def test_conv_bn_relu_folds_into_one_conv_each(tmp_path):
    feats, idx = frame()
    model = init(ConvBnRelu())
    tr = trace_spconv(model, feats, idx, GRID)
    assert ops(tr.graph) == ["conv", "conv"]
    c0, c1 = tr.graph.convs()
    assert (c0.kind, c0.key, c0.activation, c0.padding, c0.stride) == ("subm", "s0", "ReLU", (1, 1, 1), (1, 1, 1))
    assert (c1.kind, c1.key, c1.activation, c1.stride, c1.padding) == ("conv", "d1", "ReLU", (2, 2, 2), (1, 1, 1))
    assert c0.name == "net.0" and c1.name == "net.3"
    assert tr.weight_rounding == 0.0 and tr.notes == []
    g, outs = onnx_outputs(tmp_path, tr, feats, idx)
    assert_same(outs[0], tr.torch_outputs[0])
    # the folded weights: W * gamma / sqrt(var + eps), bias beta - mean * scale
    bn = model.net[1]
    scale = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach().numpy()
    w = model.net[0].weight.detach().numpy() * scale[:, None, None, None, None]
    np.testing.assert_array_equal(g.weights[0][0], w.astype(np.float16))
    np.testing.assert_array_equal(g.weights[0][1], (bn.bias.detach().numpy() - bn.running_mean.numpy() * scale)
                                  .astype(np.float16))


def test_sparse_basic_block_is_conv_conv_add_relu(tmp_path):
    B = zoo.blocks(sp)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = sp.SparseSequential(sp.SubMConv3d(4, 8, 3, bias=False, indice_key="r"), nn.BatchNorm1d(8),
                                           nn.ReLU())
            self.block = B.SparseBasicBlock(8, 8, "r")

        def forward(self, x):
            return self.block(self.inp(x))

    feats, idx = frame(1)
    tr = trace_spconv(init(M()), feats, idx, GRID)
    g = tr.graph
    assert ops(g) == ["conv", "conv", "conv", "add", "relu"]
    assert [c.activation for c in g.convs()] == ["ReLU", "ReLU", "None"]
    assert g.nodes[3].inputs == (3, 1)  # Add(conv2, identity)
    assert {c.key for c in g.convs()} == {"r"}
    _, outs = onnx_outputs(tmp_path, tr, feats, idx)
    assert_same(outs[0], tr.torch_outputs[0])


class UNetish(nn.Module):
    """Encoder conv k2 s2 with a key, inverse conv on it, Concat with the skip (two spellings), k1 conv."""

    def __init__(self, join_table=False):
        super().__init__()
        self.stem = sp.SparseSequential(sp.SubMConv3d(4, 8, 3, bias=False, indice_key="s0"), nn.BatchNorm1d(8),
                                        nn.ReLU(True))
        self.down = sp.SparseSequential(sp.SparseConv3d(8, 16, 2, stride=2, bias=False, indice_key="down"),
                                        nn.BatchNorm1d(16), nn.ReLU(True),
                                        sp.SubMConv3d(16, 16, 3, bias=False, indice_key="s1"), nn.BatchNorm1d(16),
                                        nn.ReLU(True))
        self.up = sp.SparseSequential(sp.SparseInverseConv3d(16, 8, 2, indice_key="down", bias=False),
                                      nn.BatchNorm1d(8), nn.ReLU(True))
        self.join = sp.JoinTable() if join_table else None
        self.head = sp.SubMConv3d(16, 5, 1, bias=True)

    def forward(self, x):
        x0 = self.stem(x)
        y = self.up(self.down(x0))
        if self.join is not None:
            y = self.join([y, x0])
        else:
            y = y.replace_feature(torch.cat([y.features, x0.features], dim=1))
        return self.head(y)


@pytest.mark.parametrize("join_table", [False, True])
def test_unet_inverse_conv_and_concat(tmp_path, join_table):
    feats, idx = frame(2, grid=(8, 16, 16))
    tr = trace_spconv(init(UNetish(join_table)), feats, idx, (8, 16, 16))
    g = tr.graph
    assert ops(g) == ["conv", "conv", "conv", "conv", "concat", "conv"]
    kinds = [(c.kind, c.key, c.kernel_size, c.activation) for c in g.convs()]
    assert kinds == [("subm", "s0", (3, 3, 3), "ReLU"), ("conv", "down", (2, 2, 2), "ReLU"),
                     ("subm", "s1", (3, 3, 3), "ReLU"), ("inverse", "down", (2, 2, 2), "ReLU"),
                     ("subm", None, (1, 1, 1), "None")]
    assert g.nodes[4].inputs == (4, 1)  # Concat(upsampled, skip)
    assert g.value_info()[5]["channels"] == 16
    m, outs = onnx_outputs(tmp_path, tr, feats, idx)
    assert_same(outs[0], tr.torch_outputs[0])
    proto = onnx.load(str(tmp_path / "m.onnx"))
    cat = [n for n in proto.graph.node if n.op_type == "Concat"]
    assert [n.name for n in cat] == ["concat0"]
    assert [(a.name, a.i) for a in cat[0].attribute] == [("axis", 1)]
    out = proto.graph.output[0]
    assert out.type.tensor_type.elem_type == TensorProto.FLOAT16
    dims = out.type.tensor_type.shape.dim
    assert dims[0].dim_param == "M0" and dims[1].dim_value == 5


def test_dict_of_dense_and_sparse_outputs(tmp_path):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = sp.SparseSequential(sp.SubMConv3d(4, 8, 3, indice_key="s"), nn.ReLU())
            self.b = sp.SparseSequential(sp.SparseConv3d(8, 8, 3, stride=2, padding=1), nn.ReLU())
            self.c = sp.SparseConv3d(8, 4, (3, 1, 1), stride=(2, 1, 1))

        def forward(self, x):
            x1 = self.a(x)
            x2 = self.b(x1)
            d = self.c(x2).dense()
            n, c, dd, h, w = d.shape
            _ = x2.features.sum()  # a side computation that reaches no output is ignored
            return {"bev": d.view(n, c * dd, h, w), "x1": x1, "x2": x2, "count": 3}

    feats, idx = frame(3)
    tr = trace_spconv(init(M()), feats, idx, GRID)
    assert tr.output_names == ["bev", "x1", "x2"]
    g = tr.graph
    info = g.value_info()
    assert [info[v]["kind"] for v in g.output_ids()] == ["dense", "sparse", "sparse"]
    assert g.output_shape == (1, 4 * 2, 8, 10)
    _, outs = onnx_outputs(tmp_path, tr, feats, idx)
    for got, want in zip(outs, tr.torch_outputs):
        assert_same(got, want)
    proto = onnx.load(str(tmp_path / "m.onnx"))
    shapes = [[d.dim_value or d.dim_param for d in o.type.tensor_type.shape.dim] for o in proto.graph.output]
    assert shapes == [[1, 8, 8, 10], ["M1", 8], ["M2", 8]]
    # pick outputs explicitly
    tr2 = trace_spconv(init(M()), feats, idx, GRID, outputs=lambda r: [r["x2"]])
    assert tr2.output_names == ["0"] and len(tr2.graph.output_ids()) == 1


def test_inplace_relu_and_iadd():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = sp.SubMConv3d(4, 6, 3, indice_key="s")
            self.c2 = sp.SubMConv3d(6, 6, 3, indice_key="s")
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            y = self.c1(x)
            f = y.features
            self.relu(f)  # result discarded: f itself now holds the ReLU
            z = self.c2(y.replace_feature(f))
            g = z.features
            g += f  # in place
            F.relu(g, inplace=True)
            return z.replace_feature(g)

    feats, idx = frame(4)
    tr = trace_spconv(init(M()), feats, idx, GRID)
    assert ops(tr.graph) == ["conv", "conv", "add", "relu"]
    assert [c.activation for c in tr.graph.convs()] == ["ReLU", "None"]
    assert tr.graph.nodes[2].inputs == (2, 1)
    out = G.run_graph_outputs(tr.graph, feats, idx)[0]
    assert_same(out, tr.torch_outputs[0])


def test_channels_last_dense_permute_and_transposes_merge():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = sp.SparseConv3d(4, 3, 3, stride=2, padding=1)

        def forward(self, x):
            d = self.c(x).dense(channels_first=False)  # [B, s0, s1, s2, C]
            d = d.permute(0, 4, 3, 1, 2).contiguous()  # -> [B, C, s2, s0, s1]
            return d.reshape(1, -1, d.shape[3], d.shape[4])

    feats, idx = frame(5)
    tr = trace_spconv(init(M()), feats, idx, GRID)
    assert ops(tr.graph) == ["conv", "scatter", "transpose", "reshape"]
    assert tr.graph.nodes[2].dims == (0, 1, 4, 2, 3)  # (0,2,3,4,1) then (0,4,3,1,2), merged
    out = G.run_graph_outputs(tr.graph, feats, idx)[0]
    assert_same(out, tr.torch_outputs[0])


def test_linear_add_table_identity_and_bn_without_conv():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = sp.SubMConv3d(4, 8, 3, indice_key="s")
            self.bn_in = nn.BatchNorm1d(4)  # on the input: no conv to fold into
            self.lin = nn.Linear(8, 6)
            self.drop = nn.Dropout(0.5)
            self.add = sp.AddTable()

        def forward(self, x):
            a = x.replace_feature(self.bn_in(x.features))
            y = self.c(a)
            y = y.replace_feature(self.drop(self.lin(y.features)))
            return self.add([y, y.replace_feature(torch.relu(y.features))])

    feats, idx = frame(6)
    model = init(M())
    with torch.no_grad():  # nn.Linear is not initialised by the zoo: make it fp16-exact
        model.lin.weight.copy_(model.lin.weight.half().double())
        model.lin.bias.copy_(model.lin.bias.half().double())
    tr = trace_spconv(model, feats, idx, GRID)
    assert tr.weight_rounding == 0.0
    g = tr.graph
    assert ops(g) == ["conv", "conv", "conv", "relu", "add"]
    assert [c.kernel_size for c in g.convs()] == [(1, 1, 1), (3, 3, 3), (1, 1, 1)]
    assert any("BatchNorm 'bn_in'" in n for n in tr.notes)
    out = G.run_graph_outputs(g, feats, idx)[0]
    assert_same(out, tr.torch_outputs[0])


# ---------------------------------------------------------------------------------------------------
# what the exporter refuses

def test_unsupported_modules_and_ops_are_listed_by_name():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = sp.SubMConv3d(4, 8, 3, indice_key="s")
            self.gate = nn.Sigmoid()
            self.act = nn.LeakyReLU(0.1)

        def forward(self, x):
            y = self.c(x)
            a = y.replace_feature(self.gate(y.features))
            b = y.replace_feature(self.act(y.features) * 2.0)
            return {"a": a, "b": b}

    feats, idx = frame(7)
    with pytest.raises(ExportError) as e:
        trace_spconv(init(M()), feats, idx, GRID)
    msg = str(e.value)
    assert "module 'gate' (Sigmoid)" in msg and "module 'act' (LeakyReLU)" in msg
    assert len(e.value.problems) == 2


def test_unsupported_op_and_untraced_features():
    class Mul(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = sp.SubMConv3d(4, 4, 3, indice_key="s")

        def forward(self, x):
            return self.c(x.replace_feature(x.features * 0.5))

    feats, idx = frame(8)
    with pytest.raises(ExportError, match=r"op 'mul' on a sparse feature tensor"):
        trace_spconv(init(Mul()), feats, idx, GRID)

    class Fresh(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = sp.SubMConv3d(4, 4, 3, indice_key="s")

        def forward(self, x):
            return self.c(x.replace_feature(torch.ones_like(x.features.detach()).as_subclass(torch.Tensor)))

    with pytest.raises(ExportError):
        trace_spconv(init(Fresh()), feats, idx, GRID)


def test_in_place_changes_the_graph_does_not_follow_are_refused():
    """An unsupported op that changes traced features in place (item assignment, x.op_()) makes them invalid:
    without that, features[mask] = 0 returned None and the graph kept the unmasked value (a silently wrong export)."""
    class Masked(nn.Module):
        def __init__(self, how):
            super().__init__()
            self.how = how
            self.c0 = sp.SubMConv3d(4, 8, 3, indice_key="s")
            self.c1 = sp.SubMConv3d(8, 8, 3, indice_key="s")

        def forward(self, x):
            y = self.c0(x)
            if self.how == "mask":
                y.features[y.features < 0] = 0
            elif self.how == "slice":
                y.features[:, 0] = 0
            else:
                y.features.clamp_(min=0)
            return self.c1(y)

    feats, idx = frame(3)
    for how, why in (("mask", r"op 'lt'"), ("slice", r"op '__setitem__'"), ("clamp", r"op 'clamp_'")):
        with pytest.raises(ExportError, match=why):
            trace_spconv(init(Masked(how)), feats, idx, GRID)


def test_sites_changed_outside_the_traced_ops_are_refused():
    """A sparse tensor rebuilt from traced features on other indices (or another shape) reaches a conv or dense():
    the graph only knows the recorded sites, so the export is refused, not written on the wrong sites."""
    class Moved(nn.Module):
        def __init__(self, what):
            super().__init__()
            self.what = what
            self.c0 = sp.SubMConv3d(4, 4, 3, indice_key="s")
            self.c1 = sp.SubMConv3d(4, 4, 3, indice_key="s")

        def forward(self, x):
            y = self.c0(x)
            if self.what == "indices":
                idx = y.indices.clone()
                idx[:, 1:] = idx[:, 1:].flip(0)  # the same rows, moved to other sites
                y = sp.SparseConvTensor(y.features, idx, y.spatial_shape, y.batch_size)
            elif self.what == "shape":
                y = sp.SparseConvTensor(y.features, y.indices, [s + 2 for s in y.spatial_shape], y.batch_size)
            else:
                return self.c1(y).dense() if self.what == "same" else None
            return self.c1(y).dense()

    feats, idx = frame(4)
    for what in ("indices", "shape"):
        with pytest.raises(ExportError, match=r"indices, spatial_shape or batch_size were changed outside"):
            trace_spconv(init(Moved(what)), feats, idx, GRID)
    trace_spconv(init(Moved("same")), feats, idx, GRID)  # a new tensor on the same sites exports


def test_add_of_tensors_on_different_sites_is_refused():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = sp.SparseConv3d(4, 4, 3, stride=1, padding=1)  # regular conv: new (dilated) sites
            self.b = sp.SparseConv3d(4, 4, 3, stride=1, padding=1)
            self.s = sp.SubMConv3d(4, 4, 3)

        def forward(self, x):
            y = self.a(x)
            z = self.s(x)
            return torch.cat([y.features[: z.features.shape[0]], z.features], 1)

    feats, idx = frame(9)
    with pytest.raises(ExportError):
        trace_spconv(init(M()), feats, idx, GRID)


def test_transposed_conv_is_refused():
    with pytest.raises(ValueError, match="transposed"):
        sp.SparseConvolution(3, 4, 4, 3, transposed=True)

    class FakeTransposed(sp.SparseConv3d):  # a module claiming spconv's transposed flag
        def __init__(self):
            super().__init__(4, 4, 3)
            self.transposed = True

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = FakeTransposed()

        def forward(self, x):
            return self.up(x)

    feats, idx = frame(10)
    with pytest.raises(ExportError, match=r"module 'up' \(FakeTransposed\): transposed"):
        trace_spconv(init(M()), feats, idx, GRID)


# ---------------------------------------------------------------------------------------------------
# orders, files, intermediates

def test_export_in_the_other_order_gives_the_same_tensor(tmp_path):
    model = init(zoo.bevfusion_sparse_encoder(sp, 4))
    feats, idx_zyx = frame(11, n=250, grid=(41, 24, 24))
    idx_xyz = np.ascontiguousarray(idx_zyx[:, [0, 3, 2, 1]])
    tr = trace_spconv(model, feats, idx_xyz, (24, 24, 41), order="xyz")
    assert tr.graph.output_shape == (1, 256, 3, 3)
    g_xyz, out_xyz = onnx_outputs(tmp_path, tr, feats, idx_xyz, "xyz", "x.onnx")
    g_zyx, out_zyx = onnx_outputs(tmp_path, tr, feats, idx_zyx, "zyx", "z.onnx")
    assert [n.op for n in g_zyx.nodes[-3:]] == ["scatter", "transpose", "reshape"]
    assert g_zyx.nodes[-3].format == "zyx" and g_zyx.nodes[-2].dims == (0, 1, 2, 4, 3)
    assert g_xyz.nodes[-2].dims == (0, 1, 4, 2, 3)
    assert_same(out_xyz[0], tr.torch_outputs[0])
    assert_same(out_zyx[0], tr.torch_outputs[0])


def test_outputs_and_intermediates_files(tmp_path):
    feats, idx = frame(12, grid=(8, 16, 16))
    model = init(UNetish())
    tr = export_spconv(model, tmp_path / "u.onnx", feats, idx, (8, 16, 16), outputs_dir=tmp_path / "out",
                       intermediates_dir=tmp_path / "values")
    g = tr.graph
    out_v = g.output_ids()[0]
    f = tensor_io.load_tensor(str(tmp_path / "out" / f"{out_v}.tensor"))
    i = tensor_io.load_tensor(str(tmp_path / "out" / f"{out_v}.indices.tensor"))
    assert f.dtype == np.float32 and i.dtype == np.int32 and f.shape == (len(idx), 5)
    values = G.evaluate(g, feats, idx)
    listed = (tmp_path / "values" / "values.txt").read_text().splitlines()
    assert listed[0] == "value\top\tsource" and len(listed) == len(g.nodes) + 2
    for v in range(1, len(g.nodes) + 1):
        vf = tensor_io.load_tensor(str(tmp_path / "values" / f"{v}.tensor"))
        vi = tensor_io.load_tensor(str(tmp_path / "values" / f"{v}.indices.tensor"))
        assert_same(values[v], (torch.from_numpy(vf.astype(np.float64)), torch.from_numpy(vi)), tol=1e-6)


# ---------------------------------------------------------------------------------------------------
# zoo models: structure and exactness on small frames

def _small_kitti():
    from scn_tools import frames
    return frames.kitti_frame(azimuths=300, max_voxels=700)


def test_zoo_centerpoint_matches_the_layer_list_model(tmp_path):
    from scn_tools import models
    feats, idx = frame(13, n=250, grid=(41, 32, 32), channels=5)
    model = zoo.build("centerpoint")
    tr = trace_spconv(model, feats, idx, (41, 32, 32), forward=lambda m, x: m(x.features, x.indices, 1, [32, 32, 40]))
    g = tr.graph
    want = models.build_graph("centerpoint", "zyx", (41, 32, 32))
    assert ops(g) == ops(want)
    assert [n.inputs for n in g.nodes] == [n.inputs for n in want.nodes]
    strip = [(c.kind, c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding, c.key, c.activation)
             for c in g.convs()]
    assert strip == [(c.kind, c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding, c.key, c.activation)
                     for c in want.convs()]
    assert g.output_shape == (1, 256, 4, 4)
    _, outs = onnx_outputs(tmp_path, tr, feats, idx)
    assert_same(outs[0], tr.torch_outputs[0])


def _as_frame(feats, idx, grid, order):
    from scn_tools.frames import Frame
    return Frame("test", feats, idx, grid, order)


def test_zoo_bevfusion_matches_the_layer_list_model():
    from scn_tools import models
    feats, idx = frame(14, n=200, grid=(41, 24, 24), channels=5)
    xyz = np.ascontiguousarray(idx[:, [0, 3, 2, 1]])
    tr, _ = zoo.trace("bevfusion_xyz", frame=_as_frame(feats, xyz, (24, 24, 41), "xyz"))
    want = models.build_graph("bevfusion", "xyz", (24, 24, 41))
    strip = lambda gr: [(c.kind, c.kernel_size, c.stride, c.padding, c.key, c.activation) for c in gr.convs()]  # noqa
    assert strip(tr.graph) == strip(want) and ops(tr.graph) == ops(want)
    assert [n.dims for n in tr.graph.nodes[-3:]] == [n.dims for n in want.nodes[-3:]]


def test_zoo_voxelbackbone8x_small_frame(tmp_path):
    f = _small_kitti()
    tr, f = zoo.trace("voxelbackbone8x", frame=f)
    g = tr.graph
    zoo.check_output_shapes("voxelbackbone8x", g)
    assert tr.output_names == ["spatial_features", "x_conv1", "x_conv2", "x_conv3", "x_conv4"]
    convs = g.convs()
    assert len(convs) == 12 and ops(g).count("add") == 0
    assert [c.key for c in convs] == ["subm1", "subm1", "spconv2", "subm2", "subm2", "spconv3", "subm3", "subm3",
                                      "spconv4", "subm4", "subm4", "spconv_down2"]
    assert convs[8].padding == (0, 1, 1) and convs[11].kernel_size == (3, 1, 1)
    _, outs = onnx_outputs(tmp_path, tr, f.features, f.indices)
    for got, want in zip(outs, tr.torch_outputs):
        assert_same(got, want)


def test_zoo_minkunet_structure_small_widths(tmp_path):
    from scn_tools import frames
    model = zoo.init_weights(zoo.minkunet(sp, 4, 19, cs=(8, 8, 8, 16, 16, 16, 16, 8, 8)).double(), 0,
                             zoo.KITTI_SCALE).eval()
    f = frames.semantickitti_frame(azimuths=200, grid_zyx=(16, 64, 64), max_voxels=500)
    tr = trace_spconv(model, f.features, f.indices, f.grid)
    g = tr.graph
    assert ops(g).count("concat") == 4 and ops(g).count("add") == 16
    inv = [c for c in g.convs() if c.kind == "inverse"]
    assert [c.key for c in inv] == ["down4", "down3", "down2", "down1"]
    k1 = [c for c in g.convs() if c.kernel_size == (1, 1, 1)]
    # k1 shortcuts where the width changes (encoder 8 -> 16, four decoders after Concat) + the classifier
    assert len(k1) == 6 and all(c.key is None and c.kind == "subm" for c in k1)
    assert g.output_shape == (-1, 19)
    _, outs = onnx_outputs(tmp_path, tr, f.features, f.indices)
    assert_same(outs[0], tr.torch_outputs[0])


def test_graph_reorder_keeps_sparse_outputs_and_scatter_values():
    feats, idx = frame(15, grid=(8, 16, 16))
    tr = trace_spconv(init(UNetish()), feats, idx, (8, 16, 16))
    g2 = tr.graph.reordered("xyz")
    out = G.run_graph_outputs(g2, feats, np.ascontiguousarray(idx[:, [0, 3, 2, 1]]))[0]
    f, i = tr.torch_outputs[0]
    assert_same(out, (f, i[:, [0, 3, 2, 1]]))


def test_conv_modules_take_spconvs_parameters_only():
    class Activation:  # stands in for cumm's tv.gemm.Activation (spconv's act_type)
        def __init__(self, name):
            self.name = name

    # a misspelt keyword was swallowed (the conv then had no key)
    with pytest.raises(TypeError, match="indice_kye"):
        sp.SubMConv3d(1, 1, 3, indice_kye="a")
    with pytest.raises(TypeError, match="dilation"):
        sp.SparseInverseConv3d(1, 1, 3, "a", dilation=2)  # as spconv's: no dilation
    with pytest.raises(TypeError, match="record_voxel_count"):
        sp.SubMConv3d(1, 1, 3, record_voxel_count=True)  # SparseConv3d's only
    # a fused activation was dropped: the forward ran without it
    for kw in ({"act_type": Activation("ReLU")}, {"act_type": "ReLU"}, {"act_alpha": 0.1}, {"act_beta": 1.0}):
        with pytest.raises(ValueError, match="fused activation"):
            sp.SparseConvolution(3, 1, 1, 3, **kw)
    with pytest.raises(ValueError, match="record_voxel_count"):
        sp.SparseConv3d(1, 1, 3, record_voxel_count=True)
    # spconv 2.x's keywords; those about how spconv computes (algo, fp32_accum, ...) change no value
    c = sp.SubMConv3d(2, 3, 3, indice_key="a", algo="MaskImplicitGemm", fp32_accum=True,
                      large_kernel_fast_algo=True, name="c0")
    assert (c.indice_key, c.name, c.act_type) == ("a", "c0", None)
    sp.SparseConv3d(2, 3, 3, 2, record_voxel_count=False, name="d")
    sp.SparseInverseConv3d(3, 2, 3, "a", fp32_accum=False)
    sp.SparseConvolution(3, 2, 3, 3, act_type=Activation("None_"))
    assert sp.SparseConvolution(3, 2, 3, 3, dtype=torch.float64).weight.dtype == torch.float64


def test_sparse_conv_tensor_needs_three_spatial_sizes():
    f = torch.zeros(1, 1, dtype=torch.float64)
    idx = torch.tensor([[0, 1, 1, 1]], dtype=torch.int32)
    with pytest.raises(ValueError, match=r"spatial_shape must be 3 positive sizes \(s0, s1, s2\), got \[4, 4\]"):
        sp.SparseConvTensor(f, idx, [4, 4], 1)  # was an IndexError
    with pytest.raises(ValueError, match=r"indices .* does not fit int32"):
        sp.SparseConvTensor(f, idx.long() + 2 ** 32, [4, 4, 4], 1)
    assert sp.SparseConvTensor(f, idx, [4, 4, 4], 1).spatial_shape == (4, 4, 4)
