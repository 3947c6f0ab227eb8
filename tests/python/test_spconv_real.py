"""The exporter on the real spconv 2.x (``spconv.pytorch``, CPU build) — skipped when it cannot be
imported. Install it for this interpreter with ``tools/python/install_spconv.sh DIR`` and run
``DIR/bin/python -m pytest tests/python`` (a venv with the system site packages: torch, onnx, numpy).

The zoo models built from spconv and from scn_tools.sparse_nn get the same seeded weights, so:
spconv's own forward == the sparse_nn forward (site by site), and the traced spconv model written to
ONNX and run by the reference interpreter == spconv's forward. That checks both the float64 reference
against spconv and the exporter on spconv's modules (including spconv 2.3's 1x1 conv weight layout).
"""

import numpy as np
import pytest
import torch
from torch import nn

spconv_pt = pytest.importorskip("spconv.pytorch", reason="spconv is not installed for this interpreter "
                                                         "(tools/python/install_spconv.sh)")

from scn_tools import frames, zoo  # noqa: E402
from scn_tools import graph as G  # noqa: E402
from scn_tools import reference as ref  # noqa: E402
from scn_tools import sparse_nn  # noqa: E402
from scn_tools.export_onnx import graph_from_onnx  # noqa: E402
from scn_tools.spconv_export import ExportError, export_trace, trace_spconv  # noqa: E402


def site_match(a_feats, a_idx, b_feats, b_idx, shape):
    ka, kb = ref.linear_keys(a_idx, shape), ref.linear_keys(b_idx, shape)
    sa, pa = torch.sort(ka)
    sb, pb = torch.sort(kb)
    assert torch.equal(sa, sb), "different sites"
    return a_feats[pa], b_feats[pb]


def rel(a, b):
    return float((a - b).norm() / b.norm())


def small_frame(name):
    if name == "centerpoint":
        return frames.Frame("t", *_nus(), (41, 1440, 1440), "zyx")
    if name == "voxelbackbone8x":
        return frames.kitti_frame(azimuths=300, max_voxels=700)
    if name == "minkunet":
        return frames.semantickitti_frame(azimuths=200, max_voxels=700)
    raise KeyError(name)


def _nus():
    f = frames.nuscenes_frame(azimuths=120, sweeps=1, max_range=10.0, max_voxels=600)
    return f.features, f.indices


@pytest.mark.parametrize("name", ["centerpoint", "voxelbackbone8x", "minkunet"])
def test_zoo_model_on_spconv_equals_reference_and_its_export(tmp_path, name):
    f = small_frame(name)
    tr_sp, _ = zoo.trace(name, sp=spconv_pt, frame=f)
    tr_ref, _ = zoo.trace(name, sp=sparse_nn, frame=f)
    # same graph and the same fp16 weights
    strip = lambda g: [(n.op, n.inputs, n.dims, n.conv.kind if n.conv else None,  # noqa: E731
                        n.conv.kernel_size if n.conv else None, n.conv.key if n.conv else None,
                        n.conv.activation if n.conv else None) for n in g.nodes]
    assert strip(tr_sp.graph) == strip(tr_ref.graph)
    for (w1, b1), (w2, b2) in zip(tr_sp.graph.weights, tr_ref.graph.weights):
        np.testing.assert_array_equal(w1, w2)
        np.testing.assert_array_equal(b1, b2)
    # spconv's forward == the float64 reference modules, site by site
    for a, b in zip(tr_sp.torch_outputs, tr_ref.torch_outputs):
        if isinstance(a, tuple):
            a, b = site_match(a[0], a[1], b[0], b[1], (1 << 12,) * 3)
        assert rel(a, b) < 1e-12
    # the exported spconv model reproduces spconv
    export_trace(tr_sp, tmp_path / "m.onnx")
    g = graph_from_onnx(str(tmp_path / "m.onnx"), grid=f.grid)
    for got, want in zip(G.run_graph_outputs(g, f.features, f.indices), tr_sp.torch_outputs):
        if isinstance(want, tuple):
            a, b = site_match(got.features, got.indices, want[0], want[1], (1 << 12,) * 3)
        else:
            a, b = got, want
        assert rel(a, b) < 1e-12


def test_spconv_1x1_conv_layout():
    """spconv 2.3 multiplies 1x1x1 convs by weight.view(Cin, Cout); the export must follow it."""
    m = spconv_pt.SubMConv3d(3, 5, 1, bias=True).double()
    idx = torch.tensor([[0, 1, 1, 1], [0, 1, 2, 1], [0, 2, 2, 2], [0, 3, 3, 3]], dtype=torch.int32)
    feats = torch.randn(4, 3, dtype=torch.float64).half().double()
    with torch.no_grad():
        m.weight.copy_(m.weight.half().double())
        m.bias.copy_(m.bias.half().double())

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = m

        def forward(self, x):
            return self.c(x)

    tr = trace_spconv(M(), feats, idx, (8, 8, 8))
    out = G.run_graph_outputs(tr.graph, feats.numpy(), idx.numpy())[0]
    a, b = site_match(out.features, out.indices, tr.torch_outputs[0][0], tr.torch_outputs[0][1], (8, 8, 8))
    assert rel(a, b) < 1e-12


def test_spconv_unsupported_modules_are_named():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = spconv_pt.SubMConv3d(4, 8, 3, indice_key="s", bias=False)  # CPU: no bias in eval
            self.pool = spconv_pt.SparseMaxPool3d(2, 2)
            self.up = spconv_pt.SparseConvTranspose3d(8, 8, 2, 2, bias=False)

        def forward(self, x):
            return self.up(self.pool(self.c(x)))

    f = frames.kitti_frame(azimuths=200, max_voxels=300)
    model = M().double()
    with pytest.raises(ExportError) as e:
        trace_spconv(model, f.features, f.indices, f.grid)
    assert "module 'pool' (SparseMaxPool3d)" in str(e.value)

    class T(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = spconv_pt.SparseConvTranspose3d(4, 4, 2, 2, bias=False)

        def forward(self, x):
            return self.up(x)

    with pytest.raises(ExportError, match=r"module 'up' \(SparseConvTranspose3d\): transposed"):
        trace_spconv(T().double(), f.features, f.indices, f.grid)


def test_spconv_sparse_batchnorm_and_relu_modules_fold():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = spconv_pt.SparseSequential(spconv_pt.SubMConv3d(4, 8, 3, bias=False, indice_key="s"),
                                                  spconv_pt.SparseBatchNorm(8), spconv_pt.SparseReLU())

        def forward(self, x):
            return self.net(x)

    f = frames.kitti_frame(azimuths=200, max_voxels=300)
    model = zoo.init_weights(M().double(), 0).eval()
    tr = trace_spconv(model, f.features, f.indices, f.grid)
    assert [n.op for n in tr.graph.nodes] == ["conv"] and tr.graph.convs()[0].activation == "ReLU"
    out = G.run_graph_outputs(tr.graph, f.features, f.indices)[0]
    a, b = site_match(out.features, out.indices, *tr.torch_outputs[0], f.grid)
    assert rel(a, b) < 1e-12
