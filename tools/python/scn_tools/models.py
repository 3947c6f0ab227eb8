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
from typing import List, Optional, Sequence, Tuple

import numpy as np

from . import reference as ref
from .graph import (ORDERS, Conv, Graph, Int3, LayerStat, Node, evaluate, kernel_map_stats, run_graph,
                             run_graph_outputs)
from .graph import REVERSE5 as _REVERSE5

# the graph IR and the interpreter live in scn_tools.graph; re-exported here for existing callers
__all__ = ["ORDERS", "MODELS", "NUSCENES_INPUT_SCALE", "RESIDUAL_BRANCH_GAIN", "Conv", "Node", "Graph", "ModelSpec",
           "LayerStat", "evaluate", "run_graph", "run_graph_outputs", "kernel_map_stats", "synthetic_weights",
           "centerpoint", "bevfusion", "build_graph", "ref"]

MODELS = ("centerpoint", "bevfusion")

#: RMS of the 5 nuScenes voxel features (x, y, z, intensity, time-lag) measured on the shared frame.
NUSCENES_INPUT_SCALE = (10.0, 11.0, 1.6, 25.0, 0.26)

#: extra scale of the last conv of a residual branch (folded-BN gamma of the block's second BN), so
#: a SparseBasicBlock grows its input's RMS only mildly
RESIDUAL_BRANCH_GAIN = 0.5


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
