#!/usr/bin/python3
"""Write a synthetic-weight SCN ONNX model and its float64 reference output for one input frame.

Example (CenterPoint on the shared nuScenes frame)::

    PYTHONPATH=tools/python /usr/bin/python3 -m scn_tools.make_reference \\
        --model centerpoint --order zyx --grid 41x1440x1440 --seed 0 \\
        --features ../shared/data/nuscenes-centerpoint/in_features.torch.fp16.tensor \\
        --indices  ../shared/data/nuscenes-centerpoint/in_indices_zyx.torch.int32.tensor \\
        --onnx centerpoint.zyx.onnx --output centerpoint.zyx.ref.tensor

The reference is computed in float64 from the fp16-rounded features and the fp16 weights stored in the
ONNX file, and written as float32 (or float16 with ``--dtype float16``). ``--grid`` and the indices are in
the ``--order`` index order (for ``xyz`` use the ``(b, x, y, z)`` indices and e.g. ``1440x1440x41``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: import the package, then resolve the relative imports in it
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import scn_tools  # noqa: E402,F401
    __package__ = "scn_tools"

import numpy as np  # noqa: E402

from . import models, tensor_io  # noqa: E402
from .export_onnx import export_onnx  # noqa: E402


def _parse_grid(text: str):
    parts = text.lower().split("x")
    try:
        grid = tuple(int(p) for p in parts)
    except ValueError:
        grid = ()
    if len(grid) != 3 or any(g <= 0 for g in grid):
        raise argparse.ArgumentTypeError(f"grid must look like D0xD1xD2 with positive sizes, got {text!r}")
    return grid


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return v


def _parse_scale(text: str):
    if text == "nuscenes":
        return models.NUSCENES_INPUT_SCALE
    if text == "none":
        return None
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--input-scale: 'nuscenes', 'none' or comma list, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="make_reference", description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, choices=models.MODELS)
    p.add_argument("--order", required=True, choices=models.ORDERS, help="index order of indices / grid / export")
    p.add_argument("--features", required=True, help=".tensor [N, Cin] float16 or float32 (rounded to fp16)")
    p.add_argument("--indices", required=True, help=".tensor [N, 4] int32 (b, i0, i1, i2) in --order")
    p.add_argument("--grid", required=True, type=_parse_grid, help="spatial shape D0xD1xD2 in --order")
    p.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    p.add_argument("--onnx", required=True, help="ONNX file to write")
    p.add_argument("--output", required=True, help="reference dense output .tensor to write")
    p.add_argument("--dtype", default="float32", choices=("float32", "float16"), help="output dtype")
    p.add_argument("--batch-size", type=_positive_int, default=None, help="default: max batch index + 1")
    p.add_argument("--input-scale", type=_parse_scale, default=models.NUSCENES_INPUT_SCALE,
                   help="per-input-channel normalisation folded into conv0: 'nuscenes' (default), 'none', "
                        "or a comma list of Cin positive values")
    p.add_argument("--num-voxels", choices=("dynamic", "concrete"), default="dynamic",
                   help="ONNX input dim 0: dim_param 'N' (default) or the frame's voxel count")
    p.add_argument("--quiet", action="store_true", help="no per-layer table")
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    loaded = []
    for opt, path in (("--features", args.features), ("--indices", args.indices)):
        try:
            loaded.append(tensor_io.load_tensor(path))
        except (OSError, tensor_io.TensorFormatError) as e:  # the messages name the file
            parser.error(f"{opt}: {e}")
    feats, idx = loaded
    if feats.ndim != 2 or feats.dtype not in (np.float16, np.float32):
        raise SystemExit(f"error: features must be [N, C] float16/float32, got {feats.shape} {feats.dtype}")
    if idx.ndim != 2 or idx.shape[1] != 4 or idx.dtype != np.int32:
        raise SystemExit(f"error: indices must be [N, 4] int32, got {idx.shape} {idx.dtype}")
    if idx.shape[0] != feats.shape[0]:
        raise SystemExit(f"error: {feats.shape[0]} feature rows but {idx.shape[0]} index rows")
    batch = args.batch_size if args.batch_size is not None else (int(idx[:, 0].max()) + 1 if len(idx) else 1)
    scale = args.input_scale
    if scale is not None and len(scale) != feats.shape[1]:
        if args.input_scale is models.NUSCENES_INPUT_SCALE:
            raise SystemExit(f"error: the default nuScenes input scale needs 5 channels, features have "
                             f"{feats.shape[1]}; pass --input-scale none or a list")
        raise SystemExit(f"error: --input-scale has {len(scale)} values, features have {feats.shape[1]}")

    try:
        graph = models.build_graph(args.model, args.order, args.grid, seed=args.seed, batch_size=batch,
                                   in_channels=feats.shape[1], input_scale=scale)
        n = feats.shape[0] if args.num_voxels == "concrete" else "N"
        export_onnx(graph, args.onnx, num_voxels=n)
        t1 = time.perf_counter()
        out, stats = models.run_graph(graph, feats, idx, collect_stats=True)
    except ValueError as e:
        raise SystemExit(f"error: {e}")
    t2 = time.perf_counter()
    out_np = out.numpy().astype(np.float32 if args.dtype == "float32" else np.float16)
    if not np.isfinite(out_np).all():
        raise SystemExit(f"error: reference output is not finite in {args.dtype}")
    tensor_io.save_tensor(args.output, out_np)

    if not args.quiet:
        print(f"{'node':>4} {'name':<22} {'kind':<7} {'key':<13} {'in':>7} {'out':>7} {'out grid':<16} "
              f"{'pairs':>9} {'std':>8}")
        for s in stats:
            print(f"{s.node:>4} {s.name:<22} {s.kind:<7} {str(s.key):<13} {s.in_sites:>7} {s.out_sites:>7} "
                  f"{'x'.join(map(str, s.out_shape)):<16} {s.pairs:>9} {s.std:>8.3f}")
    active = out[out != 0]
    print(f"model {args.model} order {args.order} grid {'x'.join(map(str, graph.grid))} seed {args.seed}: "
          f"{feats.shape[0]} voxels -> output {list(out.shape)}")
    print(f"output: std {float(out.std()):.4f}, nonzero {active.numel()} ({active.numel() / out.numel():.2%}), "
          f"nonzero std {float(active.std()) if active.numel() > 1 else 0.0:.4f}, max |x| {float(out.abs().max()):.3f}")
    print(f"time: load+export {t1 - t0:.2f} s, reference {t2 - t1:.2f} s, total {time.perf_counter() - t0:.2f} s")
    print(f"wrote {args.onnx} and {args.output} ({args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
