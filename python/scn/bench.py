"""python -m scn.bench: the Python call timed beside the engine's own Engine::time_forward (graph replay).

    python -m scn.bench centerpoint/model.onnx --data /work/shared/data/nuscenes-centerpoint \\
        --grid 41x1440x1440 --runs 500

Inputs are CUDA torch tensors (``--features`` / ``--indices`` .tensor files, or ``in_features.torch.fp16.tensor``
and ``in_indices_zyx.torch.int32.tensor`` in ``--data``). Each timed run is CUDA events on torch's current
stream around one call, then a wait, so the host-side cost of the call (argument checks, DLPack, launch, output
tensor) is inside the figure exactly as the GPU sees it. Medians after warm-up, per output mode (copy: a fresh
tensor per call; view: the engine's buffers; out: a preallocated tensor), plus the host time of the call.
``--max-gap MS``: exit 1 when the copy-mode median exceeds time_forward's by more than MS.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

import scn
from scn.export import tensor_io


def _grid(text: str):
    parts = tuple(int(p) for p in text.lower().split("x"))
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"grid must look like D0xD1xD2, got {text!r}")
    return parts


def _time_calls(engine, f, i, grid, runs, **kw):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gpu, host = [], []
    for _ in range(runs):
        start.record()
        t0 = time.perf_counter()
        engine(f, i, grid, **kw)
        host.append((time.perf_counter() - t0) * 1e3)
        end.record()
        end.synchronize()
        gpu.append(start.elapsed_time(end))
    return statistics.median(gpu), statistics.median(host)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scn.bench", description=__doc__.split("\n")[0])
    ap.add_argument("model", help="ONNX file")
    ap.add_argument("--data", type=Path, help="folder with in_features.torch.fp16.tensor, in_indices_zyx.torch.int32.tensor")
    ap.add_argument("--features", type=Path)
    ap.add_argument("--indices", type=Path)
    ap.add_argument("--grid", type=_grid, default=(41, 1440, 1440))
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--max-gap", type=float, default=None, help="ms; exit 1 when Python's median exceeds scn's by more")
    a = ap.parse_args(argv)
    if a.runs < 1 or a.warmup < 0:
        ap.error("--runs must be >= 1 and --warmup >= 0")
    feats = a.features or (a.data / "in_features.torch.fp16.tensor" if a.data else None)
    idx = a.indices or (a.data / "in_indices_zyx.torch.int32.tensor" if a.data else None)
    if feats is None or idx is None:
        ap.error("give --data or both --features and --indices")
    if not (scn.cuda_available() and torch.cuda.is_available()):
        print("scn.bench: no CUDA (scn built without it or no GPU visible)", file=sys.stderr)
        return 2

    f = torch.from_numpy(tensor_io.load_tensor(feats)).cuda()
    i = torch.from_numpy(tensor_io.load_tensor(idx)).cuda()
    engine = scn.Engine(a.model, device="cuda", precision=a.precision)
    for _ in range(a.warmup):
        out = engine(f, i, a.grid)
    torch.cuda.synchronize()
    prealloc = [o.clone() for o in out if isinstance(o, torch.Tensor)]

    results = {}
    results["copy"] = _time_calls(engine, f, i, a.grid, a.runs)
    results["view"] = _time_calls(engine, f, i, a.grid, a.runs, outputs="view")
    if len(prealloc) == len(out):
        results["out"] = _time_calls(engine, f, i, a.grid, a.runs, out=prealloc)
    # the engine's own timing on the same binding (Engine::time_forward: events on its stream, graph replay)
    cxx = statistics.median(engine.time_forward(a.warmup, a.runs))

    print(f"model {a.model}  voxels {f.shape[0]}  grid {'x'.join(map(str, a.grid))}  precision {engine.precision}  "
          f"device {torch.cuda.get_device_name()}  torch {torch.__version__}")
    print(f"scn time_forward (C++, graph replay): median {cxx:.4f} ms over {a.runs} runs")
    for mode, (gpu, host) in results.items():
        print(f"python call, outputs={mode:<4}: median {gpu:.4f} ms (gap {gpu - cxx:+.4f} ms), "
              f"host time in the call {host:.4f} ms")
    if a.max_gap is not None and results["copy"][0] - cxx > a.max_gap:
        print(f"FAIL: the Python call is {results['copy'][0] - cxx:.4f} ms slower than time_forward "
              f"(limit {a.max_gap} ms)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
