"""Tracing exporter: a spconv 2.x network (a PyTorch module) -> SCN ONNX.

One forward pass of the model is traced on a real input; every call that matters becomes a node:

====================================================  ==============================================
call during the forward                               node
====================================================  ==============================================
``SubMConv3d`` / ``SparseConv3d`` /                   SparseConvolution (subm / regular / inverse;
``SparseInverseConv3d`` (any module with spconv's     ``rulebook`` = ``indice_key``; spconv's fused
SparseConvolution attributes)                          ``act_type`` ReLU kept)
``nn.BatchNorm1d`` (eval statistics)                  folded into the conv before it (weight, bias);
                                                      elsewhere a 1x1x1 conv with a diagonal weight
``nn.ReLU``, ``F.relu``, ``torch.relu``, ``relu_``    fused into the conv before it when that conv's
                                                      output has no other reader, else Relu
``a.features + b.features`` (``+``, ``add``, ``+=``,  Add (inputs must be on the same sites)
``SparseConvTensor.__add__``, ``AddTable``)
``torch.cat([a.features, b.features], 1)``,           Concat (axis 1; inputs on the same sites)
``JoinTable``
``nn.Linear`` on features                             1x1x1 submanifold conv
``SparseConvTensor.dense()``                          ScatterDense (``channels_first=False`` adds a
                                                      Transpose)
``view`` / ``reshape`` / ``flatten`` / ``squeeze``    Reshape (``dims`` = the traced shape)
``permute`` / ``transpose`` on dense tensors          Transpose (consecutive ones merged)
``contiguous`` / ``detach`` / ``clone``,              nothing (the same value)
``nn.Identity`` / ``nn.Dropout``
====================================================  ==============================================

SparseBasicBlock (conv-BN-ReLU, conv-BN, ``+ identity``, ReLU) therefore exports as NVIDIA's exporter
writes it: conv(ReLU) -> conv(None) -> Add -> Relu. Anything else that touches a traced tensor (another
module of ``torch.nn`` or ``spconv``, e.g. ``SparseMaxPool3d`` or ``nn.Sigmoid``, an op such as ``*`` or
indexing) makes its result *invalid*: the export fails with an :class:`ExportError` listing, by module
name or op, every such call whose result reaches a graph output, instead of writing a wrong graph.
Results that do not reach an output (logging, side branches) are ignored. User modules that are neither
are transparent: the calls inside them are traced.

How: the input features are a ``torch.Tensor`` subclass whose ``__torch_function__`` sees every op on
them (and on the tensors derived from them); the known modules get forward pre-/post-hooks that run
them on plain tensors and record one node; ``SparseConvTensor.dense`` is wrapped while tracing. It works
on spconv's own modules (``spconv.pytorch``) and on :mod:`scn_tools.sparse_nn` (the same API on the
float64 reference), which :mod:`scn_tools.zoo` uses. That recording lives in :mod:`scn_tools.spconv_tracer`;
this module turns a recorded forward into a graph and writes it.

spconv specifics handled: 1x1x1 convs with stride 1 are a plain matrix product in spconv (sites kept,
no kernel map, ``indice_key`` ignored); spconv 2.3 multiplies them by ``weight.view(Cin, Cout)``, so
the exported KRSC weight is that matrix transposed. Submanifold convs are written with stride 1 and
padding ``(K // 2) * dilation`` (spconv ignores the module's values).

Weights are stored as FLOAT16 (the schema); :attr:`Trace.weight_rounding` reports the largest relative
change that caused.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import nn

from . import tensor_io
from .export_onnx import export_onnx
from .graph import ORDERS, Conv, Graph, Node
from .spconv_tracer import ExportError, _is_sparse_tensor, _Op, _plain, _Tracer, active_tracer, set_active_tracer

__all__ = ["ExportError", "Trace", "trace_spconv", "export_trace", "export_spconv", "save_value", "reorder_indices",
           "default_tensor_class"]


# ---------------------------------------------------------------------------------------------------
# Trace -> Graph
# ---------------------------------------------------------------------------------------------------

@dataclass
class Trace:
    """The result of tracing one forward.

    ``graph``: the model as a :class:`Graph` in the traced index order (weights rounded to fp16).
    ``output_names``: per graph output, where it came from in the forward's result ("0", "x_conv4", ...).
    ``torch_outputs``: per output the PyTorch result: a dense tensor, or ``(features, indices)``.
    ``values``: with ``keep_intermediates``, graph value id -> PyTorch value (dense tensor or
    ``(features, indices)``) for every value of the graph.
    ``weight_rounding``: the largest relative change of a weight / bias element by the fp16 rounding
    (relative to the largest magnitude of its tensor).
    ``notes``: things the exporter did that change the structure (e.g. a BatchNorm kept as a conv).
    """

    graph: Graph
    output_names: List[str]
    torch_outputs: List[Any]
    values: Dict[int, Any] = field(default_factory=dict)
    weight_rounding: float = 0.0
    notes: List[str] = field(default_factory=list)


def _flatten_outputs(result, prefix="") -> List[Tuple[str, Any]]:
    if isinstance(result, torch.Tensor) or _is_sparse_tensor(result):
        return [(prefix or "0", result)]
    if isinstance(result, dict):
        out = []
        for k, v in result.items():
            out += _flatten_outputs(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(result, (list, tuple)):
        out = []
        for i, v in enumerate(result):
            out += _flatten_outputs(v, f"{prefix}.{i}" if prefix else str(i))
        return out
    return []


def _build_graph(tr: _Tracer, out_vids: List[int], name: str, grid, batch_size: int, in_channels: int,
                 keep: bool) -> Tuple[Graph, Dict[int, Any], float, List[str]]:
    ops, values = tr.ops, tr.values
    # 1. what the outputs need; any invalid value there is an error
    needed_ops: set = set()
    problems: List[str] = []
    stack = list(out_vids)
    seen: set = set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        val = values[v]
        if val.kind == "invalid":
            problems.append(val.problem)
            continue
        if val.producer >= 0:
            needed_ops.add(val.producer)
            stack.extend(ops[val.producer].inputs)
    if problems:
        raise ExportError(problems)
    live = [i for i in range(len(ops)) if i in needed_ops]
    consumers: Dict[int, List[int]] = {}
    for i in live:
        for v in ops[i].inputs:
            consumers.setdefault(v, []).append(i)
    is_output = set(out_vids)
    producer = {ops[i].output: i for i in live}
    notes: List[str] = []

    def sole_reader(v: int, i: int) -> bool:
        return consumers.get(v, []) == [i] and v not in is_output

    # 2. fold BatchNorm, fuse ReLU, merge transposes, drop identities
    for i in live:
        o = ops[i]
        src = producer.get(o.inputs[0]) if o.inputs else None
        p = ops[src] if src is not None else None
        if o.op == "bn":
            if p is not None and p.op == "conv" and p.conv["activation"] == "None" and sole_reader(o.inputs[0], i):
                c = p.conv
                c["weight"] = c["weight"] * o.scale[:, None, None, None, None]
                c["bias"] = c["bias"] * o.scale + o.shift
                p.output = o.output
                producer[o.output] = src
                o.removed = True
            else:
                ch = len(o.scale)
                o.op = "conv"
                o.conv = dict(kind="subm", kernel_size=(1, 1, 1), stride=(1, 1, 1), padding=(0, 0, 0),
                              dilation=(1, 1, 1), key=None, activation="None",
                              weight=np.diag(o.scale).reshape(ch, 1, 1, 1, ch), bias=o.shift.copy(),
                              in_channels=ch, out_channels=ch)
                notes.append(f"BatchNorm '{o.source}' does not follow a conv it can be folded into: "
                             f"exported as a 1x1x1 conv with a diagonal weight")
        elif o.op == "relu":
            if p is not None and p.op == "conv" and p.conv["activation"] == "None" and sole_reader(o.inputs[0], i):
                p.conv["activation"] = "ReLU"
                p.output = o.output
                producer[o.output] = src
                o.removed = True
        elif o.op == "transpose":
            if p is not None and p.op == "transpose" and sole_reader(o.inputs[0], i):
                o.dims = tuple(p.dims[d] for d in o.dims)
                o.inputs = list(p.inputs)
                p.removed = True
                src = producer.get(o.inputs[0])
            if o.dims == tuple(range(len(o.dims))):
                o.removed = True
                _alias(ops, live, o.output, o.inputs[0])
                if o.output in is_output:
                    raise ExportError([f"graph output is an identity transpose of value {o.inputs[0]}"])
    # 3. number the values, emit nodes
    vmap: Dict[int, int] = {0: 0}
    nodes: List[Node] = []
    weights: List[Tuple[np.ndarray, np.ndarray]] = []
    rounding = 0.0
    for i in live:
        o = ops[i]
        if o.removed:
            continue
        ins = tuple(vmap[v] for v in o.inputs)
        if o.op == "conv":
            c = o.conv
            conv = Conv(c["kind"], c["in_channels"], c["out_channels"], tuple(c["kernel_size"]), tuple(c["stride"]),
                        tuple(c["padding"]), tuple(c["dilation"]), c["key"], c["activation"], name=o.source)
            w16, b16 = c["weight"].astype(np.float16), c["bias"].astype(np.float16)
            for full, half in ((c["weight"], w16), (c["bias"], b16)):
                if not np.isfinite(half).all():
                    raise ExportError([f"conv '{o.source}': weights overflow float16"])
                scale = float(np.abs(full).max()) if full.size else 0.0
                if scale > 0:
                    rounding = max(rounding, float(np.abs(half.astype(np.float64) - full).max()) / scale)
            nodes.append(Node("conv", ins, conv=conv, name=o.source))
            weights.append((w16, b16))
        elif o.op == "scatter":
            nodes.append(Node("scatter", ins, dims=tuple(o.dims), format=tr.order, name=o.source))
        elif o.op in ("transpose", "reshape"):
            nodes.append(Node(o.op, ins, dims=tuple(o.dims), name=o.source))
        else:
            nodes.append(Node(o.op, ins, name=o.source))
        vmap[o.output] = len(nodes)
    graph = Graph(name, tr.order, tuple(int(g) for g in grid), batch_size, in_channels, nodes, weights,
                  [vmap[v] for v in out_vids])
    graph.value_info()
    snapshots: Dict[int, Any] = {}
    if keep:
        for raw, gv in vmap.items():
            val = values[raw]
            if val.snapshot is None:
                continue
            snapshots[gv] = (val.snapshot, val.sites) if val.kind == "sparse" else val.snapshot
    return graph, snapshots, rounding, notes


def _alias(ops: List[_Op], live: List[int], old: int, new: int) -> None:
    for i in live:
        ops[i].inputs = [new if v == old else v for v in ops[i].inputs]


def _sparse_tensor_classes() -> List[type]:
    from . import sparse_nn
    classes = [sparse_nn.SparseConvTensor]
    core = sys.modules.get("spconv.pytorch.core")
    if core is not None and hasattr(core, "SparseConvTensor"):
        classes.append(core.SparseConvTensor)
    return classes


def default_tensor_class(model: nn.Module) -> type:
    """spconv's SparseConvTensor when the model has spconv modules, else sparse_nn's."""
    if any(type(m).__module__.startswith("spconv") for m in model.modules()):
        return importlib.import_module("spconv.pytorch.core").SparseConvTensor
    from . import sparse_nn
    return sparse_nn.SparseConvTensor


def trace_spconv(model: nn.Module, features, indices, spatial_shape: Sequence[int], batch_size: int = 1,
                 order: str = "zyx", forward: Optional[Callable] = None,
                 outputs: Optional[Callable[[Any], Any]] = None, keep_intermediates: bool = False,
                 name: Optional[str] = None) -> Trace:
    """Trace one forward of ``model`` and return the :class:`Trace` (graph in index order ``order``).

    ``features`` [N, Cin] (rounded to fp16, the ONNX input type, then cast to the model's parameter
    dtype), ``indices`` [N, 4] int32 (b, i0, i1, i2) and ``spatial_shape`` in ``order``.
    ``forward(model, x)`` runs the model (default ``model(x)``), where ``x`` is the input sparse tensor
    (spconv's class when the model uses spconv); a model with another signature gets its own lambda, e.g.
    ``lambda m, x: m(x.features, x.indices, 1, shape)``. ``outputs(result)`` picks the graph outputs from
    what the forward returned (default: every traced tensor / sparse tensor in it, dicts and sequences
    walked in order)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if active_tracer() is not None:
        raise RuntimeError("a trace is already running")
    params = list(model.parameters())
    dtype = params[0].dtype if params else torch.float64
    feats = torch.as_tensor(np.asarray(features) if not isinstance(features, torch.Tensor) else features)
    feats = feats.to(torch.float16).to(dtype)
    idx = torch.as_tensor(np.asarray(indices) if not isinstance(indices, torch.Tensor) else indices)
    if idx.dtype != torch.int32 or idx.dim() != 2 or idx.shape[1] != 4:
        raise ValueError(f"indices must be int32 [N, 4], got {idx.dtype} {tuple(idx.shape)}")
    if feats.dim() != 2 or feats.shape[0] != idx.shape[0]:
        raise ValueError(f"features must be [N, C] with N = {idx.shape[0]}, got {tuple(feats.shape)}")
    tensor_cls = default_tensor_class(model)
    tr = _Tracer(model, order, keep_intermediates)
    x_vid = tr.new_value(kind="sparse", channels=int(feats.shape[1]),
                         spatial_shape=tuple(int(s) for s in spatial_shape), sites=idx, batch_size=int(batch_size))
    handles = []
    patched = []
    was_training = model.training
    try:
        model.eval()
        for m in model.modules():
            handles.append(m.register_forward_pre_hook(tr.pre_hook))
            handles.append(m.register_forward_hook(tr.post_hook))
        for cls in _sparse_tensor_classes():
            orig = cls.__dict__.get("dense")
            if orig is None:
                continue

            def make(orig_fn):
                def dense(self, channels_first: bool = True):
                    t = active_tracer()
                    if t is None or t.suppress_depth > 0:
                        return orig_fn(self, channels_first)
                    return t.dense(orig_fn, self, channels_first)
                return dense

            setattr(cls, "dense", make(orig))
            patched.append((cls, orig))
        set_active_tracer(tr)
        with torch.no_grad():
            x_feats = tr.wrap(feats, x_vid)
            if tr.keep:
                tr.values[x_vid].snapshot = feats.clone()
            with tr.suppress():
                x = tensor_cls(x_feats, idx, [int(s) for s in spatial_shape], int(batch_size))
            result = forward(model, x) if forward is not None else model(x)
            picked = outputs(result) if outputs is not None else result
            flat = _flatten_outputs(picked)
    finally:
        set_active_tracer(None)
        for h in handles:
            h.remove()
        for cls, orig in patched:
            setattr(cls, "dense", orig)
        model.train(was_training)

    out_vids, out_names, torch_outputs, problems = [], [], [], []
    for oname, o in flat:
        t = o.features if _is_sparse_tensor(o) else o
        vid = tr.value_of(t)
        if vid is None:
            if outputs is not None:
                problems.append(f"output '{oname}' is not computed from the traced input")
            continue
        if vid == x_vid:
            problems.append(f"output '{oname}' is the input itself")
            continue
        if vid in out_vids:
            continue
        out_vids.append(vid)
        out_names.append(oname)
        plain = _plain(t).detach().clone()
        if tr.values[vid].kind == "sparse":
            torch_outputs.append((plain, tr.values[vid].sites.clone()))
        else:
            torch_outputs.append(plain)
    if not out_vids and not problems:
        problems.append("the forward returned no tensor computed from the traced input")
    if problems:
        raise ExportError(problems)
    graph, snaps, rounding, notes = _build_graph(tr, out_vids, name or type(model).__name__, spatial_shape,
                                                 int(batch_size), int(feats.shape[1]), keep_intermediates)
    return Trace(graph, out_names, torch_outputs, snaps, rounding, tr.notes + notes)


# ---------------------------------------------------------------------------------------------------
# Export + files
# ---------------------------------------------------------------------------------------------------

def reorder_indices(indices, from_order: str, to_order: str):
    """Indices [N, 4] (b, i0, i1, i2) of one index order in the other (columns [0, 3, 2, 1])."""
    if from_order == to_order:
        return indices
    if isinstance(indices, torch.Tensor):
        return indices[:, [0, 3, 2, 1]].contiguous()
    return np.ascontiguousarray(np.asarray(indices)[:, [0, 3, 2, 1]])


def _np32(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return _plain(t).detach().cpu().to(torch.float32).numpy()
    return np.asarray(t, np.float32)


def _npi32(t) -> np.ndarray:
    return np.ascontiguousarray(_plain(t).cpu().numpy().astype(np.int32))


def save_value(path: Union[str, Path], value, order_from: str = "zyx", order_to: str = "zyx") -> List[str]:
    """Write a dense value as ``path`` (float32) or a sparse one as ``path`` + ``<stem>.indices.tensor``
    (the names ``scn run --output-dir`` uses); returns the files written."""
    path = Path(path)
    if isinstance(value, tuple):
        feats, idx = value
        ipath = path.with_name(path.name[:-len(".tensor")] + ".indices.tensor" if path.name.endswith(".tensor")
                               else path.name + ".indices.tensor")
        tensor_io.save_tensor(str(path), _np32(feats))
        tensor_io.save_tensor(str(ipath), _npi32(reorder_indices(idx, order_from, order_to)))
        return [str(path), str(ipath)]
    tensor_io.save_tensor(str(path), _np32(value))
    return [str(path)]


def export_trace(trace: Trace, path: Union[str, Path], export_order: Optional[str] = None,
                 num_voxels: Union[int, str] = "N", outputs_dir: Optional[Union[str, Path]] = None,
                 intermediates_dir: Optional[Union[str, Path]] = None) -> Graph:
    """Write ``trace`` as SCN ONNX (in ``export_order``, default the traced order) and optionally the
    PyTorch outputs (``outputs_dir/<output tensor name>.tensor`` [+ ``.indices.tensor``], the names
    ``scn run --output-dir`` writes) and every intermediate value (``intermediates_dir``, same naming, plus
    ``values.txt``: value, op, node source). Returns the exported graph."""
    g0 = trace.graph
    order = export_order or g0.order
    graph, vmap = g0.reordered_with_map(order)
    export_onnx(graph, str(path), num_voxels=num_voxels, output_names=trace.output_names)
    if outputs_dir is not None:
        Path(outputs_dir).mkdir(parents=True, exist_ok=True)
        for v, value in zip(graph.output_ids(), trace.torch_outputs):
            save_value(Path(outputs_dir) / f"{v}.tensor", value, g0.order, order)
    if intermediates_dir is not None:
        if not trace.values:
            raise ValueError("the trace kept no intermediate values: trace with keep_intermediates=True")
        d = Path(intermediates_dir)
        d.mkdir(parents=True, exist_ok=True)
        lines = []
        for v0, value in sorted(trace.values.items()):
            v = vmap.get(v0)
            if v is None:
                continue
            if not isinstance(value, tuple) and v0 > 0 and g0.nodes[v0 - 1].op == "scatter" and order != g0.order \
                    and graph.nodes[v - 1].op == "scatter":
                value = value.permute(0, 1, 4, 3, 2)  # the exported scatter writes the other axis order
            save_value(d / f"{v}.tensor", value, g0.order, order)
            node = graph.nodes[v - 1] if v > 0 else None
            lines.append(f"{v}\t{node.op if node else 'input'}\t{(node.name or '') if node else ''}")
        (d / "values.txt").write_text("value\top\tsource\n" + "\n".join(lines) + "\n")
    return graph


def export_spconv(model: nn.Module, path: Union[str, Path], features, indices, spatial_shape: Sequence[int],
                  batch_size: int = 1, order: str = "zyx", export_order: Optional[str] = None,
                  forward: Optional[Callable] = None, outputs: Optional[Callable] = None,
                  outputs_dir: Optional[Union[str, Path]] = None, intermediates_dir: Optional[Union[str, Path]] = None,
                  num_voxels: Union[int, str] = "N", name: Optional[str] = None) -> Trace:
    """Trace ``model`` on one input (see :func:`trace_spconv`) and write it to ``path`` (see
    :func:`export_trace`). Raises :class:`ExportError` listing every module / op it cannot export."""
    trace = trace_spconv(model, features, indices, spatial_shape, batch_size, order, forward, outputs,
                         keep_intermediates=intermediates_dir is not None, name=name)
    export_trace(trace, path, export_order, num_voxels, outputs_dir, intermediates_dir)
    return trace
