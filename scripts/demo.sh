#!/usr/bin/env bash
# Set up (idempotent) and run the main job on the bundled example tree, in a scratch copy:
# classify every test class, show the diff, write it, graduate the allowlist.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh || exit 2
DECOUPLE="$PWD/${DECOUPLE_VENV:-.venv}/bin/decouple"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp -r examples/pytorch_tree "$WORK/pytorch"
cd "$WORK/pytorch"
git init -q && git add -A && git -c user.name=demo -c user.email=demo@example.invalid commit -qm base

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; echo "(exit $?)"; }
step "$DECOUPLE" classify test
step "$DECOUPLE" apply --diff test
step "$DECOUPLE" apply --from-allowlist tools/linter/adapters/test_linter_allowlist.json --graduate
step git diff --stat
step cat tools/linter/adapters/test_linter_allowlist.json
step "$DECOUPLE" apply --check test
