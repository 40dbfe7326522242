"""What the run shows about coverage beyond each test's category: every arm's totals and
runtime classification census, the tests B moved to a device this machine lacks
(`not-run-here`), the devices of a widened device set this machine lacks, the narrowed
device sets a `--map` entry explains, and the files whose labels do not reach their tests
at run time (`unclassified-at-runtime`).

Pure functions over the result model (the test files' texts are passed in).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from codemod.ab.comparison.compare import map_nodeid
from codemod.ab.result.diff import Changes, DeviceNarrowing, FileChange, NarrowedBy
from codemod.ab.result.model import (
    DEVICE_SUFFIXES,
    INVALID_LABEL,
    UNCLASSIFIED,
    ArmResult,
    Category,
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


def explain_narrowed(changes: Changes | None, mapping: dict[str, str], a: ArmResult | None) -> None:
    """A narrowed device set is lost coverage unless `--map` says where its tests went: for
    every device it drops, the tests of that device (named after arm A's tests of the class on
    this machine, `TestFooCPU::test_x_cpu` -> `TestFooCUDA::test_x_cuda`) map to a class B
    instantiates for that device.  A class `--map` renames is compared with the class it
    becomes: what that one is not instantiated for is narrowed too."""
    a_tests = list(a.outcomes) if a is not None else []
    for fc in changes.files if changes is not None and mapping else []:
        b_devices = {ic.cls: ic.devices_after for ic in fc.instantiations if ic.after}
        fc.narrowed += _renamed(fc, mapping, b_devices)
        for n in fc.narrowed:
            n.mapped = _mapped(fc.path, n, mapping, a_tests, b_devices) or ""


def _renamed(fc: FileChange, mapping: dict[str, str], b_devices: dict[str, list[str]]) -> list[DeviceNarrowing]:
    """The classes B no longer instantiates under their name that --map renames to a class
    instantiated for fewer devices."""
    out = []
    told = {n.cls for n in fc.narrowed}
    for ic in fc.instantiations:
        if not ic.before or ic.after or not ic.devices_before or ic.cls in told:
            continue
        lost, into = [], ""
        for device in ic.devices_before:
            new = map_nodeid(f"{fc.path}::{ic.cls}{device.upper()}::test_{device}", mapping)
            target = _class_of(new, device)
            if target is not None and device not in b_devices.get(target, [device]):
                lost.append(device)
                into = target
        if lost:
            after = f"{into}: {next((x.after for x in fc.instantiations if x.cls == into), '')}"
            out.append(
                DeviceNarrowing(cls=ic.cls, by=NarrowedBy.INSTANTIATION, devices=lost, before=ic.before, after=after)
            )
    return out


def _class_of(nodeid: str | None, device: str) -> str | None:
    """The generic class of a device test's node id (`TestFooCUDA` -> `TestFoo`)."""
    parts = (nodeid or "").split("::")
    if len(parts) < 3 or not parts[-2].endswith(device.upper()):
        return None
    return parts[-2][: -len(device)]


def _mapped(
    file: str, n: DeviceNarrowing, mapping: dict[str, str], a_tests: list[str], b_devices: dict[str, list[str]]
) -> str | None:
    """Where --map sends the narrowed tests ("OLD -> NEW" of the first), or None when it does
    not send every device's tests to a class B instantiates for that device."""
    said = []
    for device in n.devices:
        suffix = device.upper()
        if suffix not in DEVICE_SUFFIXES:
            return None  # other-accelerators: no node id names them
        named = (_device_name(t, n, device) for t in a_tests if file_of(t) == file)
        names = [x for x in named if x] or [f"{file}::{n.cls}{suffix}::{n.test or 'test'}_{device}"]
        for old in names:
            new = map_nodeid(old, mapping)
            target = _class_of(new, device)
            if new is None or target == n.cls or (target is not None and device not in b_devices.get(target, [device])):
                return None
            said.append(f"{old} -> {new}")
    return said[0] if said else None


def _device_name(nodeid: str, n: DeviceNarrowing, device: str) -> str | None:
    """Arm A's test of the narrowed class on this machine, renamed for `device`."""
    parts = nodeid.split("::")
    here = device_of(nodeid)
    if len(parts) < 3 or here is None or parts[-2] != n.cls + here.upper():
        return None
    name, bracket, rest = parts[-1].partition("[")
    base = name[: -len(here) - 1]
    if n.test and base != n.test and not base.startswith(n.test + "_"):
        return None
    return "::".join([*parts[:-2], n.cls + device.upper(), f"{base}_{device}{bracket}{rest}"])


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
