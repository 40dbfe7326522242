#!/usr/bin/env bash
# Set everything up (idempotent) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test
export DECOUPLE_TORCH_PYTHON="$PWD/${DECOUPLE_VENV:-.venv}/bin/python"
export DECOUPLE_OLD_TORCH_PYTHON="$PWD/${DECOUPLE_OLD_VENV:-.venv-torch213}/bin/python"
exec "${DECOUPLE_VENV:-.venv}/bin/python" -m pytest -q "$@"
