"""Sparse backbones as data: layer lists with seeded synthetic fp16 weights.

A model is described once, in its native index order, by a :class:`ModelSpec` (a list of sparse nodes,
the dense tail and the weights). :meth:`ModelSpec.graph` turns it into a :class:`Graph` in either index
order ("zyx" or "xyz"); the exporter (:mod:`scn_tools.export_onnx`) and the reference interpreter
(:func:`run_graph`) both consume that same ``Graph``.

Value numbering: value 0 is the graph input (voxel features); node ``j`` produces value ``j + 1``. These
are exactly the decimal ONNX tensor names ("0", "1", ...).

Changing the index order (zyx <-> xyz) reverses the grid, every conv's kernel_size / stride / padding /
dilation, and the three kernel axes of every weight (``W.transpose(0, 3, 2, 1, 4)``); the indices must be
reordered ``[0, 3, 2, 1]`` by the caller. The tail is rebuilt so that both orders give the same final
tensor: ScatterDense writes ``[B, C, a0, a1, a2]`` in the export order, then a Transpose (omitted when it
would be the identity) brings it to the native tail's axis order, then Reshape merges axes 1 and 2.

Models
------
``centerpoint``  SpMiddleResNetFHD (tianweiy/CenterPoint), native zyx, grid 41 x 1440 x 1440, keys res0..res3.
                 zyx tail: ScatterDense("zyx", [1,128,2,180,180]) -> Reshape [1,256,180,180].
                 xyz tail: ScatterDense("xyz", [1,128,180,180,2]) -> Transpose [0,1,4,3,2] -> Reshape.
``bevfusion``    SparseEncoder (mit-han-lab/bevfusion), native xyz, grid 1440 x 1440 x 41, keys subm1..4,
                 spconv1..3, spconv_down2.
                 xyz tail: ScatterDense("xyz", [1,128,180,180,2]) -> Transpose [0,1,4,2,3] -> Reshape.
                 zyx tail: ScatterDense("zyx", [1,128,2,180,180]) -> Transpose [0,1,2,4,3] -> Reshape.

Synthetic weights
-----------------
Per conv ``i`` (generator ``numpy.random.default_rng([seed, i])``, so a conv's weights do not depend on
the other layers): ``W = N(0, 1) * gain / sqrt(Cin * taps)`` with ``gain = sqrt(2)`` (He; times
``RESIDUAL_BRANCH_GAIN = 0.5`` for the last conv of a residual branch, like a small folded-BN gamma) and
``taps = Kvol ** (2/3)`` the expected number of active kernel taps (LiDAR voxels lie on surfaces, so a
K^3 window holds about K^2 of them), then a folded-BN style per-output-channel scale ``U(0.75, 1.25)``
and shift ``bias = N(0, 0.1)``. The first conv also folds a
per-input-channel normalisation ``1 / input_scale`` (default: the RMS of nuScenes voxel features
x, y, z, intensity, time-lag = 10, 11, 1.6, 25, 0.26), so raw features enter at O(1). Weights and biases are
then rounded to float16: the ONNX file stores those values and the reference upcasts exactly them.
On the shared nuScenes frame (CenterPoint, seed 0) every conv output has a std between 0.2 and 1.7 and
the final map's non-zero entries a std of 1.9 (max 60).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from scn_tools import reference as ref

Int3 = Tuple[int, int, int]
ORDERS = ("zyx", "xyz")
MODELS = ("centerpoint", "bevfusion")

#: RMS of the 5 nuScenes voxel features (x, y, z, intensity, time-lag) measured on the shared frame.
NUSCENES_INPUT_SCALE = (10.0, 11.0, 1.6, 25.0, 0.26)

_REVERSE5 = (0, 1, 4, 3, 2)

#: extra scale of the last conv of a residual branch (folded-BN gamma of the block's second BN), so
#: a SparseBasicBlock grows its input's RMS only mildly
RESIDUAL_BRANCH_GAIN = 0.5  # dense [B, C, a0, a1, a2] of one order -> the other order


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

    op: str  # "conv" | "add" | "relu" | "scatter" | "transpose" | "reshape"
    inputs: Tuple[int, ...]
    conv: Optional[Conv] = None
    dims: Tuple[int, ...] = ()  # transpose permutation / reshape target / scatter output_shape
    format: str = ""  # scatter: index order of its input


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

    def convs(self) -> List[Conv]:
        return [n.conv for n in self.nodes if n.op == "conv"]  # type: ignore[misc]

    def value_info(self) -> List[dict]:
        """Shape inference: per value a dict ``{"kind": "sparse", "channels", "spatial_shape"}`` or
        ``{"kind": "dense", "shape"}``. Raises ValueError on an inconsistent graph."""
        vals: List[dict] = [{"kind": "sparse", "channels": self.in_channels, "spatial_shape": self.grid}]
        conv_in_shape: Dict[str, Int3] = {}  # key -> input spatial shape of the regular conv that stored it
        for j, n in enumerate(self.nodes):
            ins = [vals[i] for i in n.inputs]
            if any(i > j for i in n.inputs):
                raise ValueError(f"node {j} reads a value that is not computed yet")
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
            elif n.op in ("add", "relu"):
                if any(v["kind"] != "sparse" for v in ins):
                    raise ValueError(f"node {j}: {n.op} needs sparse inputs")
                if n.op == "add" and (ins[0]["channels"] != ins[1]["channels"]
                                      or ins[0]["spatial_shape"] != ins[1]["spatial_shape"]):
                    raise ValueError(f"node {j}: add of mismatched tensors {ins}")
                vals.append({k: v for k, v in ins[0].items() if k != "input_spatial_shape"})
            elif n.op == "scatter":
                x = ins[0]
                want = (self.batch_size, x["channels"]) + tuple(x["spatial_shape"])
                if tuple(n.dims) != want:
                    raise ValueError(f"node {j}: scatter output_shape {n.dims} != {want}")
                vals.append({"kind": "dense", "shape": want, "input_spatial_shape": x["spatial_shape"]})
            elif n.op == "transpose":
                shp = ins[0]["shape"]
                if sorted(n.dims) != list(range(len(shp))):
                    raise ValueError(f"node {j}: bad permutation {n.dims}")
                vals.append({"kind": "dense", "shape": tuple(shp[d] for d in n.dims)})
            elif n.op == "reshape":
                shp = ins[0]["shape"]
                if math.prod(n.dims) != math.prod(shp):
                    raise ValueError(f"node {j}: reshape {shp} -> {n.dims} changes the element count")
                vals.append({"kind": "dense", "shape": tuple(n.dims)})
            else:
                raise ValueError(f"node {j}: unknown op {n.op!r}")
        return vals

    @property
    def output_shape(self) -> Tuple[int, ...]:
        return tuple(self.value_info()[-1]["shape"])


@dataclass
class ModelSpec:
    """A model in its native index order: sparse body + dense tail + weights."""

    name: str
    native_order: str
    grid: Int3  # native order
    batch_size: int
    in_channels: int
    body: List[Node]  # sparse nodes; value numbering as in Graph
    tail_perm: Tuple[int, ...]  # permutation of the native dense [B, C, a0, a1, a2] before the reshape
    weights: List[Tuple[np.ndarray, np.ndarray]]

    def graph(self, order: Optional[str] = None) -> Graph:
        """The model as a :class:`Graph` in index order ``order`` (default: native)."""
        order = order or self.native_order
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        flip = order != self.native_order
        nodes = [replace(n, conv=n.conv.reversed()) if flip and n.conv else n for n in self.body]
        weights = [(np.ascontiguousarray(w.transpose(0, 3, 2, 1, 4)) if flip else w, b)
                   for w, b in self.weights]
        grid = tuple(self.grid[::-1]) if flip else tuple(self.grid)
        g = Graph(self.name, order, grid, self.batch_size, self.in_channels, nodes, weights)  # type: ignore
        last = g.value_info()[-1]
        scatter_shape = (self.batch_size, last["channels"]) + tuple(last["spatial_shape"])
        nodes.append(Node("scatter", (len(nodes),), dims=scatter_shape, format=order))
        # dense_native = dense_export.permute(_REVERSE5) when flipped; then apply the native tail perm.
        perm = tuple(_REVERSE5[p] for p in self.tail_perm) if flip else tuple(self.tail_perm)
        shape = tuple(scatter_shape[p] for p in perm)
        if perm != tuple(range(5)):
            nodes.append(Node("transpose", (len(nodes),), dims=perm))
        nodes.append(Node("reshape", (len(nodes),), dims=(shape[0], shape[1] * shape[2], shape[3], shape[4])))
        g.value_info()  # validate
        return g


# ---------------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------------

class _Builder:
    def __init__(self):
        self.nodes: List[Node] = []

    def _push(self, node: Node) -> int:
        self.nodes.append(node)
        return len(self.nodes)  # value id of the new node

    def conv(self, x: int, conv: Conv) -> int:
        return self._push(Node("conv", (x,), conv=conv))

    def add(self, a: int, b: int) -> int:
        return self._push(Node("add", (a, b)))

    def relu(self, x: int) -> int:
        return self._push(Node("relu", (x,)))

    def basic_block(self, x: int, channels: int, key: Optional[str], name: str) -> int:
        """SparseBasicBlock: subm conv(ReLU) -> subm conv(None) -> Add(out, identity) -> ReLU (BN folded)."""
        k3 = (3, 3, 3)
        y = self.conv(x, Conv("subm", channels, channels, k3, padding=(1, 1, 1), key=key, activation="ReLU",
                              name=f"{name}.conv1"))
        y = self.conv(y, Conv("subm", channels, channels, k3, padding=(1, 1, 1), key=key, activation="None",
                              name=f"{name}.conv2"))
        return self.relu(self.add(y, x))


def _resnet_fhd_body(in_channels: int, subm_keys: Sequence[str], down_keys: Sequence[Optional[str]],
                     down_pads: Sequence[Int3], out_conv: Tuple[Int3, Int3, Int3, Optional[str]]) -> List[Node]:
    """16-32-64-128 sparse ResNet with two SparseBasicBlocks per level (SpMiddleResNetFHD layout)."""
    b = _Builder()
    widths = (16, 32, 64, 128)
    k3 = (3, 3, 3)
    x = b.conv(0, Conv("subm", in_channels, 16, k3, padding=(1, 1, 1), key=subm_keys[0], activation="ReLU",
                       name="conv_input"))
    for level, c in enumerate(widths):
        if level > 0:
            x = b.conv(x, Conv("conv", widths[level - 1], c, k3, stride=(2, 2, 2), padding=down_pads[level - 1],
                               key=down_keys[level - 1], activation="ReLU", name=f"down{level}"))
        for blk in range(2):
            x = b.basic_block(x, c, subm_keys[level], f"level{level}.block{blk}")
    k, s, p, key = out_conv
    b.conv(x, Conv("conv", 128, 128, k, stride=s, padding=p, key=key, activation="ReLU", name="conv_out"))
    return b.nodes


def synthetic_weights(body: Sequence[Node], seed: int,
                      input_scale: Optional[Sequence[float]] = None) -> List[Tuple[np.ndarray, np.ndarray]]:
    """Seeded fp16 weights ``[Cout, k0, k1, k2, Cin]`` and biases ``[Cout]`` for every conv of ``body``
    (see the module docstring for the recipe)."""
    weights = []
    # value ids produced by convs that end a residual branch (their output feeds an Add)
    add_inputs = {v for n in body if n.op == "add" for v in n.inputs}
    convs = [(j + 1, n.conv) for j, n in enumerate(body) if n.op == "conv"]
    for i, (value, c) in enumerate(convs):
        assert c is not None
        rng = np.random.default_rng([int(seed), i])
        kvol = int(np.prod(c.kernel_size))
        taps = kvol ** (2.0 / 3.0)  # LiDAR voxels lie on surfaces: a K^3 window holds ~K^2 of them
        gain = math.sqrt(2.0) * (RESIDUAL_BRANCH_GAIN if value in add_inputs else 1.0)
        std = gain / math.sqrt(c.in_channels * taps)
        w = rng.standard_normal((c.out_channels,) + tuple(c.kernel_size) + (c.in_channels,)) * std
        w *= rng.uniform(0.75, 1.25, size=(c.out_channels, 1, 1, 1, 1))
        bias = rng.normal(0.0, 0.1, size=c.out_channels)
        if i == 0 and input_scale is not None:
            scale = np.asarray(input_scale, dtype=np.float64)
            if scale.shape != (c.in_channels,) or bool((scale <= 0).any()):
                raise ValueError(f"input_scale needs {c.in_channels} positive values, got {input_scale}")
            w = w / scale
        w16, b16 = w.astype(np.float16), bias.astype(np.float16)
        if not (np.isfinite(w16).all() and np.isfinite(b16).all()):
            raise ValueError(f"conv {i}: weights overflow float16")
        weights.append((w16, b16))
    return weights


def centerpoint(grid: Sequence[int] = (41, 1440, 1440), seed: int = 0, batch_size: int = 1,
                in_channels: int = 5, input_scale: Optional[Sequence[float]] = NUSCENES_INPUT_SCALE) -> ModelSpec:
    """CenterPoint SpMiddleResNetFHD; ``grid`` in zyx (native) order."""
    body = _resnet_fhd_body(
        in_channels, subm_keys=("res0", "res1", "res2", "res3"), down_keys=(None, None, None),
        down_pads=((1, 1, 1), (1, 1, 1), (0, 1, 1)),
        out_conv=((3, 1, 1), (2, 1, 1), (0, 0, 0), None))
    return ModelSpec("centerpoint", "zyx", tuple(int(g) for g in grid), batch_size, in_channels, body,  # type: ignore
                     tail_perm=(0, 1, 2, 3, 4), weights=synthetic_weights(body, seed, input_scale))


def bevfusion(grid: Sequence[int] = (1440, 1440, 41), seed: int = 0, batch_size: int = 1,
              in_channels: int = 5, input_scale: Optional[Sequence[float]] = NUSCENES_INPUT_SCALE) -> ModelSpec:
    """BEVFusion SparseEncoder; ``grid`` in xyz (native) order."""
    body = _resnet_fhd_body(
        in_channels, subm_keys=("subm1", "subm2", "subm3", "subm4"), down_keys=("spconv1", "spconv2", "spconv3"),
        down_pads=((1, 1, 1), (1, 1, 1), (1, 1, 0)),
        out_conv=((1, 1, 3), (1, 1, 2), (0, 0, 0), "spconv_down2"))
    return ModelSpec("bevfusion", "xyz", tuple(int(g) for g in grid), batch_size, in_channels, body,  # type: ignore
                     tail_perm=(0, 1, 4, 2, 3), weights=synthetic_weights(body, seed, input_scale))


def build_graph(model: str, order: str, grid: Sequence[int], seed: int = 0, batch_size: int = 1,
                in_channels: int = 5, input_scale: Optional[Sequence[float]] = NUSCENES_INPUT_SCALE) -> Graph:
    """Build ``model`` with ``grid`` given in ``order`` and return its Graph in that order."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    native = "zyx" if model == "centerpoint" else "xyz"
    g = tuple(int(x) for x in grid)
    if len(g) != 3:
        raise ValueError(f"grid needs 3 sizes, got {grid}")
    native_grid = g if order == native else g[::-1]
    make = centerpoint if model == "centerpoint" else bevfusion
    return make(native_grid, seed, batch_size, in_channels, input_scale).graph(order)


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


def run_graph(graph: Graph, features, indices, collect_stats: bool = False):
    """Evaluate ``graph`` with the float64 reference.

    ``features`` [N, Cin] are rounded to float16 (the ONNX input type) and upcast to float64; ``indices``
    [N, 4] int32 in the graph's index order. Returns the final dense float64 tensor, and with
    ``collect_stats`` also a list of :class:`LayerStat` (one per conv).
    """
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
    out = values[-1]
    return (out, stats) if collect_stats else out


def kernel_map_stats(graph: Graph, indices) -> List[dict]:
    """Sites and kernel-map pairs of every conv without computing features (fast)."""
    idx = torch.as_tensor(np.asarray(indices))
    sites, shape = idx, graph.grid
    stored: Dict[str, ref.KernelMap] = {}
    rows = []
    for n in graph.nodes:
        if n.op != "conv":
            continue
        c = n.conv
        assert c is not None
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
        if c.key:
            stored[c.key] = km
        rows.append({"name": c.name, "kind": c.kind, "key": c.key, "in_sites": int(sites.shape[0]),
                     "out_sites": int(out_sites.shape[0]), "out_shape": tuple(out_shape), "pairs": km.num_pairs})
        sites, shape = out_sites, out_shape
    return rows
