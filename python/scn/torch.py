"""scn.torch.SparseBackbone: an scn engine as a torch.nn.Module, to swap for a spconv backbone in one line.

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
computes in fp16). The engine is not trained: parameters stay those of the exported file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Sequence, Union

import torch
from torch import nn

from scn._engine import Engine
from scn._scn import Error


class SparseBackbone(nn.Module):
    def __init__(self, model: Union[str, Engine], *, spatial_shape: Optional[Sequence[int]] = None,
                 output: Union[int, str] = 0, output_dtype: Optional[torch.dtype] = None,
                 keys: Optional[Sequence[Optional[str]]] = None, **engine_options: Any):
        super().__init__()
        self.engine = model if isinstance(model, Engine) else Engine(model, **engine_options)
        if isinstance(model, Engine) and engine_options:
            raise Error(f"SparseBackbone: engine options {sorted(engine_options)} given with an Engine")
        self.spatial_shape = tuple(int(s) for s in spatial_shape) if spatial_shape is not None else None
        self.output = output
        self.output_dtype = output_dtype
        names = list(self.engine.outputs)
        if isinstance(output, str) and output not in names:
            raise Error(f"SparseBackbone: {self.engine.path} has no output {output!r}; outputs: {', '.join(names)}")
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
        values = dict(zip(names, args))
        if len(args) == 3 and not isinstance(args[2], (list, tuple, torch.Size)):
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
        return values["features"], values["indices"], tuple(grid), int(values.get("batch_size", 1))

    def _run(self, features, indices, grid, batch_size):
        if features.dtype not in (torch.float16, torch.float32):
            features = features.float()
        if indices.dtype != torch.int32:
            indices = indices.int()
        dev = torch.device(self.engine.device)
        return self.engine(features.to(dev).contiguous(), indices.to(dev).contiguous(), grid, batch_size)

    def _cast(self, value, dtype):
        dtype = self.output_dtype or dtype
        if isinstance(value, tuple):
            return value[0].to(dtype), value[1]
        return value.to(dtype)

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
