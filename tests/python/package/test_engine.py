"""scn.Engine on the CPU: results (vs the float64 PyTorch forward and vs `scn run` bit for bit), DLPack
inputs from torch and numpy, sparse outputs, batch 2, outputs by name and position, the installed files."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import scn
from scn.export import tensor_io

from conftest import GRID, make_frame, rel_l2

REPO = Path(__file__).resolve().parents[3]


def test_installed_package_is_not_the_source_tree():
    # the tests must exercise the installed wheel, not python/ of the checkout
    assert REPO / "python" not in Path(scn.__file__).resolve().parents
    assert (Path(scn.__file__).parent / "export" / "spconv_export.py").is_file()


def test_export_is_the_scn_tools_sources():
    # one code base: the wheel installs tools/python/scn_tools as scn.export, file for file
    src = REPO / "tools" / "python" / "scn_tools"
    installed = Path(scn.__file__).parent / "export"
    names = sorted(p.name for p in src.glob("*.py"))
    assert names == sorted(p.name for p in installed.glob("*.py"))
    for n in names:
        assert (src / n).read_bytes() == (installed / n).read_bytes(), n
    from scn.export import export_spconv, ExportError  # package-level entry points
    assert callable(export_spconv) and issubclass(ExportError, ValueError)


def test_properties(tiny):
    e = scn.Engine(tiny.path, device="cpu", precision="fp32")
    assert e.backend == "cpu" and e.device == "cpu" and e.precision == "fp32"
    assert len(e.inputs) == 1 and list(e.inputs.values()) == [4]
    assert e.outputs == {list(e.outputs)[0]: "dense"} and len(e.outputs) == 1
    assert isinstance(e.workspace_bytes, int)
    assert "scn.Engine(" in repr(e)


def test_matches_pytorch_forward(tiny):
    e = scn.Engine(tiny.path, device="cpu", precision="fp32")
    out = e(torch.from_numpy(tiny.feats), torch.from_numpy(tiny.idx), GRID)
    want = tiny.trace.torch_outputs[0]
    assert isinstance(out[0], torch.Tensor) and out[0].dtype == torch.float32
    assert tuple(out[0].shape) == tuple(want.shape) == (1, 16, 8, 10)
    assert float(want.abs().max()) > 0.1  # not an all-zero output
    assert rel_l2(out[0], want) < 1e-6


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_bitwise_equal_to_cli(tiny, cli, tmp_path, precision):
    tensor_io.save_tensor(tmp_path / "f.tensor", tiny.feats)
    tensor_io.save_tensor(tmp_path / "i.tensor", tiny.idx)
    subprocess.run([cli, "run", str(tiny.path), "--features", str(tmp_path / "f.tensor"), "--indices",
                    str(tmp_path / "i.tensor"), "--grid", "x".join(map(str, GRID)), "--device", "cpu",
                    "--precision", precision, "--output", str(tmp_path / "out.tensor")], check=True,
                   stdout=subprocess.DEVNULL)
    want = tensor_io.load_tensor(tmp_path / "out.tensor")
    e = scn.Engine(tiny.path, device="cpu", precision=precision)
    got = e(tiny.feats, tiny.idx, GRID)[0].numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.abs(want).max() > 0.1
    assert got.tobytes() == want.tobytes()


def test_numpy_and_torch_inputs_agree(tiny):
    e = scn.Engine(tiny.path, device="cpu", precision="fp32")
    a = e(tiny.feats, tiny.idx, GRID)[0]                                       # numpy (DLPack)
    b = e(torch.from_numpy(tiny.feats), torch.from_numpy(tiny.idx), GRID)[0]   # torch
    c = e(torch.from_numpy(tiny.feats).float(), torch.from_numpy(tiny.idx), GRID)[0]  # float32 features
    assert torch.equal(a, b) and torch.equal(a, c)


def test_outputs_without_torch_are_numpy_arrays(tiny, tmp_path):
    # torch not importable: a CPU engine's outputs are numpy arrays, equal to the torch path
    np.save(tmp_path / "f.npy", tiny.feats)
    np.save(tmp_path / "i.npy", tiny.idx)
    code = f"""
import sys; sys.modules['torch'] = None
import numpy as np, scn
e = scn.Engine({str(tiny.path)!r}, device='cpu', precision='fp32')
f, i = np.load({str(tmp_path / 'f.npy')!r}), np.load({str(tmp_path / 'i.npy')!r})
o = e(f, i, {GRID})[0]
assert type(o) is np.ndarray, type(o)   # host outputs without torch: numpy arrays
a = o.copy()
e(f * 2, i, {GRID})   # the copy mode's array must not change
assert np.array_equal(o, a)
np.save({str(tmp_path / 'o.npy')!r}, a)
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    want = scn.Engine(tiny.path, device="cpu", precision="fp32")(tiny.feats, tiny.idx, GRID)[0].numpy()
    assert np.load(tmp_path / "o.npy").tobytes() == want.tobytes()


def test_outputs_by_name_and_position(tiny_sparse):
    e = scn.Engine(tiny_sparse.path, device="cpu", precision="fp32")
    out = e(tiny_sparse.feats, tiny_sparse.idx, GRID)
    names = list(e.outputs)
    assert len(out) == 2 and out.names == tuple(names)
    assert e.outputs == {names[0]: "dense", names[1]: "sparse"}
    assert out[names[0]] is out[0] and out[names[1]] is out[1]
    assert list(out.as_dict()) == names
    with pytest.raises(KeyError, match="no output named 'nope'"):
        out["nope"]


def test_sparse_output_matches_pytorch(tiny_sparse):
    e = scn.Engine(tiny_sparse.path, device="cpu", precision="fp32")
    feats, idx = e(tiny_sparse.feats, tiny_sparse.idx, GRID)[1]
    want = tiny_sparse.trace.torch_outputs[1]  # (features, indices) of the traced forward
    wf, wi = want if isinstance(want, tuple) else (want.features, want.indices)
    assert idx.dtype == torch.int32 and idx.shape == (wi.shape[0], 4) and feats.shape == wf.shape
    # match rows by site (the engine's row order need not be PyTorch's)
    key = lambda i: ((i[:, 0].long() * 100 + i[:, 1]) * 100 + i[:, 2]) * 100 + i[:, 3]
    ga, gb = torch.argsort(key(idx.long())), torch.argsort(key(wi.long()))
    assert torch.equal(idx[ga].long(), wi[gb].long())
    assert rel_l2(feats[ga], wf[gb]) < 1e-6


def test_batch_two_equals_each_frame_alone(tiny):
    e = scn.Engine(tiny.path, device="cpu", precision="fp32")
    f2, i2 = make_frame(seed=5, batch=2)
    both = e(f2, i2, GRID, batch_size=2)[0]
    assert both.shape[0] == 2
    for b in range(2):
        rows = i2[:, 0] == b
        alone_idx = i2[rows].copy()
        alone_idx[:, 0] = 0
        alone = e(f2[rows], alone_idx, GRID)[0]
        assert float(alone.abs().max()) > 0.1
        assert torch.equal(both[b:b + 1], alone), b


def test_bench_refuses_options_its_mode_does_not_use(tiny, tmp_path, capsys):
    """python -m scn.bench: --preset / --voxel without --points, or --grid with --points, were parsed and ignored."""
    from scn import bench
    cloud = tmp_path / "cloud.bin"
    np.zeros((4, 5), np.float32).tofile(cloud)
    frame = ["--features", str(tmp_path / "f.tensor"), "--indices", str(tmp_path / "i.tensor")]
    for args, why in ((frame + ["--preset", "kitti-second"], "--preset and --voxel set the voxelizer"),
                      (frame + ["--voxel", "max_voxels=10"], "--preset and --voxel set the voxelizer"),
                      (["--points", str(cloud), "--grid", "12x16x20"], "leave out --data / --features / --indices / --grid")):
        with pytest.raises(SystemExit) as e:
            bench.main([str(tiny.path)] + args)
        assert e.value.code == 2
        assert why in capsys.readouterr().err


def test_bench_without_cuda_says_so(tiny, tmp_path):
    if scn.cuda_available() and torch.cuda.is_available():
        pytest.skip("CUDA present: test_cuda.py::test_bench_runs runs the benchmark")
    from scn import bench
    tensor_io.save_tensor(tmp_path / "f.tensor", tiny.feats)
    tensor_io.save_tensor(tmp_path / "i.tensor", tiny.idx)
    assert bench.main([str(tiny.path), "--features", str(tmp_path / "f.tensor"), "--indices",
                       str(tmp_path / "i.tensor"), "--grid", "12x16x20"]) == 2



def _cli_layer_steps(cli, model, feats_path, idx_path, device, precision):
    """(node, op, algorithm) of every row of `scn bench --layers`'s per-layer table (columns cut where the
    table's rule of dashes puts them: an empty algorithm cell stays empty)."""
    text = subprocess.run([cli, "bench", str(model), "--features", str(feats_path), "--indices", str(idx_path),
                           "--grid", "x".join(map(str, GRID)), "--device", device, "--precision", precision,
                           "--runs", "3", "--warmup", "1", "--layers"], check=True, capture_output=True,
                          text=True).stdout
    lines = text.split("per-layer times", 1)[1].splitlines()
    rule = next(k for k, line in enumerate(lines) if line.strip().startswith("---"))
    spans = [m.span() for m in re.finditer(r"-+", lines[rule])][:3]
    rows = [line for line in lines[rule + 1:] if line.strip() and line.split()[0] != "total"]
    return [tuple(r[a:b].strip() for a, b in spans) for r in rows]


def test_profile_layers(tiny):
    e = scn.Engine(tiny.path, device="cpu", precision="fp32")
    with pytest.raises(scn.Error, match=r"profile_layers\(\) before set_input\(\) for input"):
        e.profile_layers()
    e(tiny.feats, tiny.idx, GRID)
    steps = e.profile_layers()
    assert steps and all(isinstance(s, scn.LayerTiming) for s in steps)
    convs = [s for s in steps if s.op == "SparseConvolution"]
    assert len(convs) == 4 and len({s.node for s in convs}) == 4  # TinyBackbone's four convs, each once
    assert [s.op for s in steps].count("ScatterDense") == 1
    assert all(s.ms >= 0 and s.split_k == 1 for s in steps) and sum(s.ms for s in steps) > 0
    assert all(s.algorithm for s in convs)


def test_profile_layers_are_the_cli_steps(tiny, cli, tmp_path):
    # the same steps, in the same order, as `scn bench --layers` on the same model and frame
    e = scn.Engine(tiny.path, device="cpu", precision="fp32")
    e(tiny.feats, tiny.idx, GRID)
    tensor_io.save_tensor(tmp_path / "f.tensor", tiny.feats)
    tensor_io.save_tensor(tmp_path / "i.tensor", tiny.idx)
    want = _cli_layer_steps(cli, tiny.path, tmp_path / "f.tensor", tmp_path / "i.tensor", "cpu", "fp32")
    assert len(want) >= 6
    assert [(s.node, s.op, s.algorithm) for s in e.profile_layers()] == want


def test_calls_from_several_threads_each_get_their_own_outputs(tiny):
    # one engine shared by threads (nn.DataParallel replicas share their module's engine): each call binds, runs and
    # collects as one step, so no thread collects the outputs of another thread's inputs
    import threading

    engine = scn.Engine(tiny.path, device="cpu", precision="fp32")
    scales = [0.5, 1.0, 2.0, -1.0]
    want = {s: engine(tiny.feats * s, tiny.idx, GRID)[0].clone() for s in scales}
    assert not torch.equal(want[0.5], want[2.0])
    wrong = []

    def worker(s):
        for _ in range(25):
            got = engine(tiny.feats * s, tiny.idx, GRID)[0]
            if not torch.equal(got, want[s]):
                wrong.append(s)

    threads = [threading.Thread(target=worker, args=(s,)) for s in scales for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, f"{len(wrong)} calls returned another call's outputs"
