#!/usr/bin/env bash
# One device call: configure, build, run every gtest binary (CPU and CUDA) and the CenterPoint
# benchmark, with logs and CSV under $OUT (at most 8 files, no sub-folders).
#
# On the device machine, from the repository root (the run tool's carry must name .deps and
# .devdata):   bash scripts/gpu_check.sh
# Environment:
#   OUT                 output folder (default ./gpu_out)
#   SCN_GTEST_FILTER    gtest filter for the CUDA tests (default: all)
#   SCN_ONLY_CUDA=1     run only the CUDA test binary
#   SCN_SKIP_TESTS=1    skip the tests      SCN_SKIP_BENCH=1  skip the benchmark
#   SCN_SKIP_INT8=1     skip the CenterPoint INT8 check (tests/int8/int8_centerpoint_cuda.sh; SCN_INT8_RUNS)
#   SCN_SKIP_ZOO=1      skip the zoo models
#   SCN_SKIP_GOLDEN=1   skip the bitwise output digests (SCN_GOLDEN=record: write them to $OUT instead of checking)
#   SCN_BENCH_ARGS      extra arguments for bench_centerpoint (e.g. --quick)
#   SCN_CUDA_ARCHS      CMAKE_CUDA_ARCHITECTURES (default 90)
#   SCN_TRACE=1         GPU timeline of the INT8 plans' graph forward (tools/trace; SCN_TRACE_PLANS, trace.log)
#   SCN_SKIP_KERN=1     skip the osplit kernel check and timing (offset_split_check, kern.log)
#   SCN_SKIP_VOX=1      skip the voxelizer and points -> BEV checks and timings (vox.log)
#   SCN_SKIP_CACHE=1    skip the tuning-cache timings on the real frame (cache.log)
#   (.devdata/int8_plans present: the INT8 plans of `scn calibrate --min-cosine`, int8_plans.log)
#   SCN_NCU=1           also profile the 21 implicit-GEMM launches of one forward with Nsight Compute
#                       (ncu.log, with the arena plan trace)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu_out}
mkdir -p "$OUT"
BUILD=${SCN_BUILD_DIR:-$ROOT/build-gpu}
ARCHS=${SCN_CUDA_ARCHS:-90}
FILTER=${SCN_GTEST_FILTER:-*}
export SCN_DATA_DIR=${SCN_DATA_DIR:-$ROOT/.devdata/nuscenes-centerpoint}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  # the device copy of the tree has no .git: pass SCN_COMMIT="$(git rev-parse --short HEAD)" from here
  echo "commit: ${SCN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" \
       "(uncommitted paths: $(git status --porcelain 2>/dev/null | wc -l))"
  echo "host: $(uname -a)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
  nvcc --version 2>&1 | tail -2
  cmake --version | head -1
  echo "data: $SCN_DATA_DIR"; ls -la "$SCN_DATA_DIR" 2>&1
} > "$OUT/env.log" 2>&1

t0=$(date +%s)
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
  -DSCN_WITH_CUDA=ON -DSCN_DEPS_DIR="$ROOT/.deps" -DSCN_SHARED_DATA_DIR="$ROOT/.devdata" \
  -DSCN_BUILD_TESTS=ON > "$OUT/build.log" 2>&1
cfg=$?
if [ $cfg -eq 0 ]; then
  ninja -C "$BUILD" -j16 >> "$OUT/build.log" 2>&1
  bld=$?
else
  bld=$cfg
fi
echo "configure+build: rc $bld in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.log"
if [ $bld -ne 0 ]; then
  # build what we can of our own targets, so the CUDA tests still run when another area is broken
  ninja -C "$BUILD" -j16 -k 0 scn_cuda_tests bench_centerpoint scn_engine_tests >> "$OUT/build.log" 2>&1
  grep -E "error|FAILED" "$OUT/build.log" | head -40
fi

: > "$OUT/tests.log"
if [ "${SCN_SKIP_TESTS:-0}" != "1" ]; then
  t1=$(date +%s)
  bins=$(find "$BUILD/tests" -maxdepth 2 -type f -executable \( -name 'test_*' -o -name '*_tests' \) | sort)
  for b in $bins; do
    name=$(basename "$b")
    if [ "${SCN_ONLY_CUDA:-0}" = "1" ] && [ "$name" != "scn_cuda_tests" ]; then continue; fi
    f='*'
    [ "$name" = "scn_cuda_tests" ] && f="$FILTER"
    echo "===== $name (filter $f)" >> "$OUT/tests.log"
    ( cd "$(dirname "$b")" && timeout 900 "$b" --gtest_filter="$f" --gtest_color=no ) >> "$OUT/tests.log" 2>&1
    echo "===== $name rc $?" >> "$OUT/tests.log"
  done
  # (the option variants: tests/cuda/test_backend_ops.cpp, BackendOpsTable.*, inside scn_cuda_tests)
  echo "tests: $(( $(date +%s) - t1 )) s" | tee -a "$OUT/env.log"
  grep -E "^=====|^\[  PASSED|^\[  FAILED|^\[  SKIPPED \] [0-9]+|tests? ran|real frame" "$OUT/tests.log" | head -80
fi

if [ "${SCN_SKIP_INT8:-0}" != "1" ] && [ -x "$BUILD/tools/cli/scn" ]; then
  # CenterPoint INT8 on the real frame: CUDA vs the CPU oracle, accuracy vs FP32, INT8 and FP16 timings.
  t5=$(date +%s)
  tests/int8/int8_centerpoint_cuda.sh "$BUILD/tools/cli/scn" python3 "$ROOT" "$ROOT/.devdata" /tmp/scn-int8 \
    "${SCN_INT8_RUNS:-500}" > "$OUT/int8.log" 2>&1
  echo "int8 centerpoint rc $? in $(( $(date +%s) - t5 )) s" | tee -a "$OUT/env.log"
  grep -E "^==|cosine|identical|latency|workspace|PASS|FAIL" "$OUT/int8.log" | head -60
fi

if [ "${SCN_SKIP_GOLDEN:-0}" != "1" ] && [ -x "$BUILD/tools/cli/scn" ]; then
  # Bitwise guard (tests/cuda/golden_outputs.sh), two sets: the implicit-GEMM tiles' summation order
  # (`--offset-groups 1`, tests/cuda/golden_outputs.txt, recorded before the restructure) and the
  # default options (tests/cuda/golden_outputs_default.txt: osplit for the 16/32-channel convs, the
  # default on sm_90), and the default set again with every generated level in neighbour-row order (the
  # row order changes no output bit). SCN_GOLDEN=record writes the first two to $OUT instead of checking.
  t7=$(date +%s)
  : > "$OUT/golden.log"
  for set in tiles default neighbour-rows; do
    file=tests/cuda/golden_outputs.txt args="--offset-groups 1"
    [ $set = default ] && file=tests/cuda/golden_outputs_default.txt args=""
    [ $set = neighbour-rows ] && file=tests/cuda/golden_outputs_default.txt args="--site-order neighbour-rows"
    [ $set = neighbour-rows ] && [ "${SCN_GOLDEN:-check}" = "record" ] && continue
    echo "== $set ($file, scn run $args)" >> "$OUT/golden.log"
    if [ "${SCN_GOLDEN:-check}" = "record" ]; then
      GOLDEN_RUN_ARGS="$args" tests/cuda/golden_outputs.sh "$BUILD/tools/cli/scn" python3 "$ROOT" "$ROOT/.devdata" \
        /tmp/scn-golden record "$OUT/$(basename $file)" >> "$OUT/golden.log" 2>&1
    else
      GOLDEN_RUN_ARGS="$args" tests/cuda/golden_outputs.sh "$BUILD/tools/cli/scn" python3 "$ROOT" "$ROOT/.devdata" \
        /tmp/scn-golden check "$ROOT/$file" >> "$OUT/golden.log" 2>&1
    fi
    echo "golden outputs ($set) rc $? in $(( $(date +%s) - t7 )) s" | tee -a "$OUT/env.log"
  done
  grep -E "^==|digests" "$OUT/golden.log"
fi

if [ "${SCN_TRACE:-0}" = "1" ] && [ -f "$BUILD/tools/libscn_trace.so" ] && [ -f /tmp/scn-int8/cp.target.onnx ]; then
  # GPU timeline of the CUDA-graph forward (tools/trace): SCN_TRACE_PLANS entries are
  # PLAN:PRECISION[:ENV=V,ENV=V...] (PLAN one of the INT8 check's cp.PLAN.onnx; ENV=V: diagnostic
  # environment variables only, the CUDA options are `scn bench` flags).
  t6=$(date +%s)
  for pp in ${SCN_TRACE_PLANS:-target:int8 target:fp16}; do
    IFS=: read -r plan prec envs <<< "$pp"
    echo "===== trace $plan $prec ${envs:-}"
    # shellcheck disable=SC2046  # the variant's ENV=V words
    env $(echo "${envs:-}" | tr , ' ') CUDA_INJECTION64_PATH="$BUILD/tools/libscn_trace.so" \
      SCN_TRACE_FILE="/tmp/scn-trace-$plan-$prec.csv" "$BUILD/tools/cli/scn" bench "/tmp/scn-int8/cp.$plan.onnx" \
      --features "$SCN_DATA_DIR/in_features.torch.fp16.tensor" \
      --indices "$SCN_DATA_DIR/in_indices_zyx.torch.int32.tensor" --grid 41x1440x1440 --precision "$prec" \
      --device cuda --runs 100 2>&1 | grep -E "latency|scn_trace"
    python3 tools/trace/trace_report.py "/tmp/scn-trace-$plan-$prec.csv" --last 50 --width 110 \
      --chain 'osplit|igemm|densify'
  done > "$OUT/trace.log" 2>&1
  echo "trace rc $? in $(( $(date +%s) - t6 )) s" | tee -a "$OUT/env.log"
  grep -E "^=====|latency|^span|^busy|^idle" "$OUT/trace.log"
fi

if [ "${SCN_SKIP_ZOO:-0}" != "1" ] && [ -x "$BUILD/tools/cli/scn" ]; then
  # Every zoo model (tools/python/scn_tools/zoo.py): CUDA fp16 vs the float64 PyTorch reference.
  t4=$(date +%s)
  {
    PYTHONPATH=tools/python python3 -m scn_tools.zoo_export_all --out /tmp/scn-zoo &&
    PYTHONPATH=tools/python python3 -m scn_tools.zoo_check --scn "$BUILD/tools/cli/scn" --dir /tmp/scn-zoo \
      --device cuda --precision fp16 --min-cosine 0.99999 --work /tmp/scn-zoo-run
    echo "zoo rc $?"
    # steady-state FP16 time of every zoo model (scn bench, CUDA graph, 200 runs after 20 warm-up)
    seen=""
    while IFS=$'\t' read -r model onnx feats idx grid batch _rest; do
      case "$model" in "#"*|"") continue ;; esac
      case " $seen " in *" $model "*) continue ;; esac
      seen="$seen $model"
      echo "== scn bench $model"
      "$BUILD/tools/cli/scn" bench "/tmp/scn-zoo/$onnx" --features "/tmp/scn-zoo/$feats" \
        --indices "/tmp/scn-zoo/$idx" --grid "$grid" --batch "$batch" --device cuda --runs 200 | grep -E "latency|workspace"
    done < /tmp/scn-zoo/cases.tsv
  } > "$OUT/zoo.log" 2>&1
  echo "zoo: $(grep -E "^zoo rc" "$OUT/zoo.log") in $(( $(date +%s) - t4 )) s" | tee -a "$OUT/env.log"
  grep -E "cosine|FAIL" "$OUT/zoo.log" | head -20
fi

if [ "${SCN_SKIP_BENCH:-0}" != "1" ] && [ -x "$BUILD/tools/cli/scn" ] && [ -f /tmp/scn-zoo/centerpoint/model.onnx ]; then
  # `scn bench` (the user-facing tool) on the real frame and a sweep over synthetic frames; the CSVs
  # and the PNG plot travel in one archive (the device tool returns at most 8 files).
  mkdir -p /tmp/scn-bench
  D=$SCN_DATA_DIR
  {
    "$BUILD/tools/cli/scn" bench /tmp/scn-zoo/centerpoint/model.onnx --features "$D/in_features.torch.fp16.tensor" \
      --indices "$D/in_indices_zyx.torch.int32.tensor" --grid 41x1440x1440 --device cuda --runs 500 --layers \
      --csv /tmp/scn-bench/runs.csv
    "$BUILD/tools/cli/scn" bench /tmp/scn-zoo/centerpoint/model.onnx --device cuda --runs 200 \
      --sweep 10000,20000,40000,60000,80000,100000,120000,140000,160000,180000,200000 \
      --sweep-csv /tmp/scn-bench/sweep.csv
    # the same sweep with the tiles of the first frame kept for every size (before size buckets)
    "$BUILD/tools/cli/scn" bench /tmp/scn-zoo/centerpoint/model.onnx --device cuda --runs 200 --tune-once \
      --sweep 10000,20000,40000,60000,80000,100000,120000,140000,160000,180000,200000 \
      --sweep-csv /tmp/scn-bench/sweep_tune_once.csv
    # issue 19 asks for 10k..300k through one engine: above the model's output bounds the plan grows
    "$BUILD/tools/cli/scn" bench /tmp/scn-zoo/centerpoint/model.onnx --device cuda --runs 200 --grow \
      --sweep 10000,20000,40000,80000,120000,160000,200000,250000,300000 \
      --sweep-csv /tmp/scn-bench/sweep_to_300k_grow.csv
    # issue 19's batch figure: frames/s of batch 1, 2, 4 and 8 through one engine (copies of the real
    # frame, and different synthetic 80k-voxel frames)
    "$BUILD/tools/cli/scn" bench /tmp/scn-zoo/centerpoint/model.onnx --features "$D/in_features.torch.fp16.tensor" \
      --indices "$D/in_indices_zyx.torch.int32.tensor" --grid 41x1440x1440 --device cuda --runs 200 \
      --batch-sweep 1,2,4,8 --batch-csv /tmp/scn-bench/batch_real.csv
    "$BUILD/tools/cli/scn" bench /tmp/scn-zoo/centerpoint/model.onnx --device cuda --runs 200 --synthetic 80000 \
      --batch-sweep 1,2,4,8 --batch-csv /tmp/scn-bench/batch_80k.csv
    python3 tools/bench/plot_bench.py --runs /tmp/scn-bench/runs.csv --sweep /tmp/scn-bench/sweep.csv \
      --output /tmp/scn-bench/bench.png
  } > "$OUT/scn_bench.log" 2>&1
  echo "scn bench rc $?" | tee -a "$OUT/env.log"
  tail -40 "$OUT/scn_bench.log"
fi

if [ "${SCN_SKIP_BENCH:-0}" != "1" ] && [ -x "$BUILD/tests/cuda/bench_centerpoint" ]; then
  t2=$(date +%s)
  mkdir -p /tmp/scn-bench
  "$BUILD/tests/cuda/bench_centerpoint" --data "$SCN_DATA_DIR" --csv /tmp/scn-bench ${SCN_BENCH_ARGS:-} > "$OUT/bench.log" 2>&1
  echo "bench rc $? in $(( $(date +%s) - t2 )) s" | tee -a "$OUT/env.log"
  cat "$OUT/bench.log"
fi

if [ "${SCN_SKIP_KERN:-0}" != "1" ] && [ -x "$BUILD/tests/cuda/offset_split_check" ]; then
  # the warp-independent implicit GEMM (osplit) vs the CPU and the igemm tiles, and their timings
  t8=$(date +%s)
  timeout 300 "$BUILD/tests/cuda/offset_split_check" --data "$SCN_DATA_DIR" > "$OUT/kern.log" 2>&1
  echo "offset_split_check rc $? in $(( $(date +%s) - t8 )) s" | tee -a "$OUT/env.log"
  grep -E "FAIL|^best|PASSED|FAILED|SKIP" "$OUT/kern.log" | head -40
fi

if [ "${SCN_SKIP_VOX:-0}" != "1" ] && [ -x "$BUILD/tools/cli/scn" ] && [ -f /tmp/scn-zoo/centerpoint/model.onnx ]; then
  # Points -> BEV (docs/voxelize.md): a 272,736-point nuScenes-like cloud; the CUDA voxel set against the
  # CPU oracle's bit for bit, the voxelizer's time, points -> BEV in one CUDA graph, and `scn run --points`
  # on both backends compared.
  t9=$(date +%s)
  {
    S="$BUILD/tools/cli/scn" M=/tmp/scn-zoo/centerpoint/model.onnx C=/tmp/scn-cloud.bin P=nuscenes-centerpoint
    "$S" synth --seed 1 --points "$C"
    for d in cuda cpu; do
      "$S" voxelize "$C" --preset $P --device $d --features "/tmp/scn-vf-$d.tensor" --indices "/tmp/scn-vi-$d.tensor"
    done
    if cmp -s /tmp/scn-vf-cuda.tensor /tmp/scn-vf-cpu.tensor && cmp -s /tmp/scn-vi-cuda.tensor /tmp/scn-vi-cpu.tensor; then
      echo "voxel sets: CUDA and CPU bitwise equal"
    else
      echo "voxel sets: FAIL, CUDA and CPU differ"
    fi
    echo "== scn voxelize --bench 1000 (CUDA)"
    "$S" voxelize "$C" --preset $P --device cuda --bench 1000
    echo "== bench_points_to_bev"
    "$BUILD/tests/voxelize/bench_points_to_bev" "$M" "$C" --preset $P --runs 500
    echo "== bench_points_to_bev --batch-sweep 1,2,4,8 (frame k: the cloud turned by 40 k degrees)"
    "$BUILD/tests/voxelize/bench_points_to_bev" "$M" "$C" --preset $P --runs 200 --batch-sweep 1,2,4,8
    echo "== scn bench --points (CUDA: one graph), one frame and a batch of two"
    "$S" bench "$M" --points "$C" --preset $P --device cuda --runs 500
    "$S" bench "$M" --points "$C" --points "$C" --preset $P --device cuda --runs 200 --parallel-frames 1
    echo "== scn run --points: CUDA fp16 vs CPU fp32"
    "$S" run "$M" --points "$C" --preset $P --device cuda --output /tmp/scn-bev-cuda.tensor
    "$S" run "$M" --points "$C" --preset $P --device cpu --precision fp32 --output /tmp/scn-bev-cpu.tensor
    "$S" compare /tmp/scn-bev-cuda.tensor /tmp/scn-bev-cpu.tensor --min-cosine 0.9999
    echo "compare rc $?"
  } > "$OUT/vox.log" 2>&1
  echo "voxelizer rc $? in $(( $(date +%s) - t9 )) s" | tee -a "$OUT/env.log"
  grep -E "voxel sets|median|cosine|rc |FAIL|rror" "$OUT/vox.log" | head -40
fi

if [ "${SCN_SKIP_CACHE:-0}" != "1" ] && [ -x "$BUILD/tools/cli/scn" ] && [ -f /tmp/scn-zoo/centerpoint/model.onnx ]; then
  # The tuning cache on the real frame: the first bind tunes and writes it, the second reads it.
  t10=$(date +%s)
  {
    rm -f /tmp/scn-tc.tune
    for pass in tune-and-write read; do
      echo "== $pass"
      "$BUILD/tools/cli/scn" bench /tmp/scn-zoo/centerpoint/model.onnx --features "$SCN_DATA_DIR/in_features.torch.fp16.tensor" \
        --indices "$SCN_DATA_DIR/in_indices_zyx.torch.int32.tensor" --grid 41x1440x1440 --device cuda --runs 300 \
        --tuning-cache /tmp/scn-tc.tune 2>&1 | grep -E "build|first bind|latency|tuning"
    done
    echo "== --no-autotune (heuristic tiles)"
    "$BUILD/tools/cli/scn" bench /tmp/scn-zoo/centerpoint/model.onnx --features "$SCN_DATA_DIR/in_features.torch.fp16.tensor" \
      --indices "$SCN_DATA_DIR/in_indices_zyx.torch.int32.tensor" --grid 41x1440x1440 --device cuda --runs 300 \
      --no-autotune 2>&1 | grep -E "build|first bind|latency"
  } > "$OUT/cache.log" 2>&1
  echo "tuning cache rc $? in $(( $(date +%s) - t10 )) s" | tee -a "$OUT/env.log"
  cat "$OUT/cache.log"
fi

if [ -d "$ROOT/.devdata/int8_plans" ] && [ -x "$BUILD/tools/cli/scn" ]; then
  # INT8 plans chosen by `scn calibrate --min-cosine` (calibrated on the CPU beforehand, carried in
  # .devdata/int8_plans with their FP32 model cp.onnx): accuracy on the real frame and time.
  t11=$(date +%s)
  {
    EF="$SCN_DATA_DIR/in_features.torch.fp16.tensor" EI="$SCN_DATA_DIR/in_indices_zyx.torch.int32.tensor"
    D=$ROOT/.devdata/int8_plans
    "$BUILD/tools/cli/scn" run "$D/cp.onnx" --features "$EF" --indices "$EI" --grid 41x1440x1440 --precision fp32 \
      --device cpu --output /tmp/scn-plans-fp32.tensor
    for m in "$D"/cp.*.onnx; do
      echo "== $(basename "$m")"
      "$BUILD/tools/cli/scn" run "$m" --features "$EF" --indices "$EI" --grid 41x1440x1440 --precision int8 \
        --device cuda --output /tmp/scn-plans-int8.tensor 2>&1 | grep -iE "int8|node"
      "$BUILD/tools/cli/scn" compare /tmp/scn-plans-int8.tensor /tmp/scn-plans-fp32.tensor | grep -E "cosine|rel-L2"
      for prec in int8 fp16; do
        "$BUILD/tools/cli/scn" bench "$m" --features "$EF" --indices "$EI" --grid 41x1440x1440 --precision $prec \
          --device cuda --runs 500 | grep -E "latency|workspace" | sed "s/^/$prec /"
      done
    done
  } > "$OUT/int8_plans.log" 2>&1
  echo "int8 plans rc $? in $(( $(date +%s) - t11 )) s" | tee -a "$OUT/env.log"
  cat "$OUT/int8_plans.log"
fi

if [ "${SCN_NCU:-0}" = "1" ] && [ -x "$BUILD/tests/cuda/bench_centerpoint" ]; then
  t3=$(date +%s)
  {
    echo "== arena plan and per-step times (heuristic configs, no graph)"
    SCN_CUDA_PLAN_TRACE=1 "$BUILD/tests/cuda/bench_centerpoint" --data "$SCN_DATA_DIR" --ncu 2>&1
    echo "== ncu"
    timeout 300 ncu --clock-control none -k regex:igemm_kernel --launch-count 21 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis \
      "$BUILD/tests/cuda/bench_centerpoint" --data "$SCN_DATA_DIR" --ncu 2>&1
  } > "$OUT/ncu.log" 2>&1
  echo "ncu rc $? in $(( $(date +%s) - t3 )) s" | tee -a "$OUT/env.log"
  grep -E "igemm_kernel|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Stall|Warp Cycles Per Issued" "$OUT/ncu.log" | head -150
fi

# CSVs (bench_centerpoint and scn bench) and the plot, as one file.
mkdir -p /tmp/scn-bench && tar -C /tmp/scn-bench -czf "$OUT/bench_files.tar.gz" . 2>/dev/null
ls -la "$OUT"
