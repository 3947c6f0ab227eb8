#!/bin/sh
# Installs what building the scn wheel without network needs (scikit-build-core, nanobind) into a virtual
# environment DIR that sees the system site packages, for the ctest python_package fixture
# (pip wheel --no-build-isolation). pip install . with network needs none of this.
#   tools/python/install_pybuild.sh build/pybuild-venv
#   cmake ... -DSCN_PYBUILD_PYTHON=$PWD/build/pybuild-venv/bin/python    # registers ctest python_package
set -eu
DIR=${1:?usage: install_pybuild.sh DIR}
/usr/bin/python3 -m venv --system-site-packages "$DIR"
"$DIR/bin/python" -m pip install --quiet "scikit-build-core>=0.10" "nanobind>=2.0"
"$DIR/bin/python" -c "import scikit_build_core, nanobind; print('scikit-build-core', scikit_build_core.__version__, 'nanobind', nanobind.__version__, 'ok')"
