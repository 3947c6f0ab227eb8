"""tensor_io: round trips for every dtype code, and strict rejection of malformed files."""

import struct

import numpy as np
import pytest

from scn_tools import tensor_io as tio


@pytest.mark.parametrize("dtype,code", [("float32", 3), ("float16", 2), ("int32", 1), ("int64", 4),
                                        ("uint64", 5), ("uint32", 6), ("int8", 7), ("uint8", 8)])
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4), (2, 3, 4, 5), (0, 4)])
def test_round_trip(tmp_path, dtype, code, shape):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    p = tmp_path / "a.tensor"
    tio.save_tensor(p, a)
    raw = p.read_bytes()
    magic, ndim, got_code = struct.unpack_from("<iii", raw)
    assert (magic, ndim, got_code) == (0x33FF1101, len(shape), code)
    assert list(struct.unpack_from(f"<{len(shape)}i", raw, 12)) == list(shape)
    assert len(raw) == 12 + 4 * len(shape) + a.nbytes
    b = tio.load_tensor(p)
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(a, b)


def test_big_endian_and_strided_input_written_little_endian(tmp_path):
    a = np.arange(24, dtype=">i4").reshape(4, 6)[:, ::2]
    p = tmp_path / "b.tensor"
    tio.save_tensor(p, a)
    raw = p.read_bytes()
    assert raw[12 + 8:12 + 8 + 4] == struct.pack("<i", 0)
    np.testing.assert_array_equal(tio.load_tensor(p), a)


def test_torch_tensor_accepted(tmp_path):
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    tio.save_tensor(tmp_path / "t.tensor", t)
    np.testing.assert_array_equal(tio.load_tensor(tmp_path / "t.tensor"), t.numpy())


def _header(magic=0x33FF1101, ndim=2, code=3, dims=(2, 3)):
    return struct.pack(f"<iii{len(dims)}i", magic, ndim, code, *dims)


@pytest.mark.parametrize("buf,msg", [
    (b"\x01\x11", "shorter than"),
    (_header(magic=0x12345678) + bytes(24), "bad magic"),
    (_header(code=9) + bytes(24), "unknown dtype code"),
    (_header(ndim=-1, dims=()), "ndim"),
    (_header(ndim=0, dims=()) + bytes(4), "ndim 0 outside"),  # the engine reads ndim >= 1 only
    (_header(ndim=3, dims=(2, 3)), "truncated header"),
    (_header(dims=(2, -3)) + bytes(24), "negative dimension"),
    (_header() + bytes(23), "truncated data"),
    (_header() + bytes(25), "trailing bytes"),
])
def test_malformed(buf, msg):
    with pytest.raises(tio.TensorFormatError, match=msg):
        tio.decode_tensor(buf)


@pytest.mark.parametrize("dtype", ["float64", "bool", "complex64", "int16"])
def test_unsupported_dtype_rejected(tmp_path, dtype):
    with pytest.raises(tio.TensorFormatError, match="no .tensor code"):
        tio.save_tensor(tmp_path / "x.tensor", np.zeros(3, dtype=dtype))


def test_scalar_is_not_written(tmp_path):
    # the engine's Tensor::load refuses ndim 0, so a file it cannot read is not written
    p = tmp_path / "s.tensor"
    with pytest.raises(tio.TensorFormatError, match=r"s\.tensor: a 0-d array"):
        tio.save_tensor(p, np.float32(1.5))
    assert not p.exists()
    tio.save_tensor(p, np.array([1.5], np.float32))
    assert tio.load_tensor(p).shape == (1,)


def test_huge_shapes_report_the_file_and_the_true_size(tmp_path):
    # [65536]*4 has 2^64 elements: an int64 product wraps to 0 and the empty payload looked right
    p = tmp_path / "wrap.tensor"
    p.write_bytes(_header(ndim=4, code=8, dims=(65536,) * 4))
    with pytest.raises(tio.TensorFormatError, match=rf"wrap\.tensor: truncated data: .* needs {2 ** 64} bytes"):
        tio.load_tensor(p)
    big = (2 ** 31 - 1) ** 3 * 4  # float32 [2^31-1]*3: beyond int64 bytes
    with pytest.raises(tio.TensorFormatError, match=f"needs {big} bytes, file has 0"):
        tio.decode_tensor(_header(ndim=3, dims=(2 ** 31 - 1,) * 3), name="big.tensor")
    # no elements, but a shape numpy cannot index: a format error naming the file, not numpy's
    with pytest.raises(tio.TensorFormatError, match=r"empty\.tensor: shape .* cannot be represented"):
        tio.decode_tensor(_header(ndim=5, dims=(0,) + (2 ** 31 - 1,) * 4), name="empty.tensor")
