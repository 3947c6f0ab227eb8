#!/usr/bin/env bash
# The device tool returns at most 8 files from $OUT: after gpu_check.sh (and gpu_python.sh), every log
# goes into one archive, and the few read first stay beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_out}
tar -C "$OUT" -czf /tmp/scn-all-logs.tar.gz $(cd "$OUT" && ls *.log) && mv /tmp/scn-all-logs.tar.gz "$OUT/all_logs.tar.gz"
for f in "$OUT"/*.log; do
  case "$(basename "$f")" in env.log|tests.log|scn_bench.log|py_tests.log|vox.log) ;; *) rm -f "$f" ;; esac
done
ls -la "$OUT"
