"""The verdict of an A/B result (SAFE, REGRESSION, INCONCLUSIVE), its reason and exit code."""

from __future__ import annotations

from codemod.ab.model import CATEGORIES, EXIT_CODES, INCONCLUSIVE_CATEGORY, REGRESSING, ABResult


def verdict(result: ABResult) -> tuple[str, str]:
    a, b = result.arm("A"), result.arm("B")
    if a is None or not a.ran:
        return "INCONCLUSIVE", "arm A could not run" + (f": {a.error}" if a is not None and a.error else "")
    if b is None or not b.ran:
        return "INCONCLUSIVE", "arm B could not run" + (f": {b.error}" if b is not None and b.error else "")
    if not a.outcomes and not b.outcomes and not a.collection_errors and not b.collection_errors:
        return "INCONCLUSIVE", "no test was collected in either arm"
    if not a.outcomes and not b.outcomes:
        return "INCONCLUSIVE", "no test was collected in either arm (collection errors only)"
    bad = {c: n for c, n in result.counts.items() if c in REGRESSING and n}
    flaky = [t.nodeid for t in result.tests if t.category == "flaky"]
    flaky_text = (
        f"; {len(flaky) or result.counts.get('flaky', 0)} flaky (inconsistent on reruns, not counted "
        f"as a regression): " + ", ".join(flaky[:3]) + (", ..." if len(flaky) > 3 else "")
        if (flaky or result.counts.get("flaky"))
        else ""
    )
    if bad:
        parts = [f"{n} {c}" for c, n in sorted(bad.items(), key=lambda kv: CATEGORIES.index(kv[0]))]
        return "REGRESSION", ", ".join(parts)
    unknown = [t.nodeid for t in result.tests if t.category == INCONCLUSIVE_CATEGORY]
    if unknown or result.counts.get(INCONCLUSIVE_CATEGORY):
        n = len(unknown) or result.counts.get(INCONCLUSIVE_CATEGORY, 0)
        return "INCONCLUSIVE", (
            f"{n} test{'s' if n != 1 else ''} ran in neither arm (the file was stopped "
            f"before {'them' if n != 1 else 'it'}: -x/--maxfail, a crash or --file-timeout): "
            + ", ".join(unknown[:3])
            + (", ..." if len(unknown) > 3 else "")
            + flaky_text
        )
    fails = sum(result.counts.get(c, 0) for c in ("pre-existing", "similar-failure", "different-failure"))
    reason = "no test regressed"
    if fails:
        reason += f" ({fails} failing in both arms)"
    reason += flaky_text
    return "SAFE", reason


def exit_code(v: str) -> int:
    return EXIT_CODES.get(v, 2)
