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


def test_outputs_left_out_of_out_are_copies(engine, tiny):
    # a copy, as without out= (they were views of the engine's buffers, changed by the next call)
    for out in ([None], {}):
        got = engine(*inputs(tiny, 1.0), GRID, out=out)[0]
        kept = got.clone()
        engine(*inputs(tiny, -0.5), GRID)
        assert torch.equal(got, kept), out
    view = engine(*inputs(tiny, 1.0), GRID, outputs="view", out=[None])[0]
    assert view.data_ptr() == engine(*inputs(tiny, 1.0), GRID, outputs="view")[0].data_ptr()


def test_empty_frames_are_accepted(engine, tiny):
    # torch gives a [0, C] tensor stride 1 on axis 0: no elements, nothing to be contiguous about
    c = tiny.feats.shape[1]
    got = engine(torch.empty(0, c), torch.zeros(0, 4, dtype=torch.int32), GRID)[0]
    import numpy as np
    want = engine(np.empty((0, c), np.float32), np.zeros((0, 4), np.int32), GRID)[0]
    assert torch.equal(got, want) and torch.count_nonzero(got) == 0


def test_input_index_outside_the_model_is_an_error(engine, tiny):
    f, i = inputs(tiny, 1.0)
    for index in (1, 3, -1):
        with pytest.raises(scn.Error, match=rf"input index {index} is outside the model's 1 inputs"):
            engine.set_input(index, f, i, GRID)


def test_view_stays_valid_when_a_larger_frame_moves_the_buffers(engine, tiny):
    # a larger frame can move the engine to larger buffers: a view taken before keeps the memory it views (once
    # freed under it) and the values of its own call; views taken after view the new buffers
    from conftest import make_frame
    small_f, small_i = make_frame(seed=7, n=20)
    view = engine(torch.from_numpy(small_f), torch.from_numpy(small_i), GRID, outputs="view")[0]
    kept = view.clone()
    large_f, large_i = make_frame(seed=8, n=1500)
    after = engine(torch.from_numpy(large_f), torch.from_numpy(large_i), GRID, outputs="view")[0]
    assert after.data_ptr() != view.data_ptr(), "the larger frame must move the buffers for this test"
    assert torch.equal(view, kept)
    want = engine(torch.from_numpy(large_f), torch.from_numpy(large_i), GRID)[0]
    assert torch.equal(after, want)
