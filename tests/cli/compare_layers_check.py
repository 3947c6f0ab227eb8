"""`scn compare --layers` end to end: a small spconv-style network (sparse_nn modules: stem, a residual
block, a strided conv, a dense BEV output) is exported with every intermediate value
(spconv_export intermediates_dir); scn must match every value on the clean model, and on a copy whose
strided conv has a corrupted weight the report must name that conv as the first divergence.

usage: compare_layers_check.py SCN WORK_DIR     (needs torch, onnx, numpy; ~5 s)
"""
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from torch import nn

from scn_tools import sparse_nn as sp
from scn_tools import tensor_io, zoo
from scn_tools.spconv_export import export_spconv

GRID = (12, 16, 20)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        B = zoo.blocks(sp)
        self.stem = sp.SparseSequential(sp.SubMConv3d(4, 8, 3, bias=False, indice_key="s0"), nn.BatchNorm1d(8),
                                        nn.ReLU())
        self.block = B.SparseBasicBlock(8, 8, "s0")
        self.down = sp.SparseSequential(sp.SparseConv3d(8, 16, 3, stride=2, padding=1, bias=False, indice_key="d1"),
                                        nn.BatchNorm1d(16), nn.ReLU())
        self.head = sp.SparseSequential(sp.SubMConv3d(16, 16, 3, bias=False, indice_key="s1"), nn.BatchNorm1d(16),
                                        nn.ReLU())

    def forward(self, x):
        x = self.head(self.down(self.block(self.stem(x))))
        d = x.dense()
        n, c, z, y, xx = d.shape
        return d.view(n, c * z, y, xx)


def frame(seed=0, n=400):
    rng = np.random.default_rng(seed)
    cells = rng.choice(np.prod(GRID), n, replace=False)
    z, rem = np.divmod(cells, GRID[1] * GRID[2])
    y, x = np.divmod(rem, GRID[2])
    idx = np.stack([np.zeros(n, np.int64), z, y, x], 1).astype(np.int32)
    feats = rng.standard_normal((n, 4)).astype(np.float16)
    return feats, idx


def scn(*args):
    r = subprocess.run([SCN, *map(str, args)], capture_output=True, text=True)
    print(r.stdout, r.stderr, sep="", end="")
    return r


def main():
    global SCN
    SCN, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    feats, idx = frame()
    tensor_io.save_tensor(str(work / "features.tensor"), feats)
    tensor_io.save_tensor(str(work / "indices.tensor"), idx)
    model = zoo.init_weights(Net().double(), 3).eval()
    export_spconv(model, work / "model.onnx", feats, idx, GRID, intermediates_dir=work / "values",
                  forward=lambda m, x: m(x))
    run = ["--features", work / "features.tensor", "--indices", work / "indices.tensor", "--grid",
           "x".join(map(str, GRID)), "--min-cosine", "0.99999", "--max-rel-l2", "1e-4", "--threads", "2"]

    clean = scn("compare", "--layers", work / "model.onnx", work / "values", *run)
    assert clean.returncode == 0, "the clean model must match every value"
    assert "no divergence" in clean.stdout

    # Corrupt the strided conv (the third SparseConvolution): flip the sign of one output channel.
    m = onnx.load(str(work / "model.onnx"))
    convs = [n for n in m.graph.node if n.op_type == "SparseConvolution"]
    target = convs[3]
    assert [a.i for a in target.attribute if a.name == "subm"] == [0], "expected the strided conv"
    inits = {t.name: t for t in m.graph.initializer}
    w = inits[target.input[1]]
    arr = numpy_helper.to_array(w).copy()
    arr[0] = -arr[0]
    w.CopyFrom(numpy_helper.from_array(arr, w.name))
    onnx.save(m, str(work / "model_bad.onnx"))

    bad = scn("compare", "--layers", work / "model_bad.onnx", work / "values", *run)
    assert bad.returncode == 1, "a corrupted weight must fail"
    want = f"first divergence: node '{target.name}' (SparseConvolution)"
    assert want in bad.stdout, f"expected '{want}'"
    # Every node before it still matches.
    lines = [l for l in bad.stdout.splitlines() if l.strip().endswith(("ok", "FAIL"))]
    first_fail = next(i for i, l in enumerate(lines) if l.strip().endswith("FAIL"))
    assert lines[first_fail].split()[0] == target.name, lines[first_fail]
    assert first_fail >= 3, "the stem and the residual block come before the strided conv"
    print("compare --layers: clean model matches; corrupted", target.name, "named as the first divergence")

    # The same on the CUDA backend (fp16 storage, every value exposed, none fused away) where a GPU exists.
    has_gpu = shutil.which("nvidia-smi") is not None and \
        subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    if not has_gpu:
        print("SKIP: no GPU: compare --layers --device cuda not run")
        return
    gpu = [a for a in run if a not in ("--threads", "2")] + ["--device", "cuda", "--precision", "fp16"]
    gpu[gpu.index("--min-cosine") + 1] = "0.9999"
    gpu[gpu.index("--max-rel-l2") + 1] = "1e-2"
    clean = scn("compare", "--layers", work / "model.onnx", work / "values", *gpu)
    assert clean.returncode == 0 and "backend    cuda" in clean.stdout, "CUDA fp16: the clean model must match"
    bad = scn("compare", "--layers", work / "model_bad.onnx", work / "values", *gpu)
    assert bad.returncode == 1 and want in bad.stdout, f"CUDA fp16: expected '{want}'"
    print("compare --layers on CUDA fp16: clean model matches; corrupted", target.name, "named")


if __name__ == "__main__":
    main()
