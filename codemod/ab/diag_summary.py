"""What a diagnostic arm (`--diag`, `--diagnose`) changed relative to its base arm, in one statement."""

from __future__ import annotations

from codemod.ab.compare import CRASH, FAIL, OUTCOME_KIND, PASS, TIMEOUT, effective_outcomes, kind
from codemod.ab.model import ArmResult, DiagnosticSummary


def _fmt_vars(variables: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in variables.items())


def diagnose(
    name: str, based_on: str, variables: dict[str, str], base: ArmResult, diag: ArmResult
) -> DiagnosticSummary:
    ob = effective_outcomes(base, diag)
    od = effective_outcomes(diag, base)
    changed: dict[str, list[str]] = {}
    for nodeid in sorted(set(ob) | set(od)):
        x = ob.get(nodeid)
        y = od.get(nodeid)
        xo = x.outcome if x else "not-run"
        yo = y.outcome if y else "not-run"
        differs = (kind(x) != kind(y)) if (x is not None and y is not None) else (xo != yo)
        if differs:
            changed[nodeid] = [xo, yo]
    fail_to_pass = sum(
        1
        for v in changed.values()
        if OUTCOME_KIND.get(v[0]) in (FAIL, CRASH, TIMEOUT) and OUTCOME_KIND.get(v[1]) == PASS
    )
    pass_to_fail = sum(
        1
        for v in changed.values()
        if OUTCOME_KIND.get(v[0]) == PASS and OUTCOME_KIND.get(v[1]) in (FAIL, CRASH, TIMEOUT)
    )
    other = len(changed) - fail_to_pass - pass_to_fail
    vtext = _fmt_vars(variables) or "no extra variables"
    parts = []
    if fail_to_pass:
        parts.append(
            f"{fail_to_pass} test{'s' if fail_to_pass != 1 else ''} failing in {based_on} "
            f"pass{'es' if fail_to_pass == 1 else ''} with {vtext}"
        )
    if pass_to_fail:
        parts.append(
            f"{pass_to_fail} test{'s' if pass_to_fail != 1 else ''} passing in {based_on} "
            f"fail{'s' if pass_to_fail == 1 else ''} with {vtext}"
        )
    if other:
        parts.append(f"{other} other test{'s' if other != 1 else ''} change outcome")
    if not diag.ran:
        statement = f"diagnostic arm {name} could not run: {diag.error}"
    elif parts:
        statement = "; ".join(parts) + "."
    else:
        statement = f"No test changes outcome with {vtext} (relative to {based_on})."
    return DiagnosticSummary(
        name=name, based_on=based_on, variables=dict(variables), changed=changed, statement=statement
    )
