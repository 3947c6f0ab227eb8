"""scn.torch.SparseBackbone swapped into a parent module for its spconv-style backbone: the parent's output
must not move (fp32 CPU engine vs the float64 PyTorch forward). With the real spconv (CPU build) when it can
be imported (ctest python_package_spconv), else on scn.export.sparse_nn (the same API)."""

import importlib

import pytest
import torch
from torch import nn

import scn
from scn.export import sparse_nn
from scn.export.spconv_export import export_spconv
from scn.torch import SparseBackbone

from conftest import GRID, TinyBackbone, make_frame, rel_l2, seeded


class Detector(nn.Module):
    """A parent module the way detectors hold their 3D backbone: backbone_3d, then a 2D head."""

    def __init__(self, sp):
        super().__init__()
        self.backbone_3d = TinyBackbone(sp)
        self.head = nn.Conv2d(16, 3, 1)

    def forward(self, x):
        return self.head(self.backbone_3d(x))


def namespaces():
    spaces = [pytest.param(sparse_nn, id="sparse_nn")]
    try:
        spaces.append(pytest.param(importlib.import_module("spconv.pytorch"), id="spconv"))
    except ImportError:
        spaces.append(pytest.param(None, id="spconv", marks=pytest.mark.skip(
            reason="spconv not importable here (ctest python_package_spconv runs this with the real spconv)")))
    return spaces


def built(sp, dtype):
    model = Detector(sp)
    torch.manual_seed(0)
    model.head.weight.data.normal_()
    seeded(model.backbone_3d, 0)
    return model.to(dtype).eval()


@pytest.mark.parametrize("sp", namespaces())
def test_swap_keeps_the_parent_output(sp, tmp_path):
    dtype = torch.float64 if sp is sparse_nn else torch.float32  # spconv's CPU build runs float32
    model = built(sp, dtype)
    feats, idx = make_frame(2)
    f = torch.from_numpy(feats).to(dtype)
    i = torch.from_numpy(idx)
    x = sp.SparseConvTensor(f, i, list(GRID), 1)
    with torch.no_grad():
        want = model(x)
        export_spconv(model.backbone_3d, tmp_path / "bb.onnx", feats, idx, GRID)
        model.backbone_3d = SparseBackbone(tmp_path / "bb.onnx", device="cpu", precision="fp32")  # the swap
        got = model(sp.SparseConvTensor(f, i, list(GRID), 1))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert float(want.abs().max()) > 0.1
    assert rel_l2(got, want) < 1e-5


def test_call_signatures(tmp_path):
    model = seeded(TinyBackbone(sparse_nn))
    feats, idx = make_frame(4, batch=2)
    f, i = torch.from_numpy(feats).double(), torch.from_numpy(idx)
    with torch.no_grad():
        want = model(sparse_nn.SparseConvTensor(f, i, list(GRID), 2))
    export_spconv(model, tmp_path / "bb.onnx", feats, idx, GRID, batch_size=2)
    engine = scn.Engine(tmp_path / "bb.onnx", device="cpu", precision="fp32")
    bb = SparseBackbone(engine, spatial_shape=GRID)
    assert rel_l2(bb(f, i, 2), want) < 1e-5                      # mmdet3d: (voxel_features, coors, batch_size)
    assert rel_l2(bb(f, i, GRID, 2), want) < 1e-5                # (features, indices, spatial_shape, batch_size)
    assert rel_l2(bb(f.float(), i.long(), batch_size=2), want) < 1e-5
    assert bb(f.float(), i, 2).dtype == torch.float32            # cast to the features' dtype
    d = bb({"voxel_features": f, "voxel_coords": i, "batch_size": 2})   # OpenPCDet batch_dict
    assert rel_l2(d[list(engine.outputs)[0]], want) < 1e-5
    pcdet = SparseBackbone(engine, spatial_shape=GRID, keys=["spatial_features"])
    d = pcdet({"voxel_features": f, "voxel_coords": i, "batch_size": 2})
    assert rel_l2(d["spatial_features"], want) < 1e-5
    with pytest.raises(scn.Error, match="2 keys for the 1 outputs"):
        SparseBackbone(engine, keys=["a", "b"])
    with pytest.raises(scn.Error, match="no spatial_shape"):
        SparseBackbone(engine)(f, i, 2)
    with pytest.raises(scn.Error, match="has no output 'nope'"):
        SparseBackbone(engine, output="nope")


def test_modules_raise_the_engines_errors_at_the_end_of_each_call(tmp_path):
    # check_errors=True (default): each call ends with engine.check_errors() (on CUDA the device-side errors, which
    # a call that does not wait has not looked at); False leaves it to the caller
    model = seeded(TinyBackbone(sparse_nn))
    feats, idx = make_frame(4)
    export_spconv(model, tmp_path / "bb.onnx", feats, idx, GRID)
    f, i = torch.from_numpy(feats), torch.from_numpy(idx)
    for flag, calls in ((True, 1), (False, 0)):
        engine = scn.Engine(tmp_path / "bb.onnx", device="cpu", precision="fp32")
        seen = []
        engine.check_errors = lambda: seen.append(1)
        SparseBackbone(engine, spatial_shape=GRID, check_errors=flag)(f, i, 1)
        assert len(seen) == calls, flag


def test_detector_integration_edges(tmp_path):
    # what a detector's training and checkpoint code does around the swapped module
    import copy
    import pickle

    import numpy as np

    model = seeded(TinyBackbone(sparse_nn))
    feats, idx = make_frame(4, batch=2)
    export_spconv(model, tmp_path / "bb.onnx", feats, idx, GRID, batch_size=2)
    engine = scn.Engine(tmp_path / "bb.onnx", device="cpu", precision="fp32")
    bb = SparseBackbone(engine, spatial_shape=GRID)
    f, i = torch.from_numpy(feats), torch.from_numpy(idx)
    want = bb(f, i, 2)
    # an output position past the outputs is refused at construction, naming it
    with pytest.raises(scn.Error, match="output=1: expected an output name or a position below 1"):
        SparseBackbone(engine, output=1)
    assert torch.equal(SparseBackbone(engine, spatial_shape=GRID, output=-1)(f, i, 2), want)
    # a spatial shape given positionally as an array or a tensor (OpenPCDet's sparse_shape is a numpy array)
    assert torch.equal(bb(f, i, np.array(GRID), 2), want)
    assert torch.equal(bb(f, i, torch.tensor(GRID), torch.tensor(2)), want)
    # no batch size: an error, not a batch of one
    with pytest.raises(scn.Error, match="no batch_size"):
        bb(f, i, GRID)
    with pytest.raises(scn.Error, match="no batch_size"):
        bb(features=f, indices=i)
    # features that require grad while grad mode is on: refused (their graph would be cut); detached or under
    # no_grad they run
    trained = f.clone().requires_grad_(True)
    with pytest.raises(scn.Error, match="features requires grad, and scn runs inference only"):
        bb(trained, i, 2)
    with torch.no_grad():
        assert torch.equal(bb(trained, i, 2), want)
    assert torch.equal(bb(trained.detach(), i, 2), want)
    # deep copies (an EMA model) share the engine; pickling (torch.save of the module) rebuilds it from its file
    assert copy.copy(engine) is engine
    twin = copy.deepcopy(bb)
    assert twin.engine is bb.engine and torch.equal(twin(f, i, 2), want)
    loaded = pickle.loads(pickle.dumps(bb))
    assert loaded.engine is not bb.engine and loaded.engine.path == engine.path
    assert loaded.engine.precision == "fp32" and loaded.engine.device == "cpu"
    assert torch.equal(loaded(f, i, 2), want)
    vox = scn.Voxelizer("nuscenes-centerpoint", device="cpu", max_points=1000, max_voxels=500)
    again = pickle.loads(pickle.dumps(vox))
    assert copy.deepcopy(vox) is vox
    assert again.config.max_voxels == 500 and again.max_points == 1000 and again.grid == vox.grid
