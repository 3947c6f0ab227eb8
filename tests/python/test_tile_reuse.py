"""tools/bench/tile_reuse.py: maps, strided sites and per-tile reuse on hand-checked site sets."""
import importlib.util
import pathlib

import numpy as np
import pytest

from scn_tools.tensor_io import save_tensor

PATH = pathlib.Path(__file__).resolve().parents[2] / "tools" / "bench" / "tile_reuse.py"
spec = importlib.util.spec_from_file_location("tile_reuse", PATH)
tr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tr)


def line(n):
    """n sites along x at z = y = 0."""
    return np.stack([np.zeros(n, np.int64), np.zeros(n, np.int64), np.arange(n, dtype=np.int64)], axis=1)


def test_subm_map_of_a_line_has_only_the_x_neighbours():
    m = tr.subm_map(line(8), (1, 1, 8))
    centre = 9 + 3 + 1  # (dz, dy, dx) = (0, 0, 0); dx -1 and +1 are offsets 12 and 14
    assert list(m[:, centre]) == list(range(8))
    assert list(m[:, centre - 1]) == [-1] + list(range(7))
    assert list(m[:, centre + 1]) == list(range(1, 8)) + [-1]
    others = np.delete(m, [centre - 1, centre, centre + 1], axis=1)
    assert np.all(others == -1)


def test_map_rows_keep_the_given_order():
    c = line(5)[[3, 0, 4, 1, 2]]
    m = tr.subm_map(c, (1, 1, 5))
    # row 0 is x = 3: its dx = -1 neighbour x = 2 is row 4, its dx = +1 neighbour x = 4 is row 2
    assert (m[0, 12], m[0, 13], m[0, 14]) == (4, 0, 2)


def test_tile_stats_of_a_line():
    s = tr.tile_stats(tr.subm_map(line(8), (1, 1, 8)), 4)
    # tile 0 (x 0..3) reads rows 0..4, tile 1 (x 4..7) rows 3..7: 11 pairs and 5 distinct rows each
    assert s == {"tiles": 2, "pairs": 22, "unique": 10, "windows": 10, "max_unique": 5, "max_windows": 5}


def test_windows_count_rows_between_neighbours_that_are_not_read():
    # sites x = 0 and x = 9 on y = 0, x = 0..9 on y = 1: row order y-major; one tile of the two y = 0 sites
    c = np.concatenate([np.array([[0, 0, 0], [0, 0, 9]]), np.stack([np.zeros(10, int), np.ones(10, int),
                                                                    np.arange(10)], axis=1)])
    m = tr.subm_map(c, (1, 2, 10))
    s = tr.tile_stats(m[:2], 2)
    # y = 1 neighbours of the tile: x 0, 1 (rows 2, 3) and x 8, 9 (rows 10, 11): 4 distinct, window 2..11
    assert s["unique"] == 2 + 4 and s["windows"] == 2 + 10


def test_strided_sites_follow_spconvs_rule():
    out, g, _ = tr.strided_map(line(8), (1, 1, 8), pad=(1, 1, 1))
    assert g == (1, 1, 4)
    assert [tuple(r) for r in out] == [(0, 0, x) for x in range(4)]
    out, g, _ = tr.strided_map(np.array([[0, 0, 5]]), (1, 1, 8), pad=(0, 0, 0))
    assert g == (0, 0, 3) and len(out) == 0  # no z output: the grid shrinks to nothing along z


def test_byte_stats_of_a_line():
    m = tr.subm_map(line(8), (1, 1, 8))
    b = tr.byte_stats(m, 4, 16, 32)
    # 22 entries x 16 halves; both tiles use offsets 12, 13, 14 (dx -1, 0, +1): 6 slices of 16 x 32 halves,
    # 3 when the two tiles share them; 8 output rows of 32 halves
    assert b == {"gathers": 22 * 32, "weights": 6 * 1024, "weights2": 3 * 1024, "output": 8 * 64}
    # three tiles of 3 rows: the odd tile is paired with nothing; its offsets still count once
    b3 = tr.byte_stats(m, 3, 16, 16)
    assert b3["weights"] == 3 * 3 * 512 and b3["weights2"] == (3 + 3) * 512


def test_tile_steps_count_each_tiles_offsets_per_split_cta():
    m = tr.subm_map(line(8), (1, 1, 8))
    # every 4-row tile of a line uses offsets 12, 13, 14 only
    assert list(tr.tile_steps(m, 4)) == [3, 3]
    # split in two: CTA 0 takes the even offsets (12, 14), CTA 1 the odd one (13), tile-major
    assert list(tr.tile_steps(m, 4, 2)) == [2, 1, 2, 1]
    # a single site: only its centre; the absent padding rows of the last tile add nothing
    one = tr.subm_map(np.array([[0, 0, 0]]), (1, 1, 1))
    assert list(tr.tile_steps(one, 16, 3)) == [0, 1, 0]  # 13 = 1 (mod 3)


def test_merged_length():
    assert tr.merged_length([(0, 4), (3, 7), (10, 10)]) == 9
    assert tr.merged_length([(5, 6), (0, 9)]) == 10


def test_cli_prints_every_level_and_rejects_bad_indices(tmp_path, capsys):
    rng = np.random.default_rng(3)
    cells = rng.choice(16 * 32 * 32, size=400, replace=False)
    z, rem = np.divmod(cells, 32 * 32)
    y, x = np.divmod(rem, 32)
    idx = np.stack([np.zeros_like(z), z, y, x], axis=1).astype(np.int32)
    p = tmp_path / "idx.tensor"
    save_tensor(p, idx)
    assert tr.main([str(p), "--grid", "16x32x32", "--bm", "64"]) == 0
    out = capsys.readouterr().out
    assert "400 sites" in out
    # three tables (reuse, MMA work, bytes): level 0 twice (input and bitmap order), levels 1..3
    assert "| compacted per offset |" in out
    assert "| union gathers MB |" in out
    # each quantity is printed once: the reuse table has no byte columns (they are the third table's)
    assert "gather MB now" not in out and "| union MB |" not in out
    reuse_header = next(l for l in out.splitlines() if l.startswith("| level | rows |"))
    assert reuse_header.count("|") == 11
    # three tables of five site sets, then the steps table: a stride-2 and a subm conv per level 1..3, then the
    # steps' spread: the subm convs of levels 2..3, unsplit and split in two
    assert "| steps/tile, bitmap | neighbour-rows | own mask |" in out
    assert "| steps per CTA: min | median | mean | max |" in out
    assert sum(1 for l in out.splitlines() if l.startswith("| ") and "| 64 |" in l) == 3 * 5 + 3 * 2 + 2 * 2
    bad = tmp_path / "bad.tensor"
    save_tensor(bad, idx[:, :3].copy())
    assert tr.main([str(bad), "--grid", "16x32x32"]) == 2
    assert "expected indices [N, 4]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tr.main([str(p), "--grid", "16x32"])


def test_mma_stats_of_a_line():
    # 32 sites along x, tiles of 32 rows: the centre offset and dx = +-1 have 32, 31 and 31 entries
    s = tr.mma_stats(tr.subm_map(line(32), (1, 1, 32)), 32)
    assert s["present"] == (32 + 31 + 31) / 16
    assert s["compacted"] == 2 + 2 + 2  # ceil(32 / 16), ceil(31 / 16) twice
    assert s["block16"] == 2 * 3  # both 16-row blocks at each of the three offsets
    assert s["tile"] == 3 * 2  # one tile at three offsets, 2 blocks each
    assert s["dense"] == 2 * 27


def test_mma_stats_skips_blocks_without_neighbours():
    # two sites far apart on x: each 16-row block (padded) has only its own site at the centre offset
    m = tr.subm_map(np.array([[0, 0, 0], [0, 0, 20]]), (1, 1, 32))
    s = tr.mma_stats(np.concatenate([m[:1], np.full((15, 27), -1), m[1:]]), 32)
    assert s["block16"] == 2 and s["compacted"] == 1 and s["tile"] == 2
    with pytest.raises(ValueError):
        tr.mma_stats(m, 24)



def test_strided_map_rows_are_in_bitmap_order_with_every_pair():
    # sites x = 0..5 on a line: stride-2 outputs x' = 0..2 (pad 1: x' reads x = 2x' - 1 .. 2x' + 1)
    c = line(6)[[5, 2, 0, 4, 1, 3]]
    out, g, m = tr.strided_map(c, (1, 1, 6), pad=(1, 1, 1))
    assert g == (1, 1, 3) and [tuple(r) for r in out] == [(0, 0, 0), (0, 0, 1), (0, 0, 2)]
    centre = 13  # (dz, dy) = (0, 0): offsets 12, 13, 14 read x = 2x' - 1, 2x', 2x' + 1
    row_of = {int(x): i for i, x in enumerate(c[:, 2])}
    for o in range(3):
        for dx in (-1, 0, 1):
            x = 2 * o + dx
            assert m[o, centre + dx] == (row_of[x] if 0 <= x < 6 else -1)
    assert (m >= 0).sum() == 6 + 2  # x = 1, 3 are read by two outputs each; x = 5 by one


def test_neighbour_rows_order_sorts_stably_by_the_six_kernel_rows():
    # three sites on z = 1 (bitmap order: x = 0, 2, 4 at y = 1) and one site at z = 0, y = 1, x = 3
    c = np.array([[0, 1, 3], [1, 1, 0], [1, 1, 2], [1, 1, 4]])
    order = tr.neighbour_rows_order(tr.subm_map(c, (3, 3, 5)))
    # keys: (0,1,3): rows at z = 1, y = 1 (q = 4) hold x = 2, 4 -> bit 4; (1,1,0): none; (1,1,2) and (1,1,4):
    # kernel row z = 0, y = 1 (q = 1) holds x = 3 -> bit 1. Ascending keys, bitmap order within a key.
    assert list(order) == [1, 2, 3, 0]


def test_mask_order_groups_rows_by_their_offsets():
    m = np.array([[-1, 5, -1], [3, -1, -1], [-1, 7, -1], [2, 4, -1]])
    assert list(tr.mask_order(m)) == [1, 0, 2, 3]  # masks 0b010, 0b001, 0b010, 0b011
