#!/usr/bin/env bash
# The README's first command: set up (idempotent), then run the whole pipeline on the bundled
# example tree in a scratch git repository: classify, then `decouple refactor` from the allowlist
# (label, make torch.load explicit, graduate, one branch per group of two files, A/B run of each
# branch against the base, reports and PR bodies). Non-interactive (CI runs it).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh demo || { echo "demo: the set-up failed (see above); nothing was run" >&2; exit 2; }
VENV="$PWD/${DECOUPLE_VENV:-.venv}"
DECOUPLE="$VENV/bin/decouple"
DEMO="${DECOUPLE_DEMO_DIR:-${TMPDIR:-/tmp}/decouple-demo}"
rm -rf "$DEMO" && mkdir -p "$DEMO" || exit 2
cp -r examples/pytorch_tree "$DEMO/pytorch"
cd "$DEMO/pytorch" || exit 2
git init -q -b main && git add -A \
  && git -c user.name=demo -c user.email=demo@example.invalid commit -qm "the example tree" || exit 2
git config user.name demo && git config user.email demo@example.invalid

start=$(date +%s)
# What an exit code means (the codes of every decouple command); $2: what 1 means for this step.
meaning() {
  case $1 in
    0) echo "done" ;;
    1) echo "$2" ;;
    2) echo "a usage or input error (see above)" ;;
    3) echo "INCONCLUSIVE: an A/B run could not show the change is safe (see above)" ;;
    *) echo "see above" ;;
  esac
}
step() {  # step WHAT-EXIT-1-MEANS COMMAND...
  local one=$1; shift
  printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; rc=$?
  echo "(exit $rc: $(meaning $rc "$one"))"; return $rc
}
step "findings: a class needs manual work (TestMixed: the warning above names the restructuring that fits)" \
  "$DECOUPLE" classify test
step "manual work left, or a regression (the branch lines above say which)" \
  "$DECOUPLE" refactor --from-allowlist tools/linter/adapters/test_linter_allowlist.json --group-size 2 \
  --torch-load weights-only-false --explain --python "$VENV/bin/python" -j 2 --confirm 1
status=$?
step "" git log --oneline --graph --all
OUT="$DEMO/pytorch/.decouple-out"
printf '\n\033[1mWhere everything is\033[0m\n'
echo "scratch repository: $DEMO/pytorch (branches: $(git branch --format='%(refname:short)' | grep -v '^main$' | tr '\n' ' '))"
echo "batch summary:      $OUT/batch.md"
while IFS= read -r body; do  # one folder per branch: $OUT/<branch name as folders>/
  dir=$(dirname "$body")
  echo "PR body:            $body"
  echo "  A/B reports:      $dir/ab.html  $dir/ab.md  $dir/ab.json"
done < <(find "$OUT" -name PR_BODY.md | sort)
first=$(find "$OUT" -name PR_BODY.md 2>/dev/null | sort | head -1)
if [ -n "$first" ]; then
  printf '\n\033[1m$ head -40 %s\033[0m\n' "$first"
  head -40 "$first"
fi
echo
echo "demo wall time after set-up: $(( $(date +%s) - start ))s (exit $status: the refactor's, $(meaning $status "manual work left, or a regression"))"
exit $status
