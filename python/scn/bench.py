"""python -m scn.bench: the Python call timed beside the engine's own Engine::time_forward (graph replay).

    python -m scn.bench centerpoint/model.onnx --data /work/shared/data/nuscenes-centerpoint \\
        --grid 41x1440x1440 --runs 500

Inputs are CUDA torch tensors (``--features`` / ``--indices`` .tensor files, or ``in_features.torch.fp16.tensor``
and ``in_indices_zyx.torch.int32.tensor`` in ``--data``). Each timed run is CUDA events on torch's current
stream around one call, then a wait, so the host-side cost of the call (argument checks, DLPack, launch, output
tensor) is inside the figure exactly as the GPU sees it. Medians after warm-up, per output mode (copy: a fresh
tensor per call; view: the engine's buffers; out: a preallocated tensor), plus the host time of the call.
``--max-gap MS``: exit 1 when the copy-mode median exceeds time_forward's by more than MS.

    python -m scn.bench centerpoint/model.onnx --points cloud.bin [--points cloud2.bin] \\
        [--preset nuscenes-centerpoint] [--voxel max_voxels=120000 ...]

times raw points -> outputs instead: ``engine.run_points(frames, vox, outputs="view")`` per call (CUDA events on
torch's current stream around the call) beside ``engine.time_points`` (the voxelizer and the network in one CUDA
graph, each alone too; and the points' upload from pinned host memory, alone and before that path). Point files are raw
float32 rows of the voxelizer's point_columns (``scn synth --points``);
several ``--points`` are one batch; ``--voxel KEY=VALUE`` overrides a voxelizer setting (a Python literal).
``--max-gap`` then bounds the call's median over time_points'.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import scn
from scn import _scn
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


def _setting(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--voxel takes KEY=VALUE, got {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        raise argparse.ArgumentTypeError(f"--voxel {text!r}: {value!r} is not a Python literal") from None


def _bench_points(a) -> int:
    settings = dict(a.voxel)
    columns = int(settings.get("point_columns", _scn.voxelizer_preset(a.preset).point_columns))
    frames = []
    for path in a.points:
        raw = np.fromfile(path, dtype=np.float32)
        if raw.size % columns:
            raise scn.Error(f"{path}: {raw.size} float32 values are not rows of {columns} (the voxelizer's "
                            "point_columns)")
        frames.append(torch.from_numpy(raw.reshape(-1, columns)))
    batch = len(frames)
    vox = scn.Voxelizer(a.preset, device="cuda", max_points=max(len(f) for f in frames), max_batch=batch,
                        **settings)
    engine = scn.Engine(a.model, device="cuda", precision=a.precision, max_batch=batch,
                        max_voxels=vox.config.max_voxels)
    # time_points gets the host frames (it times their upload as well), the Python call the frames on the device
    graph = engine.time_points(frames if batch > 1 else frames[0], vox, a.warmup, a.runs)
    frames = [f.cuda() for f in frames]
    points = frames if batch > 1 else frames[0]
    for _ in range(a.warmup):
        engine.run_points(points, vox, outputs="view")
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gpu, host = [], []
    for _ in range(a.runs):
        start.record()
        t0 = time.perf_counter()
        engine.run_points(points, vox, outputs="view")
        host.append((time.perf_counter() - t0) * 1e3)
        end.record()
        end.synchronize()
        gpu.append(start.elapsed_time(end))
    engine.check_errors()
    total = statistics.median(graph.total_ms)
    call = statistics.median(gpu)
    print(f"model {a.model}  points {', '.join(map(str, a.points))}  voxels {graph.voxels}  frames {batch}  precision "
          f"{engine.precision}  device {torch.cuda.get_device_name()}  torch {torch.__version__}")
    print(f"scn time_points (C++, one CUDA graph): median {total:.4f} ms (voxelizer alone "
          f"{statistics.median(graph.voxelizer_ms):.4f}, network alone {statistics.median(graph.network_ms):.4f}) "
          f"over {a.runs} runs")
    if graph.from_host_ms:  # (empty when no frame has points to upload)
        print(f"scn time_points from host memory: median {statistics.median(graph.from_host_ms):.4f} ms (the points' "
              f"upload alone {statistics.median(graph.upload_ms):.4f}, from pinned host memory)")
    print(f"python run_points, outputs=view: median {call:.4f} ms (gap {call - total:+.4f} ms), host time in the "
          f"call {statistics.median(host):.4f} ms; {1000.0 * batch / call:.0f} frames/s")
    if a.max_gap is not None and call - total > a.max_gap:
        print(f"FAIL: run_points is {call - total:.4f} ms slower than time_points (limit {a.max_gap} ms)")
        return 1
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scn.bench", description=__doc__.split("\n")[0])
    ap.add_argument("model", help="ONNX file")
    ap.add_argument("--data", type=Path, help="folder with in_features.torch.fp16.tensor, in_indices_zyx.torch.int32.tensor")
    ap.add_argument("--features", type=Path)
    ap.add_argument("--indices", type=Path)
    ap.add_argument("--grid", type=_grid, default=None, help="with --data / --features (default 41x1440x1440)")
    ap.add_argument("--points", type=Path, action="append", help="raw float32 point file (several: one batch)")
    ap.add_argument("--preset", default=None, help="voxelizer preset (with --points; default nuscenes-centerpoint)")
    ap.add_argument("--voxel", type=_setting, action="append", default=[], metavar="KEY=VALUE",
                    help="voxelizer setting (with --points), e.g. max_voxels=120000")
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--max-gap", type=float, default=None, help="ms; exit 1 when Python's median exceeds scn's by more")
    a = ap.parse_args(argv)
    if a.runs < 1 or a.warmup < 0:
        ap.error("--runs must be >= 1 and --warmup >= 0")
    if a.points and (a.data or a.features or a.indices or a.grid):
        ap.error("--points times raw points (the voxelizer gives the grid): leave out --data / --features / "
                 "--indices / --grid")
    if not a.points and (a.preset or a.voxel):
        ap.error("--preset and --voxel set the voxelizer of --points")
    a.preset = a.preset or "nuscenes-centerpoint"
    a.grid = a.grid or (41, 1440, 1440)
    if a.points:
        if not (scn.cuda_available() and torch.cuda.is_available()):
            print("scn.bench: no CUDA (scn built without it or no GPU visible)", file=sys.stderr)
            return 2
        return _bench_points(a)
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
    out = engine(f, i, a.grid)  # the first call plans and tunes; its outputs shape the out= tensors
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
