#!/usr/bin/env python3
"""How much a conv tile could reuse its input rows: the analysis behind the union-staged tile
(docs/cuda_backend.md, "Where it stands after session 10").

The implicit GEMM gathers one input row per (output row, kernel offset) pair. A tile of BM consecutive
output rows needs far fewer distinct input rows than pairs when neighbouring outputs share neighbours.
For each level of a SECOND/CenterPoint-style backbone (submanifold 3x3x3 maps on the sites of each
level; levels after the first come from 3x3x3 stride-2 convs, as the engine builds them), this prints
per tile of BM rows, in the row order the CUDA engine uses (level 0: the input order; generated levels:
bitmap order, z-y-x lexicographic):

  pairs     map entries present (input rows the tile gathers today)
  unique    distinct input rows among them (rows a union-staged tile would load)
  windows   rows of the 9 (dz, dy) windows [min, max] of the entries of that offset row, merged
            (rows a window-staged tile would load; equals unique when the neighbours are contiguous)

and, in a second table, the MMA work in 16-row units (mma_stats): entries present / 16, each offset's rows
compacted per tile, 16-row blocks with a neighbour (what osplit and the mma.sync tiles run), whole tiles with a
neighbour at the offset (what a tile that only skips whole offsets runs, e.g. the wgmma tiles) and all of it;
in a third, the bytes a subm conv of the level moves through L2 (byte_stats: gathers, weight slices re-read per
tile, output; with union-staged gathers and with weights shared by two neighbouring tiles); in a fourth, the
whole-offset steps of the 64/128-row tiles of every conv (the subm convs of levels 1-3 and the stride-2 convs into
them) in bitmap order, in the engine's neighbour-row order of the output set, and sorted by each map's own mask;
in a fifth, how those steps spread over the tiles (and the CTAs of a split in two) of levels 2-3 in neighbour-row
order: the longest chains against the mean, what a tile's place in the grid could balance.

    /usr/bin/python3 tools/bench/tile_reuse.py <indices.tensor> --grid 41x1440x1440 [--bm 64,128]
        [--order zyx] [--channels 16,32,64,128] [--pads 1,1,1:0,1,1]

Needs numpy, torch and the project's Python tools (tools/python/scn_tools: the reference kernel maps and
the tensor reader).
"""
import argparse
import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from scn_tools import reference  # noqa: E402  (the project's spconv-semantics maps)
from scn_tools.tensor_io import load_tensor  # noqa: E402


def _indices(coords: np.ndarray) -> torch.Tensor:
    """(z, y, x) rows -> the reference's int32 [N, 4] indices of batch 0."""
    c = torch.from_numpy(np.ascontiguousarray(coords, dtype=np.int64))
    return torch.cat([torch.zeros(len(c), 1, dtype=torch.int64), c], dim=1).to(torch.int32)


def linear(coords: np.ndarray, grid) -> np.ndarray:
    """Linear cell index of (z, y, x) rows in a grid (bitmap order)."""
    return reference.linear_keys(_indices(coords), grid).numpy()


def subm_map(coords: np.ndarray, grid) -> np.ndarray:
    """[N, 27] input row of each output row's neighbour at each 3x3x3 offset (k = 9 (dz+1) + 3 (dy+1) +
    dx+1), -1 where there is none, from reference.build_subm_map. Rows keep the order of `coords`."""
    m = reference.build_subm_map(_indices(coords), grid, 3)
    out = np.full((len(coords), 27), -1, dtype=np.int64)
    out[m.pair_out.numpy(), m.pair_offset.numpy()] = m.pair_in.numpy()
    return out


def strided_map(coords: np.ndarray, grid, kernel=3, stride=2, pad=(1, 1, 1)):
    """The stride-2 conv from the sites `coords` (rows in their given order): its output sites in bitmap order,
    the output grid and the [N_out, kernel^3] input row of each output row at each offset (-1: none); no sites
    where the grid shrinks to nothing."""
    out_grid = tuple((g + 2 * p - kernel) // stride + 1 for g, p in zip(grid, pad))
    if min(out_grid) <= 0:
        return np.zeros((0, 3), dtype=np.int64), out_grid, np.zeros((0, kernel ** 3), dtype=np.int64)
    m = reference.build_conv_map(_indices(coords), grid, kernel, stride, pad)
    out = m.out_indices[:, 1:].to(torch.int64).numpy()
    order = np.argsort(linear(out, tuple(m.out_shape)), kind="stable")
    rank = np.empty(len(out), dtype=np.int64)
    rank[order] = np.arange(len(out))
    table = np.full((len(out), kernel ** 3), -1, dtype=np.int64)
    table[rank[m.pair_out.numpy()], m.pair_offset.numpy()] = m.pair_in.numpy()
    return out[order], tuple(m.out_shape), table


def neighbour_rows_order(subm: np.ndarray) -> np.ndarray:
    """The CUDA engine's neighbour-row order of a site set (docs/cuda_backend.md, Site sets), from the set's subm map
    (subm_map, rows in bitmap order): a permutation of its rows, stably sorted by a six-bit key whose bit q says that
    kernel row q of the six at z - 1 (q = 0..2: y - 1, y, y + 1) and z + 1 (q = 3..5) holds a site among x - 1 .. x + 1,
    i.e. that one of the map's three offsets 9 (dz + 1) + 3 (dy + 1) + 0..2 of that kernel row has an entry."""
    key = np.zeros(len(subm), dtype=np.int64)
    for q in range(6):
        first = (0 if q < 3 else 18) + 3 * (q % 3)  # the kernel row's offset at dx = -1
        key |= (subm[:, first:first + 3] >= 0).any(axis=1).astype(np.int64) << q
    return np.argsort(key, kind="stable")


def mask_order(m: np.ndarray) -> np.ndarray:
    """Rows stably sorted by their own offset mask (bit k: an entry at offset k): the fewest whole-offset steps
    a tile of consecutive rows could have, an order that serves one map only."""
    mask = ((m >= 0).astype(np.int64) << np.arange(m.shape[1], dtype=np.int64)).sum(axis=1)
    return np.argsort(mask, kind="stable")


def merged_length(intervals) -> int:
    """Rows covered by a union of closed intervals [lo, hi]."""
    total, end = 0, -1
    for lo, hi in sorted(intervals):
        if hi <= end:
            continue
        total += hi - max(lo, end + 1) + 1
        end = hi
    return total


def tile_stats(m: np.ndarray, bm: int) -> dict:
    """Per-tile pairs, distinct input rows and merged (dz, dy) window rows of a map, summed over tiles,
    with the largest tile's figures (the shared memory a staged tile would need)."""
    pairs = unique = windows = 0
    max_unique = max_windows = 0
    for r0 in range(0, len(m), bm):
        t = m[r0:r0 + bm]
        present = t[t >= 0]
        pairs += present.size
        u = np.unique(present).size
        intervals = []
        for g in range(9):  # offsets 3g .. 3g+2 share (dz, dy)
            e = t[:, 3 * g:3 * g + 3]
            e = e[e >= 0]
            if e.size:
                intervals.append((int(e.min()), int(e.max())))
        w = merged_length(intervals)
        unique += u
        windows += w
        max_unique, max_windows = max(max_unique, u), max(max_windows, w)
    return {"tiles": (len(m) + bm - 1) // bm, "pairs": pairs, "unique": unique, "windows": windows,
            "max_unique": max_unique, "max_windows": max_windows}


def tile_presence(m: np.ndarray, bm: int) -> np.ndarray:
    """[tiles, bm, K] bool: entry present, per tile of bm rows (the last tile padded with absent rows)."""
    tiles = (len(m) + bm - 1) // bm
    pad = np.full((tiles * bm, m.shape[1]), -1, dtype=m.dtype)
    pad[:len(m)] = m
    return (pad >= 0).reshape(tiles, bm, -1)


def mma_stats(m: np.ndarray, bm: int) -> dict:
    """MMA work of a map in 16-row units, summed over tiles of bm rows (bm a multiple of 16):
      present    entries present / 16 (the work if every row's neighbours were packed)
      compacted  per tile and offset, ceil(rows with a neighbour there / 16): each offset's rows compacted
      block16    16-row blocks with a neighbour at the offset (osplit and the mma.sync tiles skip the others)
      tile       tiles with a neighbour at the offset, x bm / 16 (a tile that only skips whole offsets)
      dense      every 16-row block at every offset"""
    if bm % 16:
        raise ValueError(f"tile rows {bm}: not a multiple of 16")
    per_tile = tile_presence(m, bm)
    tiles = len(per_tile)
    has = per_tile.reshape(tiles * bm, -1)
    return {"present": int(has.sum()) / 16,
            "compacted": int(np.ceil(per_tile.sum(axis=1) / 16).sum()),
            "block16": int(has.reshape(-1, 16, has.shape[1]).any(axis=1).sum()),
            "tile": int(per_tile.any(axis=1).sum()) * (bm // 16),
            "dense": tiles * (bm // 16) * has.shape[1]}


def tile_steps(m: np.ndarray, bm: int, split: int = 1) -> np.ndarray:
    """Whole-offset steps of each tile of bm rows (offsets any of its rows has an entry at), per CTA of a split
    class: with split S, CTA z of a tile takes the offsets k = z (mod S), so the result has S entries per tile
    (tile-major). The spread of these chains is what a tile's place in the grid could balance."""
    active = tile_presence(m, bm).any(axis=1)  # [tiles, K]
    k = np.arange(m.shape[1])
    return np.stack([active[:, k % split == z].sum(axis=1) for z in range(split)], axis=1).reshape(-1)


def byte_stats(m: np.ndarray, bm: int, cin: int, cout: int) -> dict:
    """Bytes one fp16 conv of a map moves through L2 with tiles of bm rows (the engine's gather-GEMM):
      gathers    one input row of cin halves per entry present
      weights    per tile, the cin x cout slice of every offset any of its rows uses (re-read by each tile)
      weights2   the same when two neighbouring tiles share each slice (a cluster of two multicasting it)
      output     the output rows (a fused residual reads as many again)"""
    n, k = m.shape
    active = tile_presence(m, bm).any(axis=1)
    if len(active) % 2:
        active = np.concatenate([active, np.zeros((1, k), dtype=bool)])
    slice_bytes = cin * cout * 2
    return {"gathers": int((m >= 0).sum()) * cin * 2,
            "weights": int(active.sum()) * slice_bytes,
            "weights2": int(active.reshape(-1, 2, k).any(axis=1).sum()) * slice_bytes,
            "output": n * cout * 2}


def parse_grid(s: str):
    g = tuple(int(v) for v in s.lower().split("x"))
    if len(g) != 3 or min(g) <= 0:
        raise argparse.ArgumentTypeError(f"grid '{s}': expected DxHxW with positive sizes")
    return g


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("indices", help="int32 [N, 4] indices .tensor (batch, then the grid axes)")
    ap.add_argument("--grid", type=parse_grid, required=True, help="grid in the indices' axis order, e.g. 41x1440x1440")
    ap.add_argument("--order", default="zyx", choices=("zyx", "xyz"), help="axis order of the indices (default zyx)")
    ap.add_argument("--bm", default="64,128", help="tile rows, comma-separated (default 64,128)")
    ap.add_argument("--channels", default="16,32,64,128", help="channels per level, for the byte columns")
    ap.add_argument("--pads", default="1,1,1:1,1,1:0,1,1",
                    help="padding (z,y,x) of the stride-2 convs into levels 1, 2, 3 (CenterPoint's default)")
    a = ap.parse_args(argv)
    idx = load_tensor(a.indices)
    if idx.ndim != 2 or idx.shape[1] != 4:
        print(f"{a.indices}: expected indices [N, 4], got shape {list(idx.shape)}", file=sys.stderr)
        return 2
    if np.any(idx[:, 0] != idx[0, 0]):
        print(f"{a.indices}: more than one batch index; give one frame", file=sys.stderr)
        return 2
    coords = idx[:, 1:].astype(np.int64)
    grid = a.grid
    if a.order == "xyz":
        coords, grid = coords[:, ::-1].copy(), grid[::-1]
    if np.any(coords < 0) or np.any(coords >= np.array(grid)):
        print(f"{a.indices}: indices outside the grid {'x'.join(map(str, a.grid))}", file=sys.stderr)
        return 2
    bms = [int(v) for v in a.bm.split(",")]
    channels = [int(v) for v in a.channels.split(",")]
    pads = [tuple(int(v) for v in p.split(",")) for p in a.pads.split(":")]
    sorted_input = bool(np.all(np.diff(linear(coords, grid)) > 0))
    print(f"{a.indices}: {len(coords)} sites, grid {'x'.join(map(str, grid))} (zyx); input rows "
          f"{'already' if sorted_input else 'not'} in bitmap order")
    # (the bytes these statistics imply are in the third table)
    print("| level | rows | order | BM | pairs/row | unique/tile | windows/tile | pairs/unique | max unique | "
          "max windows |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    levels = [(0, "input", coords, grid)]
    if not sorted_input:  # the same sites in bitmap order: what sorting the input rows would give
        levels.append((0, "bitmap", coords[np.argsort(linear(coords, grid), kind="stable")], grid))
    level_coords, level_grid = coords, grid
    strided = {}  # level -> the map of the stride-2 conv into it
    for level in range(1, 4):
        level_coords, level_grid, strided[level] = strided_map(level_coords, level_grid, pad=pads[level - 1])
        levels.append((level, "bitmap", level_coords, level_grid))
    maps = [subm_map(level_coords, level_grid) for _, _, level_coords, level_grid in levels]
    # per (level, BM): the reuse statistics, read by the first and the third table
    reuse = [{bm: tile_stats(m, bm) for bm in bms} for m in maps]
    for (level, order, _, _), m, r in zip(levels, maps, reuse):
        for bm in bms:
            s = r[bm]
            print(f"| {level} | {len(m)} | {order} | {bm} | {s['pairs'] / len(m):.1f} | "
                  f"{s['unique'] / s['tiles']:.0f} | {s['windows'] / s['tiles']:.0f} | "
                  f"{s['pairs'] / max(s['unique'], 1):.2f} | {s['max_unique']} | {s['max_windows']} |")
    # the MMA work in 16-row units: what each way of skipping absent neighbours leaves
    print()
    print("| level | order | BM | entries present | compacted per offset | 16-row blocks | whole-offset skip | dense |")
    print("|---|---|---|---|---|---|---|---|")
    for (level, order, _, _), m in zip(levels, maps):
        for bm in bms:
            s = mma_stats(m, bm)
            print(f"| {level} | {order} | {bm} | {s['present']:.0f} | {s['compacted']} | {s['block16']} | {s['tile']} | "
                  f"{s['dense']} |")
    # the bytes a subm conv of the level moves through L2 (its time at a given L2 bandwidth is their floor)
    print()
    print("| level | order | BM | gathers MB | weights MB | output MB | total MB | union gathers MB | weights MB, 2-tile "
          "cluster |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (level, order, _, _), m, r in zip(levels, maps, reuse):
        c = channels[min(level, len(channels) - 1)]
        for bm in bms:
            b = byte_stats(m, bm, c, c)
            union = r[bm]["unique"] * c * 2
            total = b["gathers"] + b["weights"] + b["output"]
            print(f"| {level} | {order} | {bm} | {b['gathers'] / 1e6:.1f} | {b['weights'] / 1e6:.1f} | "
                  f"{b['output'] / 1e6:.1f} | {total / 1e6:.1f} | {union / 1e6:.1f} | {b['weights2'] / 1e6:.1f} |")
    # whole-offset steps per tile (what a wgmma tile runs) by row order of the conv's output set
    print()
    print("| conv | rows | pairs/row | BM | tiles | steps/tile, bitmap | neighbour-rows | own mask |")
    print("|---|---|---|---|---|---|---|---|")
    # each generated level's neighbour-row order, read by this table and the next
    nbrs = {level: neighbour_rows_order(subm) for (level, _, out, _), subm in zip(levels, maps) if level and len(out)}
    for (level, _, out, _), subm in zip(levels, maps):
        if level not in nbrs:
            continue
        for name, m in ((f"stride 2 into level {level}", strided[level]), (f"subm level {level}", subm)):
            orders = (np.arange(len(m)), nbrs[level], mask_order(m))  # bitmap, neighbour rows, the map's own masks
            for bm in bms:
                steps = [tile_steps(m[order], bm).sum() for order in orders]
                tiles = (len(m) + bm - 1) // bm
                print(f"| {name} | {len(m)} | {(m >= 0).sum() / len(m):.2f} | {bm} | {tiles} | "
                      + " | ".join(f"{v / tiles:.1f}" for v in steps) + " |")
    # the spread of the tiles' chains in neighbour-row order (64-row tiles split in two: the level-3 split class)
    print()
    print("| conv | BM | split | CTAs | steps per CTA: min | median | mean | max |")
    print("|---|---|---|---|---|---|---|---|")
    for (level, _, _, _), subm in zip(levels, maps):
        if level < 2 or level not in nbrs:
            continue
        ordered = subm[nbrs[level]]
        for bm in bms:
            for split in (1, 2):
                s = tile_steps(ordered, bm, split)
                print(f"| subm level {level} | {bm} | {split} | {len(s)} | {s.min()} | {np.median(s):.0f} | "
                      f"{s.mean():.1f} | {s.max()} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
