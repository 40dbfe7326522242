"""What the run shows about coverage beyond each test's category: every arm's totals and
runtime classification census, the tests B moved to a device this machine lacks
(`not-run-here`), the devices of a widened device set this machine lacks, and the files
whose labels do not reach their tests at run time (`unclassified-at-runtime`).

Pure functions over the result model (the test files' texts are passed in).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from codemod.ab.result.model import (
    INVALID_LABEL,
    UNCLASSIFIED,
    ArmResult,
    Category,
    Changes,
    Environment,
    RuntimeFinding,
    TestComparison,
    Totals,
    device_of,
    file_of,
)

# Devices of the default device list that are not named: HPU, PrivateUse1 backends...
OTHER_ACCELERATORS = "other-accelerators"
_NAMED = ("cpu", "cuda", "mps", "xpu")


def census_counts(arm: ArmResult) -> dict[str, int]:
    """Tests per runtime label: members by name, then `invalid`, then `unclassified`."""
    counts: Counter[str] = Counter()
    for o in arm.outcomes.values():
        value = o.hw_classification
        counts[UNCLASSIFIED if value is None else INVALID_LABEL if value.startswith("?") else value] += 1
    tail = (INVALID_LABEL, UNCLASSIFIED)
    members = sorted(k for k in counts if k not in tail)
    return {k: counts[k] for k in [*members, *tail] if counts.get(k)}


def count_arm(arm: ArmResult) -> None:
    """The arm's totals and census, from its outcomes."""
    arm.totals = Totals.of(arm)
    arm.classification_counts = census_counts(arm)


def machine_has(device: str, env: Environment) -> bool:
    """Whether this machine runs tests on `device` (what the environment probe found)."""
    if device == "cpu":
        return True
    if device == "cuda":
        return bool(env.cuda or env.rocm)
    if device == "mps":
        return bool(env.mps)
    if device == "xpu":
        return bool(env.xpu)
    others = {k.lower() for k in env.backends}
    accelerator = (env.accelerator or "").lower()
    if accelerator and accelerator not in _NAMED:
        others.add(accelerator)
    return bool(others) if device == OTHER_ACCELERATORS else device in others


def mark_not_run_here(rows: Iterable[TestComparison], env: Environment) -> None:
    """A test that ran in A and that --map moved to a B test on a device this machine lacks
    is not lost: B never generates it here (not-run-here, no evidence either way)."""
    for r in rows:
        if r.category != Category.COVERAGE_LOST or r.b is not None or not r.mapped_from:
            continue
        device = device_of(r.nodeid)
        if device is not None and not machine_has(device, env):
            r.category = Category.NOT_RUN_HERE
            r.note = f"moved from {r.mapped_from} to {device}, which this machine lacks: not generated here"


def not_exercised(changes: Changes | None, env: Environment) -> list[str]:
    """The devices of every widened device set (instantiate options changed between the
    arms) that this machine lacks: what the run cannot show."""
    found: list[str] = []
    for fc in changes.files if changes is not None else []:
        for inst in fc.instantiations:
            if inst.widened:
                found += [d for d in inst.devices_after if not machine_has(d, env) and d not in found]
    order = {d: i for i, d in enumerate((*_NAMED, OTHER_ACCELERATORS))}
    return sorted(found, key=lambda d: (order.get(d, len(order)), d))


_LABEL_LINE = re.compile(r"^\s+hw_classification\s*(?::[^=\n]*)?=", re.M)
_LABEL_VALUE = re.compile(r"^\s+hw_classification\s*(?::[^=\n]*)?=\s*(?:[\w.]*\.)?HardwareClassification\.(\w+)", re.M)


def label_values(source: str) -> list[str]:
    """The members a test file's labels write, in the order they first appear."""
    return list(dict.fromkeys(_LABEL_VALUE.findall(source)))


def labelled_classes(source: str) -> list[str]:
    """The classes whose own body assigns `hw_classification` (any value)."""
    if not _LABEL_LINE.search(source):
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
                if any(isinstance(t, ast.Name) and t.id == "hw_classification" for t in targets):
                    out.append(node.name)
                    break
    return sorted(set(out))


def _test_class(nodeid: str) -> str | None:
    parts = nodeid.split("::")
    return parts[-2] if len(parts) >= 3 else None


def read_sources(root: Path, files: list[str]) -> dict[str, str]:
    """The text of `files` below `root` (those that can be read), for `runtime_findings`."""
    out = {}
    for f in files:
        try:
            out[f] = (root / f).read_text(encoding="utf-8", errors="replace")
        except OSError:
            pass
    return out


def runtime_findings(b: ArmResult, sources: dict[str, str]) -> list[RuntimeFinding]:
    """For each file of B whose source labels classes: the classes whose tests run without
    a label (a label on a template the module deletes, classes built by a factory or
    copy_tests); PyTorch's --hw-classification filter drops those tests."""
    by_file: dict[str, list[tuple[str, str | None]]] = {}
    for nodeid, o in b.outcomes.items():
        cls = _test_class(nodeid)
        if cls is not None:
            by_file.setdefault(file_of(nodeid), []).append((cls, o.hw_classification))
    out = []
    for path in sorted(by_file):
        labelled = labelled_classes(sources.get(path, ""))
        unclassified = [cls for cls, value in by_file[path] if value is None]
        # name the labels that reach no test (the deleted template), not the ones that work
        reached = {cls for cls, value in by_file[path] if value is not None}
        unreached = [cls for cls in labelled if cls not in reached]
        if labelled and unclassified:
            out.append(
                RuntimeFinding(
                    file=path,
                    classes=sorted(set(unclassified)),
                    tests=len(unclassified),
                    labelled=unreached or labelled,
                )
            )
    return out
