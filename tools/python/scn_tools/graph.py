"""The graph IR shared by the model zoo, the exporters and the reference interpreter.

A :class:`Graph` is a list of :class:`Node` in topological order. Value 0 is the graph input (voxel
features); node ``j`` produces value ``j + 1``. These are exactly the decimal ONNX tensor names ("0",
"1", ...) written by :mod:`scn_tools.export_onnx`.

Ops (``Node.op``):

==========  =================================================================================
conv        sparse convolution (``Node.conv``: subm / conv / inverse, fused activation)
add         element-wise sum of two sparse tensors on the same sites
relu        ReLU of a sparse tensor
concat      channel concatenation of sparse tensors on the same sites (ONNX Concat, axis 1)
scatter     ScatterDense: sparse -> dense ``[B, C, s0, s1, s2]`` (``dims`` = output_shape)
transpose   dense permute (``dims`` = permutation)
reshape     dense reshape (``dims`` = target shape)
==========  =================================================================================

``Graph.outputs`` lists the graph outputs (value ids; default: the last value). A sparse output is its
features ``[N, C]``; the engine returns its indices beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

from . import reference as ref

Int3 = Tuple[int, int, int]
ORDERS = ("zyx", "xyz")
OPS = ("conv", "add", "relu", "concat", "scatter", "transpose", "reshape")

#: dense [B, C, a0, a1, a2] of one index order -> the other order (its own inverse)
REVERSE5 = (0, 1, 4, 3, 2)


@dataclass(frozen=True)
class Conv:
    """One sparse convolution (in the index order of the graph it belongs to)."""

    kind: str  # "subm" | "conv" | "inverse"
    in_channels: int
    out_channels: int
    kernel_size: Int3
    stride: Int3 = (1, 1, 1)
    padding: Int3 = (0, 0, 0)
    dilation: Int3 = (1, 1, 1)
    key: Optional[str] = None  # spconv indice_key / ONNX rulebook
    activation: str = "None"  # "ReLU" | "None"
    name: str = ""  # module name in the source model (informational)

    def reversed(self) -> "Conv":
        """The same conv with its three spatial axes reversed (zyx <-> xyz)."""
        return replace(self, kernel_size=self.kernel_size[::-1], stride=self.stride[::-1],
                       padding=self.padding[::-1], dilation=self.dilation[::-1])


@dataclass(frozen=True)
class Node:
    """A graph node. ``inputs`` are value ids (0 = graph input, node j -> value j + 1)."""

    op: str  # one of OPS
    inputs: Tuple[int, ...]
    conv: Optional[Conv] = None
    dims: Tuple[int, ...] = ()  # transpose permutation / reshape target / scatter output_shape
    format: str = ""  # scatter: index order of its input
    name: str = ""  # source (module or op) this node came from; informational


@dataclass
class Graph:
    """A model in one index order, ready for export and reference evaluation."""

    name: str
    order: str
    grid: Int3
    batch_size: int
    in_channels: int
    nodes: List[Node]
    weights: List[Tuple[np.ndarray, np.ndarray]]  # per conv (node order): fp16 [Cout,k0,k1,k2,Cin], [Cout]
    outputs: Optional[List[int]] = field(default=None)  # value ids; None = [last value]

    def output_ids(self) -> List[int]:
        return list(self.outputs) if self.outputs is not None else [len(self.nodes)]

    def convs(self) -> List[Conv]:
        return [n.conv for n in self.nodes if n.op == "conv"]  # type: ignore[misc]

    def consumers(self) -> Dict[int, List[int]]:
        """value id -> node indices reading it (graph outputs are not listed)."""
        out: Dict[int, List[int]] = {v: [] for v in range(len(self.nodes) + 1)}
        for j, n in enumerate(self.nodes):
            for v in n.inputs:
                out[v].append(j)
        return out

    def value_info(self) -> List[dict]:
        """Shape inference: per value a dict ``{"kind": "sparse", "channels", "spatial_shape"}`` or
        ``{"kind": "dense", "shape"}``. Raises ValueError on an inconsistent graph."""
        vals: List[dict] = [{"kind": "sparse", "channels": self.in_channels, "spatial_shape": self.grid}]
        conv_in_shape: Dict[str, Int3] = {}  # key -> input spatial shape of the regular conv that stored it
        for j, n in enumerate(self.nodes):
            ins = [vals[i] for i in n.inputs]
            if any(i > j or i < 0 for i in n.inputs):
                raise ValueError(f"node {j}: reads a value that is not computed yet")
            if n.op == "conv":
                c, x = n.conv, ins[0]
                assert c is not None
                if x["kind"] != "sparse" or x["channels"] != c.in_channels:
                    raise ValueError(f"node {j}: conv expects {c.in_channels} sparse channels, got {x}")
                if c.kind == "subm":
                    shape = x["spatial_shape"]
                elif c.kind == "conv":
                    shape = ref.conv_output_shape(x["spatial_shape"], c.kernel_size, c.stride, c.padding,
                                                  c.dilation)
                    if c.key is not None:
                        conv_in_shape[c.key] = x["spatial_shape"]
                elif c.kind == "inverse":
                    if c.key not in conv_in_shape:
                        raise ValueError(f"node {j}: inverse conv key {c.key!r} names no earlier regular conv")
                    shape = conv_in_shape[c.key]
                else:
                    raise ValueError(f"node {j}: unknown conv kind {c.kind!r}")
                vals.append({"kind": "sparse", "channels": c.out_channels, "spatial_shape": tuple(shape),
                             "input_spatial_shape": x["spatial_shape"]})
            elif n.op in ("add", "relu", "concat"):
                if any(v["kind"] != "sparse" for v in ins):
                    raise ValueError(f"node {j}: {n.op} needs sparse inputs")
                want_inputs = {"add": (2, 2), "relu": (1, 1), "concat": (2, 1 << 30)}[n.op]
                if not want_inputs[0] <= len(ins) <= want_inputs[1]:
                    raise ValueError(f"node {j}: {n.op} with {len(ins)} inputs")
                if any(v["spatial_shape"] != ins[0]["spatial_shape"] for v in ins):
                    raise ValueError(f"node {j}: {n.op} of tensors with different spatial shapes {ins}")
                if n.op == "add" and ins[0]["channels"] != ins[1]["channels"]:
                    raise ValueError(f"node {j}: add of mismatched tensors {ins}")
                channels = sum(v["channels"] for v in ins) if n.op == "concat" else ins[0]["channels"]
                vals.append({"kind": "sparse", "channels": channels, "spatial_shape": ins[0]["spatial_shape"]})
            elif n.op == "scatter":
                x = ins[0]
                if x["kind"] != "sparse":
                    raise ValueError(f"node {j}: scatter needs a sparse input")
                want = (self.batch_size, x["channels"]) + tuple(x["spatial_shape"])
                if tuple(n.dims) != want:
                    raise ValueError(f"node {j}: scatter output_shape {n.dims} != {want}")
                vals.append({"kind": "dense", "shape": want, "input_spatial_shape": x["spatial_shape"]})
            elif n.op == "transpose":
                if ins[0]["kind"] != "dense":
                    raise ValueError(f"node {j}: transpose needs a dense input")
                shp = ins[0]["shape"]
                if sorted(n.dims) != list(range(len(shp))):
                    raise ValueError(f"node {j}: bad permutation {n.dims}")
                vals.append({"kind": "dense", "shape": tuple(shp[d] for d in n.dims)})
            elif n.op == "reshape":
                if ins[0]["kind"] != "dense":
                    raise ValueError(f"node {j}: reshape needs a dense input")
                shp = ins[0]["shape"]
                if math.prod(n.dims) != math.prod(shp):
                    raise ValueError(f"node {j}: reshape {shp} -> {n.dims} changes the element count")
                vals.append({"kind": "dense", "shape": tuple(n.dims)})
            else:
                raise ValueError(f"node {j}: unknown op {n.op!r}")
        for v in self.output_ids():
            if not 0 <= v < len(vals):
                raise ValueError(f"graph output {v} is not a value of the graph")
        return vals

    @property
    def output_shape(self) -> Tuple[int, ...]:
        """Shape of the first output: dense ``shape``, or ``(-1, C)`` for a sparse one."""
        v = self.value_info()[self.output_ids()[0]]
        return tuple(v["shape"]) if v["kind"] == "dense" else (-1, v["channels"])

    def reordered(self, order: str) -> "Graph":
        return self.reordered_with_map(order)[0]

    def reordered_with_map(self, order: str) -> Tuple["Graph", Dict[int, int]]:
        """The same model exported in index order ``order``: grid, conv attributes and the three kernel
        axes of every weight reversed; after every ScatterDense a transpose brings the dense tensor back
        to the axis order of this graph (merged with a following Transpose), so every dense output keeps
        its values. Sparse outputs keep their features; their indices are in ``order`` (columns
        ``[0, 3, 2, 1]``). :meth:`reordered_with_map` also returns old value id -> new value id."""
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        if order == self.order:
            return self, {v: v for v in range(len(self.nodes) + 1)}
        new_nodes: List[Node] = []
        vmap: Dict[int, int] = {0: 0}  # old value id -> new value id
        fixed: Dict[int, int] = {}  # old scatter value -> new value holding it in the old axis order

        def push(n: Node) -> int:
            new_nodes.append(n)
            return len(new_nodes)

        def restored(old: int) -> int:
            """New value equal to old dense value ``old`` (a scatter output) in the old axis order."""
            if old not in fixed:
                fixed[old] = push(Node("transpose", (vmap[old],), dims=REVERSE5, name="reorder"))
            return fixed[old]

        scatter_values = {j + 1 for j, n in enumerate(self.nodes) if n.op == "scatter"}
        for j, n in enumerate(self.nodes):
            if n.op == "conv":
                assert n.conv is not None
                vmap[j + 1] = push(replace(n, inputs=(vmap[n.inputs[0]],), conv=n.conv.reversed()))
            elif n.op == "scatter":
                b, c, s0, s1, s2 = n.dims
                vmap[j + 1] = push(replace(n, inputs=(vmap[n.inputs[0]],), dims=(b, c, s2, s1, s0),
                                           format=order))
            elif n.op == "transpose" and n.inputs[0] in scatter_values:
                # dense_old = dense_new.permute(REVERSE5); dense_old.permute(p) = dense_new.permute(R[p])
                perm = tuple(REVERSE5[p] for p in n.dims)
                if perm == (0, 1, 2, 3, 4):
                    vmap[j + 1] = vmap[n.inputs[0]]
                else:
                    vmap[j + 1] = push(replace(n, inputs=(vmap[n.inputs[0]],), dims=perm))
            else:
                ins = tuple(restored(v) if v in scatter_values else vmap[v] for v in n.inputs)
                vmap[j + 1] = push(replace(n, inputs=ins))
        outputs = [restored(v) if v in scatter_values else vmap[v] for v in self.output_ids()]
        weights = [(np.ascontiguousarray(w.transpose(0, 3, 2, 1, 4)), b) for w, b in self.weights]
        g = Graph(self.name, order, tuple(self.grid[::-1]), self.batch_size, self.in_channels,  # type: ignore
                  new_nodes, weights, outputs)
        g.value_info()  # validate
        # values of this graph -> values of the new one (a scatter output maps to its restored copy)
        vmap_out = {v: (fixed[v] if v in fixed else vmap[v]) for v in vmap}
        return g, vmap_out


# ---------------------------------------------------------------------------------------------------
# Reference interpreter
# ---------------------------------------------------------------------------------------------------

@dataclass
class LayerStat:
    node: int
    name: str
    kind: str
    key: Optional[str]
    in_sites: int
    out_sites: int
    out_shape: Int3
    pairs: int
    std: float


def evaluate(graph: Graph, features, indices, collect_stats: bool = False):
    """Evaluate ``graph`` with the float64 reference and return every value (list indexed by value id:
    :class:`reference.SparseTensor` for sparse values, ``torch.Tensor`` for dense ones), and with
    ``collect_stats`` also a list of :class:`LayerStat` (one per conv).

    ``features`` [N, Cin] are rounded to float16 (the ONNX input type) and upcast to float64;
    ``indices`` [N, 4] int32 in the graph's index order."""
    feats = torch.as_tensor(np.asarray(features)).to(torch.float16).to(torch.float64)
    idx = torch.as_tensor(np.asarray(indices))
    if idx.dtype != torch.int32:
        raise ValueError(f"indices must be int32, got {idx.dtype}")
    if feats.dim() != 2 or feats.shape[1] != graph.in_channels:
        raise ValueError(f"features must be [N, {graph.in_channels}], got {tuple(feats.shape)}")
    x = ref.SparseTensor(feats, idx, graph.grid, graph.batch_size)
    values: List[object] = [x]
    stats: List[LayerStat] = []
    conv_i = 0
    for j, n in enumerate(graph.nodes):
        ins = [values[i] for i in n.inputs]
        if n.op == "conv":
            c = n.conv
            assert c is not None
            w16, b16 = graph.weights[conv_i]
            conv_i += 1
            w = torch.from_numpy(w16.astype(np.float64))
            b = torch.from_numpy(b16.astype(np.float64))
            src = ins[0]
            if c.kind == "subm":  # stride / padding attributes are ignored: spconv forces 1 and (K//2)*dil
                y = ref.subm_conv3d(src, w, b, c.dilation, c.key, c.activation)
            elif c.kind == "conv":
                y = ref.sparse_conv3d(src, w, b, c.stride, c.padding, c.dilation, c.key, c.activation)
            else:
                y = ref.sparse_inverse_conv3d(src, w, b, c.key, c.activation)
            if collect_stats:
                pairs = y.kernel_map.num_pairs if y.kernel_map is not None else -1
                stats.append(LayerStat(j, c.name, c.kind, c.key, src.num_sites, y.num_sites, y.spatial_shape,
                                       pairs, float(y.features.std()) if y.num_sites > 1 else 0.0))
            values.append(y)
        elif n.op == "add":
            values.append(ref.add(ins[0], ins[1]))
        elif n.op == "relu":
            values.append(ref.relu(ins[0]))
        elif n.op == "concat":
            values.append(ref.concat(ins))
        elif n.op == "scatter":
            if n.format != graph.order:
                raise ValueError(f"node {j}: scatter format {n.format!r} != graph order {graph.order!r}")
            d = ref.scatter_dense(ins[0])
            if tuple(d.shape) != tuple(n.dims):
                raise ValueError(f"node {j}: scatter gives {tuple(d.shape)}, output_shape says {n.dims}")
            values.append(d)
        elif n.op == "transpose":
            values.append(ref.transpose(ins[0], n.dims))
        elif n.op == "reshape":
            values.append(ref.reshape(ins[0], n.dims))
        else:
            raise ValueError(f"node {j}: unknown op {n.op!r}")
    return (values, stats) if collect_stats else values


def run_graph_outputs(graph: Graph, features, indices) -> List[object]:
    """Every graph output: dense ``torch.Tensor`` or sparse :class:`reference.SparseTensor` (float64)."""
    values = evaluate(graph, features, indices)
    return [values[v] for v in graph.output_ids()]


def run_graph(graph: Graph, features, indices, collect_stats: bool = False):
    """Evaluate ``graph`` with the float64 reference and return its (first) output: a dense float64
    tensor, or a :class:`reference.SparseTensor` for a sparse output; with ``collect_stats`` also a list
    of :class:`LayerStat` (one per conv)."""
    values, stats = evaluate(graph, features, indices, collect_stats=True)
    out = values[graph.output_ids()[0]]
    return (out, stats) if collect_stats else out


def kernel_map_stats(graph: Graph, indices) -> List[dict]:
    """Sites and kernel-map pairs of every conv without computing features (fast). Follows the sparse
    data flow of the graph (conv inputs may come from any earlier value)."""
    idx = torch.as_tensor(np.asarray(indices))
    site_of: Dict[int, Tuple[torch.Tensor, Tuple[int, ...]]] = {0: (idx, tuple(graph.grid))}
    stored: Dict[str, ref.KernelMap] = {}
    rows = []
    for j, n in enumerate(graph.nodes):
        if n.op in ("add", "relu", "concat"):
            site_of[j + 1] = site_of[n.inputs[0]]
            continue
        if n.op != "conv":
            continue
        c = n.conv
        assert c is not None
        sites, shape = site_of[n.inputs[0]]
        if c.kind == "subm":
            km = stored.get(c.key) if c.key else None
            if km is None or not km.subm or km.in_indices is not sites:
                km = ref.build_subm_map(sites, shape, c.kernel_size, c.dilation)
            out_sites, out_shape = sites, shape
        elif c.kind == "conv":
            km = ref.build_conv_map(sites, shape, c.kernel_size, c.stride, c.padding, c.dilation)
            out_sites, out_shape = km.out_indices, km.out_shape
        else:
            km = stored[c.key]  # type: ignore[index]
            out_sites, out_shape = km.in_indices, km.in_shape
        if c.key and c.kind != "inverse":
            stored[c.key] = km
        rows.append({"name": c.name, "kind": c.kind, "key": c.key, "in_sites": int(sites.shape[0]),
                     "out_sites": int(out_sites.shape[0]), "out_shape": tuple(out_shape), "pairs": km.num_pairs})
        site_of[j + 1] = (out_sites, tuple(out_shape))
    return rows
