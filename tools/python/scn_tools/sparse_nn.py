"""spconv 2.x module API on the float64 reference (:mod:`scn_tools.reference`).

The same surface as ``spconv.pytorch`` for the layers the exported models use, so that one model
definition runs on either (see :mod:`scn_tools.zoo`, which takes the namespace as an argument) and the
tracing exporter (:mod:`scn_tools.spconv_export`) treats both alike:

* :class:`SparseConvTensor` ``(features, indices, spatial_shape, batch_size)`` with ``replace_feature``,
  ``dense(channels_first=True)``, ``indice_dict``, ``find_indice_pair`` and ``+`` of features;
* :class:`SubMConv3d`, :class:`SparseConv3d`, :class:`SparseInverseConv3d` (weights ``[Cout, k0, k1, k2,
  Cin]``, "KRSC", as spconv 2.x; ``indice_key`` shares kernel maps; an inverse conv runs the map stored
  by the regular conv of its key backwards);
* :class:`SparseSequential` (non-sparse modules such as ``nn.BatchNorm1d`` / ``nn.ReLU`` are applied to
  the features), :class:`SparseModule`, :class:`JoinTable` (concatenate features), :class:`AddTable`.

Like spconv, a 1x1x1 conv with stride 1 is a plain matrix product on the features: it keeps the input
sites and their order and neither stores nor reads a kernel map under its ``indice_key``. (Unlike spconv
2.3, whose 1x1 path multiplies by ``weight.view(Cin, Cout)``, the weight here is always read as KRSC; the
exporter knows spconv's layout.)

Parameters are float32 as created; call ``model.double()`` for a float64 reference.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Union

import torch
from torch import nn

from . import reference as ref

IntOr3 = Union[int, Sequence[int]]


def _expand3(v: IntOr3, name: str):
    if isinstance(v, int):
        return [v, v, v]
    out = [int(x) for x in v]
    if len(out) != 3:
        raise ValueError(f"{name} must be an int or 3 ints, got {v!r}")
    return out


class SparseConvTensor(ref.SparseTensor):
    """spconv's ``SparseConvTensor`` on the reference: features [N, C], indices int32 [N, 4]."""

    def __init__(self, features: torch.Tensor, indices: torch.Tensor, spatial_shape, batch_size: int,
                 indice_dict: Optional[dict] = None):
        super().__init__(features, indices, spatial_shape, batch_size, indice_dict)

    @classmethod
    def _from(cls, t: ref.SparseTensor) -> "SparseConvTensor":
        out = cls(t.features, t.indices, t.spatial_shape, t.batch_size, t.indice_dict)
        out.kernel_map = t.kernel_map
        return out

    def replace_feature(self, feature: torch.Tensor) -> "SparseConvTensor":
        return SparseConvTensor(feature, self.indices, self.spatial_shape, self.batch_size, self.indice_dict)

    def find_indice_pair(self, key):
        return self.indice_dict.get(key) if key is not None else None

    def dense(self, channels_first: bool = True) -> torch.Tensor:
        """``[B, C, s0, s1, s2]`` (``channels_first``) or ``[B, s0, s1, s2, C]``; zeros elsewhere."""
        d = ref.scatter_dense(self)
        return d if channels_first else d.permute(0, 2, 3, 4, 1).contiguous()

    def __add__(self, other):
        f = other if isinstance(other, torch.Tensor) else other.features
        return self.replace_feature(self.features + f)

    __radd__ = __add__


class SparseModule(nn.Module):
    """Base class of the modules that take and return a :class:`SparseConvTensor`."""


def is_spconv_module(module: nn.Module) -> bool:
    return isinstance(module, SparseModule)


def _is_no_activation(act_type) -> bool:
    """spconv's ``act_type`` default (``tv.gemm.Activation.None_``; None here, where cumm may be absent)."""
    return act_type is None or getattr(act_type, "name", None) == "None_"


class SparseConvolution(SparseModule):
    """spconv's SparseConvolution (3-D only, groups 1, no transposed conv).

    The parameters are spconv 2.x's, by the same names; an unknown keyword is a TypeError, as in spconv.
    ``algo``, ``fp32_accum`` and ``large_kernel_fast_algo`` choose how spconv computes the same sums (the
    reference sums in float64 whatever they say); ``name`` is stored. The fused activation (``act_type``,
    ``act_alpha``, ``act_beta``) and ``record_voxel_count`` are not implemented and are accepted at their
    defaults only: anything else would be computed without it."""

    def __init__(self, ndim: int, in_channels: int, out_channels: int, kernel_size: IntOr3 = 3,
                 stride: IntOr3 = 1, padding: IntOr3 = 0, dilation: IntOr3 = 1, groups: int = 1,
                 bias: bool = True, subm: bool = False, output_padding: IntOr3 = 0, transposed: bool = False,
                 inverse: bool = False, indice_key: Optional[str] = None, algo=None,
                 fp32_accum: Optional[bool] = None, record_voxel_count: bool = False, act_type=None,
                 act_alpha: float = 0, act_beta: float = 0, large_kernel_fast_algo: bool = False, name=None,
                 device=None, dtype=None):
        super().__init__()
        if ndim != 3:
            raise ValueError(f"only 3-D sparse convolutions, got ndim={ndim}")
        if groups != 1:
            raise ValueError("groups != 1 is not supported (nor by spconv)")
        if transposed:
            raise ValueError("transposed sparse convolutions are not supported (use SparseInverseConv3d)")
        if not _is_no_activation(act_type) or act_alpha != 0 or act_beta != 0:
            raise ValueError(f"fused activation act_type={act_type!r} (act_alpha={act_alpha}, act_beta={act_beta}) "
                             f"is not supported: use a separate nn.ReLU (the exporter fuses it)")
        if record_voxel_count:
            raise ValueError("record_voxel_count=True is not supported")
        self.ndim = ndim
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _expand3(kernel_size, "kernel_size")
        self.stride = _expand3(stride, "stride")
        self.padding = _expand3(padding, "padding")
        self.dilation = _expand3(dilation, "dilation")
        self.output_padding = _expand3(output_padding, "output_padding")
        self.groups = groups
        self.subm = subm
        self.transposed = transposed
        self.inverse = inverse
        self.indice_key = indice_key
        self.algo = algo
        self.fp32_accum = fp32_accum
        self.large_kernel_fast_algo = large_kernel_fast_algo
        self.record_voxel_count = record_voxel_count
        self.act_type = act_type
        self.act_alpha = act_alpha
        self.act_beta = act_beta
        self.name = name
        kv = math.prod(self.kernel_size)
        self.conv1x1 = kv == 1 and (subm or math.prod(self.stride) == 1) and not inverse
        if self.conv1x1 and not subm and any(self.padding):
            raise ValueError("padding must be zero for a 1x1 conv (k=1, s=1)")
        factory = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(out_channels, *self.kernel_size, in_channels, **factory))
        self.bias = nn.Parameter(torch.empty(out_channels, **factory)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        fan_in = self.in_channels * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def extra_repr(self) -> str:
        kind = "subm" if self.subm else ("inverse" if self.inverse else "conv")
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, {kind}, indice_key={self.indice_key!r}")

    def forward(self, x: SparseConvTensor) -> SparseConvTensor:
        if x.features.shape[1] != self.in_channels:
            raise ValueError(f"channel size mismatch: {x.features.shape[1]} != {self.in_channels}")
        w, b = self.weight, self.bias
        if self.conv1x1:  # a matrix product on the features; sites and order kept, no kernel map
            f = x.features @ w.reshape(self.out_channels, self.in_channels).t()
            if b is not None:
                f = f + b
            return x.replace_feature(f)
        if self.inverse:
            y = ref.sparse_inverse_conv3d(x, w, b, key=self.indice_key)
        elif self.subm:
            y = ref.subm_conv3d(x, w, b, dilation=self.dilation, key=self.indice_key)
        else:
            y = ref.sparse_conv3d(x, w, b, stride=self.stride, padding=self.padding, dilation=self.dilation,
                                  key=self.indice_key)
        return SparseConvTensor._from(y)


# The subclasses take exactly the parameters of spconv 2.x's (record_voxel_count: SparseConv3d only).

class SubMConv3d(SparseConvolution):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOr3, stride: IntOr3 = 1,
                 padding: IntOr3 = 0, dilation: IntOr3 = 1, groups: int = 1, bias: bool = True,
                 indice_key: Optional[str] = None, algo=None, fp32_accum: Optional[bool] = None,
                 large_kernel_fast_algo: bool = False, name=None):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         subm=True, indice_key=indice_key, algo=algo, fp32_accum=fp32_accum,
                         large_kernel_fast_algo=large_kernel_fast_algo, name=name)


class SparseConv3d(SparseConvolution):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOr3, stride: IntOr3 = 1,
                 padding: IntOr3 = 0, dilation: IntOr3 = 1, groups: int = 1, bias: bool = True,
                 indice_key: Optional[str] = None, algo=None, fp32_accum: Optional[bool] = None,
                 record_voxel_count: bool = False, large_kernel_fast_algo: bool = False, name=None):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         indice_key=indice_key, algo=algo, fp32_accum=fp32_accum,
                         record_voxel_count=record_voxel_count, large_kernel_fast_algo=large_kernel_fast_algo,
                         name=name)


class SparseInverseConv3d(SparseConvolution):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOr3, indice_key: Optional[str],
                 bias: bool = True, algo=None, fp32_accum: Optional[bool] = None,
                 large_kernel_fast_algo: bool = False, name=None):
        super().__init__(3, in_channels, out_channels, kernel_size, bias=bias, inverse=True,
                         indice_key=indice_key, algo=algo, fp32_accum=fp32_accum,
                         large_kernel_fast_algo=large_kernel_fast_algo, name=name)


class SparseSequential(SparseModule):
    """Runs its modules in order; non-sparse modules get ``x.features`` (as spconv's SparseSequential)."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], dict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)
        for name, m in kwargs.items():
            self.add_module(name, m)

    def __len__(self) -> int:
        return len(self._modules)

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def forward(self, x):
        for m in self._modules.values():
            if is_spconv_module(m):
                x = m(x)
            elif isinstance(x, ref.SparseTensor):
                if x.indices.shape[0] != 0:
                    x = x.replace_feature(m(x.features))
            else:
                x = m(x)
        return x


class JoinTable(SparseModule):
    """Concatenates the features of sparse tensors on the same sites (channels)."""

    def forward(self, xs: List[SparseConvTensor]) -> SparseConvTensor:
        return SparseConvTensor._from(ref.concat(xs))


class AddTable(SparseModule):
    """Sums the features of sparse tensors on the same sites."""

    def forward(self, xs: List[SparseConvTensor]) -> SparseConvTensor:
        out = xs[0]
        for x in xs[1:]:
            out = ref.add(out, x)
        return SparseConvTensor._from(out)
