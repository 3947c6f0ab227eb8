"""Where the package's engines and voxelizers run: device names, the optional torch import, and the CUDA stream a
call enqueues on."""

from __future__ import annotations

from typing import Any, Iterable, Tuple

from scn import _scn
from scn._scn import Error

_torch_module: Any = None


def _torch():
    """torch if it can be imported (once), else None."""
    global _torch_module
    if _torch_module is None:
        try:
            import torch  # noqa: WPS433 (optional dependency)
            _torch_module = torch
        except ImportError:
            _torch_module = False
    return _torch_module or None


def _parse_device(device: Any) -> Tuple[str, int]:
    """(kind, CUDA device index). "cuda" and "auto" without an index take torch's current device, as torch's own
    "cuda" does (device 0 without torch), so that a process pinned to a GPU (torch.cuda.set_device, a DDP rank)
    builds its engines there."""
    text = str(device)
    kind, _, index = text.partition(":")
    if kind not in ("auto", "cpu", "cuda") or (index and (kind != "cuda" or not index.isdigit())):
        raise Error(f"device {text!r}: expected 'auto', 'cpu', 'cuda' or 'cuda:N'")
    if kind == "auto":
        kind = "cuda" if _scn.cuda_available() else "cpu"
    if index:
        return kind, int(index)
    if kind == "cuda":
        torch = _torch()
        if torch is not None and torch.cuda.is_available():
            return kind, int(torch.cuda.current_device())
    return kind, 0


def _refuse_grad(who: str, name: str, t: Any) -> None:
    """scn runs inference only: a torch tensor that requires grad, given while grad mode is on, would have its
    graph cut without a word (DLPack hands over the data alone), so the training step would never update what
    produced it."""
    torch = _torch()
    if torch is not None and isinstance(t, torch.Tensor) and t.requires_grad and torch.is_grad_enabled():
        raise Error(f"{who}: {name} requires grad, and scn runs inference only (no gradient flows back through it): "
                    f"pass {name}.detach(), or call under torch.no_grad() / torch.inference_mode()")


_LEGACY_STREAM = 1  # cudaStreamLegacy (Engine::forward replays its graph there, or captures it joined by events)


def _current_stream_handle(torch, device_index: int) -> int:
    """torch's current stream on the device as a cudaStream_t; torch's raw accessor when it has one (it builds no
    Stream object: a few microseconds less per call)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(device_index))
    return int(torch.cuda.current_stream(device_index).cuda_stream)


def _call_stream(stream: Any, device_index: int) -> int:
    """The cudaStream_t a CUDA call enqueues on: `stream` when given, else torch's current stream on the device,
    else 0 (the engine's or voxelizer's own stream). A stream of handle 0 (stream=0, torch's default stream) is the
    legacy default stream and goes as cudaStreamLegacy: to the engine, 0 means its own stream, which what the caller
    enqueues next on the default stream (the outputs' copies) would not follow."""
    if stream is not None:
        handle = _stream_handle(stream)
        return _LEGACY_STREAM if handle == 0 else handle
    torch = _torch()
    if torch is None:
        return 0
    handle = _current_stream_handle(torch, device_index)
    # torch's default stream is the legacy NULL stream (handle 0): passed as cudaStreamLegacy, where the engine
    # replays its graph (and captures it on its own stream, joined by events: a graph cannot be captured there)
    return _LEGACY_STREAM if handle == 0 else handle


def _stream_handle(stream: Any) -> int:
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream / ExternalStream, CuPy streams
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise Error(f"stream: expected a cudaStream_t as an int, a torch.cuda.Stream or a CuPy stream, "
                f"got {type(stream).__name__}")


class OnDevice:
    """backend / device of an object built over a binding `_impl` (with `backend`) on CUDA device `_device_index`."""

    _impl: Any
    _device_index: int
    _cuda: bool

    @property
    def backend(self) -> str:
        """'cpu' or 'cuda'."""
        return self._impl.backend

    @property
    def device(self) -> str:
        """Where its tensors are read in place and its outputs live: 'cpu' or 'cuda:N' (torch's spelling)."""
        return f"cuda:{self._device_index}" if self._cuda else "cpu"


def _as_torch_stream(torch, stream: Any, device_index: int):
    """`stream` (as a call takes it: a torch.cuda.Stream, a handle, 0 for the legacy default stream) as a torch
    stream object."""
    if isinstance(stream, torch.cuda.Stream):
        return stream
    handle = _stream_handle(stream)
    if handle == 0:  # the legacy default stream, where the call was enqueued (_call_stream)
        return torch.cuda.default_stream(device_index)
    return torch.cuda.ExternalStream(handle, device=torch.device("cuda", device_index))


def _record_use(tensors: Iterable[Any], stream: Any, handle: int, device_index: int) -> None:
    """Marks the engine device's CUDA torch tensors as in use on the stream a call enqueues on (Tensor.record_stream;
    `handle`: that stream as _call_stream resolved it): `stream` when given, else torch's current stream unless that is
    the default stream. torch's caching allocator hands a freed block back to the stream that allocated it at once; a
    tensor read by work enqueued on another stream, then dropped by the caller (and let go of by the engine at its next
    binding), could otherwise be reallocated and written while that work still reads it. Tensors made on the call's
    stream are unaffected (recording there is a no-op); on torch's default stream with no stream given there is
    nothing to record (where tensors are usually made: no per-call cost). Other DLPack producers (CuPy, JAX) keep
    their own allocators' rules."""
    if stream is None and handle in (0, _LEGACY_STREAM):
        return
    torch = _torch()
    if torch is None:
        return
    used = [t for t in tensors if isinstance(t, torch.Tensor) and t.is_cuda and t.device.index == device_index]
    if not used:
        return
    s = _as_torch_stream(torch, stream, device_index) if stream is not None else torch.cuda.current_stream(device_index)
    for t in used:
        t.record_stream(s)
