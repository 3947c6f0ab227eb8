#!/usr/bin/python3
"""Write every zoo model, its input frame and its reference outputs into a folder.

    PYTHONPATH=tools/python /usr/bin/python3 -m scn_tools.zoo_export_all --out zoo [--models a,b]

Layout (paths in the manifests are relative to ``--out``)::

    zoo/manifest.json             {"models": [{name, onnx, features, indices, grid, batch, order,
                                               outputs: [{name, source, kind, shape, reference,
                                                          reference_indices}]}]}
    zoo/cases.tsv                 one line per output, tab separated, for shell scripts:
                                  model onnx features indices grid batch output reference ref_indices|-
    zoo/<model>/model.onnx        SCN ONNX (FLOAT16 weights; input "0" FLOAT16 [N, Cin])
    zoo/<model>/features.tensor   float16 [N, Cin]
    zoo/<model>/indices.tensor    int32 [N, 4] in the model's export order (grid in that order too)
    zoo/<model>/ref/<output>.tensor           float32 reference (the PyTorch float64 forward)
    zoo/<model>/ref/<output>.indices.tensor   int32 sites of a sparse output

``<output>`` is the ONNX output tensor name, the file name ``scn run --output-dir`` writes. The
references come from the traced float64 PyTorch forward; with the zoo's seeded weights they equal the
reference interpreter run on the ONNX file (``--verify`` checks that, costing one more reference run per
model). ``--spconv`` builds the models from the real ``spconv.pytorch`` when it can be imported.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: import the package, then resolve the relative imports in it
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import scn_tools  # noqa: E402,F401
    __package__ = "scn_tools"

import numpy as np  # noqa: E402

from . import tensor_io, zoo  # noqa: E402
from . import spconv_export as se  # noqa: E402


def _compare_to_onnx(onnx_path: Path, frame, trace_outputs) -> float:
    """Largest rel-L2 between the reference interpreter on the ONNX file and the PyTorch outputs (sparse
    ones matched by site; ``frame`` and the outputs' indices in the file's index order)."""
    import torch
    from . import graph as G
    from . import reference as ref
    from .export_onnx import graph_from_onnx
    g = graph_from_onnx(str(onnx_path), grid=frame.grid, batch_size=frame.batch_size)
    worst = 0.0
    for got, want in zip(G.run_graph_outputs(g, frame.features, frame.indices), trace_outputs):
        if isinstance(want, tuple):
            f, idx = want
            ka = ref.linear_keys(got.indices, got.spatial_shape)
            kb = ref.linear_keys(idx, got.spatial_shape)
            sa, pa = torch.sort(ka)
            sb, pb = torch.sort(kb)
            if not torch.equal(sa, sb):
                return float("inf")
            a, b = got.features[pa], f.to(torch.float64)[pb]
        else:
            a, b = got, want.to(torch.float64)
        worst = max(worst, float((a - b).norm() / max(float(b.norm()), 1e-300)))
    return worst


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="zoo_export_all", description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="folder to write (created)")
    p.add_argument("--models", default="all", help=f"comma list of {', '.join(zoo.ZOO)} (default all)")
    p.add_argument("--spconv", action="store_true", help="build the models from spconv.pytorch")
    p.add_argument("--verify", action="store_true", help="re-run each ONNX file with the reference interpreter")
    p.add_argument("--intermediates", action="store_true",
                   help="also write every intermediate value to <model>/values/ (see values.txt there)")
    args = p.parse_args(argv)

    names = list(zoo.ZOO) if args.models == "all" else [n.strip() for n in args.models.split(",") if n.strip()]
    if not names:  # else an empty manifest that zoo_check would pass
        p.error(f"--models {args.models!r} selects no model")
    unknown = [n for n in names if n not in zoo.ZOO]
    if unknown:
        raise SystemExit(f"error: unknown zoo models {unknown}; known: {', '.join(zoo.ZOO)}")
    sp = None
    if args.spconv:
        try:
            import spconv.pytorch as sp  # noqa: F811
        except Exception as e:  # noqa: BLE001
            raise SystemExit(f"error: --spconv: cannot import spconv.pytorch: {type(e).__name__}: {e}")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    traces = {}
    manifest = {"models": []}
    tsv = []
    t_all = time.perf_counter()
    for name in names:
        e = zoo.ZOO[name]
        t0 = time.perf_counter()
        if e.key not in traces:
            traces[e.key] = zoo.trace(name, sp, keep_intermediates=args.intermediates)
        tr, frame = traces[e.key]
        t_trace = time.perf_counter() - t0
        d = out / name
        (d / "ref").mkdir(parents=True, exist_ok=True)
        graph = se.export_trace(tr, d / "model.onnx", e.export_order, outputs_dir=d / "ref",
                                intermediates_dir=(d / "values") if args.intermediates else None)
        zoo.check_output_shapes(name, graph)
        f = frame.reordered(e.export_order)
        tensor_io.save_tensor(str(d / "features.tensor"), np.ascontiguousarray(f.features, dtype=np.float16))
        tensor_io.save_tensor(str(d / "indices.tensor"), np.ascontiguousarray(f.indices, dtype=np.int32))
        info = graph.value_info()
        grid = "x".join(str(g) for g in f.grid)
        outs = []
        for v, src in zip(graph.output_ids(), tr.output_names):
            sparse = info[v]["kind"] == "sparse"
            ref = f"{name}/ref/{v}.tensor"
            ref_idx = f"{name}/ref/{v}.indices.tensor" if sparse else None
            outs.append({"name": str(v), "source": src, "kind": info[v]["kind"],
                         "shape": [-1, info[v]["channels"]] if sparse else list(info[v]["shape"]),
                         "reference": ref, "reference_indices": ref_idx})
            tsv.append("\t".join([name, f"{name}/model.onnx", f"{name}/features.tensor", f"{name}/indices.tensor",
                                  grid, str(f.batch_size), str(v), ref, ref_idx or "-"]))
        manifest["models"].append({"name": name, "description": e.description, "onnx": f"{name}/model.onnx",
                                   "features": f"{name}/features.tensor", "indices": f"{name}/indices.tensor",
                                   "grid": grid, "batch": f.batch_size, "order": e.export_order,
                                   "voxels": f.num_voxels, "convs": len(graph.convs()), "nodes": len(graph.nodes),
                                   "outputs": outs})
        shapes = ", ".join(f"{o['source']} {'sparse ' if o['kind'] == 'sparse' else ''}{o['shape']}" for o in outs)
        line = (f"{name:<16} {f.num_voxels:>6} voxels, grid {grid} ({e.export_order}), {len(graph.convs())} convs, "
                f"{len(graph.nodes)} nodes -> {shapes}; trace {t_trace:.1f} s")
        if args.verify:
            t1 = time.perf_counter()
            worst = _compare_to_onnx(d / "model.onnx", f, _reordered_outputs(tr, e))
            line += f"; ONNX vs PyTorch rel-L2 {worst:.2e} ({time.perf_counter() - t1:.1f} s)"
            if not worst <= 1e-9:
                print(line)
                raise SystemExit(f"error: {name}: the ONNX file does not reproduce the PyTorch output "
                                 f"(rel-L2 {worst:.3g})")
        print(line, flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    header = "\t".join(["#model", "onnx", "features", "indices", "grid", "batch", "output", "reference",
                        "reference_indices"])
    (out / "cases.tsv").write_text(header + "\n" + "\n".join(tsv) + "\n")
    print(f"wrote {len(names)} models to {out} in {time.perf_counter() - t_all:.1f} s")
    return 0


def _reordered_outputs(tr, e):
    """The PyTorch outputs with sparse indices in the export order."""
    return [(o[0], se.reorder_indices(o[1], e.order, e.export_order)) if isinstance(o, tuple) else o
            for o in tr.torch_outputs]


if __name__ == "__main__":
    sys.exit(main())
