#!/usr/bin/env bash
# int8_quant_sim reproduces the CPU INT8 engine: its simulated symmetric column (the engines' scheme) within 5 % of the
# engine's own loss, on an all-int8 plan and on a mixed one (int8 convs, fp16 residual Adds), CenterPoint with
# synthetic weights on synthetic frames.
set -euo pipefail
SIM=$1 SCN=$2 PY=$3 SRC=$4 WORK=$5
mkdir -p "$WORK"
cd "$WORK"
"$SRC/tests/int8/export_centerpoint.sh" "$SCN" "$PY" "$SRC"
"$SCN" synth --voxels 12000 --seed 7 --features cal_f.tensor --indices cal_i.tensor --quiet
"$SCN" synth --voxels 8000 --seed 8 --features eval_f.tensor --indices eval_i.tensor --quiet
convs() { local s="" i; for i in $(seq "$1" "$2"); do s="$s,conv$i"; done; echo "${s#,}"; }
"$SIM" cp.onnx --calibrate cal_f.tensor cal_i.tensor --eval eval_f.tensor eval_i.tensor --grid 41x1440x1440 \
    --check-engine 0.05 "all:$(convs 1 20),add0,add1,add2,add3,add4,add5,add6,add7" "levels 0-1:$(convs 1 8)"
