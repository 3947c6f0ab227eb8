"""scn.Engine on CUDA with torch tensors (skipped without a GPU): results vs the CPU engine and `scn run`,
inputs read in place, the call enqueued on torch's current stream (or a given one) without a host wait,
output lifetime, out=, SparseBackbone within fp16 tolerance."""

import subprocess

import numpy as np
import pytest
import torch

import scn
from scn.export import tensor_io
from scn.torch import SparseBackbone

from conftest import GRID, has_cuda, make_frame, rel_l2

pytestmark = pytest.mark.skipif(not has_cuda(), reason="no CUDA: scn built without it or no GPU visible")


@pytest.fixture(scope="module")
def engine(tiny):
    return scn.Engine(tiny.path, device="cuda", precision="fp16")


def dev_inputs(tiny, scale=1.0):
    return (torch.from_numpy(tiny.feats).cuda() * scale).contiguous(), torch.from_numpy(tiny.idx).cuda()


def test_matches_cpu_engine(engine, tiny):
    got = engine(*dev_inputs(tiny), GRID)[0]
    assert got.is_cuda and got.dtype == torch.float16 and engine.device == "cuda:0"
    want = scn.Engine(tiny.path, device="cpu", precision="fp32")(tiny.feats, tiny.idx, GRID)[0]
    assert rel_l2(got.float().cpu(), want) < 2e-3


def test_bitwise_equal_to_cli(engine, tiny, cli, tmp_path):
    tensor_io.save_tensor(tmp_path / "f.tensor", tiny.feats)
    tensor_io.save_tensor(tmp_path / "i.tensor", tiny.idx)
    subprocess.run([cli, "run", str(tiny.path), "--features", str(tmp_path / "f.tensor"), "--indices",
                    str(tmp_path / "i.tensor"), "--grid", "x".join(map(str, GRID)), "--device", "cuda",
                    "--precision", "fp16", "--output", str(tmp_path / "out.tensor")], check=True,
                   stdout=subprocess.DEVNULL)
    want = tensor_io.load_tensor(tmp_path / "out.tensor")
    got = engine(*dev_inputs(tiny), GRID)[0].cpu().numpy()
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_device_inputs_are_read_in_place(engine, tiny):
    # the same tensors, their values changed in place between calls: each call reads what they hold then
    f, i = dev_inputs(tiny)
    cpu = scn.Engine(tiny.path, device="cpu", precision="fp16")
    for scale in (1.0, 2.0, 0.5):
        f.copy_(torch.from_numpy(tiny.feats).cuda() * scale)
        got = engine(f, i, GRID)[0]
        want = cpu(tiny.feats * scale, tiny.idx, GRID)[0]
        assert float(want.abs().max()) > 0.1
        assert rel_l2(got.float().cpu(), want.float()) < 2e-3, scale
    assert torch.equal(engine(f, i, GRID)[0], engine(f.clone(), i.clone(), GRID)[0])  # other buffers, same values


def test_host_inputs_are_copied_and_give_the_same_result(engine, tiny):
    a = engine(*dev_inputs(tiny), GRID)[0]
    b = engine(tiny.feats, tiny.idx, GRID)[0]              # numpy on the host: copied once by the engine
    assert b.is_cuda and torch.equal(a, b)


@pytest.mark.parametrize("current", ["default", "side"])
@pytest.mark.parametrize("mode", ["copy", "view"])
def test_no_host_synchronisation(engine, tiny, current, mode):
    # torch's current stream: the default (legacy NULL) stream, or one set with torch.cuda.stream()
    f, i = dev_inputs(tiny)
    want = engine(f, i, GRID)[0]                           # warm-up: plan, tune, capture
    torch.cuda.synchronize()
    stream = torch.cuda.default_stream() if current == "default" else torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(int(2e9))                        # ~1 s of GPU work ahead of the call
        got = engine(f, i, GRID, outputs=mode)[0]
        busy = not stream.query()
        result = got.clone()                               # in stream order: after the forward
    torch.cuda.synchronize()
    assert busy, "the call waited for the GPU (the stream was idle when it returned)"
    assert torch.equal(result, want)


def test_default_stream_order_with_inputs_written_in_place(tiny):
    # torch's default stream: the first call captures the graph on the engine's stream (joined by events), the
    # later ones replay it on the default stream itself. Either way a call sees the input values written on that
    # stream just before it (behind ~0.5 s of GPU work) and work enqueued after it sees its outputs.
    e = scn.Engine(tiny.path, device="cuda", precision="fp16")
    cpu = scn.Engine(tiny.path, device="cpu", precision="fp16")
    f, i = dev_inputs(tiny)
    torch.cuda.synchronize()
    with torch.cuda.stream(torch.cuda.default_stream()):
        for scale in (1.0, -0.5, 2.0):
            torch.cuda._sleep(int(1e9))
            f.copy_(torch.from_numpy(tiny.feats).cuda() * scale)
            got = e(f, i, GRID, outputs="view")[0].clone()
            want = cpu(tiny.feats * scale, tiny.idx, GRID)[0]
            assert float(want.abs().max()) > 0.1
            assert rel_l2(got.float().cpu(), want.float()) < 2e-3, scale


@pytest.mark.parametrize("given", ["zero", "default_stream"])
def test_explicit_default_stream_orders_the_outputs(tiny, given):
    # stream=0 and stream=torch.cuda.default_stream() are the legacy default stream (handle 0): the forward goes
    # there, not to the engine's own stream (which 0 means to the engine), so the output copies made on the default
    # stream after the call see its result, behind ~0.5 s of GPU work enqueued before it
    e = scn.Engine(tiny.path, device="cuda", precision="fp16")
    cpu = scn.Engine(tiny.path, device="cpu", precision="fp16")
    f, i = dev_inputs(tiny)
    stream = 0 if given == "zero" else torch.cuda.default_stream()
    torch.cuda.synchronize()
    for scale in (1.0, -0.5, 2.0):
        with torch.cuda.stream(torch.cuda.default_stream()):
            torch.cuda._sleep(int(1e9))
            f.copy_(torch.from_numpy(tiny.feats).cuda() * scale)
        got = e(f, i, GRID, stream=stream)[0]
        want = cpu(tiny.feats * scale, tiny.idx, GRID)[0]
        assert float(want.abs().max()) > 0.1
        assert rel_l2(got.float().cpu(), want.float()) < 2e-3, scale


def test_dense_views_kept_while_the_buffers_stay(tiny):
    # a dense output's view is built once and handed out again while the engine's buffer keeps its address and
    # shape; a re-planned engine (here: a larger batch) gives a new view of the new buffer
    e = scn.Engine(tiny.path, device="cuda", precision="fp16", max_batch=2)
    f, i = dev_inputs(tiny)
    a = e(f, i, GRID, outputs="view")[0]
    b = e(f * -0.5, i, GRID, outputs="view")[0]
    copied = e(f, i, GRID)[0]
    assert a is b and torch.equal(b, copied) and copied.data_ptr() != b.data_ptr()
    f2, i2 = make_frame(seed=5, batch=2)
    both = e(torch.from_numpy(f2).cuda(), torch.from_numpy(i2).cuda(), GRID, batch_size=2, outputs="view")[0]
    assert both is not a and both.shape[0] == 2 and a.shape[0] == 1
    # the earlier view keeps the buffer it views (freed under it before) with the values of its last call
    assert torch.equal(a, copied)
    ref = scn.Engine(tiny.path, device="cpu", precision="fp32")(f2, i2, GRID, batch_size=2)[0]
    assert rel_l2(both.float().cpu(), ref) < 2e-3


class _CountingImpl:
    """The engine's binding object with its run() calls counted (everything else passed through)."""

    def __init__(self, impl):
        self._impl, self.runs = impl, 0

    def run(self, *args):
        self.runs += 1
        return self._impl.run(*args)

    def __getattr__(self, name):
        return getattr(self._impl, name)


def test_same_tensors_are_bound_once_until_they_change(tiny):
    # a call with the CUDA tensors of the previous call only enqueues the forward (the engine reads them in
    # place); the same objects resized in place, or other tensors, are bound anew
    e = scn.Engine(tiny.path, device="cuda", precision="fp16")
    cpu = scn.Engine(tiny.path, device="cpu", precision="fp32")
    counting = e._impl = _CountingImpl(e._impl)
    f, i = dev_inputs(tiny)
    full = e(f, i, GRID)[0]
    f.mul_(-0.5)
    halved = e(f, i, GRID)[0]
    assert counting.runs == 1
    assert rel_l2(halved.float().cpu(), cpu(tiny.feats * -0.5, tiny.idx, GRID)[0]) < 2e-3
    f.mul_(-2.0)
    f.resize_(200, f.shape[1])                             # same storage and address, fewer rows
    i.resize_(200, 4)
    part = e(f, i, GRID)[0]
    assert counting.runs == 2
    want = cpu(tiny.feats[:200], tiny.idx[:200], GRID)[0]
    assert rel_l2(part.float().cpu(), want) < 2e-3 and not torch.equal(part, full)
    e(f.clone(), i.clone(), GRID)
    assert counting.runs == 3


def test_given_stream(engine, tiny):
    f, i = dev_inputs(tiny)
    want = engine(f, i, GRID)[0]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(int(2e9))
    got = engine(f, i, GRID, stream=side)[0]
    busy = not side.query()
    torch.cuda.synchronize()
    assert busy and torch.equal(got, want)


@pytest.mark.parametrize("how", ["stream=", "current stream", "set_input"])
def test_inputs_read_on_another_stream_are_not_reallocated_under_it(engine, tiny, how):
    # torch's caching allocator gives a freed block back to its own stream (here the default one) at once. Inputs that
    # a forward on another stream still reads, dropped by the caller and let go of by the engine's next binding, must
    # not be handed out again before that forward is done: the package records them on the call's stream (given, or
    # torch's current one; also for set_input + forward(stream=)).
    side = torch.cuda.Stream()

    def call(f, i):
        if how == "stream=":
            engine(f, i, GRID, stream=side, outputs="view")
        elif how == "current stream":
            with torch.cuda.stream(side):
                engine(f, i, GRID, outputs="view")
        else:
            engine.set_input(0, f, i, GRID)
            engine.forward(stream=side, outputs="view")

    call(*dev_inputs(tiny))  # planned, tuned and captured for these shapes
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    f, i = dev_inputs(tiny)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(int(2e9))  # the forwards below wait behind this on `side`
    call(f, i)
    old = {f.data_ptr(), i.data_ptr()}
    like = [(f.shape, f.dtype), (i.shape, i.dtype)]
    call(*dev_inputs(tiny))  # a new binding: the engine lets go of f and i
    del f, i
    again = [torch.empty(shape, dtype=dtype, device="cuda") for shape, dtype in like for _ in range(16)]
    busy = not side.query()
    reused = old & {t.data_ptr() for t in again}
    torch.cuda.synchronize()
    assert busy, "the side stream finished before the check: the test cannot tell"
    assert not reused, "an input block was reallocated while a forward on another stream still read it"


def test_lifetime_copy_and_view(engine, tiny):
    first = engine(*dev_inputs(tiny), GRID)[0]
    kept = first.clone()
    view = engine(*dev_inputs(tiny), GRID, outputs="view")[0]
    second = engine(*dev_inputs(tiny, -0.5), GRID)[0]
    torch.cuda.synchronize()
    assert not torch.equal(second, kept)
    assert torch.equal(first, kept)                        # copy mode: untouched by later calls
    assert torch.equal(view, second)                       # view mode: the engine's buffer, overwritten


def test_preallocated_output(engine, tiny):
    want = engine(*dev_inputs(tiny), GRID)[0]
    buf = torch.full_like(want, float("nan"))
    got = engine(*dev_inputs(tiny), GRID, out=[buf])[0]
    assert got is buf and torch.equal(buf, want)


def test_wrong_device_inputs(tiny):
    cpu = scn.Engine(tiny.path, device="cpu", precision="fp32")
    with pytest.raises(scn.Error, match="a CUDA tensor was given to a cpu engine"):
        cpu(*dev_inputs(tiny), GRID)


def test_backbone_swap_fp16(tmp_path, tiny):
    model = SparseBackbone(tiny.path, device="cuda")
    got = model(torch.from_numpy(tiny.feats).float().cuda(), torch.from_numpy(tiny.idx).cuda(), GRID, 1)
    assert got.dtype == torch.float32 and got.is_cuda
    assert rel_l2(got.cpu(), tiny.trace.torch_outputs[0]) < 2e-3


def test_batch_two(tiny):
    e = scn.Engine(tiny.path, device="cuda", precision="fp16", max_batch=2)
    f2, i2 = make_frame(seed=5, batch=2)
    both = e(torch.from_numpy(f2).cuda(), torch.from_numpy(i2).cuda(), GRID, batch_size=2)[0]
    ref = scn.Engine(tiny.path, device="cpu", precision="fp32")(f2, i2, GRID, batch_size=2)[0]
    assert both.shape[0] == 2 and rel_l2(both.float().cpu(), ref) < 2e-3


def test_bench_runs(tiny, tmp_path, capsys):
    from scn import bench
    tensor_io.save_tensor(tmp_path / "f.tensor", tiny.feats)
    tensor_io.save_tensor(tmp_path / "i.tensor", tiny.idx)
    rc = bench.main([str(tiny.path), "--features", str(tmp_path / "f.tensor"), "--indices", str(tmp_path / "i.tensor"),
                     "--grid", "x".join(map(str, GRID)), "--warmup", "3", "--runs", "20"])
    text = capsys.readouterr().out
    assert rc == 0 and "scn time_forward" in text and "outputs=copy" in text and "outputs=view" in text


def test_device_input_errors_are_reported(tiny):
    e = scn.Engine(tiny.path, device="cuda", precision="fp16")
    f, i = dev_inputs(tiny)
    bad = i.clone()
    bad[7, 3] = GRID[2]                                    # out of the grid: found on the device
    with pytest.raises(scn.Error):
        e(f, bad, GRID)
        e.check_errors()


def test_first_frame_capacity_and_growth(tiny):
    # fitted to the first frame: less device memory, the same bits; a larger frame grows the plan
    bounds = scn.Engine(tiny.path, device="cuda", precision="fp16", max_voxels=20000)
    fitted = scn.Engine(tiny.path, device="cuda", precision="fp16", max_voxels=20000, capacity="first_frame",
                        grow=True)
    first = [t.clone() for t in fitted(*dev_inputs(tiny), GRID)]
    assert torch.equal(first[0], bounds(*dev_inputs(tiny), GRID)[0])
    assert fitted.workspace_bytes < bounds.workspace_bytes
    f2, i2 = make_frame(seed=7, n=900)
    want = bounds(torch.from_numpy(f2).cuda(), torch.from_numpy(i2).cuda(), GRID)[0].clone()
    got = fitted(torch.from_numpy(f2).cuda(), torch.from_numpy(i2).cuda(), GRID)[0]
    assert torch.equal(got, want)


def test_profile_layers_steps_and_later_calls(engine, tiny):
    # the CPU engine's steps (node, op) with the CUDA kernels' names; the graph forwards after it unchanged
    f, i = dev_inputs(tiny)
    want = engine(f, i, GRID)[0].clone()
    steps = engine.profile_layers()
    cpu = scn.Engine(tiny.path, device="cpu", precision="fp32")
    cpu(tiny.feats, tiny.idx, GRID)
    conv_nodes = lambda ss: [s.node for s in ss if s.op == "SparseConvolution"]
    assert conv_nodes(steps) == conv_nodes(cpu.profile_layers()) and len(conv_nodes(steps)) == 4
    assert all(s.ms >= 0 and s.split_k >= 1 for s in steps)
    assert all(s.algorithm for s in steps if s.op == "SparseConvolution")
    assert torch.equal(engine(f, i, GRID)[0], want)


def test_sparse_backbone_raises_a_device_error_in_the_call(tiny):
    # an index outside the grid is found on the GPU: the module's call raises it (check_errors=True), or leaves it
    # to engine.check_errors() (False)
    f, i = dev_inputs(tiny)
    bad = i.clone()
    bad[3, 2] = GRID[1] + 5
    strict = SparseBackbone(tiny.path, spatial_shape=GRID, device="cuda", precision="fp16")
    with pytest.raises(scn.Error, match="outside"):
        strict(f, bad, 1)
    lax = SparseBackbone(tiny.path, spatial_shape=GRID, device="cuda", precision="fp16", check_errors=False)
    lax(f, bad, 1)
    with pytest.raises(scn.Error, match="outside"):
        lax.engine.check_errors()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs (the device tool's nvidia-h200-x2)")
def test_two_gpus_follow_torchs_current_device(tiny):
    # "cuda" is torch's current device; a module refuses inputs on another GPU than its engine's (it used to copy
    # them across)
    f, i = dev_inputs(tiny)
    want = scn.Engine(tiny.path, device="cuda:0", precision="fp16")(f, i, GRID)[0]
    torch.cuda.set_device(1)
    try:
        e1 = scn.Engine(tiny.path, device="cuda", precision="fp16")
        assert e1.device == "cuda:1"
        got = e1(f.to("cuda:1"), i.to("cuda:1"), GRID)[0]
        assert got.device == torch.device("cuda:1") and torch.equal(got.cpu(), want.cpu())
        e0 = scn.Engine(tiny.path, device="cuda:0", precision="fp16")
        bb = SparseBackbone(e0, spatial_shape=GRID)
        with pytest.raises(scn.Error, match="features on cuda:1, the engine"):
            bb(f.to("cuda:1"), i.to("cuda:1"), 1)
        assert torch.equal(bb(f, i, 1).float().cpu(), want.float().cpu())
    finally:
        torch.cuda.set_device(0)
