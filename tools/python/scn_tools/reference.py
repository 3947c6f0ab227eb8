"""Pure-PyTorch reference (the oracle) of spconv 2.x sparse convolutions.

Semantics follow /work/shared/docs/semantics.md exactly:

* A sparse tensor is ``features [N, C]``, ``indices [N, 4] = (b, i0, i1, i2)`` int32 and a spatial shape
  ``(s0, s1, s2)``; the three axes are in the model's index order (zyx or xyz) and kernel / stride /
  padding / dilation follow that order. Sites must be unique.
* Weights are ``[Cout, k0, k1, k2, Cin]``; kernel offset ``r = (r0, r1, r2)`` has flat index
  ``r0*K1*K2 + r1*K2 + r2``.
* **Regular (strided) conv**: ``out_d = (s_d + 2 p_d - dil_d (K_d - 1) - 1) // st_d + 1``. An input site ``i``
  and offset ``r`` give ``n = i + p - r*dil``; the pair ``(i -> o = n / st, r)`` exists iff ``n >= 0``,
  ``n % st == 0`` and ``o < out`` on every axis. Output sites are the union of all such ``o``.
  **Output site order: ascending linear key ``((b*s0 + i0)*s1 + i1)*s2 + i2``** of the output grid, i.e.
  sorted lexicographically by (b, i0, i1, i2). (spconv itself does not promise an order; results must be
  compared per site.)
* **Submanifold conv**: stride 1, padding ``(K//2)*dil`` (K odd). Output sites = input sites, in the same
  order; ``out[o] = sum_r W[r] x[o + (r - K//2)*dil]`` over active neighbours only.
* **Inverse conv**: reuses the kernel map stored under its key by a regular conv, backwards:
  ``out[i] += W[r] x[o]`` for each stored pair ``(i -> o, r)``. Output sites and spatial shape are that
  conv's input sites (same order) and input shape. Its own stride / padding are not used.
* Kernel maps are shared through ``SparseTensor.indice_dict`` by key (spconv ``indice_key``, ONNX
  ``rulebook``); a layer that finds its key reuses the stored map after checking it matches.

Add and Concat (channel concatenation, a UNet joining an upsampled tensor with its skip) need their
inputs on the same sites in the same order.

Everything is computed in float64: kernel maps with int64 linear keys + ``torch.sort`` /
``torch.searchsorted``, convolutions as one gather-GEMM-scatter (``index_add_``) per kernel offset.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

import torch

Int3 = Tuple[int, int, int]

ACTIVATIONS = ("ReLU", "None")


def _int3(v, name: str) -> Int3:
    if isinstance(v, int):
        return (v, v, v)
    t = tuple(int(x) for x in v)
    if len(t) != 3:
        raise ValueError(f"{name} must have 3 entries, got {v!r}")
    return t  # type: ignore[return-value]


def _check_params(k: Int3, st: Int3, p: Int3, d: Int3) -> None:
    """The engine's limits: kernel / stride / dilation >= 1, padding >= 0. Outside them the formulas still
    compute something (dilation 0 puts every kernel offset on the centre) or divide by zero (stride 0)."""
    if any(x < 1 for x in k + st + d) or any(x < 0 for x in p):
        raise ValueError(f"invalid conv parameters kernel_size={k} stride={st} padding={p} dilation={d} "
                         f"(kernel_size, stride, dilation must be >= 1, padding >= 0)")


def conv_output_shape(shape: Sequence[int], kernel_size, stride, padding, dilation) -> Int3:
    """Spatial output shape of a regular sparse conv (same formula as a dense Conv3d)."""
    k, s, p, d = (_int3(x, n) for x, n in ((kernel_size, "kernel_size"), (stride, "stride"),
                                           (padding, "padding"), (dilation, "dilation")))
    _check_params(k, s, p, d)
    out = tuple((shape[a] + 2 * p[a] - d[a] * (k[a] - 1) - 1) // s[a] + 1 for a in range(3))
    if any(o <= 0 for o in out):
        raise ValueError(f"conv of spatial shape {tuple(shape)} with k={k} s={s} p={p} d={d} "
                         f"gives an empty output shape {out}")
    return out  # type: ignore[return-value]


def linear_keys(indices: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """int64 key ``((b*s0 + i0)*s1 + i1)*s2 + i2`` of each row of ``indices [N, 4]``."""
    idx = indices.to(torch.int64)
    s0, s1, s2 = (int(x) for x in shape)
    return ((idx[:, 0] * s0 + idx[:, 1]) * s1 + idx[:, 2]) * s2 + idx[:, 3]


def keys_to_indices(keys: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """Inverse of :func:`linear_keys`: int32 ``[N, 4]``."""
    s0, s1, s2 = (int(x) for x in shape)
    i2 = keys % s2
    rest = keys // s2
    i1 = rest % s1
    rest = rest // s1
    i0 = rest % s0
    b = rest // s0
    return torch.stack([b, i0, i1, i2], dim=1).to(torch.int32)


def kernel_offsets(kernel_size) -> torch.Tensor:
    """All kernel offsets ``[Kvol, 3]`` (int64) in flat order ``r0*K1*K2 + r1*K2 + r2``."""
    k = _int3(kernel_size, "kernel_size")
    grids = torch.meshgrid(*(torch.arange(x, dtype=torch.int64) for x in k), indexing="ij")
    return torch.stack([g.reshape(-1) for g in grids], dim=1)


@dataclass
class KernelMap:
    """A kernel map ("rulebook"): pairs ``(in_idx -> out_idx, offset)`` of one conv.

    ``pair_in`` / ``pair_out`` / ``pair_offset`` are int64 ``[P]``, grouped by ascending offset
    (``offset_counts[r]`` pairs for offset r). ``in_indices`` / ``out_indices`` are the sites of the conv
    that built the map (for an inverse conv the roles are swapped when the map is used).
    """

    subm: bool
    kernel_size: Int3
    stride: Int3
    padding: Int3
    dilation: Int3
    in_shape: Int3
    out_shape: Int3
    in_indices: torch.Tensor
    out_indices: torch.Tensor
    pair_in: torch.Tensor
    pair_out: torch.Tensor
    pair_offset: torch.Tensor
    offset_counts: torch.Tensor

    @property
    def num_pairs(self) -> int:
        return int(self.pair_in.numel())


def _sorted_lookup(sorted_keys: torch.Tensor, query: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Positions of ``query`` in ``sorted_keys`` and a found-mask (query values may be anything)."""
    pos = torch.searchsorted(sorted_keys, query)
    pos = pos.clamp_(max=max(sorted_keys.numel() - 1, 0))
    found = sorted_keys[pos] == query if sorted_keys.numel() else torch.zeros_like(query, dtype=torch.bool)
    return pos, found


def _finish_map(pair_in, pair_out, pair_offset, kvol: int):
    """Concatenate per-offset lists (already in ascending offset order) and count them."""
    if pair_in:
        pin, pout, poff = torch.cat(pair_in), torch.cat(pair_out), torch.cat(pair_offset)
    else:
        pin = pout = poff = torch.zeros(0, dtype=torch.int64)
    counts = torch.bincount(poff, minlength=kvol)
    return pin, pout, poff, counts


def _check_unique(indices: torch.Tensor, shape: Sequence[int]) -> Tuple[torch.Tensor, torch.Tensor]:
    keys = linear_keys(indices, shape)
    sorted_keys, perm = torch.sort(keys)
    if sorted_keys.numel() > 1 and bool((sorted_keys[1:] == sorted_keys[:-1]).any()):
        raise ValueError("duplicate sites in the sparse tensor indices")
    return sorted_keys, perm


def build_subm_map(indices: torch.Tensor, shape: Sequence[int], kernel_size, dilation=1) -> KernelMap:
    """Kernel map of a submanifold conv: ``out[o] += W[r] x[o + (r - K//2)*dil]`` for active neighbours."""
    k = _int3(kernel_size, "kernel_size")
    d = _int3(dilation, "dilation")
    _check_params(k, (1, 1, 1), (0, 0, 0), d)
    if any(x % 2 == 0 for x in k):
        raise ValueError(f"submanifold conv needs an odd kernel, got {k}")
    shape = tuple(int(x) for x in shape)
    sorted_keys, perm = _check_unique(indices, shape)
    coords = indices[:, 1:].to(torch.int64)
    batch = indices[:, 0].to(torch.int64)
    out_ids = torch.arange(indices.shape[0], dtype=torch.int64)
    center = torch.tensor([x // 2 for x in k], dtype=torch.int64)
    dil = torch.tensor(d, dtype=torch.int64)
    hi = torch.tensor(shape, dtype=torch.int64)
    p_in, p_out, p_off = [], [], []
    for r, off in enumerate(kernel_offsets(k)):
        nb = coords + (off - center) * dil
        valid = ((nb >= 0) & (nb < hi)).all(dim=1)
        q = ((batch * shape[0] + nb[:, 0]) * shape[1] + nb[:, 1]) * shape[2] + nb[:, 2]
        pos, found = _sorted_lookup(sorted_keys, q)
        found &= valid
        p_in.append(perm[pos[found]])
        p_out.append(out_ids[found])
        p_off.append(torch.full((int(found.sum()),), r, dtype=torch.int64))
    pin, pout, poff, counts = _finish_map(p_in, p_out, p_off, len(p_off))
    pad = tuple(x // 2 * y for x, y in zip(k, d))
    return KernelMap(True, k, (1, 1, 1), pad, d, shape, shape, indices, indices, pin, pout, poff, counts)


def build_conv_map(indices: torch.Tensor, shape: Sequence[int], kernel_size, stride, padding,
                   dilation=1) -> KernelMap:
    """Kernel map of a regular (strided) sparse conv; output sites sorted by linear key."""
    k, st, p, d = (_int3(x, n) for x, n in ((kernel_size, "kernel_size"), (stride, "stride"),
                                            (padding, "padding"), (dilation, "dilation")))
    _check_params(k, st, p, d)
    shape = tuple(int(x) for x in shape)
    out_shape = conv_output_shape(shape, k, st, p, d)
    _check_unique(indices, shape)
    coords = indices[:, 1:].to(torch.int64)
    batch = indices[:, 0].to(torch.int64)
    in_ids = torch.arange(indices.shape[0], dtype=torch.int64)
    st_t, p_t, d_t = (torch.tensor(x, dtype=torch.int64) for x in (st, p, d))
    hi = torch.tensor(out_shape, dtype=torch.int64)
    p_in, p_okey, p_off = [], [], []
    for r, off in enumerate(kernel_offsets(k)):
        n = coords + p_t - off * d_t
        o = torch.div(n, st_t, rounding_mode="floor")
        valid = ((n >= 0) & (torch.remainder(n, st_t) == 0) & (o < hi)).all(dim=1)
        o = o[valid]
        okey = ((batch[valid] * out_shape[0] + o[:, 0]) * out_shape[1] + o[:, 1]) * out_shape[2] + o[:, 2]
        p_in.append(in_ids[valid])
        p_okey.append(okey)
        p_off.append(torch.full((okey.numel(),), r, dtype=torch.int64))
    all_okeys = torch.cat(p_okey) if p_okey else torch.zeros(0, dtype=torch.int64)
    out_keys = torch.unique(all_okeys, sorted=True)
    p_out = [torch.searchsorted(out_keys, x) for x in p_okey]
    pin, pout, poff, counts = _finish_map(p_in, p_out, p_off, len(p_off))
    out_indices = keys_to_indices(out_keys, out_shape)
    return KernelMap(False, k, st, p, d, shape, out_shape, indices, out_indices, pin, pout, poff, counts)


def _spatial_shape(spatial_shape) -> Int3:
    try:
        shape = tuple(operator.index(x) for x in spatial_shape)  # ints only: 4.5 is not a size
    except TypeError:
        shape = ()
    if len(shape) != 3 or any(x < 1 for x in shape):
        raise ValueError(f"spatial_shape must be 3 positive sizes (s0, s1, s2), got {spatial_shape!r}")
    return shape  # type: ignore[return-value]


def _int32_indices(indices: torch.Tensor) -> torch.Tensor:
    """``indices`` as int32, refusing what a cast would change: a float 1.7 truncates to 1 and an int64
    2**32 + 1 wraps to 1, both landing on another site."""
    if indices.dtype == torch.int32:
        return indices
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype == torch.bool:
        raise ValueError(f"sparse tensor indices must be an integer tensor (int32), got {indices.dtype}")
    if indices.numel():
        lo, hi = int(indices.min()), int(indices.max())
        if lo < -2 ** 31 or hi >= 2 ** 31:
            raise ValueError(f"sparse tensor indices ({indices.dtype}) range [{lo}, {hi}] does not fit int32")
    return indices.to(torch.int32)


class SparseTensor:
    """Sparse tensor: features ``[N, C]``, indices int32 ``[N, 4]`` (b, i0, i1, i2), spatial shape, batch size.

    ``indice_dict`` maps a key (spconv ``indice_key``) to a :class:`KernelMap`; tensors derived from one
    another share the same dict object, so later layers find the maps of earlier ones.
    """

    def __init__(self, features: torch.Tensor, indices: torch.Tensor, spatial_shape: Sequence[int],
                 batch_size: int, indice_dict: Optional[Dict[str, KernelMap]] = None):
        if features.dim() != 2 or indices.dim() != 2 or indices.shape[1] != 4:
            raise ValueError(f"need features [N, C] and indices [N, 4], got {tuple(features.shape)} "
                             f"and {tuple(indices.shape)}")
        if features.shape[0] != indices.shape[0]:
            raise ValueError(f"features have {features.shape[0]} rows, indices {indices.shape[0]}")
        self.features = features
        self.indices = _int32_indices(indices)
        self.spatial_shape: Int3 = _spatial_shape(spatial_shape)
        self.batch_size = int(batch_size)
        self.indice_dict: Dict[str, KernelMap] = {} if indice_dict is None else indice_dict
        #: the kernel map of the conv that produced this tensor (None for other tensors); for statistics
        self.kernel_map: Optional[KernelMap] = None
        if self.indices.numel():
            lo = self.indices.min(dim=0).values
            hi = self.indices.max(dim=0).values
            lim = (self.batch_size,) + self.spatial_shape
            if bool((lo < 0).any()) or any(int(hi[a]) >= lim[a] for a in range(4)):
                raise ValueError(f"indices outside [0, {lim}): min {lo.tolist()} max {hi.tolist()}")

    def replace_feature(self, features: torch.Tensor) -> "SparseTensor":
        """Same sites / shape / kernel maps, new features."""
        return SparseTensor(features, self.indices, self.spatial_shape, self.batch_size, self.indice_dict)

    @property
    def num_sites(self) -> int:
        return int(self.indices.shape[0])

    def dense(self) -> torch.Tensor:
        """``[B, C, s0, s1, s2]``: ``dense[b, c, i0, i1, i2] = features[voxel, c]``, zeros elsewhere."""
        return scatter_dense(self)


def _apply_activation(x: torch.Tensor, activation: str) -> torch.Tensor:
    if activation == "ReLU":
        return torch.relu(x)
    if activation == "None":
        return x
    raise ValueError(f"unsupported activation {activation!r} (supported: {ACTIVATIONS})")


def _gather_gemm_scatter(features: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         src: torch.Tensor, dst: torch.Tensor, offset_counts: torch.Tensor,
                         n_out: int) -> torch.Tensor:
    """``out[dst] += features[src] @ W[r]^T`` for every pair, grouped by offset; then ``+ bias``."""
    cout, cin = weight.shape[0], weight.shape[-1]
    # [Kvol, Cin, Cout], Kvol in flat offset order; contiguous [Cin, Cout] blocks are ~1.7x faster
    # than a transposed view with a reference (netlib) BLAS
    w = weight.reshape(cout, -1, cin).permute(1, 2, 0).contiguous()
    out = torch.zeros(n_out, cout, dtype=features.dtype)
    counts = offset_counts.tolist()
    for r, (s, t) in enumerate(zip(torch.split(src, counts), torch.split(dst, counts))):
        if s.numel():
            out.index_add_(0, t, features.index_select(0, s) @ w[r])
    if bias is not None:
        out += bias
    return out


def _check_weight(x: SparseTensor, weight: torch.Tensor, bias: Optional[torch.Tensor], k: Int3) -> None:
    if weight.dim() != 5 or tuple(weight.shape[1:4]) != k:
        raise ValueError(f"weight must be [Cout, {k[0]}, {k[1]}, {k[2]}, Cin], got {tuple(weight.shape)}")
    if weight.shape[4] != x.features.shape[1]:
        raise ValueError(f"weight Cin {weight.shape[4]} != input channels {x.features.shape[1]}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ValueError(f"bias must be [{weight.shape[0]}], got {tuple(bias.shape)}")


def _same_sites(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a is b or (a.shape == b.shape and bool(torch.equal(a, b)))


def subm_conv3d(x: SparseTensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                dilation=1, key: Optional[str] = None, activation: str = "None") -> SparseTensor:
    """SubMConv3d. ``weight [Cout, k0, k1, k2, Cin]``; output sites = input sites (same order)."""
    k = tuple(int(s) for s in weight.shape[1:4])
    d = _int3(dilation, "dilation")
    _check_params(k, (1, 1, 1), (0, 0, 0), d)  # type: ignore[arg-type]
    _check_weight(x, weight, bias, k)  # type: ignore[arg-type]
    km = x.indice_dict.get(key) if key is not None else None
    if km is not None:
        if not (km.subm and km.kernel_size == k and km.dilation == d and km.in_shape == x.spatial_shape
                and _same_sites(km.in_indices, x.indices)):
            raise ValueError(f"key {key!r}: stored kernel map does not fit this submanifold conv "
                             f"(k={k}, dil={d}, shape={x.spatial_shape}, {x.num_sites} sites)")
    else:
        km = build_subm_map(x.indices, x.spatial_shape, k, d)
        if key is not None:
            x.indice_dict[key] = km
    out = _gather_gemm_scatter(x.features, weight, bias, km.pair_in, km.pair_out, km.offset_counts,
                               x.num_sites)
    y = x.replace_feature(_apply_activation(out, activation))
    y.kernel_map = km
    return y


def sparse_conv3d(x: SparseTensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, stride=1,
                  padding=0, dilation=1, key: Optional[str] = None, activation: str = "None") -> SparseTensor:
    """SparseConv3d (regular, possibly strided). Output sites sorted by linear key (b, i0, i1, i2)."""
    k = tuple(int(s) for s in weight.shape[1:4])
    st, p, d = _int3(stride, "stride"), _int3(padding, "padding"), _int3(dilation, "dilation")
    _check_params(k, st, p, d)  # type: ignore[arg-type]
    _check_weight(x, weight, bias, k)  # type: ignore[arg-type]
    km = x.indice_dict.get(key) if key is not None else None
    if km is not None:
        if not (not km.subm and km.kernel_size == k and km.stride == st and km.padding == p
                and km.dilation == d and km.in_shape == x.spatial_shape
                and _same_sites(km.in_indices, x.indices)):
            raise ValueError(f"key {key!r}: stored kernel map does not fit this sparse conv")
    else:
        km = build_conv_map(x.indices, x.spatial_shape, k, st, p, d)
        if key is not None:
            x.indice_dict[key] = km
    out = _gather_gemm_scatter(x.features, weight, bias, km.pair_in, km.pair_out, km.offset_counts,
                               int(km.out_indices.shape[0]))
    y = SparseTensor(_apply_activation(out, activation), km.out_indices, km.out_shape, x.batch_size,
                     x.indice_dict)
    y.kernel_map = km
    return y


def sparse_inverse_conv3d(x: SparseTensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                          key: Optional[str] = None, activation: str = "None") -> SparseTensor:
    """SparseInverseConv3d: the regular conv stored under ``key`` run backwards (``out[i] += W[r] x[o]``)."""
    if key is None or key not in x.indice_dict:
        raise ValueError(f"inverse conv needs the kernel map of a regular conv stored under key {key!r}")
    km = x.indice_dict[key]
    k = tuple(int(s) for s in weight.shape[1:4])
    _check_weight(x, weight, bias, k)  # type: ignore[arg-type]
    if km.subm:
        raise ValueError(f"key {key!r} holds a submanifold map; an inverse conv needs a regular conv's map")
    if km.kernel_size != k:
        raise ValueError(f"inverse conv kernel {k} != stored conv kernel {km.kernel_size} (key {key!r})")
    if km.out_shape != x.spatial_shape or not _same_sites(km.out_indices, x.indices):
        raise ValueError(f"inverse conv input sites are not the output sites of the conv of key {key!r}")
    out = _gather_gemm_scatter(x.features, weight, bias, km.pair_out, km.pair_in, km.offset_counts,
                               int(km.in_indices.shape[0]))
    y = SparseTensor(_apply_activation(out, activation), km.in_indices, km.in_shape, x.batch_size,
                     x.indice_dict)
    y.kernel_map = km
    return y


def add(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """Element-wise sum of two sparse tensors with the same sites (same order)."""
    if a.spatial_shape != b.spatial_shape or not _same_sites(a.indices, b.indices):
        raise ValueError("Add needs two sparse tensors with the same sites")
    if a.features.shape != b.features.shape:
        raise ValueError(f"Add: feature shapes differ {tuple(a.features.shape)} vs {tuple(b.features.shape)}")
    return a.replace_feature(a.features + b.features)


def concat(xs: Sequence[SparseTensor]) -> SparseTensor:
    """Channel concatenation of sparse tensors with the same sites (same order): ``[N, C0 + C1 + ...]``."""
    if len(xs) < 2:
        raise ValueError(f"Concat needs at least two inputs, got {len(xs)}")
    for i, x in enumerate(xs[1:], 1):
        if x.spatial_shape != xs[0].spatial_shape or not _same_sites(x.indices, xs[0].indices):
            raise ValueError(f"Concat needs tensors on the same sites; input {i} differs from input 0")
    return xs[0].replace_feature(torch.cat([x.features for x in xs], dim=1))


def relu(x: SparseTensor) -> SparseTensor:
    return x.replace_feature(torch.relu(x.features))


def scatter_dense(x: SparseTensor) -> torch.Tensor:
    """Densify to ``[B, C, s0, s1, s2]`` (zeros at inactive sites)."""
    c = x.features.shape[1]
    dense = torch.zeros((x.batch_size,) + x.spatial_shape + (c,), dtype=x.features.dtype)
    idx = x.indices.to(torch.int64)
    dense[idx[:, 0], idx[:, 1], idx[:, 2], idx[:, 3]] = x.features
    return dense.permute(0, 4, 1, 2, 3).contiguous()


def transpose(x: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """Dense permute (ONNX ``Transpose`` with attribute ``dims`` = torch ``permute`` order)."""
    if sorted(dims) != list(range(x.dim())):
        raise ValueError(f"Transpose dims {list(dims)} is not a permutation of {x.dim()} axes")
    return x.permute(*dims).contiguous()


def reshape(x: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """Dense reshape of contiguous memory (ONNX ``Reshape`` with attribute ``dims``)."""
    n = 1
    for v in dims:
        n *= int(v)
    if n != x.numel():
        raise ValueError(f"Reshape to {list(dims)} ({n} elements) from {tuple(x.shape)} ({x.numel()})")
    return x.contiguous().reshape(*dims)
