#!/usr/bin/env bash
# Bitwise guard for refactors of the CUDA backend: runs a fixed set of cases through `scn run` on the
# GPU and prints one "case sha256" line per output file. The digests recorded before a change
# (tests/cuda/golden_outputs.txt) must come out again after it.
#
# Usage: golden_outputs.sh SCN PYTHON SOURCE_DIR DATA_DIR WORK_DIR [record FILE | check FILE]
#   GOLDEN_RUN_ARGS: extra `scn run` arguments for every case. tests/cuda/golden_outputs.txt holds the
#   digests with "--offset-groups 1" (the implicit-GEMM tiles' summation order, recorded before the
#   restructure), tests/cuda/golden_outputs_default.txt those of the default options on sm_90 (osplit
#   for the 16/32-channel convs); scripts/gpu_check.sh checks both.
#   cases: every zoo model (tools/python zoo, synthetic seeded weights and frames) in fp16; CenterPoint
#   on the real nuScenes frame in fp16; the INT8 plans 'all', 'full' and 'target' of
#   tests/int8/int8_centerpoint_cuda.sh (calibrated on a synthetic frame by `scn calibrate`).
# The models and frames are made here from seeds, so the digests hold for one PyTorch version (the
# device's); the ONNX files' own digests are printed too so that a changed input is told apart from a
# changed engine.
set -euo pipefail
SCN=$1 PY=$2 SRC=$3 DATA=$4 WORK=$5 MODE=${6:-print} FILE=${7:-}
export PYTHONPATH="$SRC/tools/python"
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
lines=()
digest() { sha256sum "$1" | cut -c1-64; }
read -r -a EXTRA <<< "${GOLDEN_RUN_ARGS:-}"

"$PY" -m scn_tools.zoo_export_all --out zoo > zoo_export.log
while IFS=$'\t' read -r model onnx feats idx grid batch _rest; do
  case "$model" in "#"* | "") continue ;; esac
  [ -d "out/$model" ] && continue
  mkdir -p "out/$model"
  "$SCN" run "zoo/$onnx" --features "zoo/$feats" --indices "zoo/$idx" --grid "$grid" --batch "$batch" \
    --device cuda --precision fp16 --output-dir "out/$model" "${EXTRA[@]}" > /dev/null
  lines+=("model:$model $(digest "zoo/$onnx")")
  # the output tensors only (`--output-dir` also writes outputs.txt, an index of them)
  for f in $(cd "out/$model" && ls -- *.tensor | sort); do lines+=("zoo:$model/$f $(digest "out/$model/$f")"); done
done < zoo/cases.tsv

D="$DATA/nuscenes-centerpoint"
EF="$D/in_features.torch.fp16.tensor" EI="$D/in_indices_zyx.torch.int32.tensor" G=41x1440x1440
"$SCN" run zoo/centerpoint/model.onnx --features "$EF" --indices "$EI" --grid $G --device cuda --precision fp16 \
  --output real_fp16.tensor "${EXTRA[@]}" > /dev/null
lines+=("real:centerpoint-fp16 $(digest real_fp16.tensor)")
for MODE_ in all full target; do
  KEEP=(--keep-fp16-first 1)
  [ "$MODE_" = all ] && KEEP=()
  [ "$MODE_" = target ] && KEEP=(--keep-fp16-first 1 --keep-fp16 add0,add1,add2,add3,add4,add5,add6,add7,conv9,conv10,conv11,conv12,conv13,conv14,conv15,conv16,conv17,conv18,conv19,conv20)
  "$SCN" calibrate zoo/centerpoint/model.onnx -o "cp.$MODE_.onnx" --synthetic 150000 --frames 1 --method absmax \
    "${KEEP[@]}" --quiet
  "$SCN" run "cp.$MODE_.onnx" --features "$EF" --indices "$EI" --grid $G --device cuda --precision int8 \
    --output "real_int8_$MODE_.tensor" "${EXTRA[@]}" > /dev/null
  lines+=("model:cp.$MODE_ $(digest "cp.$MODE_.onnx")")
  lines+=("real:centerpoint-int8-$MODE_ $(digest "real_int8_$MODE_.tensor")")
done

printf '%s\n' "${lines[@]}" > digests.txt
case "$MODE" in
  print) cat digests.txt ;;
  record) cp digests.txt "$FILE" && echo "recorded ${#lines[@]} digests in $FILE" ;;
  check)
    if diff -u "$FILE" digests.txt; then
      echo "golden outputs: all ${#lines[@]} digests equal"
    else
      echo "golden outputs: digests differ (see the diff above: 'model:' lines are inputs, the rest outputs)"
      exit 1
    fi
    ;;
  *) echo "unknown mode $MODE" >&2; exit 2 ;;
esac
