"""Output modes on the CPU: copy (default; a later call never changes a returned tensor), view (the engine's
buffers, overwritten by the next call) and out= (caller-provided tensors)."""

import pytest
import torch

import scn

from conftest import GRID


@pytest.fixture()
def engine(tiny):
    return scn.Engine(tiny.path, device="cpu", precision="fp32")


def inputs(tiny, scale):
    return torch.from_numpy(tiny.feats) * scale, torch.from_numpy(tiny.idx)


def test_copy_mode_outputs_survive_later_calls(engine, tiny):
    first = engine(*inputs(tiny, 1.0), GRID)[0]
    kept = first.clone()
    second = engine(*inputs(tiny, -0.5), GRID)[0]
    assert not torch.equal(second, kept)          # the second call computed something else
    assert torch.equal(first, kept)               # ... and did not touch the first result
    assert first.data_ptr() != second.data_ptr()


def test_view_mode_is_overwritten_by_the_next_call(engine, tiny):
    view = engine(*inputs(tiny, 1.0), GRID, outputs="view")[0]
    kept = view.clone()
    again = engine(*inputs(tiny, 1.0), GRID, outputs="view")[0]
    assert again.data_ptr() == view.data_ptr()    # the engine's own buffer, no copy
    second = engine(*inputs(tiny, -0.5), GRID)[0]
    assert not torch.equal(view, kept) and torch.equal(view, second)


def test_view_keeps_the_engine_alive(tiny):
    view = scn.Engine(tiny.path, device="cpu", precision="fp32")(*inputs(tiny, 1.0), GRID, outputs="view")[0]
    import gc
    gc.collect()
    want = scn.Engine(tiny.path, device="cpu", precision="fp32")(*inputs(tiny, 1.0), GRID)[0]
    assert torch.equal(view, want)


def test_preallocated_outputs(engine, tiny):
    want = engine(*inputs(tiny, 1.0), GRID)[0]
    buf = torch.full_like(want, float("nan"))
    got = engine(*inputs(tiny, 1.0), GRID, out=[buf])[0]
    assert got is buf and torch.equal(buf, want)
    name = list(engine.outputs)[0]
    buf2 = torch.zeros_like(want)
    assert engine(*inputs(tiny, 1.0), GRID, out={name: buf2})[name] is buf2 and torch.equal(buf2, want)


def test_preallocated_output_errors(engine, tiny):
    want = engine(*inputs(tiny, 1.0), GRID)[0]
    with pytest.raises(scn.Error, match=r"the given tensor is \(1, 16, 8, 9\)"):
        engine(*inputs(tiny, 1.0), GRID, out=[torch.empty(1, 16, 8, 9)])
    with pytest.raises(scn.Error, match="float16"):
        engine(*inputs(tiny, 1.0), GRID, out=[torch.empty(want.shape, dtype=torch.float16)])
    with pytest.raises(scn.Error, match="not contiguous"):
        engine(*inputs(tiny, 1.0), GRID, out=[torch.empty(1, 16, 10, 8).transpose(2, 3)])
    with pytest.raises(scn.Error, match="2 tensors for 1 outputs"):
        engine(*inputs(tiny, 1.0), GRID, out=[want.clone(), want.clone()])
    with pytest.raises(scn.Error, match="no output named 'nope'"):
        engine(*inputs(tiny, 1.0), GRID, out={"nope": want.clone()})
    with pytest.raises(scn.Error, match="outputs='bogus'"):
        engine(*inputs(tiny, 1.0), GRID, outputs="bogus")


def test_sparse_outputs_copy_and_view(tiny_sparse):
    e = scn.Engine(tiny_sparse.path, device="cpu", precision="fp32")
    f = torch.from_numpy(tiny_sparse.feats)
    i = torch.from_numpy(tiny_sparse.idx)
    feats, idx = e(f, i, GRID)[1]
    kept = feats.clone()
    vf, vi = e(f, i, GRID, outputs="view")[1]
    assert torch.equal(vf, kept) and torch.equal(vi, idx)
    second = e(f * 3, i, GRID)[1][0]
    assert not torch.equal(second, kept) and torch.equal(feats, kept)
    with pytest.raises(scn.Error, match="sparse"):
        e(f, i, GRID, out=[None, torch.empty_like(feats)])
