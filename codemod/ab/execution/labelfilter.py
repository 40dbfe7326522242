"""B under PyTorch's own label filter: where the tree's conftest.py offers
`--hw-classification`, B's labelled files run once more with the values their sources
write (`pytest FILE... --hw-classification GENERIC ACCELERATOR`), and the report says,
per file, how many tests the filter selects of how many, as reviewers quote it (total,
passed, unclassified, mismatched).

The filtered run is an arm of its own (`B.filter`: a copy of B's root, B's environment,
the option as its extra arguments), so a test the filter drops is visible as deselected,
with its runtime label (the census), and repro.sh reruns it like any arm.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from codemod.ab.arms import materialise, trees
from codemod.ab.arms.sources import TEMP_VARS, ArmSpec
from codemod.ab.comparison.coverage import label_values
from codemod.ab.result.model import ArmResult, FilterRun, OutcomeValue, file_of

ARM = "B.filter"  # a name no --diag arm can take (they are alphanumeric)
OPTION = "--hw-classification"


def plan(b: ArmSpec, b_files: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """(B's files that write labels, the values they write); nothing when the tree offers
    no such option."""
    if not trees.has_conftest_option(b.root, OPTION):
        return [], []
    files, values = [], []
    for path in b_files:
        try:
            written = label_values((b.root / path).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if written:
            files.append(path)
            values += [v for v in written if v not in values]
    return files, values


def arm_spec(b: ArmSpec, work: Path, values: list[str]) -> ArmSpec:
    """The filtered arm: B's code in a root of its own, B's environment (its own temp dir),
    the filter after the files (the option takes several values)."""
    wd = work / "arms" / ARM
    for sub in ("events", "logs", "tmp"):
        (wd / sub).mkdir(parents=True)
    materialise.clone_root(b.root, wd / "root")
    env = {**b.env, **{k: str(wd / "tmp") for k in TEMP_VARS if k in b.env}}
    return dataclasses.replace(
        b,
        name=ARM,
        label=f"arm B under {OPTION} {' '.join(values)}",
        root=wd / "root",
        workdir=wd,
        env=env,
        extra_args=[OPTION, *values],
        based_on="B",
    )


def summarise(b: ArmResult, filtered: ArmResult, files: list[str], values: list[str]) -> list[FilterRun]:
    """Per file: how many of B's tests the filter selects, and why it drops the others
    (tests B itself deselects are not counted)."""
    out = []
    b_dropped = {n for n, o in b.outcomes.items() if o.outcome == OutcomeValue.DESELECTED}
    for path in sorted(files):
        run = FilterRun(file=path, values=list(values))
        run.total = sum(1 for n in b.outcomes if file_of(n) == path and n not in b_dropped)
        for o in (o for n, o in filtered.outcomes.items() if file_of(n) == path and n not in b_dropped):
            if o.outcome != OutcomeValue.DESELECTED:
                run.selected += 1
                run.passed += o.outcome == OutcomeValue.PASSED
            elif o.hw_classification is None:
                run.unclassified += 1
            else:
                run.mismatched += 1
        error = filtered.collection_errors.get(path)
        if error is not None:
            run.error = error.message or str(error.exc_type or error.outcome)
        elif not filtered.ran:
            run.error = filtered.error or "the filtered run did not run"
        out.append(run)
    return out
