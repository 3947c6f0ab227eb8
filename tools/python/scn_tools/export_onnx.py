"""Write a :class:`scn_tools.models.Graph` in NVIDIA's SCN ONNX schema (/work/shared/docs/onnx-schema.md).

* opset ``ai.onnx`` 11, producer "pytorch", graph name "scn"; custom ops (SparseConvolution,
  ScatterDense, non-standard Reshape / Transpose / Add) in the default domain "" -- so ``onnx.checker``
  rejects the file by design; do not run it.
* One graph input ``"0"``: FLOAT16 ``[N, Cin]`` (N a dim_param or a concrete size). Tensor names are the
  decimal value ids "0", "1", ...; node names use one counter per op type: ``conv{i}``, ``relu{i}``,
  ``add{i}``, ``scatter{i}``, ``transpose{i}``, ``reshape{i}``.
* Initializers ``spconv{i}.weight`` ``[Cout, k0, k1, k2, Cin]`` and ``spconv{i}.bias`` ``[Cout]``, FLOAT16
  with ``raw_data`` (little endian).
* Attributes are written through ``onnx.helper.make_node`` (sorted by name); ``rulebook`` only when the
  layer has a key.
* Concat (scn extension; NVIDIA's engine has none): channel concatenation of sparse tensors on the same
  sites, attribute ``axis = 1``, node names ``concat{i}``.
* Graph outputs: every value in ``graph.outputs`` (default: the last one), in that order. A dense output
  is FLOAT16 with its shape; a sparse output is its features, FLOAT16 ``[M{k}, C]`` (``M{k}`` a dim_param:
  the site count is known only at run time); the engine returns its indices beside them.
"""

from __future__ import annotations

import os
from typing import Dict, Optional, Sequence, Union

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

from .models import Conv, Graph, Node

OUTPUT_BOUND = 200000
PRECISION = "fp16"


def _fp16_initializer(name: str, value: np.ndarray) -> TensorProto:
    arr = np.ascontiguousarray(value, dtype="<f2")
    return helper.make_tensor(name=name, data_type=TensorProto.FLOAT16, dims=list(arr.shape),
                              vals=arr.tobytes(), raw=True)


def to_onnx(graph: Graph, num_voxels: Union[int, str] = "N", output_bound: int = OUTPUT_BOUND,
            precision: str = PRECISION, output_names: Optional[Sequence[str]] = None) -> onnx.ModelProto:
    """Build the ONNX ModelProto of ``graph``. ``num_voxels``: the input's first dim (int or dim_param);
    ``output_names``: per graph output a description stored as its ``doc_string`` (e.g. "x_conv4")."""
    if output_names is not None and len(output_names) != len(graph.output_ids()):
        raise ValueError(f"{len(output_names)} output names for {len(graph.output_ids())} outputs")
    info = graph.value_info()
    counters: Dict[str, int] = {}

    def node_name(prefix: str) -> str:
        i = counters.get(prefix, 0)
        counters[prefix] = i + 1
        return f"{prefix}{i}"

    nodes, inits = [], []
    conv_i = 0
    for j, n in enumerate(graph.nodes):
        ins = [str(v) for v in n.inputs]
        out = [str(j + 1)]
        if n.op == "conv":
            c = n.conv
            assert c is not None
            w16, b16 = graph.weights[conv_i]
            want = (c.out_channels,) + tuple(c.kernel_size) + (c.in_channels,)
            if w16.dtype != np.float16 or tuple(w16.shape) != want or b16.shape != (c.out_channels,):
                raise ValueError(f"conv {conv_i}: weight {w16.dtype}{w16.shape} / bias {b16.shape} do not fit {c}")
            wname, bname = f"spconv{conv_i}.weight", f"spconv{conv_i}.bias"
            inits += [_fp16_initializer(wname, w16), _fp16_initializer(bname, b16)]
            src, dst = info[n.inputs[0]], info[j + 1]
            attrs = dict(
                ndim=3,
                input_spatial_shape=list(src["spatial_shape"]),
                output_spatial_shape=list(dst["spatial_shape"]),
                in_channels=c.in_channels,
                out_channels=c.out_channels,
                kernel_size=list(c.kernel_size),
                output_bound=int(output_bound),
                stride=list(c.stride),
                dilation=list(c.dilation),
                padding=list(c.padding),
                transposed=0,
                inverse=int(c.kind == "inverse"),
                output_padding=[0, 0, 0],
                groups=1,
                subm=int(c.kind == "subm"),
                activation=c.activation,
                precision=precision,
                output_precision=precision,
            )
            if c.key is not None:
                attrs["rulebook"] = c.key
            nodes.append(helper.make_node("SparseConvolution", ins + [wname, bname], out, node_name("conv"),
                                          **attrs))
            conv_i += 1
        elif n.op == "add":
            nodes.append(helper.make_node("Add", ins, out, node_name("add"), precision=precision,
                                          output_precision=precision))
        elif n.op == "relu":
            nodes.append(helper.make_node("Relu", ins, out, node_name("relu")))
        elif n.op == "concat":
            nodes.append(helper.make_node("Concat", ins, out, node_name("concat"), axis=1))
        elif n.op == "scatter":
            nodes.append(helper.make_node("ScatterDense", ins, out, node_name("scatter"),
                                          input_spatial_shape=list(info[n.inputs[0]]["spatial_shape"]),
                                          format=n.format, output_shape=list(n.dims)))
        elif n.op in ("transpose", "reshape"):
            nodes.append(helper.make_node(n.op.capitalize(), ins, out, node_name(n.op), dims=list(n.dims)))
        else:
            raise ValueError(f"node {j}: unknown op {n.op!r}")
        source = n.name or (n.conv.name if n.conv is not None else "")
        if source:
            nodes[-1].doc_string = source  # where the node came from (module name); read by no parser

    inputs = [helper.make_tensor_value_info("0", TensorProto.FLOAT16, [num_voxels, graph.in_channels])]
    outputs = []
    for k, v in enumerate(graph.output_ids()):
        shape = list(info[v]["shape"]) if info[v]["kind"] == "dense" else [f"M{k}", info[v]["channels"]]
        outputs.append(helper.make_tensor_value_info(str(v), TensorProto.FLOAT16, shape,
                                                     doc_string=output_names[k] if output_names else ""))
    if len(set(graph.output_ids())) != len(graph.output_ids()):
        raise ValueError(f"graph outputs {graph.output_ids()} name a value twice")
    if 0 in graph.output_ids():
        raise ValueError("the graph input cannot be a graph output")
    g = helper.make_graph(nodes, "scn", inputs, outputs, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_operatorsetid("ai.onnx", 11)],
                             producer_name="pytorch")


def export_onnx(graph: Graph, path: str, num_voxels: Union[int, str] = "N",
                output_bound: int = OUTPUT_BOUND, output_names: Optional[Sequence[str]] = None) -> onnx.ModelProto:
    """Write ``graph`` to ``path`` (no onnx.checker: the custom ops are in the default domain)."""
    model = to_onnx(graph, num_voxels=num_voxels, output_bound=output_bound, output_names=output_names)
    onnx.save_model(model, path)
    return model


# ---------------------------------------------------------------------------------------------------
# Import (for round-trip tests and for running the reference on any SCN ONNX file)
# ---------------------------------------------------------------------------------------------------

def _attrs(node) -> dict:
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _fp16_array(t: TensorProto) -> np.ndarray:
    if t.data_type != TensorProto.FLOAT16:
        raise ValueError(f"initializer {t.name}: data type {t.data_type}, expected FLOAT16")
    return onnx.numpy_helper.to_array(t).astype(np.float16)


def _conv_params(a: dict, w: np.ndarray, where: str):
    """Kernel / stride / padding / dilation of a SparseConvolution, checked as the engine's parser checks
    them: the reference would otherwise compute something for a file the engine rejects (dilation 0 puts
    every offset on the centre; the weight's kernel silently wins over ``kernel_size``)."""
    out = []
    for attr, lo in (("kernel_size", 1), ("stride", 1), ("padding", 0), ("dilation", 1)):
        v = a[attr]
        v = tuple(v) if isinstance(v, (list, tuple)) else (v,)
        if len(v) != 3 or not all(isinstance(x, int) for x in v):
            raise ValueError(f"{where}: attribute {attr} must be 3 ints, got {a[attr]!r}")
        if any(x < lo for x in v):
            raise ValueError(f"{where}: attribute {attr} {list(v)} must be >= {lo}")
        out.append(v)
    k = out[0]
    if w.ndim != 5 or tuple(w.shape[1:4]) != k:
        raise ValueError(f"{where}: weight shape {list(w.shape)} disagrees with attribute kernel_size {list(k)} "
                         f"(weights are [Cout, k0, k1, k2, Cin])")
    if w.shape[0] < 1 or w.shape[4] < 1:
        raise ValueError(f"{where}: weight shape {list(w.shape)} is empty")
    if a["subm"]:
        if any(x % 2 == 0 for x in k):
            raise ValueError(f"{where}: submanifold conv needs an odd kernel_size, got {list(k)}")
        if out[1] != (1, 1, 1):
            raise ValueError(f"{where}: submanifold conv needs stride 1, got {list(out[1])}")
        if a.get("inverse", 0):
            raise ValueError(f"{where}: subm=1 and inverse=1 together are not a valid conv")
    return out


def graph_from_onnx(model: Union[str, "os.PathLike[str]", onnx.ModelProto], grid=None,
                    batch_size: Optional[int] = None) -> Graph:
    """Read an SCN ONNX file back into a :class:`Graph` (the reference can then run it).

    The grid defaults to the first conv's ``input_spatial_shape`` and the batch size to the first
    ScatterDense ``output_shape[0]`` (1 if there is none). Raises ValueError on anything outside the
    subset this package writes (transposed / grouped convs, unknown ops, missing attributes or
    initializers) and on conv parameters the engine rejects (kernel / stride / dilation < 1, padding < 0,
    ``kernel_size`` other than the weight's); read from a file, the message starts with its path."""
    if isinstance(model, onnx.ModelProto):
        return _graph_from_onnx(model, grid, batch_size)
    path = os.fspath(model)
    try:
        return _graph_from_onnx(onnx.load(path), grid, batch_size)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def _graph_from_onnx(m: onnx.ModelProto, grid, batch_size: Optional[int]) -> Graph:
    g = m.graph
    if len(g.input) != 1:
        raise ValueError(f"expected one graph input, got {[i.name for i in g.input]}")
    inp = g.input[0]
    dims = inp.type.tensor_type.shape.dim
    if len(dims) != 2 or not dims[1].dim_value:
        raise ValueError("graph input must be [N, Cin] with a concrete Cin")
    inits = {t.name: t for t in g.initializer}
    value_id = {inp.name: 0}
    nodes, weights = [], []
    order, first_grid, first_batch = None, None, None
    for j, n in enumerate(g.node):
        a = _attrs(n)
        data_inputs = n.input[:1] if n.op_type == "SparseConvolution" else n.input  # conv: (x, W, b)
        try:
            ins = tuple(value_id[x] for x in data_inputs)
        except KeyError as e:
            raise ValueError(f"node {n.name}: unknown input tensor {e}") from None
        if n.op_type == "SparseConvolution":
            for req in ("kernel_size", "stride", "padding", "dilation", "subm", "activation"):
                if req not in a:
                    raise ValueError(f"node {n.name}: missing attribute {req!r}")
            if a.get("transposed", 0) != 0 or a.get("groups", 1) != 1:
                raise ValueError(f"node {n.name}: transposed / grouped convolutions are not supported")
            if len(n.input) < 2:
                raise ValueError(f"node {n.name}: SparseConvolution without a weight input")
            for role, t in zip(("weight", "bias"), n.input[1:3]):
                if t not in inits:
                    raise ValueError(f"node {n.name}: {role} {t!r} is not an initializer of the graph")
            w = _fp16_array(inits[n.input[1]])
            b = _fp16_array(inits[n.input[2]]) if len(n.input) > 2 else np.zeros(w.shape[0], np.float16)
            k, st, pad, dil = _conv_params(a, w, f"node {n.name}")
            if b.shape != (w.shape[0],):
                raise ValueError(f"node {n.name}: bias shape {list(b.shape)} must be [{w.shape[0]}]")
            kind = "subm" if a["subm"] else ("inverse" if a.get("inverse", 0) else "conv")
            conv = Conv(kind, int(w.shape[4]), int(w.shape[0]), k, st, pad, dil,  # type: ignore[arg-type]
                        a.get("rulebook") or None, a["activation"], name=n.name)
            if first_grid is None:
                first_grid = tuple(a.get("input_spatial_shape", ())) or None
            nodes.append(Node("conv", ins, conv=conv))
            weights.append((w, b))
        elif n.op_type in ("Add", "Relu"):
            nodes.append(Node(n.op_type.lower(), ins))
        elif n.op_type == "Concat":
            if a.get("axis", 1) not in (1, -1):
                raise ValueError(f"node {n.name}: Concat axis {a.get('axis')} (only 1 / -1: channels)")
            nodes.append(Node("concat", ins))
        elif n.op_type == "ScatterDense":
            order = a.get("format", "zyx")
            if first_batch is None:
                first_batch = int(a["output_shape"][0])
            nodes.append(Node("scatter", ins, dims=tuple(a["output_shape"]), format=order))
        elif n.op_type in ("Transpose", "Reshape"):
            nodes.append(Node(n.op_type.lower(), ins, dims=tuple(a["dims"])))
        else:
            raise ValueError(f"node {n.name}: unsupported op {n.op_type!r}")
        if len(n.output) != 1:
            raise ValueError(f"node {n.name}: expected one output")
        value_id[n.output[0]] = j + 1
    grid = tuple(grid) if grid is not None else first_grid
    if grid is None:
        raise ValueError("cannot tell the grid: pass grid=")
    try:
        outputs = [value_id[o.name] for o in g.output]
    except KeyError as e:
        raise ValueError(f"graph output {e} is not produced by any node") from None
    graph = Graph("onnx", order or "zyx", grid, batch_size or first_batch or 1,  # type: ignore[arg-type]
                  int(dims[1].dim_value), nodes, weights, outputs)
    info = graph.value_info()
    for n, (j, node) in zip(g.node, enumerate(nodes)):  # check the informational shapes
        a = _attrs(n)
        if node.op == "conv":
            for attr, want in (("input_spatial_shape", info[node.inputs[0]]["spatial_shape"]),
                               ("output_spatial_shape", info[j + 1]["spatial_shape"])):
                if attr in a and tuple(a[attr]) != tuple(want):
                    raise ValueError(f"node {n.name}: {attr} {a[attr]} != computed {list(want)}")
            for attr, want in (("in_channels", node.conv.in_channels), ("out_channels", node.conv.out_channels)):
                if attr in a and a[attr] != want:
                    raise ValueError(f"node {n.name}: {attr} {a[attr]} != weight's {want}")
    return graph
