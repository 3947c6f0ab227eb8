"""pytest setup for the tests of the installed `scn` package (run by the interpreter of the venv the wheel
was installed into; ctest python_package). A tiny spconv-style backbone (scn.export.sparse_nn, seeded
fp16-exact weights) is exported once per session with the package's own exporter.

Environment: SCN_CLI (the `scn` binary, for the bitwise CLI comparisons; those tests skip without it).
"""

import os
from pathlib import Path

import pytest
import torch
from torch import nn

import scn
from scn.export import sparse_nn, zoo
from scn.export.frames import plane_sites
from scn.export.spconv_export import trace_spconv, export_trace

GRID = (12, 16, 20)


def make_frame(seed=0, n=300, grid=GRID, channels=4, batch=1):
    """Unique random sites (clustered on planes, so convs have neighbours) and fp16-exact features."""
    return plane_sites(seed, n, grid, channels, batch)


class TinyBackbone(nn.Module):
    """CenterPoint-shaped: subm stem, strided conv, subm, z-collapsing conv, dense + view to BEV.
    With ``sparse_out`` it also returns the stride-2 sparse tensor (a sparse graph output)."""

    def __init__(self, sp, sparse_out=False):
        super().__init__()
        self.sparse_out = sparse_out
        self.stem = sp.SparseSequential(sp.SubMConv3d(4, 8, 3, bias=False, indice_key="s0"), nn.BatchNorm1d(8),
                                        nn.ReLU())
        self.down = sp.SparseSequential(sp.SparseConv3d(8, 16, 3, stride=2, padding=1, bias=False, indice_key="d1"),
                                        nn.BatchNorm1d(16), nn.ReLU())
        self.mid = sp.SparseSequential(sp.SubMConv3d(16, 16, 3, bias=False, indice_key="s1"), nn.BatchNorm1d(16),
                                       nn.ReLU())
        self.out = sp.SparseSequential(sp.SparseConv3d(16, 8, (3, 1, 1), stride=(2, 1, 1), bias=False),
                                       nn.BatchNorm1d(8), nn.ReLU())

    def forward(self, x):
        x = self.mid(self.down(self.stem(x)))
        d = self.out(x).dense()
        n, c, dd, h, w = d.shape
        bev = d.view(n, c * dd, h, w)
        return {"bev": bev, "x2": x} if self.sparse_out else bev


def seeded(model, seed=0):
    return zoo.init_weights(model.double(), seed).eval()


class Exported:
    def __init__(self, path, trace, feats, idx):
        self.path, self.trace, self.feats, self.idx = path, trace, feats, idx
        self.names = trace.output_names


def _export(tmp, name, sparse_out):
    feats, idx = make_frame(0)
    model = seeded(TinyBackbone(sparse_nn, sparse_out))
    tr = trace_spconv(model, feats, idx, GRID)
    path = tmp / f"{name}.onnx"
    export_trace(tr, path)
    return Exported(path, tr, feats, idx)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """The dense-output model: ONNX path, trace (float64 PyTorch outputs), frame."""
    return _export(tmp_path_factory.mktemp("tiny"), "tiny", False)


@pytest.fixture(scope="session")
def tiny_sparse(tmp_path_factory):
    """The model with a dense and a sparse output."""
    return _export(tmp_path_factory.mktemp("tiny_sparse"), "tiny_sparse", True)


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("SCN_CLI")
    if not path or not Path(path).is_file():
        pytest.skip("SCN_CLI (the scn binary) not set: the CLI comparison needs it (ctest sets it)")
    return path


def has_cuda():
    return scn.cuda_available() and torch.cuda.is_available()


def rel_l2(a, b):
    a, b = torch.as_tensor(a).double(), torch.as_tensor(b).double()
    return float((a - b).norm() / b.norm())
