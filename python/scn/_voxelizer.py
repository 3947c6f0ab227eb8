"""scn.Voxelizer: raw LiDAR points [P, C] -> voxel features [N, F] and indices [N, 4] (docs/voxelize.md), on the CPU or
on CUDA, deterministic (CUDA and CPU give the same bits).

    vox = scn.Voxelizer("nuscenes-centerpoint", device="cuda")             # a preset, fields overridable
    features, indices = vox(points)                                         # torch tensors on the voxelizer's device
    bev = engine.run_points(points, vox)[0]                                 # points -> BEV, no host wait (CUDA)
    bev = engine.run_points([points0, points1], vox)[0]                     # a batch (max_batch=2 and up)

Points: float32 / float16 [P, point_columns] (torch, numpy, anything with ``__dlpack__``), host or on the voxelizer's
CUDA device; a list or tuple of such frames is one batched input (frame b's voxels with batch index b, after those of
frames 0..b-1). ``max_points`` bounds P and ``max_batch`` the frames of a call (buffers are sized once); more voxels
than ``max_voxels`` (per frame) is an scn.Error, never a silent truncation.
"""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Tuple

from scn import _scn
from scn._scn import Error
from scn._device import OnDevice, _call_stream, _parse_device, _refuse_grad, _torch

# the configuration fields an override may set (scn::VoxelizerConfig)
_FIELDS = ("range", "voxel_size", "max_points_per_voxel", "max_voxels", "reduction", "point_columns",
           "feature_columns", "order", "batch_index", "feature_dtype", "model_z_plus_one")


class VoxelizeStats(NamedTuple):
    """What the last run did with its points."""

    points: int
    voxels: int
    dropped_out_of_range: int
    dropped_non_finite: int
    dropped_full: int

    @property
    def kept(self) -> int:
        return self.points - self.dropped_out_of_range - self.dropped_non_finite - self.dropped_full


def presets() -> Tuple[str, ...]:
    """The names of the voxelizer presets."""
    return tuple(_scn.voxelizer_preset_names())


def _rebuild_voxelizer(args: Dict[str, Any]) -> "Voxelizer":
    a = dict(args)
    overrides = a.pop("overrides")
    return Voxelizer(a.pop("preset"), **a, **overrides)


class Voxelizer(OnDevice):
    """A voxelizer with its buffers sized once.

    preset: a preset name (``scn.voxelizer_presets()``), whose fields the keyword overrides replace: range (x0, y0,
        z0, x1, y1, z1, metres, half-open), voxel_size (x, y, z), max_points_per_voxel, max_voxels, reduction
        ("mean" / "first"), point_columns, feature_columns, order ("zyx" / "xyz"), batch_index, feature_dtype
        ("float16" / "float32"), model_z_plus_one.
    device: "auto", "cpu", "cuda" or "cuda:N" (as scn.Engine).
    max_points: the most points a call accepts (per frame).
    max_batch: the most frames a call accepts (a list of frames; CUDA sizes its batch buffers for max_batch frames).
    parallel_frames: CUDA, how many frames of a batch are voxelized at once, each in a workspace of its own (tens of
        MB at nuScenes scale, see workspace_bytes); 0 (default) means max_batch. Fewer: less memory, more time, the
        same voxels. 0 <= parallel_frames <= max_batch. The CPU voxelizer runs its frames one after another.
    """

    def __init__(self, preset: str = "nuscenes-centerpoint", *, device: Any = "auto", max_points: int = 400_000,
                 max_batch: int = 1, parallel_frames: int = 0, **overrides: Any):
        config = _scn.voxelizer_preset(str(preset))
        unknown = sorted(k for k in overrides if k not in _FIELDS)
        if unknown:
            raise Error(f"scn.Voxelizer: no setting {', '.join(map(repr, unknown))}; settings: {', '.join(_FIELDS)}")
        for key, value in overrides.items():
            try:
                setattr(config, key, value)
            except TypeError:
                preset_value = getattr(config, key)
                raise Error(f"scn.Voxelizer: {key}={value!r} has the wrong type (the preset's: {preset_value!r})") \
                    from None
        if overrides:  # messages name what the preset no longer is
            config.name = f"{config.name} with {', '.join(overrides)}"
        kind, index = _parse_device(device)
        self._impl = _scn._Voxelizer(config, kind, int(max_points), index, int(max_batch), int(parallel_frames))
        # what pickling rebuilds the voxelizer from (the device resolved)
        self._init_args = dict(preset=str(preset), device=f"{kind}:{index}" if kind == "cuda" else kind,
                               max_points=max_points, max_batch=max_batch, parallel_frames=parallel_frames,
                               overrides=dict(overrides))
        self._device_index = index
        self._cuda = self._impl.backend == "cuda"

    def __copy__(self) -> "Voxelizer":
        """Copies share it too (a new one would plan and allocate again)."""
        return self

    def __deepcopy__(self, memo: Dict[Any, Any]) -> "Voxelizer":
        """Deep copies share the voxelizer (it holds no trainable state; see Engine.__deepcopy__)."""
        return self

    def __reduce__(self):
        """Pickling stores the preset, settings and sizes; loading builds a new voxelizer from them."""
        return (_rebuild_voxelizer, (self._init_args,))

    @property
    def config(self):
        """The settings (a copy: changing it changes nothing here)."""
        return self._impl.config

    @property
    def grid(self) -> Tuple[int, int, int]:
        """The voxel grid (in the config's index order)."""
        return tuple(self._impl.config.voxel_grid)

    @property
    def model_grid(self) -> Tuple[int, int, int]:
        """The grid a network input of these voxels is bound with (one z plane more under spconv's convention)."""
        return tuple(self._impl.config.model_grid)

    @property
    def max_points(self) -> int:
        return self._impl.max_points

    @property
    def max_batch(self) -> int:
        return self._impl.max_batch

    @property
    def parallel_frames(self) -> int:
        """Frames of a batch voxelized at once (0 given: max_batch)."""
        return self._impl.parallel_frames

    @property
    def workspace_bytes(self) -> int:
        """Device memory the voxelizer holds (CUDA: a workspace per parallel frame and the output rows, max_batch x
        max_voxels); 0 on the CPU."""
        return self._impl.workspace_bytes

    def __repr__(self) -> str:
        c = self._impl.config
        return (f"scn.Voxelizer({c.name!r}, device={self.device!r}, range={tuple(c.range)}, "
                f"voxel_size={tuple(c.voxel_size)}, grid={self.grid}, max_voxels={c.max_voxels})")

    def __call__(self, points, *, stream: Any = None, outputs: str = "copy"):
        """Voxelizes points (one frame, or a list / tuple of frames: one batched input whose frame b has batch index
        b); returns (features [N, F], indices [N, 4] int32: batch, i0, i1, i2) on the voxelizer's device. Reading N
        waits for the voxelizer (CUDA); for a wait-free path into a network use ``Engine.run_points``.
        outputs="view": the voxelizer's own buffers (overwritten by its next call)."""
        if outputs not in ("copy", "view"):
            raise Error(f"outputs={outputs!r}: expected 'copy' or 'view'")
        torch = _torch()
        if torch is None and self._cuda and outputs == "copy":
            raise Error("scn.Voxelizer: outputs='copy' from a CUDA voxelizer needs torch; give outputs='view' (DLPack "
                        "capsules of the voxelizer's buffers)")
        for p in points if isinstance(points, (list, tuple)) else (points,):
            _refuse_grad("scn.Voxelizer", "points", p)
        self._impl.run(points, _call_stream(stream, self._device_index) if self._cuda else 0)
        fw = 2 if torch is not None else (0 if self._cuda else 1)
        got = tuple(self._impl.output(part, fw) for part in (0, 1))
        if outputs == "copy":
            got = tuple(t.clone() if torch is not None else t.copy() for t in got)
        return got

    @property
    def stats(self) -> VoxelizeStats:
        """Statistics of the last call (waits for it)."""
        return VoxelizeStats(*self._impl.stats())

    def check_errors(self) -> None:
        """Waits for the last call and raises scn.Error for more voxels than max_voxels."""
        self._impl.check_errors()
