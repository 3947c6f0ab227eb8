"""tensor_io: round trips for every dtype code, and strict rejection of malformed files."""

import struct

import numpy as np
import pytest

from scn_tools import tensor_io as tio


@pytest.mark.parametrize("dtype,code", [("float32", 3), ("float16", 2), ("int32", 1), ("int64", 4),
                                        ("uint64", 5), ("uint32", 6), ("int8", 7), ("uint8", 8)])
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4, 5), (0, 4), ()])
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
