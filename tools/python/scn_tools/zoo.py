"""Model zoo: real sparse backbones written as spconv 2.x modules, with seeded weights and frames.

Every model is written once against a spconv-style namespace ``sp`` (``spconv.pytorch``, or
:mod:`scn_tools.sparse_nn`, the same API on the float64 reference) the way its source project writes
it (conv + BatchNorm1d + ReLU in SparseSequential, SparseBasicBlock with ``replace_feature``, ``.dense()``
and ``view`` in the tail), then exported by the tracing exporter (:mod:`scn_tools.spconv_export`).

=================  ==============================================================  ======================
name               model                                                           outputs
=================  ==============================================================  ======================
centerpoint        CenterPoint SpMiddleResNetFHD (det3d), nuScenes grid zyx        dense [1,256,180,180]
                   41 x 1440 x 1440, 5 channels, keys res0..res3
bevfusion_xyz      BEVFusion SparseEncoder (mmdet3d), native xyz, grid 1440 x 1440  dense [1,256,180,180]
                   x 41; exported in xyz order
bevfusion_zyx      the same model and weights exported in zyx order (indices         dense [1,256,180,180]
                   reordered); the same output tensor
voxelbackbone8x    OpenPCDet VoxelBackBone8x (SECOND / PV-RCNN), KITTI grid zyx     dense [1,256,200,176]
                   41 x 1600 x 1408, 4 channels, no residuals; also the sparse      + 4 sparse
                   multi-scale features x_conv1..x_conv4 PV-RCNN reads
minkunet           MinkUNet-style UNet (spvnas SparseResUNet42 layout): stem, 4     sparse [N, 19]
                   encoder stages (k2 s2 conv + 2 res blocks), 4 decoder stages
                   (SparseInverseConv3d k2 on the encoder key, Concat with the
                   skip, res blocks with a k1 shortcut), linear 96 -> 19 as a k1
                   subm conv; grid zyx 32 x 256 x 256
=================  ==============================================================  ======================

Seeded weights (:func:`init_weights`) are exact after BatchNorm folding and fp16 rounding: conv weights
have at most 8 significant bits, BN scales ``gamma / sqrt(var + eps)`` are 3-bit numbers times a power
of two, means / betas multiples of 2^-6. So the folded fp16 weights in the ONNX file are exactly the
ones the PyTorch module applies, and the module's float64 forward is the reference of the ONNX model
(checked against :func:`scn_tools.graph.run_graph` on the file in the tests). Activations stay O(1)
(He-scaled for ``Kvol^(2/3)`` active taps, the last BN of a residual branch x 0.5, the first conv scaled
per input channel by a power of two near 1 / RMS of that feature).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn

from . import frames as frames_mod
from . import sparse_nn

# ---------------------------------------------------------------------------------------------------
# building blocks (one class set per namespace: spconv's SparseSequential treats only subclasses of its
# own SparseModule as sparse modules)
# ---------------------------------------------------------------------------------------------------

_BLOCKS: Dict[int, Any] = {}


def _bn(c: int) -> nn.BatchNorm1d:
    return nn.BatchNorm1d(c, eps=1e-3, momentum=0.01)  # OpenPCDet / det3d / mmdet3d settings


def blocks(sp):
    """SparseBasicBlock and ResidualBlock subclassing ``sp.SparseModule``."""
    if id(sp) in _BLOCKS:
        return _BLOCKS[id(sp)]

    class SparseBasicBlock(sp.SparseModule):
        """det3d / OpenPCDet / mmdet3d SparseBasicBlock: conv-BN-ReLU, conv-BN, + identity, ReLU."""

        expansion = 1

        def __init__(self, inplanes: int, planes: int, indice_key: Optional[str] = None):
            super().__init__()
            self.conv1 = sp.SubMConv3d(inplanes, planes, 3, 1, padding=1, bias=False, indice_key=indice_key)
            self.bn1 = _bn(planes)
            self.relu = nn.ReLU()
            self.conv2 = sp.SubMConv3d(planes, planes, 3, 1, padding=1, bias=False, indice_key=indice_key)
            self.bn2 = _bn(planes)
            self.bn2._zoo_gain = 0.5  # last BN of a residual branch

        def forward(self, x):
            identity = x.features
            out = self.conv1(x)
            out = out.replace_feature(self.relu(self.bn1(out.features)))
            out = self.conv2(out)
            out = out.replace_feature(self.bn2(out.features))
            out = out.replace_feature(out.features + identity)
            return out.replace_feature(self.relu(out.features))

    class ResidualBlock(sp.SparseModule):
        """MinkUNet / torchsparse ResidualBlock: (conv k3-BN-ReLU, conv k3-BN) + shortcut, ReLU; the
        shortcut is a k1 conv + BN when the widths differ (inplace ReLU, as torchsparse writes it)."""

        def __init__(self, inc: int, outc: int, indice_key: str):
            super().__init__()
            self.net = sp.SparseSequential(
                sp.SubMConv3d(inc, outc, 3, bias=False, indice_key=indice_key), _bn(outc), nn.ReLU(True),
                sp.SubMConv3d(outc, outc, 3, bias=False, indice_key=indice_key), _bn(outc))
            self.net[4]._zoo_gain = 0.5
            if inc != outc:
                self.downsample = sp.SparseSequential(sp.SubMConv3d(inc, outc, 1, bias=False), _bn(outc))
                self.downsample[1]._zoo_gain = 0.5
            else:
                self.downsample = None
            self.relu = nn.ReLU(True)

        def forward(self, x):
            shortcut = x if self.downsample is None else self.downsample(x)
            out = self.net(x)
            return out.replace_feature(self.relu(out.features + shortcut.features))

    ns = type("Blocks", (), {"SparseBasicBlock": SparseBasicBlock, "ResidualBlock": ResidualBlock})
    _BLOCKS[id(sp)] = ns
    return ns


def _cbr(sp, conv) -> Any:
    """conv + BN + ReLU (OpenPCDet post_act_block / mmdet3d make_sparse_convmodule)."""
    return sp.SparseSequential(conv, _bn(conv.out_channels), nn.ReLU())


# ---------------------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------------------

def spmiddle_resnet_fhd(sp, num_input_features: int = 5):
    """CenterPoint SpMiddleResNetFHD (tianweiy/CenterPoint det3d/models/backbones/scn.py), zyx."""
    B = blocks(sp)

    class SpMiddleResNetFHD(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_input = _cbr(sp, sp.SubMConv3d(num_input_features, 16, 3, bias=False, indice_key="res0"))
            self.conv1 = sp.SparseSequential(B.SparseBasicBlock(16, 16, "res0"), B.SparseBasicBlock(16, 16, "res0"))
            self.conv2 = sp.SparseSequential(
                sp.SparseConv3d(16, 32, 3, 2, padding=1, bias=False), _bn(32), nn.ReLU(),
                B.SparseBasicBlock(32, 32, "res1"), B.SparseBasicBlock(32, 32, "res1"))
            self.conv3 = sp.SparseSequential(
                sp.SparseConv3d(32, 64, 3, 2, padding=1, bias=False), _bn(64), nn.ReLU(),
                B.SparseBasicBlock(64, 64, "res2"), B.SparseBasicBlock(64, 64, "res2"))
            self.conv4 = sp.SparseSequential(
                sp.SparseConv3d(64, 128, 3, 2, padding=[0, 1, 1], bias=False), _bn(128), nn.ReLU(),
                B.SparseBasicBlock(128, 128, "res3"), B.SparseBasicBlock(128, 128, "res3"))
            self.extra_conv = sp.SparseSequential(
                sp.SparseConv3d(128, 128, (3, 1, 1), (2, 1, 1), bias=False), _bn(128), nn.ReLU())

        def forward(self, voxel_features, coors, batch_size, input_shape):
            sparse_shape = np.array(input_shape[::-1]) + [1, 0, 0]  # det3d: grid xyz -> zyx, z + 1
            ret = sp.SparseConvTensor(voxel_features, coors, sparse_shape, batch_size)
            x = self.conv_input(ret)
            x_conv1 = self.conv1(x)
            x_conv2 = self.conv2(x_conv1)
            x_conv3 = self.conv3(x_conv2)
            x_conv4 = self.conv4(x_conv3)
            ret = self.extra_conv(x_conv4).dense()
            N, C, D, H, W = ret.shape
            return ret.view(N, C * D, H, W)

    return SpMiddleResNetFHD()


def bevfusion_sparse_encoder(sp, in_channels: int = 5):
    """BEVFusion SparseEncoder (mit-han-lab/bevfusion, mmdet3d), native xyz, basic blocks."""
    B = blocks(sp)
    channels = ((16, 16, 32), (32, 32, 64), (64, 64, 128), (128, 128))
    paddings = ((0, 0, 1), (0, 0, 1), (0, 0, (1, 1, 0)), (0, 0))

    class SparseEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_input = _cbr(sp, sp.SubMConv3d(in_channels, 16, 3, padding=1, bias=False, indice_key="subm1"))
            layers = []
            cin = 16
            for i, chans in enumerate(channels):
                stage = []
                for j, cout in enumerate(chans):
                    if j == len(chans) - 1 and i != len(channels) - 1:
                        stage.append(_cbr(sp, sp.SparseConv3d(cin, cout, 3, stride=2, padding=paddings[i][j],
                                                              bias=False, indice_key=f"spconv{i + 1}")))
                    else:
                        stage.append(B.SparseBasicBlock(cout, cout, indice_key=f"subm{i + 1}"))
                    cin = cout
                layers.append(sp.SparseSequential(*stage))
            self.encoder_layers = sp.SparseSequential(*layers)
            self.conv_out = _cbr(sp, sp.SparseConv3d(128, 128, (1, 1, 3), stride=(1, 1, 2), padding=0, bias=False,
                                                     indice_key="spconv_down2"))

        def forward(self, x):
            x = self.conv_input(x)
            for layer in self.encoder_layers:
                x = layer(x)
            out = self.conv_out(x)
            spatial_features = out.dense()
            N, C, H, W, D = spatial_features.shape
            spatial_features = spatial_features.permute(0, 1, 4, 2, 3).contiguous()
            return spatial_features.view(N, C * D, H, W)

    return SparseEncoder()


def voxel_backbone_8x(sp, input_channels: int = 4):
    """OpenPCDet VoxelBackBone8x (pcdet/models/backbones_3d/spconv_backbone.py) + HeightCompression.
    Returns {"spatial_features": [N, 256, H/8, W/8], "x_conv1".."x_conv4": sparse}."""

    def block(cin, cout, k, stride=1, padding=0, indice_key=None, conv_type="subm"):
        if conv_type == "subm":
            conv = sp.SubMConv3d(cin, cout, k, bias=False, indice_key=indice_key)
        else:
            conv = sp.SparseConv3d(cin, cout, k, stride=stride, padding=padding, bias=False, indice_key=indice_key)
        return _cbr(sp, conv)

    class VoxelBackBone8x(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_input = _cbr(sp, sp.SubMConv3d(input_channels, 16, 3, padding=1, bias=False, indice_key="subm1"))
            self.conv1 = sp.SparseSequential(block(16, 16, 3, padding=1, indice_key="subm1"))
            self.conv2 = sp.SparseSequential(
                block(16, 32, 3, stride=2, padding=1, indice_key="spconv2", conv_type="spconv"),
                block(32, 32, 3, padding=1, indice_key="subm2"), block(32, 32, 3, padding=1, indice_key="subm2"))
            self.conv3 = sp.SparseSequential(
                block(32, 64, 3, stride=2, padding=1, indice_key="spconv3", conv_type="spconv"),
                block(64, 64, 3, padding=1, indice_key="subm3"), block(64, 64, 3, padding=1, indice_key="subm3"))
            self.conv4 = sp.SparseSequential(
                block(64, 64, 3, stride=2, padding=(0, 1, 1), indice_key="spconv4", conv_type="spconv"),
                block(64, 64, 3, padding=1, indice_key="subm4"), block(64, 64, 3, padding=1, indice_key="subm4"))
            self.conv_out = _cbr(sp, sp.SparseConv3d(64, 128, (3, 1, 1), stride=(2, 1, 1), padding=0, bias=False,
                                                     indice_key="spconv_down2"))

        def forward(self, input_sp_tensor):
            x = self.conv_input(input_sp_tensor)
            x_conv1 = self.conv1(x)
            x_conv2 = self.conv2(x_conv1)
            x_conv3 = self.conv3(x_conv2)
            x_conv4 = self.conv4(x_conv3)
            out = self.conv_out(x_conv4)
            spatial_features = out.dense()  # HeightCompression
            N, C, D, H, W = spatial_features.shape
            return {"spatial_features": spatial_features.view(N, C * D, H, W),
                    "x_conv1": x_conv1, "x_conv2": x_conv2, "x_conv3": x_conv3, "x_conv4": x_conv4}

    return VoxelBackBone8x()


MINKUNET_WIDTHS = (32, 32, 64, 128, 256, 256, 128, 96, 96)


def minkunet(sp, in_channels: int = 4, num_classes: int = 19, cs: Sequence[int] = MINKUNET_WIDTHS):
    """MinkUNet (spvnas SparseResUNet42 layout) in spconv: strided k2 convs with keys down1..down4,
    SparseInverseConv3d k2 on the same keys, channel Concat with the skip, final k1 subm conv."""
    B = blocks(sp)

    class MinkUNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = sp.SparseSequential(
                sp.SubMConv3d(in_channels, cs[0], 3, bias=False, indice_key="subm0"), _bn(cs[0]), nn.ReLU(True),
                sp.SubMConv3d(cs[0], cs[0], 3, bias=False, indice_key="subm0"), _bn(cs[0]), nn.ReLU(True))
            self.stages = nn.ModuleList()
            for i in range(4):
                self.stages.append(sp.SparseSequential(
                    sp.SparseConv3d(cs[i], cs[i], 2, stride=2, bias=False, indice_key=f"down{i + 1}"),
                    _bn(cs[i]), nn.ReLU(True),
                    B.ResidualBlock(cs[i], cs[i + 1], f"subm{i + 1}"),
                    B.ResidualBlock(cs[i + 1], cs[i + 1], f"subm{i + 1}")))
            self.ups = nn.ModuleList()
            skip_c = [cs[3], cs[2], cs[1], cs[0]]
            for j in range(4):
                cin, cout = cs[4 + j], cs[5 + j]
                self.ups.append(nn.ModuleList([
                    sp.SparseSequential(sp.SparseInverseConv3d(cin, cout, 2, indice_key=f"down{4 - j}", bias=False),
                                        _bn(cout), nn.ReLU(True)),
                    sp.SparseSequential(B.ResidualBlock(cout + skip_c[j], cout, f"subm{3 - j}"),
                                        B.ResidualBlock(cout, cout, f"subm{3 - j}"))]))
            self.classifier = sp.SubMConv3d(cs[8], num_classes, 1, bias=True)

        def forward(self, x):
            x0 = self.stem(x)
            feats = [x0]
            for stage in self.stages:
                feats.append(stage(feats[-1]))
            y = feats[-1]
            for j, (up, res) in enumerate(self.ups):
                y = up(y)
                skip = feats[3 - j]
                y = y.replace_feature(torch.cat([y.features, skip.features], dim=1))
                y = res(y)
            return self.classifier(y)

    return MinkUNet()


# ---------------------------------------------------------------------------------------------------
# seeded weights
# ---------------------------------------------------------------------------------------------------

def _round_bits(x: np.ndarray, bits: int, min_exp: int) -> np.ndarray:
    """Round to ``bits`` significant bits; magnitudes below 2^min_exp become 0."""
    m, e = np.frexp(x)  # x = m * 2^e, 0.5 <= |m| < 1
    m = np.round(m * (1 << bits)) / (1 << bits)
    out = np.ldexp(m, e)
    out[np.abs(out) < 2.0 ** min_exp] = 0.0
    return out


def _spconv_1x1_is_hwio_view(m: nn.Module) -> bool:
    import sys
    if not type(m).__module__.startswith("spconv") or not getattr(m, "conv1x1", False):
        return False
    return not getattr(sys.modules.get("spconv.pytorch.conv"), "FILTER_HWIO", False)


def init_weights(model: nn.Module, seed: int, input_scale: Optional[Sequence[float]] = None) -> nn.Module:
    """Seeded weights that stay exact through BN folding and fp16 (see the module docstring).

    Conv ``i`` (module order) draws from ``default_rng([seed, i])``; BatchNorm ``j`` from
    ``default_rng([seed, 1000 + j])``. ``input_scale``: powers of two multiplied into the first conv's
    input channels."""
    convs = [m for m in model.modules() if hasattr(m, "indice_key") and hasattr(m, "weight")]
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for i, m in enumerate(convs):
            rng = np.random.default_rng([int(seed), i])
            k = tuple(int(v) for v in m.kernel_size)
            kvol = math.prod(k)
            taps = 1.0 if getattr(m, "inverse", False) else kvol ** (2.0 / 3.0)
            std = math.sqrt(2.0) / math.sqrt(m.in_channels * taps)
            w = rng.standard_normal(tuple(m.weight.shape)) * std
            if i == 0 and input_scale is not None:
                s = np.asarray(input_scale, dtype=np.float64)
                if not np.all(np.log2(s) == np.round(np.log2(s))):
                    raise ValueError(f"input_scale must be powers of two, got {input_scale}")
                w = w * s  # last axis = Cin (KRSC)
            w = _round_bits(w, 8, -11)
            if _spconv_1x1_is_hwio_view(m):  # spconv multiplies by weight.view(Cin, Cout): store W^T's memory
                w = w.reshape(m.out_channels, m.in_channels).T.reshape(tuple(m.weight.shape))
            m.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
            if m.bias is not None:
                m.bias.copy_(torch.from_numpy(np.round(rng.normal(0.0, 0.1, m.out_channels) * 64) / 64))
        for j, m in enumerate(bns):
            rng = np.random.default_rng([int(seed), 1000 + j])
            c = m.num_features
            root = rng.choice([1.0, 2.0], size=c)  # sqrt(var + eps)
            gamma = rng.choice([0.75, 0.875, 1.0, 1.25], size=c) * root * getattr(m, "_zoo_gain", 1.0)
            m.weight.copy_(torch.from_numpy(gamma))
            m.bias.copy_(torch.from_numpy(np.round(rng.uniform(-0.3, 0.3, c) * 64) / 64))
            m.running_mean.copy_(torch.from_numpy(np.round(rng.uniform(-0.3, 0.3, c) * 64) / 64))
            m.running_var.copy_(torch.from_numpy(root * root - m.eps))
    return model


# ---------------------------------------------------------------------------------------------------
# the zoo
# ---------------------------------------------------------------------------------------------------

@dataclass
class ZooEntry:
    """One zoo model: how to build it, its frame, and how it is exported."""

    name: str
    description: str
    build: Callable[[Any], nn.Module]  # sp namespace -> model (weights not yet set)
    frame: Callable[[], frames_mod.Frame]  # in the model's native order
    order: str  # the model's native index order (the frame's order)
    export_order: str  # index order of the exported ONNX file and its input indices
    input_scale: Optional[Sequence[float]] = None
    forward: Optional[Callable] = None
    outputs: Optional[Callable] = None
    output_shapes: List[Tuple[int, ...]] = field(default_factory=list)  # (-1, C) = sparse
    seed: int = 0
    model_key: str = ""  # entries with one key are one model + frame (traced once); default: name

    @property
    def key(self) -> str:
        return self.model_key or self.name


NUSCENES_SCALE = (2.0 ** -3, 2.0 ** -3, 2.0 ** -1, 2.0 ** -6, 2.0 ** 4)  # ~1 / RMS of x, y, z, intensity, lag
KITTI_SCALE = (2.0 ** -4, 2.0 ** -3, 1.0, 2.0 ** 2)  # x, y, z, intensity

_NUSCENES = frames_mod.nuscenes_frame


def _nuscenes_xyz():
    return frames_mod.nuscenes_frame().reordered("xyz")


def _centerpoint_forward(m, x):
    # det3d signature: (voxel_features, coors, batch_size, input_shape) with input_shape = grid xyz
    return m(x.features, x.indices, x.batch_size, [1440, 1440, 40])


ZOO: Dict[str, ZooEntry] = {e.name: e for e in [
    ZooEntry("centerpoint", "CenterPoint SpMiddleResNetFHD, nuScenes-like frame, zyx",
             lambda sp: spmiddle_resnet_fhd(sp, 5), _NUSCENES, "zyx", "zyx", NUSCENES_SCALE,
             forward=_centerpoint_forward, output_shapes=[(1, 256, 180, 180)]),
    ZooEntry("bevfusion_xyz", "BEVFusion SparseEncoder, nuScenes-like frame, exported in xyz (native)",
             lambda sp: bevfusion_sparse_encoder(sp, 5), _nuscenes_xyz, "xyz", "xyz", NUSCENES_SCALE,
             output_shapes=[(1, 256, 180, 180)], model_key="bevfusion"),
    ZooEntry("bevfusion_zyx", "BEVFusion SparseEncoder, the same weights exported in zyx",
             lambda sp: bevfusion_sparse_encoder(sp, 5), _nuscenes_xyz, "xyz", "zyx", NUSCENES_SCALE,
             output_shapes=[(1, 256, 180, 180)], model_key="bevfusion"),
    ZooEntry("voxelbackbone8x", "OpenPCDet VoxelBackBone8x + HeightCompression, KITTI-like frame, zyx; "
             "BEV map + sparse x_conv1..4",
             lambda sp: voxel_backbone_8x(sp, 4), frames_mod.kitti_frame, "zyx", "zyx", KITTI_SCALE,
             output_shapes=[(1, 256, 200, 176), (-1, 16), (-1, 32), (-1, 64), (-1, 64)]),
    ZooEntry("minkunet", "MinkUNet-style UNet (inverse convs + Concat), SemanticKITTI-like frame, zyx; "
             "sparse logits",
             lambda sp: minkunet(sp, 4, 19), frames_mod.semantickitti_frame, "zyx", "zyx", KITTI_SCALE,
             output_shapes=[(-1, 19)]),
]}


def build(name: str, sp=None, dtype: torch.dtype = torch.float64) -> nn.Module:
    """Zoo model ``name`` on namespace ``sp`` (default :mod:`scn_tools.sparse_nn`) with its seeded weights."""
    e = ZOO[name]
    model = e.build(sp or sparse_nn).to(dtype)  # before init: var = root^2 - eps must be exact in dtype
    init_weights(model, e.seed, e.input_scale)
    return model.eval()


def trace(name: str, sp=None, keep_intermediates: bool = False, frame: Optional[frames_mod.Frame] = None):
    """Build zoo model ``name`` and trace it on its frame (or ``frame``, in the native order); returns
    ``(Trace, frame)``."""
    from . import spconv_export
    e = ZOO[name]
    model = build(name, sp)
    frame = frame or e.frame()
    if frame.order != e.order:
        raise ValueError(f"{name}: the frame must be in the model's order {e.order}")
    tr = spconv_export.trace_spconv(model, frame.features, frame.indices, frame.grid, frame.batch_size,
                                    order=e.order, forward=e.forward, outputs=e.outputs,
                                    keep_intermediates=keep_intermediates, name=e.key)
    return tr, frame


def check_output_shapes(name: str, graph) -> None:
    """Raise ValueError unless ``graph``'s outputs have the entry's ``output_shapes``."""
    info = graph.value_info()
    got = [tuple(info[v]["shape"]) if info[v]["kind"] == "dense" else (-1, info[v]["channels"])
           for v in graph.output_ids()]
    want = [tuple(s) for s in ZOO[name].output_shapes]
    if got != want:
        raise ValueError(f"{name}: outputs {got}, expected {want}")
