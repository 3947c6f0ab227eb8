#!/usr/bin/env bash
# A/B of CUDA options on a CenterPoint INT8 plan, two rounds of `scn bench` (device tool; run
# after scripts/gpu_check.sh, whose INT8 check writes /tmp/scn-int8/cp.{all,full,target}.onnx).
# Usage: ab_int8.sh PLAN RUNS VARIANT...   (a VARIANT is extra `scn bench` flags, "" for the defaults), e.g.
#   bash scripts/ab_int8.sh target 300 "" "--no-autotune" "--tile igemm-i8 m64n64k32s4t"
set -u
cd "$(dirname "$0")/.."
B=${SCN_BUILD_DIR:-build-gpu}
D=.devdata/nuscenes-centerpoint
PLAN=$1 RUNS=$2
shift 2
for round in 1 2; do
  for v in "$@"; do
    printf "%-7s round %d %-50s " "$PLAN" "$round" "[${v:-default}]"
    # shellcheck disable=SC2086  # a variant is several words
    "$B/tools/cli/scn" bench $v "/tmp/scn-int8/cp.$PLAN.onnx" --features "$D/in_features.torch.fp16.tensor" \
      --indices "$D/in_indices_zyx.torch.int32.tensor" --grid 41x1440x1440 --precision int8 --device cuda \
      --runs "$RUNS" | grep -E "latency" | sed 's/latency *//'
  done
done
