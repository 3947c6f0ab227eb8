"""The shared nuScenes frame: kernel-map pair counts of CenterPoint's SpMiddleResNetFHD must match the
README of the data set (an independent count), in both index orders and for the BEVFusion layout.

Skips with a message when <repo>/../shared/data (or $SCN_SHARED_DATA_DIR) is missing. The full float64
reference on the frame (~25 s of CPU) runs only with SCN_SLOW_TESTS=1.
"""

import os

import numpy as np
import pytest

from scn_tools import models, tensor_io

# level: (voxels, pairs of each SubM layer); README of /work/shared/data/nuscenes-centerpoint
EXPECTED = {
    0: (79745, 591581),
    1: (69276, 969672),
    2: (29723, 483025),
    3: (10335, 172003),
}
FINAL_VOXELS = 7658


@pytest.fixture(scope="module")
def frame(nuscenes_dir):
    feats = tensor_io.load_tensor(nuscenes_dir / "in_features.torch.fp16.tensor")
    zyx = tensor_io.load_tensor(nuscenes_dir / "in_indices_zyx.torch.int32.tensor")
    xyz = tensor_io.load_tensor(nuscenes_dir / "in_indices_xyz.torch.int32.tensor")
    return feats, zyx, xyz


def test_frame_files_are_consistent(frame):
    feats, zyx, xyz = frame
    assert feats.shape == (79745, 5) and feats.dtype == np.float16
    assert zyx.shape == xyz.shape == (79745, 4) and zyx.dtype == np.int32
    np.testing.assert_array_equal(zyx[:, [0, 3, 2, 1]], xyz)


def _check_counts(rows, shapes):
    subm = [r for r in rows if r["kind"] == "subm"]
    assert len(subm) == 17 and len(rows) == 21
    for level in range(4):
        level_rows = subm[level * 4 + (1 if level else 0): (level + 1) * 4 + 1]
        voxels, pairs = EXPECTED[level]
        for r in level_rows:
            assert r["out_shape"] == shapes[level], r
            assert (r["in_sites"], r["out_sites"], r["pairs"]) == (voxels, voxels, pairs), r
    assert rows[-1]["out_sites"] == FINAL_VOXELS and rows[-1]["out_shape"] == shapes[4]


@pytest.mark.parametrize("model,order", [("centerpoint", "zyx"), ("centerpoint", "xyz"), ("bevfusion", "xyz")])
def test_pair_counts_match_the_readme(frame, model, order):
    _, zyx, xyz = frame
    zyx_shapes = [(41, 1440, 1440), (21, 720, 720), (11, 360, 360), (5, 180, 180), (2, 180, 180)]
    shapes = zyx_shapes if order == "zyx" else [s[::-1] for s in zyx_shapes]
    g = models.build_graph(model, order, shapes[0], seed=0)
    _check_counts(models.kernel_map_stats(g, zyx if order == "zyx" else xyz), shapes)


@pytest.mark.skipif(os.environ.get("SCN_SLOW_TESTS") != "1", reason="set SCN_SLOW_TESTS=1 (full reference, ~25 s)")
def test_full_reference_is_well_scaled(frame):
    feats, zyx, _ = frame
    g = models.build_graph("centerpoint", "zyx", (41, 1440, 1440), seed=0)
    out, stats = models.run_graph(g, feats, zyx, collect_stats=True)
    assert tuple(out.shape) == (1, 256, 180, 180)
    active = out[out != 0]
    # 7,658 voxels x 128 channels x (share of positive ReLU outputs)
    assert 0.3 * FINAL_VOXELS * 128 < active.numel() <= FINAL_VOXELS * 128
    assert 0.3 < float(active.std()) < 10.0, float(active.std())
    assert all(0.05 < s.std < 10.0 for s in stats), [round(s.std, 3) for s in stats]
    assert [s.out_sites for s in stats][-1] == FINAL_VOXELS
