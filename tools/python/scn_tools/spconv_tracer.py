"""The recording half of the tracing exporter (:mod:`scn_tools.spconv_export`): the traced tensor type whose
``__torch_function__`` sees every op on the input features and what derives from them, the hooks on the known
modules, and the values and ops they record. :func:`scn_tools.spconv_export.trace_spconv` drives it and turns
the record into a graph."""

from __future__ import annotations

import contextlib
import math
import sys
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn

class ExportError(ValueError):
    """The model cannot be exported; ``problems`` lists every reason (module names / ops)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(dict.fromkeys(problems))  # unique, in order
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"cannot export the model ({len(self.problems)} problem"
                         f"{'' if len(self.problems) == 1 else 's'}):\n{lines}")


_ACTIVE: Optional["_Tracer"] = None  # the tracer of the forward being traced


def active_tracer() -> Optional["_Tracer"]:
    """The tracer of the forward being traced, or None."""
    return _ACTIVE


def set_active_tracer(tracer: Optional["_Tracer"]) -> None:
    """Starts (a tracer) or ends (None) the recording of every op on traced tensors."""
    global _ACTIVE
    _ACTIVE = tracer


class TracedTensor(torch.Tensor):
    """A tensor whose ops are recorded while a trace runs (``_scn_value``: its value id)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracer = _ACTIVE
        if tracer is None or tracer.suppress_depth > 0:
            with torch._C.DisableTorchFunction():
                return func(*args, **kwargs)
        return tracer.on_function(func, args, kwargs)


def _plain(t: torch.Tensor) -> torch.Tensor:
    if isinstance(t, TracedTensor):
        with torch._C.DisableTorchFunction():
            return t.as_subclass(torch.Tensor)
    return t


def _func_name(func) -> str:
    name = getattr(func, "__name__", repr(func))
    if name == "__get__":  # property access: Tensor.shape.__get__ etc.
        return "attr:" + getattr(getattr(func, "__self__", None), "__name__", "?")
    return name


def _is_sparse_tensor(x) -> bool:
    return all(hasattr(x, a) for a in ("features", "indices", "spatial_shape", "replace_feature"))


def _is_sparse_conv(m: nn.Module) -> bool:
    return all(hasattr(m, a) for a in ("weight", "subm", "inverse", "kernel_size", "stride", "padding",
                                       "dilation", "indice_key", "in_channels", "out_channels"))


# ops that only read metadata: results pass through untouched
_META = {
    "attr:shape", "size", "dim", "attr:ndim", "attr:dtype", "attr:device", "is_contiguous", "numel",
    "nelement", "__len__", "attr:is_quantized", "attr:requires_grad", "attr:is_cuda", "attr:layout",
    "attr:is_sparse", "data_ptr", "element_size", "stride", "get_device", "is_floating_point",
    "attr:is_leaf", "attr:grad_fn", "attr:grad", "attr:names", "__format__", "__repr__", "__str__",
    "attr:is_mkldnn", "attr:is_meta", "attr:is_nested", "storage_offset", "has_names", "attr:_base",
    "attr:is_quantized", "__hash__", "attr:__class__", "__reduce_ex__", "__deepcopy__",
}
_ALIAS = {"contiguous", "detach", "clone", "attr:data", "detach_", "requires_grad_", "cpu"}
_CASTS = {"to", "type", "float", "double", "half", "type_as"}
_ADD = {"add", "__add__", "__radd__", "__iadd__", "add_"}
_RELU = {"relu", "relu_"}
_CAT = {"cat", "concat", "concatenate"}
_RESHAPE = {"view", "reshape", "flatten", "squeeze", "unsqueeze", "view_as", "reshape_as"}
_INPLACE = {"__iadd__", "add_", "relu_", "detach_", "requires_grad_"}


def _mutates_first_argument(name: str) -> bool:
    """An op that changes its first argument in place: item assignment, augmented assignment, ``x.op_()``."""
    return (name == "__setitem__" or (name.startswith("__i") and name.endswith("__"))
            or (name.endswith("_") and not name.endswith("__")))


@dataclass
class _Value:
    kind: str  # "sparse" | "dense" | "invalid"
    producer: int = -1  # op index; -1: the graph input
    channels: int = 0
    spatial_shape: Tuple[int, ...] = ()
    sites: Optional[torch.Tensor] = None  # indices [N, 4] of a sparse value
    batch_size: int = 1
    shape: Tuple[int, ...] = ()  # dense
    problem: str = ""  # invalid: the root cause
    snapshot: Optional[torch.Tensor] = None  # PyTorch value (keep_intermediates)


@dataclass
class _Op:
    op: str  # conv | bn | relu | add | concat | scatter | transpose | reshape
    inputs: List[int]
    output: int
    source: str  # module name or op description
    conv: Optional[dict] = None  # kind kernel stride padding dilation key activation weight bias (float64)
    scale: Optional[np.ndarray] = None  # bn
    shift: Optional[np.ndarray] = None
    dims: Tuple[int, ...] = ()
    removed: bool = False


def _activation_name(m: nn.Module) -> Optional[str]:
    """"None" / "ReLU" for spconv's fused ``act_type`` (absent: "None"); None when unsupported."""
    act = getattr(m, "act_type", None)
    if act is None:
        return "None"
    name = getattr(act, "name", str(act)).split(".")[-1]
    return {"None_": "None", "None": "None", "ReLU": "ReLU"}.get(name)


def _effective_weight(m: nn.Module, conv1x1: bool) -> np.ndarray:
    """The KRSC weight ``[Cout, k0, k1, k2, Cin]`` (float64) the module actually applies."""
    w = _plain(m.weight).detach().to(torch.float64).cpu()
    cout, cin = int(m.out_channels), int(m.in_channels)
    if conv1x1 and type(m).__module__.startswith("spconv"):
        conv_mod = sys.modules.get("spconv.pytorch.conv")
        if not getattr(conv_mod, "FILTER_HWIO", False):
            # spconv 2.3: features @ weight.view(Cin, Cout)
            w = w.reshape(cin, cout).t().reshape(cout, 1, 1, 1, cin)
    want = (cout,) + tuple(int(k) for k in m.kernel_size) + (cin,)
    if tuple(w.shape) != want:
        raise ExportError([f"module weight {tuple(w.shape)} is not KRSC {want}"])
    return w.numpy().copy()


class _Tracer:
    def __init__(self, model: nn.Module, order: str, keep: bool):
        self.order = order
        self.keep = keep
        self.values: List[_Value] = []
        self.ops: List[_Op] = []
        self.suppress_depth = 0
        self.names = {id(m): (n or type(m).__name__) for n, m in model.named_modules()}
        self.module_stack: List[str] = []
        self.call_stack: List[Optional[dict]] = []
        self.notes: List[str] = []

    # -- values -------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def suppress(self):
        self.suppress_depth += 1
        try:
            yield
        finally:
            self.suppress_depth -= 1

    def where(self) -> str:
        return f" in module '{self.module_stack[-1]}'" if self.module_stack else ""

    def new_value(self, **kw) -> int:
        self.values.append(_Value(**kw))
        return len(self.values) - 1

    def invalid(self, problem: str) -> int:
        return self.new_value(kind="invalid", problem=problem)

    def value_of(self, t) -> Optional[int]:
        if isinstance(t, TracedTensor):
            return getattr(t, "_scn_value", None)
        return None

    def wrap(self, t: torch.Tensor, vid: int) -> TracedTensor:
        with torch._C.DisableTorchFunction():
            w = t if isinstance(t, TracedTensor) else t.as_subclass(TracedTensor)
            if self.keep and self.values[vid].kind != "invalid":
                self.values[vid].snapshot = t.detach().clone().as_subclass(torch.Tensor)
        w._scn_value = vid
        return w

    def wrap_sparse(self, st, vid: int):
        with self.suppress():
            return st.replace_feature(self.wrap(_plain(st.features), vid))

    def push(self, op: str, inputs: List[int], out_vid: int, source: str, **kw) -> int:
        self.ops.append(_Op(op, list(inputs), out_vid, source, **kw))
        self.values[out_vid].producer = len(self.ops) - 1
        return out_vid

    def sparse_like(self, vid: int, channels: Optional[int] = None) -> int:
        v = self.values[vid]
        return self.new_value(kind="sparse", channels=v.channels if channels is None else channels,
                              spatial_shape=v.spatial_shape, sites=v.sites, batch_size=v.batch_size)

    def first_invalid(self, vids: Sequence[Optional[int]]) -> Optional[int]:
        for v in vids:
            if v is not None and self.values[v].kind == "invalid":
                return v
        return None

    def same_sites(self, a: int, b: int) -> bool:
        va, vb = self.values[a], self.values[b]
        if va.spatial_shape != vb.spatial_shape or va.batch_size != vb.batch_size:
            return False
        if va.sites is vb.sites:
            return True
        return (va.sites is not None and vb.sites is not None and va.sites.shape == vb.sites.shape
                and bool(torch.equal(va.sites, vb.sites)))

    # -- functional ops ------------------------------------------------------------------------------
    def on_function(self, func, args, kwargs):
        name = _func_name(func)
        tracked: List[TracedTensor] = []

        def collect(x):
            if isinstance(x, TracedTensor) and hasattr(x, "_scn_value"):
                tracked.append(x)
            elif isinstance(x, (list, tuple)):
                for y in x:
                    collect(y)
            elif isinstance(x, dict):
                for y in x.values():
                    collect(y)

        collect(args)
        collect(kwargs)
        in_vids = [t._scn_value for t in tracked]
        with torch._C.DisableTorchFunction():
            result = func(*args, **kwargs)
        if not tracked or name in _META:
            return result
        bad = self.first_invalid(in_vids)
        if bad is not None:
            self._invalidate_if_mutated(name, args, bad)
            return self._wrap_all(result, bad)
        try:
            out = self._function(name, func, args, kwargs, tracked, result)
        except _Unsupported as e:
            vid = self.invalid(f"{e}{self.where()}")
            self._invalidate_if_mutated(name, args, vid)
            return self._wrap_all(result, vid)
        return out

    @staticmethod
    def _invalidate_if_mutated(name, args, vid):
        """An in-place op the graph does not follow changed a traced tensor: what reads it later is invalid too
        (``x.features[mask] = 0`` returns None, and the tensor kept its old value in the graph)."""
        if _mutates_first_argument(name) and args and isinstance(args[0], TracedTensor):
            args[0]._scn_value = vid

    def _wrap_all(self, result, vid):
        if isinstance(result, torch.Tensor):
            return self.wrap(result, vid)
        if isinstance(result, (list, tuple)):
            return type(result)(self._wrap_all(r, vid) for r in result)
        return result

    def _function(self, name, func, args, kwargs, tracked, result):
        x = tracked[0]
        xv = self.values[x._scn_value]
        if name in _ALIAS or (name in _CASTS and isinstance(result, torch.Tensor)
                              and result.dtype == x.dtype and result.device == x.device):
            if result is x:
                return x
            return self.wrap(result, x._scn_value)
        if name in _ADD:
            a, b = args[0], (args[1] if len(args) > 1 else kwargs.get("other"))
            alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
            if alpha != 1:
                raise _Unsupported(f"op '{name}' with alpha={alpha}")
            if isinstance(a, (int, float)) and a == 0:
                a, b = b, a
            if isinstance(b, (int, float)) and b == 0 and isinstance(a, TracedTensor):
                return self.wrap(result, a._scn_value) if result is not a else a  # sum() starts at 0
            va, vb = self.value_of(a), self.value_of(b)
            if va is None or vb is None:
                raise _Unsupported(f"op '{name}' of a traced tensor and "
                                   f"{'a number' if not isinstance(b, torch.Tensor) else 'an untraced tensor'}")
            if self.values[va].kind != "sparse" or self.values[vb].kind != "sparse":
                raise _Unsupported(f"op '{name}' on dense tensors (Add joins sparse features)")
            if a.shape != b.shape:
                raise _Unsupported(f"op '{name}' of features {tuple(a.shape)} and {tuple(b.shape)}")
            if not self.same_sites(va, vb):
                raise _Unsupported(f"op '{name}' of sparse tensors on different sites")
            out = self.push("add", [va, vb], self.sparse_like(va), f"add{self.where()}")
            return self._result(result, out, name)
        if name in _RELU:
            if xv.kind == "dense":
                raise _Unsupported(f"op '{name}' on a dense tensor")
            out = self.push("relu", [x._scn_value], self.sparse_like(x._scn_value), f"relu{self.where()}")
            return self._result(result, out, name if not kwargs.get("inplace") else "relu_")
        if name in _CAT:
            tensors = args[0] if args else kwargs.get("tensors")
            dim = args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("axis", 0))
            vids = [self.value_of(t) for t in tensors]
            if any(v is None for v in vids):
                raise _Unsupported(f"op '{name}' of traced and untraced tensors")
            if any(self.values[v].kind != "sparse" for v in vids):
                raise _Unsupported(f"op '{name}' of dense tensors (Concat joins sparse features)")
            if dim not in (1, -1):
                raise _Unsupported(f"op '{name}' along dim {dim} (only channels, dim 1)")
            if not all(self.same_sites(vids[0], v) for v in vids[1:]):
                raise _Unsupported(f"op '{name}' of sparse tensors on different sites")
            channels = sum(self.values[v].channels for v in vids)
            out = self.push("concat", vids, self.sparse_like(vids[0], channels), f"concat{self.where()}")
            return self.wrap(result, out)
        if name in _RESHAPE:
            new_shape = tuple(int(s) for s in result.shape)
            if xv.kind == "sparse":
                if new_shape == tuple(x.shape):
                    return self.wrap(result, x._scn_value)
                raise _Unsupported(f"op '{name}' of sparse features {tuple(x.shape)} -> {new_shape}")
            if new_shape == xv.shape:
                return self.wrap(result, x._scn_value)
            out = self.new_value(kind="dense", shape=new_shape)
            return self.wrap(result, self.push("reshape", [x._scn_value], out, f"{name}{self.where()}",
                                               dims=new_shape))
        if name in ("permute", "transpose", "swapaxes", "movedim") and xv.kind == "dense":
            nd = len(xv.shape)
            rest = list(args[1:])
            if name == "permute":
                perm = rest[0] if len(rest) == 1 and isinstance(rest[0], (list, tuple)) else rest
                if not perm:
                    perm = kwargs.get("dims")
                perm = [int(p) % nd for p in perm]
            elif name in ("transpose", "swapaxes"):
                d0, d1 = (rest + [kwargs.get("dim0"), kwargs.get("dim1")])[:2]
                perm = list(range(nd))
                perm[int(d0) % nd], perm[int(d1) % nd] = perm[int(d1) % nd], perm[int(d0) % nd]
            else:
                raise _Unsupported(f"op '{name}'")
            perm_t = tuple(perm)
            if perm_t == tuple(range(nd)):
                return self.wrap(result, x._scn_value)
            out = self.new_value(kind="dense", shape=tuple(int(s) for s in result.shape))
            return self.wrap(result, self.push("transpose", [x._scn_value], out, f"{name}{self.where()}",
                                               dims=perm_t))
        raise _Unsupported(f"op '{name}' on a {'sparse feature' if xv.kind == 'sparse' else 'dense'} tensor")

    def _result(self, result, vid: int, name: str):
        """Wrap an op result; an in-place op re-labels the tensor it changed."""
        if isinstance(result, TracedTensor) and (name in _INPLACE or name.endswith("_")):
            result._scn_value = vid
            if self.keep:
                with torch._C.DisableTorchFunction():
                    self.values[vid].snapshot = result.detach().clone().as_subclass(torch.Tensor)
            return result
        return self.wrap(result, vid)

    # -- modules -------------------------------------------------------------------------------------
    def classify(self, m: nn.Module) -> Optional[str]:
        cls = type(m)
        mod = cls.__module__
        if _is_sparse_conv(m):
            return "conv"
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            return "bn"
        if isinstance(m, nn.ReLU):
            return "relu"
        if isinstance(m, nn.Linear):
            return "linear"
        if isinstance(m, (nn.Identity, nn.modules.dropout._DropoutNd)):
            return "identity"
        if cls.__name__ == "JoinTable":
            return "join"
        if cls.__name__ == "AddTable":
            return "addtable"
        if cls.__name__ in ("SparseSequential", "ConcatTable") or isinstance(
                m, (nn.Sequential, nn.ModuleList, nn.ModuleDict)):
            return None
        if mod.startswith("spconv") or mod.startswith("torch.nn"):
            return "unsupported"
        return None  # a user module: transparent

    def sparse_value(self, st) -> int:
        """The value of a sparse tensor's traced features, or an invalid value when the tensor's sites are not the
        ones the graph recorded for them: indices, spatial_shape or batch_size changed outside the traced ops (a
        SparseConvTensor built anew from the features and other indices) would export on the recorded sites."""
        vid = st.features._scn_value
        v = self.values[vid]
        if v.kind != "sparse":
            return vid
        with torch._C.DisableTorchFunction():
            idx = st.indices
            same = (tuple(int(s) for s in st.spatial_shape) == tuple(v.spatial_shape)
                    and int(st.batch_size) == v.batch_size
                    and (idx is v.sites or (v.sites is not None and idx.shape == v.sites.shape
                                            and bool(torch.equal(idx, v.sites)))))
        if same:
            return vid
        return self.invalid(f"a sparse tensor whose indices, spatial_shape or batch_size were changed outside the "
                            f"traced ops{self.where()} (the graph follows sites through convs only)")

    def _unwrap_arg(self, x, found: List[Tuple[int, Any]]):
        if isinstance(x, TracedTensor) and hasattr(x, "_scn_value"):
            found.append((x._scn_value, x))
            return _plain(x)
        if _is_sparse_tensor(x) and isinstance(x.features, TracedTensor):
            found.append((self.sparse_value(x), x.features))
            with self.suppress():
                return x.replace_feature(_plain(x.features))
        if isinstance(x, (list, tuple)):
            return type(x)(self._unwrap_arg(y, found) for y in x)
        return x

    def pre_hook(self, m, args):
        name = self.names.get(id(m), type(m).__name__)
        if self.suppress_depth > 0:
            self.call_stack.append(None)
            return None
        self.module_stack.append(name)
        kind = self.classify(m)
        if kind is None:
            self.call_stack.append({"kind": None})
            return None
        found: List[Tuple[int, Any]] = []
        new_args = self._unwrap_arg(args, found)
        if not found:  # no traced input: not part of the graph
            self.call_stack.append({"kind": None})
            return new_args
        self.call_stack.append({"kind": kind, "name": name, "in": [v for v, _ in found],
                                "orig": [t for _, t in found], "args": args})
        self.suppress_depth += 1
        return new_args

    def post_hook(self, m, args, out):
        rec = self.call_stack.pop()
        if rec is None:
            return None
        self.module_stack.pop()
        if rec["kind"] is None:
            return None
        self.suppress_depth -= 1
        bad = self.first_invalid(rec["in"])
        if bad is not None:
            return self._wrap_module_out(out, bad)
        handler = getattr(self, "_mod_" + rec["kind"])
        try:
            return handler(m, rec, out)
        except _Unsupported as e:
            return self._wrap_module_out(out, self.invalid(f"module '{rec['name']}' ({type(m).__name__}): {e}"))

    def _wrap_module_out(self, out, vid):
        if isinstance(out, torch.Tensor):
            return self.wrap(out, vid)
        if _is_sparse_tensor(out):
            return self.wrap_sparse(out, vid)
        if isinstance(out, (list, tuple)):
            return type(out)(self._wrap_module_out(o, vid) for o in out)
        return out

    def _mod_unsupported(self, m, rec, out):
        raise _Unsupported("this module type is not supported by the exporter")

    def _mod_conv(self, m, rec, out):
        x = rec["in"][0]
        xv = self.values[x]
        if xv.kind != "sparse":
            raise _Unsupported("input is not a sparse tensor")
        if int(getattr(m, "ndim", 3)) != 3:
            raise _Unsupported(f"{getattr(m, 'ndim', '?')}-D convolution (only 3-D)")
        if getattr(m, "transposed", False):
            raise _Unsupported("transposed convolution (SparseConvTranspose3d); use SparseInverseConv3d")
        if int(getattr(m, "groups", 1)) != 1:
            raise _Unsupported("grouped convolution")
        act = _activation_name(m)
        if act is None:
            raise _Unsupported(f"fused activation {getattr(m, 'act_type', None)} (only None / ReLU)")
        k = tuple(int(v) for v in m.kernel_size)
        st = tuple(int(v) for v in m.stride)
        pad = tuple(int(v) for v in m.padding)
        dil = tuple(int(v) for v in m.dilation)
        inverse, subm = bool(m.inverse), bool(m.subm)
        conv1x1 = math.prod(k) == 1 and (subm or math.prod(st) == 1) and not inverse
        key = None if conv1x1 else m.indice_key
        if conv1x1 or subm:
            kind, st, pad = "subm", (1, 1, 1), tuple(kk // 2 * d for kk, d in zip(k, dil))
        else:
            kind = "inverse" if inverse else "conv"
        if kind == "subm" and any(kk % 2 == 0 for kk in k):
            raise _Unsupported(f"submanifold conv with an even kernel {k}")
        w = _effective_weight(m, conv1x1)
        b = (_plain(m.bias).detach().to(torch.float64).cpu().numpy().copy() if getattr(m, "bias", None) is not None
             else np.zeros(int(m.out_channels)))
        if not _is_sparse_tensor(out):
            raise _Unsupported("did not return a sparse tensor")
        y = self.new_value(kind="sparse", channels=int(m.out_channels),
                           spatial_shape=tuple(int(s) for s in out.spatial_shape), sites=out.indices,
                           batch_size=int(out.batch_size))
        conv = dict(kind=kind, kernel_size=k, stride=st, padding=pad, dilation=dil, key=key, activation=act,
                    weight=w, bias=b, in_channels=int(m.in_channels), out_channels=int(m.out_channels))
        self.push("conv", [x], y, rec["name"], conv=conv)
        return self.wrap_sparse(out, y)

    def _features_in(self, rec) -> int:
        x = rec["in"][0]
        if self.values[x].kind != "sparse":
            raise _Unsupported("applied to a dense tensor (only sparse features [N, C])")
        return x

    def _wrap_like_input(self, out, vid):
        return self.wrap_sparse(out, vid) if _is_sparse_tensor(out) else self.wrap(out, vid)

    def _mod_bn(self, m, rec, out):
        x = self._features_in(rec)
        if m.training:
            raise _Unsupported("in training mode (export runs model.eval())")
        if m.running_mean is None or m.running_var is None:
            raise _Unsupported("without running statistics (track_running_stats=False)")
        mean = m.running_mean.detach().to(torch.float64).cpu().numpy()
        var = m.running_var.detach().to(torch.float64).cpu().numpy()
        gamma = m.weight.detach().to(torch.float64).cpu().numpy() if m.weight is not None else np.ones_like(mean)
        beta = m.bias.detach().to(torch.float64).cpu().numpy() if m.bias is not None else np.zeros_like(mean)
        scale = gamma / np.sqrt(var + float(m.eps))
        shift = beta - mean * scale
        y = self.push("bn", [x], self.sparse_like(x), rec["name"], scale=scale, shift=shift)
        return self._wrap_like_input(out, y)

    def _mod_relu(self, m, rec, out):
        x = self._features_in(rec)
        y = self.push("relu", [x], self.sparse_like(x), rec["name"])
        if getattr(m, "inplace", False):  # the input tensor now holds the ReLU
            for t in rec["orig"]:
                t._scn_value = y
        return self._wrap_like_input(out, y)

    def _mod_linear(self, m, rec, out):
        x = self._features_in(rec)
        w = m.weight.detach().to(torch.float64).cpu().numpy()
        b = m.bias.detach().to(torch.float64).cpu().numpy() if m.bias is not None else np.zeros(w.shape[0])
        conv = dict(kind="subm", kernel_size=(1, 1, 1), stride=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1),
                    key=None, activation="None", weight=w.reshape(w.shape[0], 1, 1, 1, w.shape[1]).copy(), bias=b,
                    in_channels=int(w.shape[1]), out_channels=int(w.shape[0]))
        y = self.push("conv", [x], self.sparse_like(x, int(w.shape[0])), rec["name"], conv=conv)
        return self._wrap_like_input(out, y)

    def _mod_identity(self, m, rec, out):
        return self._wrap_like_input(out, rec["in"][0])

    def _mod_join(self, m, rec, out):
        vids = rec["in"]
        if len(vids) < 2 or not all(self.same_sites(vids[0], v) for v in vids[1:]):
            raise _Unsupported("needs two or more sparse tensors on the same sites")
        ch = sum(self.values[v].channels for v in vids)
        return self.wrap_sparse(out, self.push("concat", vids, self.sparse_like(vids[0], ch), rec["name"]))

    def _mod_addtable(self, m, rec, out):
        vids = rec["in"]
        if len(vids) < 2 or not all(self.same_sites(vids[0], v) for v in vids[1:]):
            raise _Unsupported("needs two or more sparse tensors on the same sites")
        acc = vids[0]
        for v in vids[1:]:
            acc = self.push("add", [acc, v], self.sparse_like(acc), rec["name"])
        return self.wrap_sparse(out, acc)

    # -- SparseConvTensor.dense ----------------------------------------------------------------------
    def dense(self, orig, st, channels_first: bool = True):
        vid = self.value_of(st.features)
        if vid is not None:
            vid = self.sparse_value(st)
        with self.suppress():
            plain = st.replace_feature(_plain(st.features))
            d = orig(plain, channels_first)
        if vid is None:
            return d
        if self.values[vid].kind == "invalid":
            return self.wrap(d, vid)
        v = self.values[vid]
        if v.kind != "sparse":
            return self.wrap(d, self.invalid("dense() of a non-sparse value"))
        shape = (int(st.batch_size), v.channels) + tuple(v.spatial_shape)
        y = self.push("scatter", [vid], self.new_value(kind="dense", shape=shape), f"dense{self.where()}",
                      dims=shape)
        if not channels_first:
            perm = (0, 2, 3, 4, 1)
            y = self.push("transpose", [y], self.new_value(kind="dense", shape=tuple(shape[p] for p in perm)),
                          f"dense(channels_first=False){self.where()}", dims=perm)
        return self.wrap(d, y)


class _Unsupported(Exception):
    pass
