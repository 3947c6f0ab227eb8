"""Read and write NVIDIA ``.tensor`` files.

Layout (all little endian)::

    int32 magic = 0x33ff1101
    int32 ndim
    int32 dtype code      (float32=3 float16=2 int32=1 int64=4 uint64=5 uint32=6 int8=7 uint8=8)
    int32 dims[ndim]
    raw data, C order, prod(dims) * itemsize bytes

Both directions are strict: a bad magic, an unknown dtype code, ndim outside [1, 16], a negative
dimension, a short file or trailing bytes raise :class:`TensorFormatError`; writing an array of an
unsupported dtype or a 0-d array raises too (nothing is converted silently). The engine's reader
(``Tensor::load``) needs ``ndim >= 1``, so a scalar is neither written nor read.
"""

from __future__ import annotations

import math
import os
import struct
from typing import Union

import numpy as np

MAGIC = 0x33FF1101
MAX_NDIM = 16

#: dtype code -> numpy dtype (little endian)
CODE_TO_DTYPE = {
    3: np.dtype("<f4"),
    2: np.dtype("<f2"),
    1: np.dtype("<i4"),
    4: np.dtype("<i8"),
    5: np.dtype("<u8"),
    6: np.dtype("<u4"),
    7: np.dtype("i1"),
    8: np.dtype("u1"),
}
#: numpy dtype (native-order independent) -> dtype code
DTYPE_TO_CODE = {dt.newbyteorder("=") if dt.itemsize > 1 else dt: code for code, dt in CODE_TO_DTYPE.items()}

PathLike = Union[str, "os.PathLike[str]"]


class TensorFormatError(ValueError):
    """A ``.tensor`` file or buffer that does not follow the format exactly."""


def dtype_code(dtype) -> int:
    """Return the ``.tensor`` dtype code of a numpy dtype, or raise TensorFormatError."""
    dt = np.dtype(dtype)
    key = dt.newbyteorder("=") if dt.itemsize > 1 else dt
    if key not in DTYPE_TO_CODE:
        raise TensorFormatError(f"dtype {dt} has no .tensor code (supported: "
                                f"{', '.join(str(d) for d in CODE_TO_DTYPE.values())})")
    return DTYPE_TO_CODE[key]


def decode_tensor(buf: bytes, name: str = "<buffer>") -> np.ndarray:
    """Decode the bytes of a whole ``.tensor`` file into a (writable) numpy array."""
    if len(buf) < 12:
        raise TensorFormatError(f"{name}: {len(buf)} bytes, shorter than the 12-byte header")
    magic, ndim, code = struct.unpack_from("<iii", buf, 0)
    if magic != MAGIC:
        raise TensorFormatError(f"{name}: bad magic 0x{magic & 0xFFFFFFFF:08x}, expected 0x{MAGIC:08x}")
    if not 1 <= ndim <= MAX_NDIM:
        raise TensorFormatError(f"{name}: ndim {ndim} outside [1, {MAX_NDIM}]")
    if code not in CODE_TO_DTYPE:
        raise TensorFormatError(f"{name}: unknown dtype code {code}")
    header = 12 + 4 * ndim
    if len(buf) < header:
        raise TensorFormatError(f"{name}: truncated header ({len(buf)} bytes, need {header})")
    dims = struct.unpack_from(f"<{ndim}i", buf, 12)
    if any(d < 0 for d in dims):
        raise TensorFormatError(f"{name}: negative dimension in {list(dims)}")
    dtype = CODE_TO_DTYPE[code]
    # Python ints: an int64 product wraps (dims [65536]*4 give 0 elements and pass the size check)
    count = math.prod(dims)
    nbytes = count * dtype.itemsize
    have = len(buf) - header
    if have != nbytes:
        kind = "truncated data" if have < nbytes else "trailing bytes"
        raise TensorFormatError(f"{name}: {kind}: shape {list(dims)} {dtype} needs {nbytes} bytes, "
                                f"file has {have}")
    try:
        arr = np.frombuffer(buf, dtype=dtype, count=count, offset=header).reshape(dims)
    except ValueError as e:  # e.g. an empty shape whose other dims multiply beyond what numpy indexes
        raise TensorFormatError(f"{name}: shape {list(dims)} {dtype} cannot be represented: {e}") from None
    return arr.astype(dtype.newbyteorder("="), copy=True)


def encode_tensor(array) -> bytes:
    """Encode a numpy array (any byte order, any strides) as the bytes of a ``.tensor`` file."""
    arr = np.asarray(array)
    code = dtype_code(arr.dtype)
    if arr.ndim == 0:
        raise TensorFormatError("a 0-d array (scalar) cannot be written: the engine reads ndim >= 1 only; "
                                "reshape it to [1]")
    if arr.ndim > MAX_NDIM:
        raise TensorFormatError(f"ndim {arr.ndim} exceeds {MAX_NDIM}")
    if any(d > 0x7FFFFFFF for d in arr.shape):
        raise TensorFormatError(f"dimension of {arr.shape} does not fit int32")
    le = np.ascontiguousarray(arr, dtype=CODE_TO_DTYPE[code])
    header = struct.pack(f"<iii{arr.ndim}i", MAGIC, arr.ndim, code, *arr.shape)
    return header + le.tobytes(order="C")


def load_tensor(path: PathLike) -> np.ndarray:
    """Read a ``.tensor`` file. Returns a native-byte-order numpy array."""
    with open(path, "rb") as f:
        buf = f.read()
    return decode_tensor(buf, name=os.fspath(path))


def save_tensor(path: PathLike, array) -> None:
    """Write a numpy array (or anything np.asarray accepts, e.g. a CPU torch tensor) as ``.tensor``."""
    if hasattr(array, "detach"):  # torch tensor
        array = array.detach().cpu().numpy()
    try:
        data = encode_tensor(array)
    except TensorFormatError as e:
        raise TensorFormatError(f"{os.fspath(path)}: {e}") from None
    with open(path, "wb") as f:
        f.write(data)
