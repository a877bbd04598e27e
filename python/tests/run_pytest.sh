#!/usr/bin/env bash
# ctest python.pytest: runs the Python module's tests with the interpreter the
# module was built for. Exit 77 (reported as skipped) where pytest or NumPy
# is missing, with the reason.
#
#   run_pytest.sh PYTHON TESTS_DIR
set -u
python=$1 tests=$2
if ! "$python" -c "import pytest, numpy" > /dev/null 2>&1; then
  echo "SKIPPED: pytest or NumPy is not installed for $python (apt-get install python3-pytest python3-numpy)"
  exit 77
fi
exec "$python" -m pytest -q -p no:cacheprovider "$tests"
