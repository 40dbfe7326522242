"""Confirmation of discordant tests: which rows are rerun alone, what the reruns say, flaky.

Pure functions over the result model: the reruns themselves are run by `codemod.ab.run`.
"""

from __future__ import annotations

from collections.abc import Iterable

from codemod.ab.compare import CRASH, FAIL, OUTCOME_KIND, TIMEOUT, kind
from codemod.ab.model import TestComparison

# categories whose tests get confirmed by alternating reruns
DISCORDANT = frozenset(
    {
        "new-failure",
        "fixed",
        "crash",
        "timeout",
        "no-longer-run",
        "newly-run",
        "xfail-to-xpass",
        "xpass-to-xfail",
        "different-failure",
    }
)

_NO_EVIDENCE = ("not-run",)


def _kinds(seq: Iterable[str]) -> list[str]:
    return [OUTCOME_KIND.get(x, x) for x in seq if x not in _NO_EVIDENCE]


def rerun_state(row: TestComparison) -> str:
    """What the alone reruns of a discordant row say:

    ``none``          no reruns asked for
    ``unconfirmed``   an arm has no usable rerun (every rerun was not run)
    ``flaky``         the reruns of one arm disagree with each other, or each
                      arm alone gives the other arm's in-file result (alternates)
    ``confirmed``     each arm alone repeats its in-file result (or the arms
                      still differ alone)
    ``order-suspect`` alone the arms agree, in the file they differed: an
                      order-dependent difference, or a flaky one (a rerun of
                      the file tells them apart)
    """
    if row.a is None or row.b is None or (not row.a.reruns and not row.b.reruns):
        return "none"
    ra, rb = _kinds(row.a.reruns), _kinds(row.b.reruns)
    if not ra or not rb:
        return "unconfirmed"
    if len(set(ra)) > 1 or len(set(rb)) > 1:
        return "flaky"
    ka0, kb0 = kind(row.a), kind(row.b)
    xa, xb = ra[0], rb[0]
    if xa == ka0 and xb == kb0:
        return "confirmed"
    if xa == xb:
        return "order-suspect"
    if (xa, xb) == (kb0, ka0):
        return "flaky"
    return "confirmed"


def _add_note(row: TestComparison, text: str) -> None:
    row.note = f"{row.note}; {text}" if row.note else text


def settle_flaky(row: TestComparison) -> None:
    """Settle a discordant row after its confirmation reruns.

    Flaky = the reruns of the same arm disagree (or alternate with the
    in-file results).  Reruns that did not run are no evidence: they are
    ignored, and a row left without evidence keeps its category, noted as
    unconfirmed.  When each arm is self-consistent alone but the in-file
    results differ, the difference is order-dependent (it needs the rest of
    the file) and keeps its category, unless a rerun of the file does not
    reproduce it (then it is flaky).
    """
    if row.a is None or row.b is None:
        return
    dropped = sum(1 for x in row.a.reruns + row.b.reruns if x in _NO_EVIDENCE)
    state = rerun_state(row)
    seq_a = [row.a.outcome] + list(row.a.reruns)
    seq_b = [row.b.outcome] + list(row.b.reruns)
    if dropped:
        _add_note(row, f"{dropped} confirmation rerun(s) did not run (ignored)")
    if state == "unconfirmed":
        _add_note(row, "unconfirmed: the test could not be rerun alone")
        return
    if state == "order-suspect":
        sa, sb = _kinds(row.a.suite_reruns), _kinds(row.b.suite_reruns)
        if sa and sb and (set(sa) != {kind(row.a)} or set(sb) != {kind(row.b)}):
            state = "flaky"
            seq_a += [f"{x} (in file)" for x in row.a.suite_reruns]
            seq_b += [f"{x} (in file)" for x in row.b.suite_reruns]
        else:
            alone = next(x for x in reversed(row.a.reruns) if x not in _NO_EVIDENCE)
            failing_b = kind(row.b) in (FAIL, CRASH, TIMEOUT)
            head = (
                "order-dependent: fails only when run with the rest of the file in B"
                if failing_b
                else f"order-dependent: {row.a.outcome} in A and {row.b.outcome} in B only when run with "
                "the rest of the file"
            )
            _add_note(
                row,
                f"{head} (alone: {alone} in both arms" + ("; reproduced by a rerun of the file)" if sa and sb else ")"),
            )
            return
    if state == "flaky":
        row.note = f"was {row.category}; A: {', '.join(seq_a)}; B: {', '.join(seq_b)}" + (
            f"; {row.note}" if row.note else ""
        )
        row.category = "flaky"
