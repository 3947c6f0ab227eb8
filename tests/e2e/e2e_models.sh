#!/usr/bin/env bash
# End-to-end: exported ONNX model -> `scn run` on the CPU -> `scn compare` against the float64 PyTorch
# reference. Usage: e2e_models.sh CASE SCN PYTHON SOURCE_DIR DATA_DIR WORK_DIR
#   centerpoint_real : CenterPoint zyx on the real nuScenes frame, rel-L2 <= 1e-5, then the same model
#                      exported in xyz order on the xyz indices gives the same map (rel-L2 <= 5e-6)
#   bevfusion_synth  : BEVFusion-shaped graph (ScatterDense -> Transpose -> Reshape) on a synthetic frame,
#                      exported as xyz and as zyx: each matches its reference, and the two maps agree
# Exit 77 = skipped (ctest SKIP_RETURN_CODE).
set -euo pipefail
CASE=$1 SCN=$2 PY=$3 SRC=$4 DATA=$5 WORK=$6
export PYTHONPATH="$SRC/tools/python"
mkdir -p "$WORK"
cd "$WORK"
ref() { "$PY" -m scn_tools.make_reference --quiet "$@"; }
case "$CASE" in
  centerpoint_real)
    D="$DATA/nuscenes-centerpoint"
    if [ ! -f "$D/in_features.torch.fp16.tensor" ]; then
      echo "SKIP: real frame not found at $D (../shared/data beside the checkout)"; exit 77
    fi
    ref --model centerpoint --order zyx --features "$D/in_features.torch.fp16.tensor" \
        --indices "$D/in_indices_zyx.torch.int32.tensor" --grid 41x1440x1440 --seed 0 \
        --onnx cp_zyx.onnx --output ref_zyx.tensor
    "$SCN" run cp_zyx.onnx --features "$D/in_features.torch.fp16.tensor" \
        --indices "$D/in_indices_zyx.torch.int32.tensor" --grid 41x1440x1440 \
        --device cpu --precision fp32 --output out_zyx.tensor
    "$SCN" compare out_zyx.tensor ref_zyx.tensor --max-rel-l2 1e-5 --min-cosine 0.9999999
    ref --model centerpoint --order xyz --features "$D/in_features.torch.fp16.tensor" \
        --indices "$D/in_indices_xyz.torch.int32.tensor" --grid 1440x1440x41 --seed 0 \
        --onnx cp_xyz.onnx --output ref_xyz.tensor
    "$SCN" run cp_xyz.onnx --features "$D/in_features.torch.fp16.tensor" \
        --indices "$D/in_indices_xyz.torch.int32.tensor" --grid 1440x1440x41 \
        --device cpu --precision fp32 --output out_xyz.tensor
    "$SCN" compare out_xyz.tensor ref_xyz.tensor --max-rel-l2 1e-5
    echo "xyz export vs zyx export (same model, other index order):"
    "$SCN" compare out_xyz.tensor out_zyx.tensor --max-rel-l2 5e-6
    ;;
  bevfusion_synth)
    "$SCN" synth --voxels 40000 --seed 7 --order xyz --features f.tensor --indices i_xyz.tensor
    "$SCN" synth --voxels 40000 --seed 7 --order zyx --features f_zyx.tensor --indices i_zyx.tensor
    cmp f.tensor f_zyx.tensor  # the same voxels in both orders
    ref --model bevfusion --order xyz --features f.tensor --indices i_xyz.tensor --grid 1440x1440x41 \
        --seed 3 --onnx bev_xyz.onnx --output ref_xyz.tensor
    # (no `| grep -q`: under pipefail grep's early exit would fail the pipeline with SIGPIPE)
    inspect_out=$("$SCN" inspect bev_xyz.onnx)
    grep -q Transpose <<<"$inspect_out"
    "$SCN" run bev_xyz.onnx --features f.tensor --indices i_xyz.tensor --grid 1440x1440x41 \
        --device cpu --precision fp32 --output out_xyz.tensor
    "$SCN" compare out_xyz.tensor ref_xyz.tensor --max-rel-l2 1e-5
    ref --model bevfusion --order zyx --features f.tensor --indices i_zyx.tensor --grid 41x1440x1440 \
        --seed 3 --onnx bev_zyx.onnx --output ref_zyx.tensor
    "$SCN" run bev_zyx.onnx --features f.tensor --indices i_zyx.tensor --grid 41x1440x1440 \
        --device cpu --precision fp32 --output out_zyx.tensor
    "$SCN" compare out_zyx.tensor ref_zyx.tensor --max-rel-l2 1e-5
    echo "BEVFusion zyx export vs xyz export:"
    "$SCN" compare out_zyx.tensor out_xyz.tensor --max-rel-l2 5e-6
    ;;
  *) echo "unknown case $CASE"; exit 2 ;;
esac
