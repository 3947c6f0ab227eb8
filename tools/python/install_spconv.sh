#!/bin/sh
# Installs the real spconv 2.x (CPU build, from PyPI) into a virtual environment DIR that sees the
# system site packages of /usr/bin/python3 (Debian torch, onnx, numpy), for the exporter tests on
# spconv's own modules (tests/python/test_spconv_real.py; skipped where spconv is absent).
#
#   tools/python/install_spconv.sh build/spconv-venv
#   build/spconv-venv/bin/python -m pytest -q tests/python
#   cmake ... -DSCN_SPCONV_PYTHON=$PWD/build/spconv-venv/bin/python   # registers ctest python_spconv
set -eu
DIR=${1:?usage: install_spconv.sh DIR}
/usr/bin/python3 -m venv --system-site-packages "$DIR"
"$DIR/bin/python" -m pip install --quiet "spconv==2.3.8"
"$DIR/bin/python" -c "import spconv, spconv.pytorch; print('spconv', spconv.__version__, 'ok')"
