#!/usr/bin/python3
"""Run the zoo written by :mod:`scn_tools.zoo_export_all` through ``scn run`` and check every output
against its reference with ``scn compare`` (sparse outputs matched by site).

    # CPU, fp32 (the ctest zoo tests)
    PYTHONPATH=tools/python /usr/bin/python3 -m scn_tools.zoo_check --scn build/tools/cli/scn \\
        --dir zoo --device cpu --precision fp32 --max-rel-l2 1e-5
    # CUDA, fp16 (on the GPU machine)
    ... --device cuda --precision fp16 --min-cosine 0.99999

Exit status 0 when every bound holds for every output of every selected model, 1 otherwise (a model
the manifest lists without outputs fails: nothing of it was checked), 2 on a usage error (a selection of
no model included). Prints one line per output with the numbers ``scn compare`` measured.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path


def _metric(text: str, name: str) -> float:
    m = re.search(rf"^{name}\s+(\S+)", text, re.MULTILINE)
    return float(m.group(1)) if m else float("nan")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="zoo_check", description=__doc__.split("\n")[0])
    p.add_argument("--scn", required=True, help="the scn binary")
    p.add_argument("--dir", required=True, help="folder written by zoo_export_all (has manifest.json)")
    p.add_argument("--models", default="all", help="comma list of model names (default all)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"))
    p.add_argument("--precision", default="fp32", choices=("fp32", "fp16", "int8"))
    p.add_argument("--max-rel-l2", type=float, default=None)
    p.add_argument("--min-cosine", type=float, default=None)
    p.add_argument("--threads", type=int, default=0, help="CPU threads for scn run (0: all)")
    p.add_argument("--work", default=None, help="where scn run writes (default <dir>/run-<device>-<precision>)")
    args = p.parse_args(argv)
    if args.max_rel_l2 is None and args.min_cosine is None:
        p.error("give --max-rel-l2 and / or --min-cosine")

    root = Path(args.dir)
    manifest = json.loads((root / "manifest.json").read_text())
    models = manifest["models"]
    if args.models != "all":
        want = [m.strip() for m in args.models.split(",") if m.strip()]
        known = {m["name"] for m in models}
        missing = [m for m in want if m not in known]
        if missing:
            print(f"zoo_check: {missing} not in {root / 'manifest.json'} (has {sorted(known)})", file=sys.stderr)
            return 2
        models = [m for m in models if m["name"] in want]
    if not models:  # else "0 models ... 0 failed" and exit 0: a check of nothing that looks passed
        p.error(f"--models {args.models!r} selects no model" if args.models != "all"
                else f"{root / 'manifest.json'} lists no model")
    work = Path(args.work) if args.work else root / f"run-{args.device}-{args.precision}"

    failures, passed = [], 0
    for m in models:
        if not m.get("outputs"):
            print(f"FAIL {m['name']}: {root / 'manifest.json'} lists no outputs for it, nothing to compare")
            failures.append(f"{m['name']} (no outputs)")
            continue
        out_dir = work / m["name"]
        out_dir.mkdir(parents=True, exist_ok=True)
        for f in out_dir.glob("*.tensor"):
            f.unlink()
        cmd = [args.scn, "run", str(root / m["onnx"]), "--features", str(root / m["features"]),
               "--indices", str(root / m["indices"]), "--grid", m["grid"], "--batch", str(m["batch"]),
               "--precision", args.precision, "--device", args.device, "--output-dir", str(out_dir),
               "--threads", str(args.threads)]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            print(f"FAIL {m['name']}: scn run exited {r.returncode}\n  {' '.join(cmd)}\n{r.stdout}{r.stderr}")
            failures += [f"{m['name']} output {o['name']} (scn run failed)" for o in m["outputs"]]
            continue
        fwd = re.search(r"^forward\s+(.*)$", r.stdout, re.MULTILINE)
        print(f"{m['name']}: scn run {args.device} {args.precision} {dt:.2f} s"
              f" (forward {fwd.group(1) if fwd else '?'})")
        for o in m["outputs"]:
            got = out_dir / f"{o['name']}.tensor"
            cmp = [args.scn, "compare", str(got), str(root / o["reference"])]
            if o["kind"] == "sparse":
                cmp += ["--indices-a", str(out_dir / f"{o['name']}.indices.tensor"),
                        "--indices-b", str(root / o["reference_indices"])]
            if args.max_rel_l2 is not None:
                cmp += ["--max-rel-l2", repr(args.max_rel_l2)]
            if args.min_cosine is not None:
                cmp += ["--min-cosine", repr(args.min_cosine)]
            c = subprocess.run(cmp, capture_output=True, text=True)
            rel, cos, mx = (_metric(c.stdout, "rel-L2"), _metric(c.stdout, "cosine"),
                            _metric(c.stdout, "max abs diff"))
            status = "ok  " if c.returncode == 0 else "FAIL"
            print(f"  {status} {m['name']} output {o['name']} ({o['source']}, {o['kind']} {o['shape']}): "
                  f"rel-L2 {rel:.3g}, cosine {cos:.9f}, max abs diff {mx:.3g}")
            if c.returncode != 0:
                detail = "".join(f"    {line}\n" for line in (c.stdout + c.stderr).splitlines())
                print(f"    {' '.join(cmp)}\n{detail}")
                failures.append(f"{m['name']} output {o['name']}")
            else:
                passed += 1
    bounds = " and ".join(x for x in (f"rel-L2 <= {args.max_rel_l2:g}" if args.max_rel_l2 is not None else "",
                                      f"cosine >= {args.min_cosine:g}" if args.min_cosine is not None else "") if x)
    print(f"zoo_check: {len(models)} models, {args.device} {args.precision}, bounds {bounds}"
          + (f"; failed: {', '.join(failures)}" if failures else ""))
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
