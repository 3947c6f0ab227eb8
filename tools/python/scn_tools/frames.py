"""Deterministic synthetic LiDAR frames for the model zoo (numpy only).

A multi-beam rotating sensor is ray-cast against a flat ground and a seeded set of boxes (cars, a few
buildings, poles); hits get range noise and an intensity, then are voxelised (mean of the point features
per voxel, like a mean VFE). Everything depends only on the arguments, so a frame is the same on every
machine. The features are rounded to fp16 (the ONNX input type), so the float64 reference and the
engine read the same numbers.

Small test frames: :func:`plane_sites` (random sites clustered on planes, for unit tests of exporters and
bindings). Presets: :func:`nuscenes_frame` (32 beams, 5 features x, y, z, intensity, time-lag; CenterPoint grid
41 x 1440 x 1440 zyx), :func:`kitti_frame` (64 beams, front 90 degrees, 4 features x, y, z, intensity;
OpenPCDet grid 41 x 1600 x 1408 zyx) and :func:`semantickitti_frame` (64 beams, all around, 4 features,
a small grid whose sizes divide by 16, for a UNet).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np


@dataclass
class Frame:
    """Voxelised frame: ``features`` fp16 [N, C], ``indices`` int32 [N, 4] (b, i0, i1, i2) in ``order``,
    ``grid`` (s0, s1, s2) in ``order``."""

    name: str
    features: np.ndarray
    indices: np.ndarray
    grid: Tuple[int, int, int]
    order: str
    batch_size: int = 1

    def reordered(self, order: str) -> "Frame":
        if order == self.order:
            return self
        return Frame(self.name, self.features, np.ascontiguousarray(self.indices[:, [0, 3, 2, 1]]),
                     tuple(self.grid[::-1]), order, self.batch_size)  # type: ignore[arg-type]

    @property
    def num_voxels(self) -> int:
        return int(self.indices.shape[0])


def _scene_boxes(rng: np.random.Generator, extent: float, n_cars: int, n_buildings: int, n_poles: int,
                 front_only: bool) -> np.ndarray:
    """Boxes [M, 8]: cx, cy, cz (bottom), length, width, height, yaw, reflectivity."""
    boxes = []
    for _ in range(n_cars):
        r = rng.uniform(4.0, extent * 0.9)
        a = rng.uniform(-np.pi / 4, np.pi / 4) if front_only else rng.uniform(-np.pi, np.pi)
        boxes.append([r * np.cos(a), r * np.sin(a), 0.0, rng.uniform(3.8, 4.8), rng.uniform(1.6, 2.0),
                      rng.uniform(1.4, 1.8), rng.uniform(-np.pi, np.pi), rng.uniform(0.2, 0.9)])
    for _ in range(n_buildings):
        r = rng.uniform(extent * 0.5, extent * 0.95)
        a = rng.uniform(-np.pi / 4, np.pi / 4) if front_only else rng.uniform(-np.pi, np.pi)
        boxes.append([r * np.cos(a), r * np.sin(a), 0.0, rng.uniform(6, 15), rng.uniform(4, 10),
                      rng.uniform(3, 8), rng.uniform(-np.pi, np.pi), rng.uniform(0.1, 0.5)])
    for _ in range(n_poles):
        r = rng.uniform(3.0, extent * 0.8)
        a = rng.uniform(-np.pi / 4, np.pi / 4) if front_only else rng.uniform(-np.pi, np.pi)
        boxes.append([r * np.cos(a), r * np.sin(a), 0.0, 0.3, 0.3, rng.uniform(3, 6), 0.0, rng.uniform(0.3, 1.0)])
    return np.asarray(boxes, dtype=np.float64).reshape(-1, 8)


def _ray_cast(origin: np.ndarray, dirs: np.ndarray, boxes: np.ndarray, max_range: float):
    """Nearest hit distance [R] (inf = none) and reflectivity [R] of rays from ``origin`` (ground z = 0)."""
    t_best = np.full(len(dirs), np.inf)
    refl = np.zeros(len(dirs))
    down = dirs[:, 2] < -1e-6
    t_ground = np.where(down, -origin[2] / np.where(down, dirs[:, 2], -1.0), np.inf)
    t_best = np.minimum(t_best, t_ground)
    refl[np.isfinite(t_ground)] = 0.15
    for cx, cy, cz, ln, wd, ht, yaw, rf in boxes:
        c, s = np.cos(yaw), np.sin(yaw)
        o = origin - np.array([cx, cy, cz + ht / 2])
        ol = np.array([c * o[0] + s * o[1], -s * o[0] + c * o[1], o[2]])
        dl = np.stack([c * dirs[:, 0] + s * dirs[:, 1], -s * dirs[:, 0] + c * dirs[:, 1], dirs[:, 2]], axis=1)
        half = np.array([ln / 2, wd / 2, ht / 2])
        with np.errstate(divide="ignore", invalid="ignore"):
            t1 = (-half - ol) / dl
            t2 = (half - ol) / dl
        tmin = np.nanmax(np.minimum(t1, t2), axis=1)
        tmax = np.nanmin(np.maximum(t1, t2), axis=1)
        hit = (tmin <= tmax) & (tmin > 0) & (tmin < t_best)
        t_best[hit] = tmin[hit]
        refl[hit] = rf
    t_best[t_best > max_range] = np.inf
    return t_best, refl


def lidar_points(seed: int, beams: Sequence[float], azimuths: int, height: float, max_range: float,
                 n_cars: int = 12, n_buildings: int = 4, n_poles: int = 10, front_only: bool = False,
                 sweeps: int = 1, sweep_dt: float = 0.05, ego_speed: float = 8.0) -> np.ndarray:
    """Points [P, 5]: x, y, z (sensor frame, ground at z = -height), intensity in [0, 1], time-lag."""
    rng = np.random.default_rng([int(seed), 1])
    boxes = _scene_boxes(rng, max_range, n_cars, n_buildings, n_poles, front_only)
    elev = np.deg2rad(np.asarray(beams, dtype=np.float64))
    az = np.linspace(-np.pi, np.pi, azimuths, endpoint=False)
    if front_only:
        az = az[np.abs(az) <= np.pi / 4]
    ee, aa = np.meshgrid(elev, az, indexing="ij")
    dirs = np.stack([np.cos(ee) * np.cos(aa), np.cos(ee) * np.sin(aa), np.sin(ee)], axis=-1).reshape(-1, 3)
    out = []
    for k in range(sweeps):
        ego = np.array([-k * sweep_dt * ego_speed, 0.0, height])
        jitter = rng.uniform(-0.5, 0.5, size=dirs.shape) * np.array([1e-3, 1e-3, 2e-4])
        d = dirs + jitter
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        t, refl = _ray_cast(ego, d, boxes, max_range)
        ok = np.isfinite(t)
        t = t[ok] + rng.normal(0.0, 0.02, size=int(ok.sum()))
        p = ego + d[ok] * t[:, None]
        p[:, 0] -= ego[0]  # into the current sensor frame (the ego moved forward)
        p[:, 2] -= height
        inten = np.clip(refl[ok] * (1.0 - 0.4 * t / max_range) + rng.normal(0, 0.03, size=len(t)), 0.0, 1.0)
        out.append(np.concatenate([p, inten[:, None], np.full((len(t), 1), k * sweep_dt)], axis=1))
    return np.concatenate(out, axis=0)


def voxelize(points: np.ndarray, pc_min: Sequence[float], voxel: Sequence[float], grid_xyz: Sequence[int],
             channels: int, max_voxels: Optional[int], seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Mean of the first ``channels`` point features per voxel; indices (0, z, y, x) int32 sorted by key,
    at most ``max_voxels`` (a seeded subset)."""
    pc_min = np.asarray(pc_min, dtype=np.float64)
    voxel = np.asarray(voxel, dtype=np.float64)
    grid = np.asarray(grid_xyz, dtype=np.int64)
    c = np.floor((points[:, :3] - pc_min) / voxel).astype(np.int64)
    ok = ((c >= 0) & (c < grid)).all(axis=1)
    c, pts = c[ok], points[ok]
    keys = (c[:, 2] * grid[1] + c[:, 1]) * grid[0] + c[:, 0]
    uniq, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    feats = np.zeros((len(uniq), channels))
    np.add.at(feats, inv, pts[:, :channels])
    feats /= counts[:, None]
    x = uniq % grid[0]
    y = (uniq // grid[0]) % grid[1]
    z = uniq // (grid[0] * grid[1])
    idx = np.stack([np.zeros_like(z), z, y, x], axis=1)
    if max_voxels is not None and len(idx) > max_voxels:
        keep = np.sort(np.random.default_rng([int(seed), 2]).choice(len(idx), max_voxels, replace=False))
        idx, feats = idx[keep], feats[keep]
    return feats.astype(np.float16), idx.astype(np.int32)


HDL32_BEAMS = np.linspace(-30.67, 10.67, 32)
HDL64_BEAMS = np.linspace(-24.8, 2.0, 64)


def nuscenes_frame(seed: int = 0, azimuths: int = 400, sweeps: int = 2, max_range: float = 30.0,
                   max_voxels: Optional[int] = None) -> Frame:
    """nuScenes-like: 32 beams, grid range [-54, 54]^2 x [-5, 3], voxel (0.075, 0.075, 0.2) -> grid zyx
    (41, 1440, 1440) (CenterPoint pads z to 41), features x, y, z, intensity (0..255), time-lag. Returns
    within ``max_range`` metres only (the default 30 m keeps the float64 reference at a few seconds:
    the 128-channel stride-8 level dominates the cost and grows with the area covered)."""
    pts = lidar_points(seed, HDL32_BEAMS, azimuths, height=1.84, max_range=max_range, sweeps=sweeps)
    pts[:, 3] *= 255.0
    feats, idx = voxelize(pts, (-54.0, -54.0, -5.0), (0.075, 0.075, 0.2), (1440, 1440, 41), 5, max_voxels, seed)
    return Frame("nuscenes", feats, idx, (41, 1440, 1440), "zyx")


def kitti_frame(seed: int = 0, azimuths: int = 2400, max_voxels: Optional[int] = 12000) -> Frame:
    """KITTI-like: 64 beams, front 90 degrees, range x [0, 70.4], y [-40, 40], z [-3, 1], voxel
    (0.05, 0.05, 0.1) -> grid zyx (41, 1600, 1408) (OpenPCDet: grid_size[::-1] + [1, 0, 0]),
    features x, y, z, intensity."""
    pts = lidar_points(seed, HDL64_BEAMS, azimuths, height=1.73, max_range=70.0, front_only=True,
                       n_cars=14, n_buildings=5, n_poles=12)
    feats, idx = voxelize(pts, (0.0, -40.0, -3.0), (0.05, 0.05, 0.1), (1408, 1600, 41), 4, max_voxels, seed)
    return Frame("kitti", feats, idx, (41, 1600, 1408), "zyx")


def semantickitti_frame(seed: int = 0, azimuths: int = 720, grid_zyx: Tuple[int, int, int] = (32, 256, 256),
                        voxel: float = 0.2, max_voxels: Optional[int] = 6000) -> Frame:
    """SemanticKITTI-like: 64 beams all around, cubic voxels of ``voxel`` metres centred on the sensor
    (z from -2.4 m), features x, y, z, intensity. The grid sizes divide by 16 (a 4-level UNet)."""
    gz, gy, gx = grid_zyx
    if any(g % 16 for g in grid_zyx):
        raise ValueError(f"grid {grid_zyx} must divide by 16")
    extent = min(gx, gy) * voxel / 2
    pts = lidar_points(seed, HDL64_BEAMS, azimuths, height=1.73, max_range=extent * 1.42, n_cars=10,
                       n_buildings=5, n_poles=10)
    feats, idx = voxelize(pts, (-gx * voxel / 2, -gy * voxel / 2, -2.4), (voxel,) * 3, (gx, gy, gz), 4,
                          max_voxels, seed)
    return Frame("semantickitti", feats, idx, grid_zyx, "zyx")


def plane_sites(seed: int = 0, n: int = 300, grid: Tuple[int, int, int] = (12, 16, 20), channels: int = 4,
                batch: int = 1) -> Tuple[np.ndarray, np.ndarray]:
    """A small random frame for unit tests: per batch item, n unique sites clustered on two tilted planes
    (so 3x3x3 convs find neighbours), in random order, and fp16 features from a standard normal.
    Returns (features fp16 [M, channels], indices int32 [M, 4] (b, z, y, x)), M <= n * batch."""
    rng = np.random.default_rng(seed)
    z, y, x = grid
    rows = []
    for b in range(batch):
        for _ in range(2):
            yy, xx = rng.integers(0, y, n), rng.integers(0, x, n)
            zz = np.clip((rng.uniform(0.2, 0.8) * z + rng.uniform(-0.3, 0.3) * (yy - y / 2)).astype(int), 0, z - 1)
            rows.append(np.stack([np.full(n, b), zz, yy, xx], 1))
    idx = np.unique(np.concatenate(rows), axis=0)
    idx = idx[rng.permutation(len(idx))][:n * batch].astype(np.int32)
    feats = rng.standard_normal((len(idx), channels)).astype(np.float16)
    return feats, idx
