"""scn.torch.SparseBackbone: an scn engine as a torch.nn.Module, to swap for a spconv backbone in one line;
scn.torch.PointsBackbone: raw points to the model's output (voxelizer and engine) as one module.

    from scn.torch import SparseBackbone
    model.pts_middle_encoder = SparseBackbone("encoder.onnx", spatial_shape=(41, 1440, 1440))   # mmdet3d

forward accepts what spconv backbones are called with:

* a spconv ``SparseConvTensor`` (or anything with ``features``, ``indices``, ``spatial_shape``, ``batch_size``);
* ``(features, indices, batch_size)`` (mmdetection3d's SparseEncoder) with ``spatial_shape`` given here;
* ``(features, indices, spatial_shape, batch_size)``;
* an OpenPCDet ``batch_dict`` (``voxel_features``, ``voxel_coords``, ``batch_size``): the engine outputs are
  stored in it under ``keys`` (one per output in output order, None = not stored; default: the ONNX output
  names, which the exporter numbers) and the dict is returned.

It returns the dense output (``output`` selects which, by name or position; sparse outputs come back as a
(features, indices) pair), cast to the input features' dtype (``output_dtype`` overrides: the CUDA engine
computes in fp16). The engine is not trained: parameters stay those of the exported file, and inputs that require
grad are refused while grad mode is on (no gradient would flow back; detach them or run under torch.no_grad()).
Inputs are copied between host and GPU to the engine's device; CUDA inputs on another GPU than the engine's are an
error (the module holds no tensors, so .to() / .cuda() do not move it: build it on its inputs' device). Copies and
deep copies (an EMA model) share the engine; pickling rebuilds it from its ONNX file and options.

Both modules raise the engine's device-side errors at the end of each call (``check_errors=True``, the default:
indices outside the grid or the batch, more voxels than the plan or the voxelizer holds), which waits for the
call's GPU work. With ``check_errors=False`` the call returns without waiting, and such an error is raised only
by ``module.engine.check_errors()``: until then the output may miss the rows concerned.

    from scn.torch import PointsBackbone
    net = PointsBackbone("backbone.onnx", "nuscenes-centerpoint", device="cuda", max_batch=4)
    bev = net([points0, points1])          # voxelization (mean of a voxel's points) + backbone, one batch

PointsBackbone replaces a detector's voxelization, mean voxel encoder (mmdetection3d's HardSimpleVFE, OpenPCDet's
MeanVFE) and sparse backbone: forward takes one frame's points [P, C] or a list of frames (frame b gets batch index
b) and returns the dense output in the points' dtype, through ``Engine.run_points`` (CUDA: no host wait).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Sequence, Union

import torch
from torch import nn

from scn._engine import Engine
from scn._scn import Error
from scn._voxelizer import Voxelizer


def _engine_of(who: str, model: Union[str, Engine], options: Mapping[str, Any]) -> Engine:
    """The given Engine (no options allowed), else one built from the ONNX path with `options`."""
    if isinstance(model, Engine):
        if options:
            raise Error(f"{who}: engine options {sorted(options)} given with an Engine")
        return model
    return Engine(model, **options)


def _check_output(who: str, engine: Engine, output: Union[int, str]) -> None:
    names = list(engine.outputs)
    if isinstance(output, str):
        if output not in names:
            raise Error(f"{who}: {engine.path} has no output {output!r}; outputs: {', '.join(names)}")
    elif not isinstance(output, int) or isinstance(output, bool) or not -len(names) <= output < len(names):
        raise Error(f"{who}: output={output!r}: expected an output name or a position below {len(names)} "
                    f"(outputs of {engine.path}: {', '.join(names)})")


def _on_engine_device(who: str, engine: Engine, name: str, t: torch.Tensor) -> torch.Tensor:
    """`t` on the engine's device: copied between host and GPU; a CUDA tensor on another GPU than the engine's is an
    error (a module does not move between GPUs with .to() / .cuda(): it holds no tensors; build it on the device of
    its inputs)."""
    dev = torch.device(engine.device)
    if t.device == dev:
        return t
    if t.is_cuda and dev.type == "cuda":
        raise Error(f"{who}: {name} on {t.device}, the engine {engine.path} on {engine.device}; build the module on "
                    f"its inputs' device (device='cuda:{t.device.index}')")
    return t.to(dev)


def _is_shape(x: Any) -> bool:
    """A spatial shape given positionally: three sizes as a list, tuple, torch.Size, 1-d tensor or numpy array."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__"):
        return False
    try:
        return len(x) == 3
    except TypeError:  # a 0-d tensor or array: a batch size
        return False


def _cast(value, dtype: torch.dtype):
    """An output in `dtype`: a dense tensor, or a sparse (features, indices) pair's features."""
    if isinstance(value, tuple):
        return value[0].to(dtype), value[1]
    return value.to(dtype)


class SparseBackbone(nn.Module):
    def __init__(self, model: Union[str, Engine], *, spatial_shape: Optional[Sequence[int]] = None,
                 output: Union[int, str] = 0, output_dtype: Optional[torch.dtype] = None,
                 keys: Optional[Sequence[Optional[str]]] = None, check_errors: bool = True, **engine_options: Any):
        super().__init__()
        self.engine = _engine_of("SparseBackbone", model, engine_options)
        self.check_errors = bool(check_errors)
        self.spatial_shape = tuple(int(s) for s in spatial_shape) if spatial_shape is not None else None
        self.output = output
        self.output_dtype = output_dtype
        _check_output("SparseBackbone", self.engine, output)
        names = list(self.engine.outputs)
        self.keys = list(keys) if keys is not None else names
        if len(self.keys) != len(names):
            raise Error(f"SparseBackbone: {len(self.keys)} keys for the {len(names)} outputs of {self.engine.path}")

    def extra_repr(self) -> str:
        return f"engine={self.engine!r}, spatial_shape={self.spatial_shape}, output={self.output!r}"

    def forward(self, *args: Any, **kwargs: Any):
        if len(args) == 1 and not kwargs and isinstance(args[0], Mapping):
            return self._forward_batch_dict(args[0])
        features, indices, grid, batch_size = self._parse(args, kwargs)
        outs = self._run(features, indices, grid, batch_size)
        return self._cast(outs[self.output], features.dtype)

    # ---- helpers ------------------------------------------------------------------------------
    def _parse(self, args, kwargs):
        if len(args) == 1 and not kwargs and hasattr(args[0], "features") and hasattr(args[0], "indices"):
            x = args[0]  # spconv SparseConvTensor
            return x.features, x.indices, tuple(x.spatial_shape), int(x.batch_size)
        names = ("features", "indices", "spatial_shape", "batch_size")
        if len(args) > len(names):
            raise Error(f"SparseBackbone.forward: {len(args)} positional arguments; expected at most "
                        "(features, indices, spatial_shape, batch_size)")
        values = dict(zip(names, args))
        if len(args) == 3 and not _is_shape(args[2]):
            values = {"features": args[0], "indices": args[1], "batch_size": args[2]}  # mmdet3d (f, coors, B)
        for k, v in kwargs.items():
            if k not in names or k in values:
                raise Error(f"SparseBackbone.forward: unexpected or repeated argument {k!r}")
            values[k] = v
        if "features" not in values or "indices" not in values:
            raise Error("SparseBackbone.forward: expected a SparseConvTensor, (features, indices, batch_size) or "
                        "(features, indices, spatial_shape, batch_size)")
        grid = values.get("spatial_shape", self.spatial_shape)
        if grid is None:
            raise Error("SparseBackbone.forward: no spatial_shape (pass it to forward or to SparseBackbone)")
        if "batch_size" not in values:
            raise Error("SparseBackbone.forward: no batch_size (expected (features, indices, batch_size) or "
                        "(features, indices, spatial_shape, batch_size))")
        try:
            grid = tuple(int(g) for g in grid)
            batch_size = int(values["batch_size"])
        except (TypeError, ValueError):
            raise Error(f"SparseBackbone.forward: spatial_shape {grid!r} / batch_size {values['batch_size']!r}: "
                        "expected three sizes and an integer") from None
        return values["features"], values["indices"], grid, batch_size

    def _run(self, features, indices, grid, batch_size):
        if features.dtype not in (torch.float16, torch.float32):
            features = features.float()
        if indices.dtype != torch.int32:
            indices = indices.int()
        features = _on_engine_device("SparseBackbone", self.engine, "features", features)
        indices = _on_engine_device("SparseBackbone", self.engine, "indices", indices)
        with self.engine._call_lock:  # the call and its check together (another thread's call could come between)
            outs = self.engine(features.contiguous(), indices.contiguous(), grid, batch_size)
            if self.check_errors:
                self.engine.check_errors()
        return outs

    def _cast(self, value, dtype):
        return _cast(value, self.output_dtype or dtype)

    def _forward_batch_dict(self, batch_dict):
        features = batch_dict["voxel_features"]
        coords = batch_dict["voxel_coords"]
        if self.spatial_shape is None:
            raise Error("SparseBackbone: an OpenPCDet batch_dict needs spatial_shape given to SparseBackbone")
        outs = self._run(features, coords, self.spatial_shape, int(batch_dict["batch_size"]))
        for key, value in zip(self.keys, outs):
            if key is not None:
                batch_dict[key] = self._cast(value, features.dtype)
        return batch_dict


class PointsBackbone(nn.Module):
    """model: an ONNX path or an Engine; voxelizer: a preset name (its settings overridden by ``voxel_settings``,
    which may also give the voxelizer's parallel_frames) or an scn.Voxelizer on the engine's device. max_batch: the
    most frames of a call (the engine and a voxelizer made here are sized for it); max_points: the most points of a
    frame. Other keywords are Engine options (device, precision, ...). ``output`` / ``output_dtype`` /
    ``check_errors`` as SparseBackbone."""

    def __init__(self, model: Union[str, Engine], voxelizer: Union[str, Voxelizer] = "nuscenes-centerpoint", *,
                 max_batch: int = 1, max_points: int = 400_000, voxel_settings: Optional[Mapping[str, Any]] = None,
                 output: Union[int, str] = 0, output_dtype: Optional[torch.dtype] = None, check_errors: bool = True,
                 **engine_options: Any):
        super().__init__()
        self.check_errors = bool(check_errors)
        # an engine built here is sized for max_batch frames; a given one keeps its own
        options = engine_options if isinstance(model, Engine) else {"max_batch": int(max_batch), **engine_options}
        self.engine = _engine_of("PointsBackbone", model, options)
        if isinstance(voxelizer, Voxelizer):
            if voxel_settings:
                raise Error(f"PointsBackbone: voxel_settings {sorted(voxel_settings)} given with a Voxelizer")
            self.voxelizer = voxelizer
        else:
            self.voxelizer = Voxelizer(str(voxelizer), device=self.engine.device, max_points=int(max_points),
                                       max_batch=int(max_batch), **dict(voxel_settings or {}))
        if self.voxelizer.device != self.engine.device:
            raise Error(f"PointsBackbone: the voxelizer runs on {self.voxelizer.device}, the engine "
                        f"{self.engine.path} on {self.engine.device}; create both on one device")
        _check_output("PointsBackbone", self.engine, output)
        self.output = output
        self.output_dtype = output_dtype

    def extra_repr(self) -> str:
        return f"engine={self.engine!r}, voxelizer={self.voxelizer!r}, output={self.output!r}"

    def forward(self, points):
        frames = list(points) if isinstance(points, (list, tuple)) else None
        given = frames if frames is not None else [points]
        if not given or not all(isinstance(p, torch.Tensor) for p in given):
            raise Error("PointsBackbone.forward: expected a points tensor [P, C] or a non-empty list of them")
        ready = [p if p.dtype in (torch.float16, torch.float32) else p.float() for p in given]
        ready = [_on_engine_device("PointsBackbone", self.engine, "points", p).contiguous() for p in ready]
        with self.engine._call_lock:  # the call and its check together (another thread's call could come between)
            outs = self.engine.run_points(ready if frames is not None else ready[0], self.voxelizer)
            if self.check_errors:
                self.engine.check_errors()  # the voxelizer's first (more voxels than its max_voxels), then the engine's
        dtype = self.output_dtype or given[0].dtype
        return _cast(outs[self.output], dtype if dtype.is_floating_point else torch.float32)
