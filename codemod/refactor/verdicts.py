"""A branch's verdict: never better than any of its files' own, and the labelled classes that
never ran.

The A/B runner judges a run as a whole: a file whose import fails in both arms adds no test,
and the other files' tests make the run SAFE. A branch is reviewed file by file, so each of its
files is judged alone, by the runner's own verdict over that file's part of the result, and the
branch takes the worst. The run's census counts the tests that ran; `not_exercised` names the
classes the branch labels whose tests never ran here, and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from codemod.ab.comparison.compare import count, verdict
from codemod.ab.result.model import (
    DEVICE_SUFFIXES,
    ABResult,
    ArmResult,
    Category,
    Outcome,
    OutcomeValue,
    Verdict,
    file_of,
)
from codemod.refactor.plan import FilePlan
from codemod.report.ab.facts import headline

# Worst last: a branch takes the worst verdict of its run and of its files.
RANK = {Verdict.SAFE: 0, Verdict.INCONCLUSIVE: 1, Verdict.REGRESSION: 2}
# The outcomes of a test that ran (a skip, a deselection or a test never started did not).
RAN = frozenset(
    {
        OutcomeValue.PASSED,
        OutcomeValue.FAILED,
        OutcomeValue.ERROR,
        OutcomeValue.XFAILED,
        OutcomeValue.XPASSED,
        OutcomeValue.CRASHED,
        OutcomeValue.TIMEOUT,
    }
)
FAILING_BOTH = (Category.PRE_EXISTING, Category.SIMILAR_FAILURE, Category.DIFFERENT_FAILURE)


@dataclass(frozen=True, kw_only=True)
class FileVerdict:
    """A file whose own verdict is worse than its run's."""

    path: str
    verdict: Verdict
    reason: str


@dataclass(frozen=True, kw_only=True)
class NotExercised:
    """Labelled classes of a file whose tests ran in neither arm ("" in `classes`: the whole file)."""

    path: str
    classes: tuple[str, ...]
    why: str

    def line(self) -> str:
        where = ", ".join(f"{c} in {self.path}" for c in self.classes) if self.classes else self.path
        return f"{where}, {self.why}"


@dataclass(frozen=True, kw_only=True)
class BranchVerdict:
    verdict: Verdict
    weaker: tuple[FileVerdict, ...]  # the files that make the branch worse than its run
    not_exercised: tuple[NotExercised, ...]
    failing_both: int  # tests that fail in both arms
    unchanged: bool  # ... all of them with the identical failure

    def summary(self) -> str:
        """The verdict as the console and batch.md say it: `SAFE; 2 failing in both arms, unchanged`,
        `INCONCLUSIVE: test/x.py never ran (...)`."""
        text = str(self.verdict)
        if self.weaker:
            text += ": " + "; ".join(f"{w.path}: {w.reason}" for w in self.weaker)
        if self.failing_both:
            text += f"; {self.failing_both} failing in both arms" + (", unchanged" if self.unchanged else "")
        if self.not_exercised and not self.weaker:  # the weaker files say it already
            text += "; not exercised: " + "; ".join(n.line() for n in self.not_exercised)
        return text


def judge(result: ABResult, files: Sequence[FilePlan]) -> BranchVerdict:
    """The branch's verdict over `result` (the A/B run of its files) and its files' plans."""
    ran = {file_of(p) for p in result.paths}
    unexercised: list[NotExercised] = []
    weaker: list[FileVerdict] = []
    for p in (p for p in files if p.path in ran):
        entries = _not_exercised(result, p)
        unexercised += entries
        own, reason = verdict(_part(result, p.path))
        if not _any_ran(result, p.path):  # said the way a reviewer asks it: did its tests run?
            own = max(own, Verdict.INCONCLUSIVE, key=RANK.__getitem__)
            reason = "never ran: " + entries[0].why
        if RANK[own] > RANK[result.verdict]:
            weaker.append(FileVerdict(path=p.path, verdict=own, reason=reason))
    worst = max([result.verdict, *(w.verdict for w in weaker)], key=RANK.__getitem__)
    counts = result.counts
    failing = sum(counts.get(c, 0) for c in FAILING_BOTH)
    return BranchVerdict(
        verdict=worst,
        weaker=tuple(w for w in weaker if w.verdict == worst),
        not_exercised=tuple(unexercised),
        failing_both=failing,
        unchanged=failing == counts.get(Category.PRE_EXISTING, 0),
    )


def _part(result: ABResult, path: str) -> ABResult:
    """`result` restricted to the file `path`, as a run of that file alone would record it."""

    def arm(a: ArmResult) -> ArmResult:
        return replace(
            a,
            outcomes={k: o for k, o in a.outcomes.items() if file_of(k) == path},
            collection_errors={k: o for k, o in a.collection_errors.items() if file_of(k) == path},
            collection_skips={k: o for k, o in a.collection_skips.items() if file_of(k) == path},
            crashes=[n for n in a.crashes if file_of(n) == path],
        )

    tests = [t for t in result.tests if file_of(t.nodeid) == path]
    return replace(
        result,
        paths=[path],
        arms=[arm(a) for a in result.arms],
        tests=tests,
        counts=count(tests),
        runtime=[r for r in result.runtime if r.file == path],
    )


def _classes(p: FilePlan) -> list[str]:
    """The classes the commit labels in `p` (moved tests' new classes among them)."""
    return list(dict.fromkeys([c.cls for c in p.labels] + [m.new_class for m in p.moves]))


def _of_class(nodeid: str, cls: str) -> bool:
    """The test `nodeid` belongs to `cls` or to one of the device classes instantiated from it."""
    parts = nodeid.split("::")
    if len(parts) < 3:
        return False
    name = parts[-2]
    return name == cls or (name.startswith(cls) and name[len(cls) :] in DEVICE_SUFFIXES)


def _outcomes(result: ABResult, path: str) -> dict[str, dict[str, Outcome]]:
    """Arm name ("A", "B") -> the file's outcomes there."""
    out: dict[str, dict[str, Outcome]] = {}
    for name in ("A", "B"):
        arm = result.arm(name)
        out[name] = {k: o for k, o in (arm.outcomes if arm else {}).items() if file_of(k) == path}
    return out


def _any_ran(result: ABResult, path: str) -> bool:
    return any(o.outcome in RAN for arm in _outcomes(result, path).values() for o in arm.values())


def _collection_error(result: ABResult, path: str, arm: str) -> Outcome | None:
    found = result.arm(arm)
    errors = found.collection_errors if found is not None else {}
    return next((o for k, o in errors.items() if file_of(k) == path), None)


def _skipped_why(outcomes: list[Outcome]) -> str:
    n = len(outcomes)
    first = next((o.message for o in outcomes if o.message), "")
    reason = f" ({' '.join(first.split())[:120]})" if first else ""
    return f"{'its test' if n == 1 else f'all {n} tests'} skipped in both arms{reason}"


def _not_exercised(result: ABResult, p: FilePlan) -> list[NotExercised]:
    """The classes `p` labels whose tests ran in neither arm (the whole file when none of its
    tests ran), each with why."""
    arms = _outcomes(result, p.path)
    classes = tuple(_classes(p))
    if not _any_ran(result, p.path):
        errors = {name: _collection_error(result, p.path, name) for name in ("A", "B")}
        b_error, a_error = errors["B"], errors["A"]
        if a_error is not None and b_error is not None:
            why = "import failed in both arms: " + headline(b_error)
        elif a_error is not None or b_error is not None:
            failed = "A" if a_error is not None else "B"
            why = f"collection failed in {failed}: " + headline(a_error or b_error)  # type: ignore[arg-type]
        elif arms["A"] or arms["B"]:
            why = _skipped_why(list(arms["B"].values()) or list(arms["A"].values()))
        else:
            why = "no test collected in either arm"
        return [NotExercised(path=p.path, classes=classes, why=why)]
    by_why: dict[str, list[str]] = {}
    for cls in classes:
        tests = {a: [o for k, o in arms[a].items() if _of_class(k, cls)] for a in ("A", "B")}
        if any(o.outcome in RAN for a in ("A", "B") for o in tests[a]):
            continue
        seen = tests["B"] or tests["A"]
        why = _skipped_why(seen) if seen else "no test of it collected in either arm"
        by_why.setdefault(why, []).append(cls)
    return [NotExercised(path=p.path, classes=tuple(cs), why=why) for why, cs in by_why.items()]
