#!/usr/bin/env bash
# INT8 vs FP32 on CenterPoint (synthetic weights from scn_tools): `scn calibrate` on synthetic nuScenes
# frames, evaluated on the real nuScenes frame (a synthetic frame of another seed when it is absent);
# then the round trip: the written model imports (`scn inspect`) and runs as INT8 on the CPU
# (`scn run --precision int8 --device cpu`). Fails when the INT8 cosine is below MIN_COSINE.
#   MODE full   : every conv but conv0 and every Add in INT8
#   MODE target : the target (cosine >= 0.9995): conv1-conv8 (the two full-resolution levels)
#                 in INT8, the Adds and levels 2-3 in fp16
# Calibration: one synthetic frame of 150k voxels (smaller frames have narrower ranges than real ones),
# absmax ranges. docs/int8.md lists the other configurations measured.
# Usage: int8_centerpoint.sh SCN PYTHON SOURCE_DIR DATA_DIR WORK_DIR MODE MIN_COSINE
set -euo pipefail
SCN=$1 PY=$2 SRC=$3 DATA=$4 WORK=$5 MODE=$6 MIN=$7
mkdir -p "$WORK"
cd "$WORK"
"$SRC/tests/int8/export_centerpoint.sh" "$SCN" "$PY" "$SRC"
D="$DATA/nuscenes-centerpoint"
if [ -f "$D/in_features.torch.fp16.tensor" ]; then
  EF="$D/in_features.torch.fp16.tensor" EI="$D/in_indices_zyx.torch.int32.tensor" WHAT="the real nuScenes frame"
else
  "$SCN" synth --voxels 80000 --seed 77 --features eval_f.tensor --indices eval_i.tensor --quiet
  EF=eval_f.tensor EI=eval_i.tensor WHAT="a synthetic frame (real frame not found at $D)"
fi
KEEP=""
if [ "$MODE" = target ]; then
  KEEP="--keep-fp16 add0,add1,add2,add3,add4,add5,add6,add7,conv9,conv10,conv11,conv12,conv13,conv14,conv15,conv16,conv17,conv18,conv19,conv20"
fi
"$SCN" calibrate cp.onnx -o cp.int8.onnx --synthetic 150000 --frames 1 --method absmax --keep-fp16-first 1 $KEEP \
    --threads 2 --eval "$EF" "$EI" | tee calibrate.txt
COS=$(sed -nE "s/.*INT8 vs FP32 cosine ([0-9.]+).*/\1/p" calibrate.txt | head -1)
echo "INT8 ($MODE) vs FP32 cosine on $WHAT: $COS (floor $MIN)"
"$SCN" inspect cp.int8.onnx > inspect.txt
grep -q int8 inspect.txt
"$SCN" run cp.int8.onnx --features tiny_f.tensor --indices tiny_i.tensor --grid 41x1440x1440 \
    --precision int8 --device cpu --threads 2 --output y_int8.tensor
awk -v c="$COS" -v m="$MIN" 'BEGIN { exit !(c + 0 >= m + 0) }' || { echo "cosine $COS < $MIN"; exit 1; }
