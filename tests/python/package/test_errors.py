"""Bad input to scn.Engine: scn.Error with a message naming what is wrong, never a crash."""

import pytest
import torch

import scn

from conftest import GRID


@pytest.fixture(scope="module")
def engine(tiny):
    return scn.Engine(tiny.path, device="cpu", precision="fp32")


@pytest.fixture()
def fi(tiny):
    return torch.from_numpy(tiny.feats), torch.from_numpy(tiny.idx)


def test_error_is_an_exception_type():
    assert issubclass(scn.Error, Exception)


def test_missing_file_names_it(tmp_path):
    with pytest.raises(scn.Error, match="nothere.onnx"):
        scn.Engine(tmp_path / "nothere.onnx", device="cpu")


def test_garbage_file_names_it(tmp_path):
    p = tmp_path / "garbage.onnx"
    p.write_bytes(b"\x08\x07not an onnx model" * 10)
    with pytest.raises(scn.Error, match="garbage.onnx"):
        scn.Engine(p, device="cpu")


def test_bad_options(tiny):
    with pytest.raises(scn.Error, match="device 'tpu'"):
        scn.Engine(tiny.path, device="tpu")
    with pytest.raises(scn.Error, match="int4"):
        scn.Engine(tiny.path, device="cpu", precision="int4")
    with pytest.raises(scn.Error, match="max_batch"):
        scn.Engine(tiny.path, device="cpu", max_batch=0)


def test_wrong_dtypes(engine, fi):
    f, i = fi
    with pytest.raises(scn.Error, match=r"features: dtype float64 is not accepted \(float16 or float32"):
        engine(f.double(), i, GRID)
    with pytest.raises(scn.Error, match=r"indices: dtype int64 is not accepted \(int32"):
        engine(f, i.long(), GRID)
    with pytest.raises(scn.Error, match="indices: dtype float32"):
        engine(f, i.float(), GRID)


def test_not_a_tensor(engine, fi):
    f, i = fi
    with pytest.raises(scn.Error, match="features: expected a tensor with __dlpack__.*got list"):
        engine(f.tolist(), i, GRID)


def test_non_contiguous(engine, fi):
    f, i = fi
    fnc = torch.cat([f, f], 1)[:, ::2]
    assert not fnc.is_contiguous()
    with pytest.raises(scn.Error, match="features: the tensor is not contiguous.*contiguous\\(\\)"):
        engine(fnc, i, GRID)
    with pytest.raises(scn.Error, match="indices: the tensor is not contiguous"):
        engine(f, i.t().contiguous().t(), GRID)


def test_wrong_shapes(engine, fi):
    f, i = fi
    with pytest.raises(scn.Error, match="features"):
        engine(torch.cat([f, f[:, :1]], 1), i, GRID)      # 5 channels for a 4-channel input
    with pytest.raises(scn.Error, match="indices"):
        engine(f, i[:, :3].contiguous(), GRID)
    with pytest.raises(scn.Error):
        engine(f[:-1], i, GRID)                          # row counts differ
    with pytest.raises(scn.Error, match="grid: expected three sizes"):
        engine(f, i, (12, 16))


def test_out_of_grid_voxel_names_the_row(engine, fi):
    f, i = fi
    bad = i.clone()
    bad[7, 3] = GRID[2]
    with pytest.raises(scn.Error, match="7"):
        engine(f, bad, GRID)
    bad = i.clone()
    bad[3, 0] = 1                                        # batch index 1 with batch_size 1
    with pytest.raises(scn.Error, match="batch"):
        engine(f, bad, GRID)


def test_engine_still_works_after_errors(engine, fi, tiny):
    f, i = fi
    with pytest.raises(scn.Error):
        engine(f.double(), i, GRID)
    got = engine(f, i, GRID)[0]
    assert torch.equal(got, scn.Engine(tiny.path, device="cpu", precision="fp32")(f, i, GRID)[0])


def test_bad_capacity_options(tiny):
    with pytest.raises(scn.Error, match="capacity = 'half'"):
        scn.Engine(tiny.path, device="cpu", capacity="half")
    with pytest.raises(scn.Error, match="capacity_margin"):
        scn.Engine(tiny.path, device="cpu", capacity="first_frame", capacity_margin=0.5)
    # a given 0 or negative value is an error, not scn's default (None is the default)
    for margin in (0, -2.0, float("nan")):
        with pytest.raises(scn.Error, match="capacity_margin must be positive"):
            scn.Engine(tiny.path, device="cpu", capacity="first_frame", capacity_margin=margin)
    for voxels in (0, -5):
        with pytest.raises(scn.Error, match="max_voxels must be positive"):
            scn.Engine(tiny.path, device="cpu", max_voxels=voxels)
