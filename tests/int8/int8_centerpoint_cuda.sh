#!/usr/bin/env bash
# CenterPoint INT8 on the GPU (needs a CUDA device; run by scripts/gpu_check.sh): the model exported by
# scn_tools (synthetic weights), calibrated by `scn calibrate` on one synthetic 150k-voxel frame
# (absmax), evaluated on the real nuScenes frame, for three precision plans:
#   all    : every conv and every Add in INT8: no fp16 layer, so the CUDA engine must equal the CPU
#            oracle bit for bit (fails otherwise)
#   full   : every conv but conv0 and every Add in INT8 (20 / 21 convs)
#   target : conv1-conv8 (the two full-resolution levels) in INT8, the rest fp16 (docs/int8.md)
# For each: CUDA INT8 vs CPU INT8 (the oracle; with fp16 layers, fails below MIN_GPU_CPU_COSINE), CUDA
# INT8 vs the CPU FP32 reference (the accuracy figure), and `scn bench` of the CUDA INT8 and FP16 engines.
# Usage: int8_centerpoint_cuda.sh SCN PYTHON SOURCE_DIR DATA_DIR WORK_DIR [RUNS] [MIN_GPU_CPU_COSINE]
# (measured on the H200: full 0.99987 -- one-step flips after the fp16 conv0 cascade through 20 int8
# layers --, target 0.999994)
set -euo pipefail
SCN=$1 PY=$2 SRC=$3 DATA=$4 WORK=$5 RUNS=${6:-500} MIN=${7:-0.9995}
mkdir -p "$WORK"
cd "$WORK"
D="$DATA/nuscenes-centerpoint"
EF="$D/in_features.torch.fp16.tensor" EI="$D/in_indices_zyx.torch.int32.tensor" G=41x1440x1440
[ -f "$EF" ] || { echo "real frame not found in $D"; exit 1; }
"$SRC/tests/int8/export_centerpoint.sh" "$SCN" "$PY" "$SRC"
"$SCN" run cp.onnx --features "$EF" --indices "$EI" --grid $G --precision fp32 --device cpu --output y_fp32.tensor
status=0
for MODE in all full target; do
  KEEP="--keep-fp16-first 1"
  [ "$MODE" = all ] && KEEP=""
  [ "$MODE" = target ] && KEEP="--keep-fp16-first 1 --keep-fp16 add0,add1,add2,add3,add4,add5,add6,add7,conv9,conv10,conv11,conv12,conv13,conv14,conv15,conv16,conv17,conv18,conv19,conv20"
  "$SCN" calibrate cp.onnx -o cp.$MODE.onnx --synthetic 150000 --frames 1 --method absmax $KEEP \
      --quiet
  "$SCN" run cp.$MODE.onnx --features "$EF" --indices "$EI" --grid $G --precision int8 --device cpu --output y_cpu.$MODE.tensor
  "$SCN" run cp.$MODE.onnx --features "$EF" --indices "$EI" --grid $G --precision int8 --device cuda --output y_gpu.$MODE.tensor
  echo "== $MODE: CUDA INT8 vs CPU INT8 (oracle)"
  if [ "$MODE" = all ]; then
    "$SCN" compare y_gpu.$MODE.tensor y_cpu.$MODE.tensor --max-abs 0 || status=1
  else
    "$SCN" compare y_gpu.$MODE.tensor y_cpu.$MODE.tensor --min-cosine "$MIN" || status=1
  fi
  echo "== $MODE: CUDA INT8 vs CPU FP32 (accuracy)"
  "$SCN" compare y_gpu.$MODE.tensor y_fp32.tensor | grep -E "cosine|rel-L2|identical"
  echo "== $MODE: CPU INT8 vs CPU FP32"
  "$SCN" compare y_cpu.$MODE.tensor y_fp32.tensor | grep -E "cosine|rel-L2"
  echo "== $MODE: scn bench CUDA INT8"
  "$SCN" bench cp.$MODE.onnx --features "$EF" --indices "$EI" --grid $G --precision int8 --device cuda --runs "$RUNS" \
      --layers | grep -vE "^\s*$"
done
echo "== scn bench CUDA FP16 (the same model, INT8 attributes ignored)"
"$SCN" bench cp.full.onnx --features "$EF" --indices "$EI" --grid $G --precision fp16 --device cuda --runs "$RUNS" \
    | grep -E "latency|workspace|precision"
exit $status
