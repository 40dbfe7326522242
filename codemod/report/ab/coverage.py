"""What every A/B view leads with, after the verdict: the counts of arms A and B side by
side with their difference, the runtime classification census of each arm, what the
census found (files whose tests run unclassified), and B under PyTorch's label filter.

Facts (`totals_rows`) and sentences built through a formatter (`Fmt`), shared by the
terminal, Markdown, HTML and PR-body views.
"""

from __future__ import annotations

from codemod.ab.result.model import INVALID_LABEL, UNCLASSIFIED, ABResult, Totals
from codemod.report.ab.fmt import Fmt

TOTAL_FIELDS = ("collected", "run", "passed", "failed", "errors", "skipped", "xfailed", "xpassed", "deselected")
FILTER_OPTION = "--hw-classification"
ATTRIBUTE = "hw_classification"


def totals_rows(result: ABResult) -> list[tuple[str, int | None, int | None, str]]:
    """(field, A's count, B's count, the difference "+2" / "-1" / "0") per field; `not_run`
    and `incomplete` only when an arm has some."""
    a, b = result.arm("A"), result.arm("B")
    ta: Totals | None = a.totals if a is not None else None
    tb: Totals | None = b.totals if b is not None else None
    fields = list(TOTAL_FIELDS)
    fields += [name for name in ("not_run", "incomplete") if getattr(ta, name, 0) or getattr(tb, name, 0)]
    rows = []
    for name in fields:
        x = getattr(ta, name) if ta is not None else None
        y = getattr(tb, name) if tb is not None else None
        delta = "" if x is None or y is None else f"{y - x:+d}" if y != x else "0"
        rows.append((name, x, y, delta))
    return rows


def census_lines(result: ABResult, f: Fmt) -> list[str]:
    """One line per arm (B first): its tests by runtime label, `unclassified` always shown."""
    lines = []
    for name in ("B", "A"):
        arm = result.arm(name)
        if arm is None or not arm.classification_counts:
            continue  # an older result: no census
        counts = dict(arm.classification_counts)
        counts.setdefault(UNCLASSIFIED, 0)
        parts = []
        for key, n in counts.items():
            if key == UNCLASSIFIED:
                label = f.say("census.unclassified")
            elif key == INVALID_LABEL:
                label = f.say("census.invalid")
            else:
                label = f.code(key)
            parts.append(f.say("census.part", label=label, n=n))
        total = sum(arm.classification_counts.values())
        lines.append(f.say("census.arm", arm=f.text(name), n=total, parts=f.sep().join(parts)))
    return lines


def runtime_lines(result: ABResult, f: Fmt) -> list[str]:
    """A sentence per labelled file whose tests run unclassified."""
    return [
        f.say(
            "runtime.line",
            file=f.code(r.file),
            n=r.tests,
            classes=f.codes(r.classes),
            labelled=f.codes(r.labelled),
            option=f.code(FILTER_OPTION),
            attr=f.code(ATTRIBUTE),
        )
        for r in result.runtime
    ]


def filter_lines(result: ABResult, f: Fmt) -> list[str]:
    """The intro and one line per file B ran under the label filter ([] without a filtered run)."""
    if not result.label_filter:
        return []
    lines = [f.say("filter.intro", option=f.code(FILTER_OPTION))]
    for run in result.label_filter:
        values = f.code(" ".join([FILTER_OPTION, *run.values]))
        if run.error:
            lines.append(f.say("filter.error", file=f.code(run.file), values=values, error=f.code(run.error)))
            continue
        lines.append(
            f.say(
                "filter.line",
                file=f.code(run.file),
                values=values,
                selected=run.selected,
                total=run.total,
                passed=run.passed,
                unclassified=run.unclassified,
                mismatched=run.mismatched,
            )
        )
    return lines


def widened_classes(result: ABResult) -> list[str]:
    """The classes whose device set B widened (what `not_exercised` is about)."""
    changes = result.changes
    return [i.cls for fc in (changes.files if changes else []) for i in fc.instantiations if i.widened]
