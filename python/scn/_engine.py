"""scn.Engine: an scn engine called with DLPack tensors (torch, numpy, CuPy, JAX).

Inputs are read in place: a tensor on the engine's device is handed to the engine as a pointer (no copy);
a host tensor given to a CUDA engine is copied to the device once, by the engine's input step. A call with the
CUDA torch tensors of the previous call (same objects, addresses, shapes and layout) keeps the engine's binding
and only enqueues the forward.
Outputs come back as torch tensors when torch can be imported (else as DLPack-capable arrays) on the
engine's device, in one of three modes:

* ``outputs="copy"`` (default): fresh tensors, never touched by a later call. With torch, one
  device-to-device copy per output enqueued on the call's stream (no host wait).
* ``outputs="view"``: views of the engine's own buffers (zero copy); the next call overwrites them.
* ``out=``: caller-provided tensors (list or dict by output name) the outputs are copied into; returned.

CUDA: the forward is enqueued on ``stream`` (an int cudaStream_t, a torch.cuda.Stream or anything with
``cuda_stream`` / ``ptr``), by default torch's current stream; the call does not wait for the GPU (dense
outputs; a sparse output's row count is read on the host, which waits). When that stream is torch's default
(the legacy NULL stream, where a CUDA graph cannot be captured) the engine replays its graph there; a call that
captures it first runs on a stream of the engine's, joined to the caller's by two events. The GIL is released while
scn works.
"""

from __future__ import annotations

import atexit
import functools
import threading
import weakref
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

from scn import _scn
from scn._device import (OnDevice, _as_torch_stream, _call_stream, _parse_device, _record_use, _refuse_grad,
                         _torch)
from scn._scn import Error

_MODES = ("copy", "view")

# Every live engine, so that their bound inputs are let go of at interpreter exit (_release_inputs_at_exit).
_live_engines: "weakref.WeakSet[Engine]" = weakref.WeakSet()


def _release_inputs_at_exit() -> None:
    """Runs before the interpreter tears its objects down: each live engine waits for its last forward and drops
    the inputs it holds (_Engine.release_inputs). A CUDA engine still holding a voxelizer's outputs="view" tensors
    when the interpreter is torn down never freed them, and nanobind printed "leaked 1 instances" at exit."""
    errors = []
    for engine in list(_live_engines):
        try:
            engine._release_inputs()
        except Error as e:  # every engine is released; the first failure is raised after the others
            errors.append(e)
    if errors:
        raise errors[0]


atexit.register(_release_inputs_at_exit)


class LayerTiming(NamedTuple):
    """One step of ``Engine.profile_layers()``: the ONNX node, its operator (or ``Input`` / ``KernelMap`` /
    ``Convert`` for the steps that are not a node's operator), the kernel or algorithm that ran it, its time in
    milliseconds, and for a split conv how many CTAs share each row tile (1 otherwise)."""

    node: str
    op: str
    algorithm: str
    ms: float
    split_k: int


class PointsTiming(NamedTuple):
    """``Engine.time_points()``: milliseconds per run of raw points -> outputs (the voxelizer and the forward;
    CUDA: one CUDA graph), of the voxelizer alone and of the forward alone; on CUDA with frames in host memory also
    of their upload alone (from pinned host memory) and of the upload followed by the path in one graph (both empty
    otherwise); and the frames' voxel count."""

    total_ms: List[float]
    voxelizer_ms: List[float]
    network_ms: List[float]
    upload_ms: List[float]
    from_host_ms: List[float]
    voxels: int


class Outputs(tuple):
    """The outputs of one call, by position (``out[0]``) and by ONNX output name (``out["name"]``).
    A dense output is a tensor; a sparse one is a (features [N, C], indices [N, 4]) pair."""

    names: Tuple[str, ...]

    def __new__(cls, values: Iterable[Any], names: Sequence[str]):
        obj = super().__new__(cls, values)
        obj.names = tuple(names)
        return obj

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            try:
                key = self.names.index(key)
            except ValueError:
                raise KeyError(f"no output named {key!r}; outputs: {', '.join(self.names)}") from None
        return super().__getitem__(key)

    def as_dict(self) -> Dict[str, Any]:
        return dict(zip(self.names, self))


def _one_call_at_a_time(method):
    """A call binds inputs, enqueues the forward and collects its outputs; calls from other threads (nn.DataParallel
    replicas share the module's engine) wait, so that none collects another's outputs."""
    @functools.wraps(method)
    def serialised(self, *args, **kwargs):
        with self._call_lock:
            return method(self, *args, **kwargs)
    return serialised


def _rebuild_engine(args: Dict[str, Any]) -> "Engine":
    return Engine(**args)


class Engine(OnDevice):
    """An scn engine built from an NVIDIA-schema ONNX file.

    device: "auto" (CUDA when scn has it and a GPU is visible, else CPU), "cpu", "cuda" or "cuda:N"; "auto" and
        "cuda" run on torch's current CUDA device (device 0 without torch).
    precision: "fp32", "fp16" or "int8"; default fp16 on CUDA (which has no fp32 path), fp32 on the CPU.
    max_voxels / max_batch: CUDA capacities planned at build (None: the graph's largest bound). An engine
        planned for several frames sums its 128-channel convs unsplit (faster at batch; fp16 bits differ slightly
        from a one-frame engine's: docs/cuda_backend.md "Convolution").
    cuda_graph: capture the forward once and replay it (CUDA).
    capacity: "bounds" (every level at its bound) or "first_frame" (CUDA: every level fitted to the first
        frame's measured rows x capacity_margin; docs/cuda_backend.md "Memory and capacities").
    grow: a frame larger than the plan grows it (re-plan, re-run the forward) instead of raising.
    capacity_margin: rows planned per measured row (None: scn's default, 1.1).
    tuning_cache: a file for the CUDA autotuner's decisions (read when its key matches, else written).
    """

    def __init__(self, path, device: Any = "auto", precision: Optional[str] = None,
                 max_voxels: Optional[int] = None, max_batch: int = 1, cuda_graph: bool = True,
                 num_threads: int = 0, capacity: str = "bounds", grow: bool = False,
                 capacity_margin: Optional[float] = None, tuning_cache: Optional[str] = None):
        kind, index = _parse_device(device)
        if precision is None:
            precision = "fp16" if kind == "cuda" else "fp32"
        # what pickling rebuilds the engine from (the device resolved: the same GPU in the process that loads it)
        self._init_args = dict(path=str(path), device=f"{kind}:{index}" if kind == "cuda" else kind,
                               precision=precision, max_voxels=max_voxels, max_batch=max_batch, cuda_graph=cuda_graph,
                               num_threads=num_threads, capacity=capacity, grow=grow,
                               capacity_margin=capacity_margin, tuning_cache=tuning_cache)
        # None: scn's default (the binding checks a given value)
        self._impl = _scn._Engine(str(path), kind, precision, None if max_voxels is None else int(max_voxels),
                                  int(max_batch), bool(cuda_graph), index, int(num_threads), str(capacity), bool(grow),
                                  None if capacity_margin is None else float(capacity_margin), str(tuning_cache or ""))
        self.path = str(path)
        self._cuda = self._impl.backend == "cuda"
        self._device_index = index
        self._outputs = tuple(self._impl.output_names)
        self._sparse = tuple(self._impl.output_sparse)
        self._views: Dict[int, Tuple[Any, Any]] = {}  # dense output -> (view_key, its torch view)
        self._bound: Optional[Tuple[Any, ...]] = None  # the call's CUDA torch inputs while their binding holds
        self._points_voxelizer: Any = None  # the voxelizer of the last run_points (its errors are this engine's)
        # input index -> (features, indices) the engine reads now: forward(stream=) marks them in use there
        self._set_inputs: Dict[int, Tuple[Any, Any]] = {}
        self._call_lock = threading.RLock()
        _live_engines.add(self)

    # ---- properties (backend, device: OnDevice) ---------------------------------------------
    @property
    def precision(self) -> str:
        return self._impl.precision

    @property
    def workspace_bytes(self) -> int:
        """Bytes the engine holds for activations, kernel maps and workspace."""
        return self._impl.workspace_bytes

    @property
    def inputs(self) -> Dict[str, int]:
        """Input names and their feature channel counts."""
        return dict(zip(self._impl.input_names, self._impl.input_channels))

    @property
    def outputs(self) -> Dict[str, str]:
        """Output names and their kind ('dense' or 'sparse')."""
        return {n: ("sparse" if s else "dense") for n, s in zip(self._outputs, self._sparse)}

    def __copy__(self) -> "Engine":
        """Copies share it too (a new one would plan and allocate again)."""
        return self

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Engine":
        """Deep copies share the engine (an EMA or averaged model copies its modules; the engine holds no trainable
        state, and a second engine would plan and tune again)."""
        return self

    def __reduce__(self):
        """Pickling (torch.save of a module) stores the ONNX path and options; loading builds a new engine from them."""
        return (_rebuild_engine, (self._init_args,))

    def __repr__(self) -> str:
        return (f"scn.Engine({self.path!r}, device={self.device!r}, precision={self.precision!r}, "
                f"inputs={self.inputs}, outputs={self.outputs})")

    # ---- running ------------------------------------------------------------------------------
    @_one_call_at_a_time
    def __call__(self, features, indices, grid: Sequence[int], batch_size: int = 1, *, stream: Any = None,
                 outputs: str = "copy", out: Any = None) -> Outputs:
        """Runs the model on one sparse input: features [N, C] float16/float32, indices [N, 4] int32 (batch,
        i0, i1, i2 in the model's index order), grid (s0, s1, s2), batch size. Returns Outputs."""
        grid = self._grid(grid)
        _refuse_grad("scn.Engine", "features", features)
        binding = self._device_binding(features, indices, grid, int(batch_size))
        if self._binding_holds(binding):
            # the same CUDA tensors at the same addresses, shapes and layout: the engine reads them in place, so
            # the binding it holds stands (no DLPack import) and only the forward is enqueued
            self._enqueue(self._impl.forward, stream, (features, indices))
        else:
            self._bound = None
            self._points_voxelizer = None
            # before the call: a forward that fails after binding them still holds them (forward(stream=) records)
            self._set_inputs = {0: (features, indices)} if self._cuda else {}
            self._enqueue(lambda h: self._impl.run(features, indices, grid, int(batch_size), h), stream,
                          (features, indices))
            self._bound = binding
        return self._collect(outputs, out, stream)

    @_one_call_at_a_time
    def run_points(self, points, voxelizer, *, stream: Any = None, outputs: str = "copy", out: Any = None) -> Outputs:
        """Runs the model on raw points through `voxelizer` (an scn.Voxelizer on the engine's device); `points` is one
        frame, or a list / tuple of frames run as one batch (batch size = their count; the voxelizer's max_batch and
        the engine's max_batch at least that). CUDA enqueues
        the voxelizer and the forward on the call's stream with the voxel count kept on the device (no host wait;
        device errors such as too many voxels surface at check_errors()). The input grid is the model's declared
        one (input_spatial_shape), else the voxelizer's model grid; either is checked against the voxel grid, and
        the voxelizer's index order against the model's. Returns Outputs like __call__."""
        self._bound = None
        self._points_voxelizer = None
        frames = tuple(points) if isinstance(points, (list, tuple)) else (points,)
        for p in frames:
            _refuse_grad("scn.Engine.run_points", "points", p)
        self._set_inputs = {}  # the voxelizer's buffers from here on
        self._enqueue(lambda h: self._impl.run_points(voxelizer._impl, points, h), stream, frames)
        self._points_voxelizer = voxelizer
        return self._collect(outputs, out, stream)

    @_one_call_at_a_time
    def set_input(self, input: Union[int, str], features, indices, grid: Sequence[int], batch_size: int = 1):
        """Binds one input of a multi-input model (then forward())."""
        self._bound = None
        self._points_voxelizer = None
        index = self._input_index(input)
        _refuse_grad("scn.Engine.set_input", "features", features)
        if self._cuda:
            self._set_inputs[index] = (features, indices)
        self._impl.set_input(index, features, indices, self._grid(grid), int(batch_size))

    @_one_call_at_a_time
    def forward(self, *, stream: Any = None, outputs: str = "copy", out: Any = None) -> Outputs:
        """Runs the model on the bound inputs; returns Outputs like __call__."""
        self._enqueue(self._impl.forward, stream, [t for pair in self._set_inputs.values() for t in pair])
        return self._collect(outputs, out, stream)

    def check_errors(self) -> None:
        """Waits for the last forward and raises scn.Error for a device-side problem (CUDA: device inputs are
        validated on the GPU; a call that returned dense outputs without waiting has not looked yet). After
        run_points, the voxelizer's errors first (more voxels than its max_voxels: the input was incomplete)."""
        if self._points_voxelizer is not None:
            self._points_voxelizer.check_errors()
        self._impl.check_errors()

    @_one_call_at_a_time
    def time_forward(self, warmup: int = 20, runs: int = 300) -> List[float]:
        """Engine::time_forward on the bound input: milliseconds per forward (CUDA events, graph replay)."""
        return list(self._impl.time_forward(int(warmup), int(runs)))

    @_one_call_at_a_time
    def time_points(self, points, voxelizer, warmup: int = 20, runs: int = 300) -> PointsTiming:
        """scn::time_points_to_bev: raw points -> outputs timed through `voxelizer` (points as for run_points: one
        frame, or a list of frames as one batch), `runs` runs after `warmup` of each measurement: the whole path, the
        voxelizer alone, the forward alone (CUDA: each one CUDA graph, the voxel count on the device, timed with CUDA
        events; host points are copied to the device once for these, and their upload is timed alone and before the
        path as ``upload_ms`` / ``from_host_ms``; CPU: wall clock). The engine stays bound to the voxelizer's output,
        as after run_points."""
        self._bound = None
        self._points_voxelizer = None
        self._set_inputs = {}
        t = self._impl.time_points(voxelizer._impl, points, int(warmup), int(runs))
        self._points_voxelizer = voxelizer
        return PointsTiming(*(list(ms) for ms in t[:5]), int(t[5]))

    @_one_call_at_a_time
    def profile_layers(self) -> List[LayerTiming]:
        """Engine::profile_layers on the bound input: one forward run step by step (CUDA: events around each
        step, no graph), each step's node, operator, algorithm (e.g. the tuned kernel) and milliseconds. The
        steps' sum is above a graph forward's time (no overlap between steps)."""
        return [LayerTiming(*t) for t in self._impl.profile_layers()]

    # ---- helpers ------------------------------------------------------------------------------
    def _release_inputs(self) -> None:
        """Interpreter exit (_release_inputs_at_exit): waits for the last forward and drops every reference to the
        bound inputs; the engine runs no forward afterwards."""
        self._bound = None
        self._points_voxelizer = None
        self._set_inputs = {}
        self._impl.release_inputs()

    @staticmethod
    def _grid(grid: Sequence[int]) -> Tuple[int, int, int]:
        try:
            g = tuple(int(x) for x in grid)
        except TypeError:
            raise Error(f"grid: expected three sizes (s0, s1, s2), got {grid!r}") from None
        if len(g) != 3:
            raise Error(f"grid: expected three sizes (s0, s1, s2), got {len(g)}: {g}")
        return g  # type: ignore[return-value]

    def _device_binding(self, features, indices, grid, batch_size) -> Optional[Tuple[Any, ...]]:
        """What makes a call's binding the engine's current one when both inputs are CUDA torch tensors (read in
        place): the tensor objects, their addresses, shapes and contiguity (an in-place resize or restride changes
        them), the grid and batch size; None for anything else (host inputs are copied at every call)."""
        torch = _torch()
        if not self._cuda or torch is None:
            return None
        if type(features) is not torch.Tensor or type(indices) is not torch.Tensor:
            return None
        if not (features.is_cuda and indices.is_cuda):
            return None
        return (features, indices, features.data_ptr(), indices.data_ptr(), features.shape, indices.shape,
                features.is_contiguous(), indices.is_contiguous(), features.dtype, grid, batch_size)

    def _binding_holds(self, binding: Optional[Tuple[Any, ...]]) -> bool:
        bound = self._bound  # tensors compared by identity (== on tensors compares their elements)
        return (binding is not None and bound is not None and binding[0] is bound[0] and binding[1] is bound[1]
                and binding[2:] == bound[2:])

    def _input_index(self, input: Union[int, str]) -> int:
        names = self._impl.input_names
        if isinstance(input, str):
            if input not in names:
                raise Error(f"{self.path}: the model has no input named {input!r}; inputs: {', '.join(names)}")
            return names.index(input)
        index = int(input)
        if not 0 <= index < len(names):
            raise Error(f"{self.path}: input index {index} is outside the model's {len(names)} inputs "
                        f"({', '.join(names)})")
        return index

    def _enqueue(self, launch, stream: Any, inputs: Iterable[Any] = ()) -> None:
        """Calls launch(cudaStream_t handle) on the call's stream (0 = the engine's own stream), the torch `inputs` it
        reads marked in use on that stream (_record_use)."""
        if not self._cuda:
            launch(0)
            return
        handle = _call_stream(stream, self._device_index)
        _record_use(inputs, stream, handle, self._device_index)
        launch(handle)

    def _framework(self, torch) -> int:
        # outputs as torch tensors, else numpy arrays (host) or DLPack capsules (CUDA)
        return 2 if torch is not None else (0 if self._cuda else 1)

    def _collect(self, mode: str, out: Any, stream: Any) -> Outputs:
        if mode not in _MODES:
            raise Error(f"outputs={mode!r}: expected 'copy' or 'view'")
        torch = _torch()
        fw = self._framework(torch)
        values = []
        for i, sparse in enumerate(self._sparse):
            parts = (0, 1) if sparse else (0,)
            if self._cuda and not sparse and torch is not None:
                got = (self._dense_view(i, fw),)
            elif mode == "view" or out is not None or torch is not None:
                # dense outputs without a host wait (Engine::output_async); sparse ones wait for the row count
                got = tuple(self._impl.view(i, p, False, fw) for p in parts)
            else:
                got = tuple(self._impl.copy(i, p, fw) for p in parts)
            if mode == "copy" and out is None and torch is not None:
                got = self._clones(got, torch, stream)
            values.append(got if sparse else got[0])
        if out is not None:
            values = self._copy_into(out, values, torch, stream, mode)
        return Outputs(values, self._outputs)

    def _clones(self, parts: Tuple[Any, ...], torch, stream: Any) -> Tuple[Any, ...]:
        """Copies of an output's tensors, made on the call's stream (CUDA with stream=) or torch's current one."""
        if self._cuda and stream is not None:
            with torch.cuda.stream(self._torch_stream(torch, stream)):
                return tuple(t.clone() for t in parts)
        return tuple(t.clone() for t in parts)

    def _dense_view(self, index: int, fw: int):
        """A CUDA dense output as a torch view of the engine's buffer, without a host wait: the view made by an
        earlier call while the buffer's address and shape are unchanged (the same tensor object), else a new one."""
        key = self._impl.view_key(index)
        kept = self._views.get(index)
        if kept is not None and kept[0] == key:
            return kept[1]
        view = self._impl.view(index, 0, False, fw)
        self._views[index] = (key, view)
        return view

    def _torch_stream(self, torch, stream: Any):
        return _as_torch_stream(torch, stream, self._device_index)

    def _copy_into(self, out: Any, values: List[Any], torch, stream: Any, mode: str) -> List[Any]:
        if torch is None:
            raise Error("out=: preallocated outputs need torch tensors (torch is not importable)")
        if isinstance(out, dict):
            unknown = [k for k in out if k not in self._outputs]
            if unknown:
                raise Error(f"out=: no output named {', '.join(map(repr, unknown))}; outputs: "
                            f"{', '.join(self._outputs)}")
            targets = [out.get(n) for n in self._outputs]
        else:
            targets = list(out)
            if len(targets) != len(values):
                raise Error(f"out=: {len(targets)} tensors for {len(values)} outputs ({', '.join(self._outputs)})")
        side = self._torch_stream(torch, stream) if (self._cuda and stream is not None) else None
        result = []
        for name, target, value in zip(self._outputs, targets, values):
            if target is None:  # left out of out=: what the call's outputs= mode gives (a copy by default)
                if mode == "copy":
                    parts = self._clones(value if isinstance(value, tuple) else (value,), torch, stream)
                    value = parts if isinstance(value, tuple) else parts[0]
                result.append(value)
                continue
            if isinstance(value, tuple):
                raise Error(f"out=: output {name!r} is sparse (its row count varies); preallocation is for dense "
                            f"outputs")
            if not isinstance(target, torch.Tensor):
                raise Error(f"out=: output {name!r}: expected a torch.Tensor, got {type(target).__name__}")
            if (tuple(target.shape) != tuple(value.shape) or target.dtype != value.dtype
                    or target.device != value.device or not target.is_contiguous()):
                raise Error(f"out=: output {name!r} is {tuple(value.shape)} {value.dtype} on {value.device}; "
                            f"the given tensor is {tuple(target.shape)} {target.dtype} on {target.device}"
                            f"{'' if target.is_contiguous() else ', not contiguous'}")
            if side is not None:
                with torch.cuda.stream(side):
                    target.copy_(value)
            else:
                target.copy_(value)
            result.append(target)
        return result



