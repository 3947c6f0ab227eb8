"""The sparse reference against dense PyTorch convolutions on small random crops.

* SubM: ``F.conv3d`` (stride 1, padding (K//2)*dil) on the zero-densified input, read at the active sites.
  Exactly equivalent: inactive neighbours are zeros in the dense input, so they contribute nothing.
* Regular conv: ``F.conv3d`` with the same stride / padding / dilation; output sites must be exactly the
  sites where a dense conv of the occupancy with an all-ones kernel is non-zero, values equal there.
* Inverse conv: ``F.conv_transpose3d`` (the adjoint of conv3d, weight ``W.permute(4, 0, 1, 2, 3)``,
  same stride / padding / dilation, output_padding filling up to the original shape) on the densified
  input, read at the original input sites. Exactly equivalent: the transposed conv sums ``W[r] z[o]`` over
  all (o, r) with ``o*st - p + r*dil = i``; for an active i every such o in range is an active output site
  of the forward conv (it was created from i), so the dense sum has exactly the stored pairs' terms.
  Also checked against an explicit pure-Python pair loop.
"""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from scn_tools import reference as ref

DT = torch.float64


def random_sites(rng, batch, shape, density):
    total = batch * int(np.prod(shape))
    n = max(1, int(total * density))
    keys = rng.choice(total, size=n, replace=False)
    rng.shuffle(keys)  # unsorted input order
    return ref.keys_to_indices(torch.from_numpy(keys.astype(np.int64)), shape)


def make_input(seed, batch, shape, cin, density=0.3):
    rng = np.random.default_rng(seed)
    idx = random_sites(rng, batch, shape, density)
    feats = torch.from_numpy(rng.standard_normal((idx.shape[0], cin)))
    return ref.SparseTensor(feats, idx, shape, batch)


def rand_weight(seed, cout, k, cin):
    g = torch.Generator().manual_seed(seed)
    return torch.randn((cout,) + tuple(k) + (cin,), generator=g, dtype=DT), torch.randn(cout, generator=g, dtype=DT)


def at_sites(dense, indices):
    i = indices.long()
    return dense[i[:, 0], :, i[:, 1], i[:, 2], i[:, 3]]


def torch_weight(w):
    return w.permute(0, 4, 1, 2, 3).contiguous()  # [Cout, k0, k1, k2, Cin] -> [Cout, Cin, k0, k1, k2]


# ---------------------------------------------------------------------------------------------------

SUBM_CASES = [  # kernel, dilation
    ((3, 3, 3), (1, 1, 1)),
    ((3, 3, 3), (2, 1, 2)),
    ((3, 1, 1), (1, 1, 1)),
    ((1, 1, 3), (1, 1, 1)),
    ((5, 3, 1), (1, 2, 1)),
]


@pytest.mark.parametrize("k,dil", SUBM_CASES)
@pytest.mark.parametrize("batch", [1, 2])
def test_subm_matches_dense_conv(k, dil, batch):
    shape = (7, 9, 8)
    x = make_input(11, batch, shape, cin=4)
    w, b = rand_weight(3, 6, k, 4)
    y = ref.subm_conv3d(x, w, b, dilation=dil, activation="None")
    assert y.indices is x.indices and y.spatial_shape == shape
    pad = tuple(kk // 2 * d for kk, d in zip(k, dil))
    dense = F.conv3d(x.dense(), torch_weight(w), b, stride=1, padding=pad, dilation=dil)
    torch.testing.assert_close(y.features, at_sites(dense, x.indices), rtol=1e-12, atol=1e-12)
    # ReLU variant
    yr = ref.subm_conv3d(x, w, b, dilation=dil, activation="ReLU")
    torch.testing.assert_close(yr.features, torch.relu(y.features), rtol=0, atol=0)


CONV_CASES = [  # kernel, stride, padding, dilation
    ((3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1)),
    ((3, 3, 3), (2, 2, 2), (0, 1, 2), (1, 1, 1)),   # asymmetric padding
    ((3, 3, 3), (2, 2, 2), (1, 2, 0), (2, 2, 2)),   # stride 2 + dilation 2
    ((3, 3, 3), (2, 1, 2), (1, 0, 2), (2, 1, 1)),   # mixed strides / dilations
    ((3, 1, 1), (2, 1, 1), (0, 0, 0), (1, 1, 1)),   # CenterPoint conv_out
    ((1, 1, 3), (1, 1, 2), (0, 0, 0), (1, 1, 1)),   # BEVFusion conv_out
    ((2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1)),   # MinkUNet-style k2 s2
    ((3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)),   # regular (non-subm) stride 1: dilates the sites
]


def _forward(case, batch, seed=5):
    k, st, p, d = case
    shape = (9, 11, 10)
    x = make_input(seed, batch, shape, cin=3, density=0.15)
    w, b = rand_weight(seed + 1, 5, k, 3)
    y = ref.sparse_conv3d(x, w, b, stride=st, padding=p, dilation=d, key="down", activation="None")
    return x, w, b, y


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("batch", [1, 2])
def test_sparse_conv_matches_dense_conv(case, batch):
    k, st, p, d = case
    x, w, b, y = _forward(case, batch)
    dense = F.conv3d(x.dense(), torch_weight(w), b, stride=st, padding=p, dilation=d)
    assert tuple(dense.shape[2:]) == y.spatial_shape == ref.conv_output_shape(x.spatial_shape, k, st, p, d)
    # output sites: exactly where some active input lies in the receptive field
    occ = F.conv3d(_occupancy(x), torch.ones((1, 1) + k, dtype=DT), stride=st, padding=p, dilation=d)
    want = ref.linear_keys(torch.nonzero(occ[:, 0] > 0).to(torch.int32), y.spatial_shape)
    got = ref.linear_keys(y.indices, y.spatial_shape)
    assert torch.equal(got, want)  # same set, and ours is sorted by linear key (b, i0, i1, i2)
    torch.testing.assert_close(y.features, at_sites(dense, y.indices), rtol=1e-12, atol=1e-12)
    assert y.indice_dict["down"].num_pairs == int(y.indice_dict["down"].offset_counts.sum())


def _occupancy(x):
    occ = torch.zeros((x.batch_size, 1) + x.spatial_shape, dtype=DT)
    i = x.indices.long()
    occ[i[:, 0], 0, i[:, 1], i[:, 2], i[:, 3]] = 1.0
    return occ


def _pair_loop_inverse(x, y, w_inv, b_inv, k, st, p, d):
    """out[i] += W[r] z[o] for every (i, r) whose o = (i + p - r*dil) / st is an output site."""
    out_pos = {tuple(v): n for n, v in enumerate(y.indices.tolist())}
    w = w_inv.reshape(w_inv.shape[0], -1, w_inv.shape[-1])
    out = torch.zeros(x.num_sites, w_inv.shape[0], dtype=DT) + b_inv
    for n, (bb, *i) in enumerate(x.indices.tolist()):
        for r, off in enumerate(itertools.product(*(range(kk) for kk in k))):
            nvec = [i[a] + p[a] - off[a] * d[a] for a in range(3)]
            if any(v < 0 or v % st[a] for a, v in enumerate(nvec)):
                continue
            o = (bb,) + tuple(v // st[a] for a, v in enumerate(nvec))
            if o in out_pos:
                out[n] += w[:, r, :] @ y.features[out_pos[o]]
    return out


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("batch", [1, 2])
def test_inverse_conv(case, batch):
    k, st, p, d = case
    x, _, _, y = _forward(case, batch)
    z = y.replace_feature(torch.randn(y.num_sites, 5, generator=torch.Generator().manual_seed(9), dtype=DT))
    w_inv, b_inv = rand_weight(21, 4, k, 5)
    out = ref.sparse_inverse_conv3d(z, w_inv, b_inv, key="down", activation="None")
    assert out.indices is x.indices and out.spatial_shape == x.spatial_shape

    # conv_transpose3d on the dense grid, read at the original input sites
    base = [(y.spatial_shape[a] - 1) * st[a] - 2 * p[a] + d[a] * (k[a] - 1) + 1 for a in range(3)]
    opad = tuple(x.spatial_shape[a] - base[a] for a in range(3))
    assert all(0 <= opad[a] < max(st[a], d[a]) for a in range(3))  # what conv_transpose3d accepts
    dense = F.conv_transpose3d(z.dense(), w_inv.permute(4, 0, 1, 2, 3), b_inv, stride=st, padding=p,
                               output_padding=opad, dilation=d)
    assert tuple(dense.shape[2:]) == x.spatial_shape
    torch.testing.assert_close(out.features, at_sites(dense, x.indices), rtol=1e-12, atol=1e-12)

    # explicit pair loop
    torch.testing.assert_close(out.features, _pair_loop_inverse(x, z, w_inv, b_inv, k, st, p, d),
                               rtol=1e-12, atol=1e-12)


def test_subm_key_sharing_and_mismatch():
    x = make_input(2, 1, (6, 7, 8), cin=4)
    w, b = rand_weight(1, 4, (3, 3, 3), 4)
    y = ref.subm_conv3d(x, w, b, key="res0", activation="ReLU")
    km = x.indice_dict["res0"]
    y2 = ref.subm_conv3d(y, w, b, key="res0")
    assert y2.indice_dict["res0"] is km and y2.kernel_map is km
    with pytest.raises(ValueError, match="does not fit"):
        ref.subm_conv3d(y, w, b, dilation=2, key="res0")
    with pytest.raises(ValueError, match="submanifold map"):
        ref.sparse_inverse_conv3d(y, w, b, key="res0")
    with pytest.raises(ValueError, match="key"):
        ref.sparse_inverse_conv3d(y, w, b, key="nope")


def test_inverse_kernel_mismatch_and_wrong_sites():
    case = CONV_CASES[0]
    x, _, _, y = _forward(case, 1)
    w_bad, _ = rand_weight(0, 2, (1, 1, 3), 5)
    with pytest.raises(ValueError, match="kernel"):
        ref.sparse_inverse_conv3d(y, w_bad, None, key="down")
    w, _ = rand_weight(0, 2, (3, 3, 3), 3)
    with pytest.raises(ValueError, match="output sites"):
        ref.sparse_inverse_conv3d(x, w, None, key="down")


def test_errors():
    x = make_input(3, 1, (5, 5, 5), cin=2)
    w, b = rand_weight(0, 2, (2, 3, 3), 2)
    with pytest.raises(ValueError, match="odd"):
        ref.subm_conv3d(x, w, b)
    w, b = rand_weight(0, 2, (3, 3, 3), 3)
    with pytest.raises(ValueError, match="Cin"):
        ref.subm_conv3d(x, w, b)
    dup = torch.cat([x.indices, x.indices[:1]])
    with pytest.raises(ValueError, match="duplicate"):
        ref.build_subm_map(dup, (5, 5, 5), (3, 3, 3))
    with pytest.raises(ValueError, match="outside"):
        ref.SparseTensor(torch.zeros(1, 2, dtype=DT), torch.tensor([[0, 5, 0, 0]], dtype=torch.int32), (5, 5, 5), 1)
    with pytest.raises(ValueError, match="empty output"):
        ref.conv_output_shape((2, 5, 5), 3, 2, 0, 1)


def test_dense_ops():
    x = make_input(4, 2, (3, 4, 5), cin=3)
    d = ref.scatter_dense(x)
    assert d.shape == (2, 3, 3, 4, 5)
    torch.testing.assert_close(at_sites(d, x.indices), x.features, rtol=0, atol=0)
    assert int((d != 0).any(dim=1).sum()) == x.num_sites
    t = ref.transpose(d, (0, 1, 4, 2, 3))
    assert t.shape == (2, 3, 5, 3, 4) and t.is_contiguous()
    r = ref.reshape(t, (2, 15, 3, 4))
    torch.testing.assert_close(r[1, 2 * 5 + 4], d[1, 2, :, :, 4], rtol=0, atol=0)  # channel = c*Z + z
    with pytest.raises(ValueError):
        ref.reshape(t, (2, 16, 3, 4))
    with pytest.raises(ValueError):
        ref.transpose(d, (0, 1, 2, 2, 3))
    s = ref.add(x, x.replace_feature(x.features * 2))
    torch.testing.assert_close(s.features, x.features * 3)
    torch.testing.assert_close(ref.relu(s).features, torch.relu(s.features))


@pytest.mark.parametrize("dil", [0, -1, (1, 0, 1)])
def test_subm_dilation_below_one_is_refused(dil):
    # dilation 0 would put every kernel offset on the centre: each site summed with itself K times
    x = make_input(5, 1, (5, 6, 7), cin=2)
    w, b = rand_weight(0, 3, (3, 3, 3), 2)
    with pytest.raises(ValueError, match="dilation must be >= 1"):
        ref.build_subm_map(x.indices, x.spatial_shape, (3, 3, 3), dil)
    with pytest.raises(ValueError, match="dilation must be >= 1"):
        ref.subm_conv3d(x, w, b, dilation=dil)


@pytest.mark.parametrize("k,st,p,d", [(3, 0, 1, 1), (3, (2, 0, 2), 1, 1), (3, 2, -1, 1), (3, 1, 1, 0), (0, 1, 0, 1)])
def test_conv_parameters_outside_the_engines_limits_are_refused(k, st, p, d):
    # stride 0 divided by zero in the output shape; the others computed an output
    with pytest.raises(ValueError, match=r"must be >= 1, padding >= 0"):
        ref.conv_output_shape((5, 6, 7), k, st, p, d)
    x = make_input(6, 1, (5, 6, 7), cin=2)
    with pytest.raises(ValueError, match=r"must be >= 1, padding >= 0"):
        ref.build_conv_map(x.indices, x.spatial_shape, k, st, p, d)


def test_indices_are_not_converted_silently():
    f = torch.zeros(2, 1, dtype=DT)
    ok = torch.tensor([[0, 1, 2, 3], [0, 3, 2, 1]])
    t = ref.SparseTensor(f, ok, (4, 4, 4), 1)  # int64 within int32: converted
    assert t.indices.dtype == torch.int32 and t.indices.tolist() == ok.tolist()
    wide = ok.clone()
    wide[0, 3] = 2 ** 32 + 3  # would wrap to 3, a valid site
    with pytest.raises(ValueError, match=r"indices \(torch.int64\) range \[0, 4294967299\] does not fit int32"):
        ref.SparseTensor(f, wide, (4, 4, 4), 1)
    with pytest.raises(ValueError, match="indices must be an integer tensor"):
        ref.SparseTensor(f, ok.to(torch.float32) + 0.7, (4, 4, 4), 1)  # 1.7 would truncate to 1
    with pytest.raises(ValueError, match="indices must be an integer tensor"):
        ref.SparseTensor(f, ok.to(torch.float64), (4, 4, 4), 1)
    with pytest.raises(ValueError, match="indices must be an integer tensor"):
        ref.SparseTensor(f, ok > 1, (4, 4, 4), 1)


@pytest.mark.parametrize("shape", [(4, 4), (4, 4, 4, 4), 4, (4, 4.5, 4), (4, 0, 4)])
def test_spatial_shape_must_be_three_positive_ints(shape):
    f = torch.zeros(1, 1, dtype=DT)
    idx = torch.tensor([[0, 1, 1, 1]], dtype=torch.int32)
    with pytest.raises(ValueError, match="spatial_shape must be 3 positive sizes"):
        ref.SparseTensor(f, idx, shape, 1)
