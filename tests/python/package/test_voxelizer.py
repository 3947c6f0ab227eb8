"""scn.Voxelizer and Engine.run_points: presets and settings, clear errors, the CPU voxelizer bitwise equal to
`scn voxelize`, points -> model output equal to the two steps; CUDA (skipped without a GPU): bitwise equal to the CPU
voxelizer, run_points without a host wait, the voxelizer's overflow raised by Engine.check_errors()."""

import gc
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import scn
from scn.export import tensor_io

from conftest import GRID, has_cuda, rel_l2

cuda = pytest.mark.skipif(not has_cuda(), reason="no CUDA: scn built without it or no GPU visible")

# the tiny model's grid (z, y, x) = (12, 16, 20) as a voxel grid of 1 m voxels from the origin, 4 point columns
TINY_BOX = dict(range=(0.0, 0.0, 0.0, 20.0, 16.0, 12.0), voxel_size=(1.0, 1.0, 1.0), point_columns=4,
                feature_columns=[0, 1, 2, 3], model_z_plus_one=False, max_voxels=4000)


def tiny_points(seed=0, n=2500, out_of_range=7, non_finite=5):
    """Points around two tilted planes inside the tiny box (several per voxel), then `out_of_range` rows outside
    it and `non_finite` rows with a NaN coordinate, shuffled: float32 [P, 4] (x, y, z, intensity)."""
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(0, 20, n), rng.uniform(0, 16, n)
    z = np.clip(rng.choice([3.0, 7.5], n) + 0.25 * (y - 8) + rng.normal(0, 0.3, n), 0, 11.99)
    pts = np.stack([x, y, z, rng.uniform(0, 1, n)], 1)
    far = np.stack([rng.uniform(21, 30, out_of_range), rng.uniform(0, 16, out_of_range), np.full(out_of_range, 5.0),
                    np.ones(out_of_range)], 1)
    bad = np.stack([np.full(non_finite, np.nan), rng.uniform(0, 16, non_finite), np.full(non_finite, 5.0),
                    np.ones(non_finite)], 1)
    pts = np.concatenate([pts, far, bad]).astype(np.float32)
    return pts[rng.permutation(len(pts))]


def nuscenes_points(seed=1, n=20000):
    rng = np.random.default_rng(seed)
    pts = np.stack([rng.uniform(-54, 54, n), rng.uniform(-54, 54, n), rng.uniform(-5, 3, n), rng.uniform(0, 255, n),
                    rng.uniform(0, 0.5, n)], 1).astype(np.float32)
    return np.concatenate([pts, pts[:3000] + np.float32(0.01)])  # some voxels with several points


def test_presets_grids_and_settings():
    assert "nuscenes-centerpoint" in scn.voxelizer_presets()
    v = scn.Voxelizer("nuscenes-centerpoint", device="cpu")
    assert v.config.name == "nuscenes-centerpoint" and v.grid == (40, 1440, 1440) and v.model_grid == (41, 1440, 1440)
    assert v.backend == "cpu" and v.config.point_columns == 5 and v.config.reduction == "mean"
    assert v.workspace_bytes == 0                          # host buffers, sized by each run
    w = scn.Voxelizer("nuscenes-centerpoint", device="cpu", voxel_size=(0.1, 0.1, 0.2), order="xyz",
                      reduction="first", feature_dtype="float32")
    assert w.grid == (1080, 1080, 40) and w.config.reduction == "first" and w.config.feature_dtype == "float32"
    assert w.config.name == "nuscenes-centerpoint with voxel_size, order, reduction, feature_dtype"


def test_bad_settings_and_points_name_the_problem():
    with pytest.raises(scn.Error, match="unknown voxelizer preset 'nope'"):
        scn.Voxelizer("nope", device="cpu")
    with pytest.raises(scn.Error, match="no setting 'bogus'"):
        scn.Voxelizer(device="cpu", bogus=1)
    with pytest.raises(scn.Error, match=r"range='far' has the wrong type \(the preset's: \[-54.0"):
        scn.Voxelizer(device="cpu", range="far")
    with pytest.raises(scn.Error, match="reduction = 'median'"):
        scn.Voxelizer(device="cpu", reduction="median")
    with pytest.raises(scn.Error, match="voxel size y = -0.1 must be positive"):
        scn.Voxelizer(device="cpu", voxel_size=(0.1, -0.1, 0.2))
    with pytest.raises(scn.Error, match="max_points must be at least 1"):
        scn.Voxelizer(device="cpu", max_points=0)
    v = scn.Voxelizer(device="cpu", max_points=100)
    with pytest.raises(scn.Error, match="voxelizer points: dtype int32 is not accepted"):
        v(np.zeros((10, 5), np.int32))
    with pytest.raises(scn.Error, match="points have 4 columns, the config expects 5"):
        v(np.zeros((10, 4), np.float32))
    with pytest.raises(scn.Error, match="101 points exceed max_points = 100"):
        v(np.zeros((101, 5), np.float32))
    with pytest.raises(scn.Error, match="voxelizer points: expected a tensor with __dlpack__"):
        v([[0.0] * 5])


@pytest.mark.parametrize("settings, flags", [
    ({}, []),
    (dict(voxel_size=(0.2, 0.2, 0.25), order="xyz", reduction="first", feature_dtype="float32",
          feature_columns=[3, 0, 1], max_points_per_voxel=3, batch_index=2),
     ["--voxel-size", "0.2,0.2,0.25", "--order", "xyz", "--reduction", "first", "--dtype", "fp32",
      "--feature-columns", "3,0,1", "--max-points-per-voxel", "3", "--batch-index", "2"]),
])
def test_cpu_voxelizer_equals_the_cli_bitwise(cli, tmp_path, settings, flags):
    pts = nuscenes_points()
    pts.tofile(tmp_path / "p.bin")
    subprocess.run([cli, "voxelize", str(tmp_path / "p.bin"), "--preset", "nuscenes-centerpoint", "--device", "cpu",
                    "--features", str(tmp_path / "f.tensor"), "--indices", str(tmp_path / "i.tensor"), "--quiet"]
                   + flags, check=True)
    f, i = scn.Voxelizer("nuscenes-centerpoint", device="cpu", **settings)(torch.from_numpy(pts))
    want_f, want_i = tensor_io.load_tensor(tmp_path / "f.tensor"), tensor_io.load_tensor(tmp_path / "i.tensor")
    assert f.numpy().tobytes() == want_f.tobytes() and i.numpy().tobytes() == want_i.tobytes()
    assert len(want_i) > 15000


def test_statistics_and_output_modes():
    pts = tiny_points()
    v = scn.Voxelizer(device="cpu", **TINY_BOX)
    f, i = v(pts)
    s = v.stats
    assert (s.points, s.dropped_out_of_range, s.dropped_non_finite) == (len(pts), 7, 5)
    assert s.voxels == len(i) == len(f) and s.kept == s.points - 12 - s.dropped_full and s.voxels < 2500
    assert (i[:, 0] == 0).all() and all(int(m) < g for m, g in zip(i[:, 1:].max(0).values, GRID))
    view = v(pts * np.float32([1, 1, 1, 2]), outputs="view")[0]
    assert not torch.equal(view, f) and torch.equal(view[:, :3], f[:, :3])  # copy mode: untouched by the next call


def test_run_points_equals_voxelize_then_call_cpu(tiny):
    e = scn.Engine(tiny.path, device="cpu", precision="fp32")
    v = scn.Voxelizer(device="cpu", **TINY_BOX)
    for seed in (0, 1):
        pts = tiny_points(seed)
        got = e.run_points(pts, v)[0]
        f, i = v(pts)
        want = e(f, i, GRID)[0]
        assert float(want.abs().max()) > 0.1 and torch.equal(got, want)


def test_run_points_checks_grid_order_and_batch(tiny):
    e = scn.Engine(tiny.path, device="cpu", precision="fp32")
    coarse = scn.Voxelizer(device="cpu", **{**TINY_BOX, "voxel_size": (2.0, 2.0, 2.0)})
    with pytest.raises(scn.Error, match=r"input grid 12x16x20 \(z, y, x\) disagrees with the voxel grid 6x8x10"):
        e.run_points(tiny_points(), coarse)
    xyz = scn.Voxelizer(device="cpu", **{**TINY_BOX, "order": "xyz"})
    with pytest.raises(scn.Error, match="writes indices in xyz order but the model reads zyx"):
        e.run_points(tiny_points(), xyz)
    second = scn.Voxelizer(device="cpu", **{**TINY_BOX, "batch_index": 1})
    with pytest.raises(scn.Error, match="batch_index 1"):
        e.run_points(tiny_points(), second)


@cuda
def test_cuda_voxelizer_equals_the_cpu_voxelizer_bitwise():
    pts = torch.from_numpy(nuscenes_points(seed=3))
    want = scn.Voxelizer("nuscenes-centerpoint", device="cpu")(pts)
    gpu = scn.Voxelizer("nuscenes-centerpoint", device="cuda")
    # host points copied on the stream (pageable, and pinned: an asynchronous copy), device points in place
    for given in (pts, pts.pin_memory(), pts.cuda()):
        got = gpu(given)
        assert got[0].is_cuda and torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])
    assert gpu.stats.voxels == len(want[1])


@cuda
def test_cuda_voxelizer_workspace_grows_by_one_workspace_per_batch_frame():
    w = [scn.Voxelizer(device="cuda", max_points=10000, max_batch=b, **TINY_BOX).workspace_bytes for b in (1, 2, 3)]
    assert w[0] > 20 * 16 * 12 // 8 and w[1] - w[0] > 0 and w[2] - w[1] == w[1] - w[0]
    assert scn.Voxelizer(device="cpu", **TINY_BOX).workspace_bytes == 0
    # fewer parallel frames: a lane's workspace less each, the frames' output rows kept
    p = [scn.Voxelizer(device="cuda", max_points=10000, max_batch=3, parallel_frames=n, **TINY_BOX).workspace_bytes
         for n in (1, 2, 3)]
    assert p[2] == w[2] and p[1] - p[0] == p[2] - p[1] and 0 < p[1] - p[0] < w[1] - w[0]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_fewer_parallel_frames_give_the_same_batch(device):
    frames = [torch.from_numpy(tiny_points(s)).to(device) for s in (21, 22, 23, 24)]
    want = scn.Voxelizer(device=device, max_batch=4, **TINY_BOX)(frames)
    for n in (1, 3):
        v = scn.Voxelizer(device=device, max_batch=4, parallel_frames=n, **TINY_BOX)
        assert v.parallel_frames == n
        got = v(frames)
        assert len(got[1]) > 100 and torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert scn.Voxelizer(device=device, max_batch=4, **TINY_BOX).parallel_frames == 4


@cuda
def test_run_points_cuda_without_host_wait(tiny):
    e = scn.Engine(tiny.path, device="cuda", precision="fp16")
    v = scn.Voxelizer(device="cuda", **TINY_BOX)
    cpu_e, cpu_v = scn.Engine(tiny.path, device="cpu", precision="fp32"), scn.Voxelizer(device="cpu", **TINY_BOX)
    for seed in (0, 1, 2):                                 # the voxelizer's buffers bound again after each e(f, i)
        pts = torch.from_numpy(tiny_points(seed)).cuda()
        got = e.run_points(pts, v)[0]
        f, i = v(pts)
        assert torch.equal(got, e(f, i, GRID)[0])          # the two steps, on the same engine
        want = cpu_e.run_points(pts.cpu(), cpu_v)[0]
        assert rel_l2(got.float().cpu(), want) < 2e-3
    pts = torch.from_numpy(tiny_points(4)).cuda()
    want = e.run_points(pts, v)[0].clone()
    torch.cuda.synchronize()
    torch.cuda._sleep(int(1e9))                            # ~0.5 s of GPU work ahead of the call
    got = e.run_points(pts, v, outputs="view")[0]
    busy = not torch.cuda.current_stream().query()
    result = got.clone()
    torch.cuda.synchronize()
    assert busy, "run_points waited for the GPU"
    assert torch.equal(result, want)


@cuda
def test_run_points_on_stream_zero_orders_the_voxelizer_before_the_forward(tiny):
    # stream 0 (what a caller without torch passes): the voxelizer and the forward must still run in order; the
    # voxelizer is held behind ~0.5 s of GPU work on the legacy default stream, where stream 0 puts it
    e = scn.Engine(tiny.path, device="cuda", precision="fp16")
    v = scn.Voxelizer(device="cuda", **TINY_BOX)
    first, second = torch.from_numpy(tiny_points(5)).cuda(), torch.from_numpy(tiny_points(6)).cuda()
    want = e(*v(second), GRID)[0].clone()
    e._impl.run_points(v._impl, first, 0)
    torch.cuda.synchronize()
    torch.cuda._sleep(int(1e9))
    e._impl.run_points(v._impl, second, 0)
    e._impl.check_errors()                                 # waits for the forward
    assert torch.equal(e._impl.view(0, 0, True, 2), want)


@cuda
def test_run_points_cuda_reports_voxelizer_overflow_and_device_mismatch(tiny):
    e = scn.Engine(tiny.path, device="cuda", precision="fp16")
    small = scn.Voxelizer(device="cuda", **{**TINY_BOX, "max_voxels": 50})
    e.run_points(torch.from_numpy(tiny_points()).cuda(), small)
    with pytest.raises(scn.Error, match="voxels exceed max_voxels = 50"):
        e.check_errors()
    with pytest.raises(scn.Error, match="create both with the same device"):
        e.run_points(tiny_points(), scn.Voxelizer(device="cpu", **TINY_BOX))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_released_inputs_let_go_of_voxelizer_views_and_refuse_forwards(tiny, device):
    """What the package's atexit handler does to every live engine: the voxelizer's view tensors an engine is
    bound to stop holding the voxelizer, and the engine refuses to run on inputs it no longer keeps."""
    v = scn.Voxelizer(device=device, **TINY_BOX)
    e = scn.Engine(tiny.path, device=device)
    pts = torch.from_numpy(tiny_points()).to(device)
    impl = v._impl
    base = sys.getrefcount(impl)
    e(*v(pts, outputs="view"), GRID)
    gc.collect()
    bound = sys.getrefcount(impl)  # counted outside the asserts (pytest's rewritten asserts hold their operands)
    e._release_inputs()
    gc.collect()
    released = sys.getrefcount(impl)
    assert bound > base  # the bound views keep their owner, the voxelizer, alive
    assert released == base
    for call in (e.forward, lambda: e(*v(pts), GRID), lambda: e.run_points(pts, v)):
        with pytest.raises(scn.Error, match=r"tiny\.onnx: this engine released its inputs at interpreter exit"):
            call()


_EXIT_SCRIPT = """
import sys, torch, scn
sys.path.insert(0, {tests!r})
from test_voxelizer import TINY_BOX, tiny_points
v = scn.Voxelizer(device={device!r}, **TINY_BOX)
e = scn.Engine({model!r}, device={device!r})
e(*v(torch.from_numpy(tiny_points()).to({device!r}), outputs="view"), {grid!r}, outputs="view")
print("called", flush=True)
"""


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_a_script_ending_with_voxelizer_views_bound_exits_cleanly(tiny, device):
    """An engine still bound to a voxelizer's view tensors when the script ends: no nanobind leak report at exit
    (CUDA engines reported the voxelizer as leaked before the package released bound inputs at exit)."""
    script = _EXIT_SCRIPT.format(tests=str(Path(__file__).parent), device=device, model=str(tiny.path), grid=GRID)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "called" in r.stdout, r.stderr
    assert "leaked" not in r.stderr, r.stderr


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_a_list_of_frames_is_one_batch(tiny, device):
    """vox([p0, p1, p2]): the frames' voxels one after another with batch index 0, 1, 2, each bitwise the CPU
    voxelizer's frame; run_points of a list = the model on that batch (batch size 3)."""
    frames = [torch.from_numpy(tiny_points(s)).to(device) for s in (7, 8, 9)]
    v = scn.Voxelizer(device=device, max_batch=3, **TINY_BOX)
    single = scn.Voxelizer(device="cpu", **TINY_BOX)
    assert v.max_batch == 3
    f, i = v(frames)
    want = [single(p.cpu()) for p in frames]
    assert torch.equal(f.cpu(), torch.cat([w[0] for w in want]))
    assert torch.equal(i[:, 1:].cpu(), torch.cat([w[1][:, 1:] for w in want]))
    assert i[:, 0].cpu().tolist() == sum(([b] * len(w[1]) for b, w in enumerate(want)), [])
    assert v.stats.points == sum(len(p) for p in frames) and v.stats.voxels == len(i)
    e = scn.Engine(tiny.path, device=device, max_batch=3)
    got = e.run_points(frames, v)[0].clone()
    ref = e(f, i, GRID, batch_size=3)[0]
    assert got.shape[0] == 3 and float(ref.abs().max()) > 0.1 and torch.equal(got, ref)
    assert not torch.equal(got[0], got[1])
    assert torch.equal(e.run_points(frames[:2], v)[0], e(*v(frames[:2]), GRID, batch_size=2)[0])  # rebound: 2 frames
    assert torch.equal(e.run_points(frames[2], v)[0][0], e(*v(frames[2]), GRID)[0][0])  # one frame again


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_time_points_times_the_path_and_leaves_the_engine_bound(tiny, device):
    """Engine.time_points: per-run times of points -> outputs, the voxelizer alone and the forward alone, the voxel
    count; on CUDA the host frames' upload alone and before the path; a list of frames is one batch; afterwards
    forward() runs on the voxelizer's output, as after run_points."""
    frames = [torch.from_numpy(tiny_points(s)) for s in (31, 32)]
    e = scn.Engine(tiny.path, device=device, max_batch=2)
    v = scn.Voxelizer(device=device, max_batch=2, **TINY_BOX)
    want = e.run_points(frames, v)[0].clone()
    t = e.time_points(frames, v, warmup=1, runs=4)
    assert isinstance(t, scn.PointsTiming) and t.voxels == len(v(frames)[1]) > 100
    assert len(t.total_ms) == len(t.voxelizer_ms) == len(t.network_ms) == 4 and min(t.total_ms) > 0
    if device == "cuda":  # host frames
        assert len(t.upload_ms) == len(t.from_host_ms) == 4 and min(t.upload_ms) > 0
        assert statistics.median(t.from_host_ms) > statistics.median(t.upload_ms)
        assert e.time_points([f.cuda() for f in frames], v, warmup=0, runs=2).upload_ms == []
    else:
        assert t.upload_ms == [] and t.from_host_ms == []
    assert torch.equal(e.forward()[0], want)
    one = e.time_points(frames[0], v, warmup=0, runs=2)
    assert one.voxels == len(v(frames[0])[1]) and len(one.network_ms) == 2
    assert torch.equal(e.forward()[0], e.run_points(frames[0], v)[0])
    with pytest.raises(scn.Error, match="runs = 0"):
        e.time_points(frames[0], v, runs=0)


@cuda
def test_bench_times_points(tiny, tmp_path, capsys):
    """python -m scn.bench --points: the Python run_points call beside time_points' graph, for one frame and a batch
    of two; voxelizer settings by --voxel KEY=VALUE."""
    from scn import bench
    files = []
    for seed in (41, 42):
        files.append(tmp_path / f"cloud{seed}.bin")
        tiny_points(seed).astype(np.float32).tofile(files[-1])
    settings = sum((["--voxel", f"{k}={v!r}"] for k, v in TINY_BOX.items()), [])
    for batch in (files[:1], files):
        args = [str(tiny.path)] + sum((["--points", str(f)] for f in batch), []) + settings
        assert bench.main(args + ["--warmup", "2", "--runs", "5"]) == 0
        text = capsys.readouterr().out
        assert f"frames {len(batch)}" in text and "scn time_points (C++, one CUDA graph): median" in text
        assert "python run_points, outputs=view: median" in text
        assert "scn time_points from host memory: median" in text
    with pytest.raises(SystemExit):
        bench.main([str(tiny.path), "--points", str(files[0]), "--data", str(tmp_path)])
    with pytest.raises(SystemExit):
        bench.main([str(tiny.path), "--points", str(files[0]), "--voxel", "range"])


def test_batch_errors_name_the_limit():
    v = scn.Voxelizer(device="cpu", max_batch=2, **TINY_BOX)
    p = tiny_points()
    with pytest.raises(scn.Error, match="run_batch got 3 frames; it takes 1 to max_batch = 2"):
        v([p, p, p])
    with pytest.raises(scn.Error, match="run_batch got 0 frames"):
        v([])
    with pytest.raises(scn.Error, match=r"\(frame 1 of the batch\)': \d+ voxels exceed max_voxels = 50"):
        scn.Voxelizer(device="cpu", max_batch=2, **{**TINY_BOX, "max_voxels": 50})([p[:10], p])
    with pytest.raises(scn.Error, match="max_batch = 0 must be at least 1"):
        scn.Voxelizer(device="cpu", max_batch=0, **TINY_BOX)
    with pytest.raises(scn.Error, match=r"parallel_frames = 3 must lie in 0\.\.max_batch \(2\); 0 means max_batch"):
        scn.Voxelizer(device="cpu", max_batch=2, parallel_frames=3, **TINY_BOX)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_points_backbone_is_voxelizer_and_engine_in_one_module(tiny, device):
    from scn.torch import PointsBackbone

    frames = [torch.from_numpy(tiny_points(s)).to(device) for s in (10, 11)]
    net = PointsBackbone(tiny.path, "nuscenes-centerpoint", device=device, max_batch=2,
                         voxel_settings={k: v for k, v in TINY_BOX.items()})
    assert isinstance(net, torch.nn.Module) and net.voxelizer.max_batch == 2
    got = net(frames)
    f, i = net.voxelizer(frames)
    want = net.engine(f, i, GRID, batch_size=2)[0]
    assert got.dtype == torch.float32 and got.shape[0] == 2 and float(want.abs().max()) > 0.1
    assert torch.equal(got, want.float())
    one = net(frames[1])
    assert one.shape[0] == 1 and torch.equal(one[0], net.engine(*net.voxelizer(frames[1]), GRID)[0][0].float())
    assert net(frames[0].double()).dtype == torch.float64  # the points' dtype (the voxelizer reads them as float32)
    with pytest.raises(scn.Error, match="expected a points tensor"):
        net([])
    with pytest.raises(scn.Error, match=r"voxel_settings \['max_voxels'\] given with a Voxelizer"):
        PointsBackbone(tiny.path, net.voxelizer, device=device, voxel_settings={"max_voxels": 10})
    with pytest.raises(scn.Error, match=r"engine options \['precision'\] given with an Engine"):
        PointsBackbone(net.engine, net.voxelizer, precision="fp16")
    if device == "cuda":
        with pytest.raises(scn.Error, match="the voxelizer runs on cpu, the engine .* on cuda:0; create both on one"):
            PointsBackbone(tiny.path, scn.Voxelizer(device="cpu", **TINY_BOX), device="cuda")


def test_points_backbone_raises_the_errors_at_the_end_of_each_call(tiny):
    from scn.torch import PointsBackbone

    frame = torch.from_numpy(tiny_points(12))
    for flag, calls in ((True, 1), (False, 0)):
        net = PointsBackbone(tiny.path, "nuscenes-centerpoint", device="cpu", check_errors=flag,
                             voxel_settings={k: v for k, v in TINY_BOX.items()})
        seen = []
        net.engine.check_errors = lambda: seen.append(1)
        net(frame)
        assert len(seen) == calls, flag


def test_a_failed_points_call_holds_the_voxelizer_until_a_call_succeeds(tiny):
    # a call that fails after it may have bound the engine to the voxelizer's buffers (CUDA: a forward or a timing
    # that raised) keeps the voxelizer, beside the previous binding, until a call succeeds: the engine may point at
    # either and the caller may drop theirs (here the CPU voxelizer raises its overflow first, the same path)
    import gc
    import sys

    def message(call):  # the error's text only: a kept traceback would hold references of its own
        try:
            call()
        except scn.Error as err:
            return str(err)
        return "no error"

    e = scn.Engine(tiny.path, device="cpu", precision="fp32")
    vox = scn.Voxelizer(device="cpu", **{**TINY_BOX, "max_voxels": 5})
    points = torch.from_numpy(tiny_points(10))
    def refs():  # references to the voxelizer's binding object (an int: assert statements keep their operands)
        gc.collect()
        return sys.getrefcount(vox._impl)

    before = refs()
    assert "max_voxels" in message(lambda: e.run_points(points, vox))
    after_run = refs()
    assert after_run == before + 1
    assert "max_voxels" in message(lambda: e.time_points(points, vox, 0, 1))
    assert refs() == after_run + 1
    f, i = scn.Voxelizer(device="cpu", **TINY_BOX)(torch.from_numpy(tiny_points(11)))
    e(f, i, GRID)
    assert refs() == before
