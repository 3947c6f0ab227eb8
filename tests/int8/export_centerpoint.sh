#!/usr/bin/env bash
# Writes cp.onnx in the current folder: CenterPoint with synthetic weights (scn_tools.make_reference, seed 0), the
# model every INT8 script here calibrates. The weights do not depend on the frame: it is exported with a small one
# (tiny_f/tiny_i.tensor, also left there, with the reference output tiny_ref.tensor).
# Usage, from the work folder: export_centerpoint.sh SCN PYTHON SOURCE_DIR
set -euo pipefail
"$1" synth --voxels 3000 --seed 5 --features tiny_f.tensor --indices tiny_i.tensor --quiet
PYTHONPATH="$3/tools/python" "$2" -m scn_tools.make_reference --quiet --model centerpoint --order zyx \
    --features tiny_f.tensor --indices tiny_i.tensor --grid 41x1440x1440 --seed 0 --onnx cp.onnx \
    --output tiny_ref.tensor
