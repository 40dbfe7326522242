#!/usr/bin/env bash
# Tool-code quality: ruff (lint + format check) and mypy over codemod/ and transforms/.
# The configuration is in pyproject.toml; ruff and mypy come with the test extra (pinned).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${DECOUPLE_VENV:-.venv}
"$VENV/bin/ruff" check codemod transforms
"$VENV/bin/ruff" format --check codemod transforms
"$VENV/bin/mypy"
