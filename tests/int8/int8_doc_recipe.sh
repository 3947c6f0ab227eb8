#!/usr/bin/env bash
# ctest int8_doc_recipe: runs the block between <!-- recipe:int8 --> markers of docs/int8.md as written,
# from a scratch folder that looks like the repository root after the README build (build/ and tools/
# are links), so the documented commands stay copy-pasteable.
# Usage: int8_doc_recipe.sh SOURCE_DIR BINARY_DIR WORK_DIR PYTHON
set -euo pipefail
SRC=$1 BIN=$2 WORK=$3 PY=$4
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
ln -s "$BIN" build
ln -s "$SRC/tools" tools
sed -n '/<!-- recipe:int8 -->/,/<!-- \/recipe:int8 -->/p' "$SRC/docs/int8.md" | sed '/^<!--/d;/^```/d' > recipe.sh
[ -s recipe.sh ] || { echo "docs/int8.md has no recipe block"; exit 1; }
# The recipe says python3; run it with the interpreter CMake found (the same one on Debian).
mkdir -p pybin && ln -s "$(command -v "$PY")" pybin/python3
PATH="$WORK/pybin:$PATH" bash -euo pipefail -x recipe.sh 2>&1 | tee recipe.log
grep -q "INT8 vs FP32 cosine" recipe.log
test -s int8-demo/out.tensor
