"""The evidence behind a decision: the facts the rules look at, as printable lines.

`evidence(cls)` lists what decides a class's value (its label, its instantiations, which
tests take `device`, the device-specific guards, what the tests need a device for);
`needs_gpu_warnings(cls)` lists why a class labelled GENERIC looks like it needs a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from transforms.core.facts import DeviceNeed, Instantiation, TestClassFacts
from transforms.core.words import plural
from transforms.rules.checks import FORBIDDEN_ONLY_DECORATORS

__all__ = ["Evidence", "call_text", "evidence", "needs_evidence", "needs_gpu_warnings"]

# How many test methods to list by name in evidence before summarising.
_EVIDENCE_LIMIT = 8


@dataclass(frozen=True)
class Evidence:
    """A fact behind a decision; `text` is ready to print ("line 12: test_add(self, device)")."""

    line: int | None
    text: str


def call_text(inst: Instantiation) -> str:
    return inst.text or f"instantiate_device_type_tests({inst.target}, ...)"


def evidence(cls: TestClassFacts) -> tuple[Evidence, ...]:
    """The facts the rules look at, as printable lines."""
    out: list[Evidence] = []
    if cls.label is not None:
        lab = cls.label
        note = "" if lab.valid else f" (invalid: {lab.problem})"
        out.append(Evidence(lab.line, f"line {lab.line}: {lab.render()}{note}"))
    if cls.instantiations:
        for inst in cls.instantiations:
            out.append(Evidence(inst.line, f"line {inst.line}: {call_text(inst)}"))
    else:
        out.append(Evidence(None, "not instantiated anywhere the linter looks"))
    for inst in cls.hidden_instantiations:
        out.append(Evidence(inst.line, f"line {inst.line}: {call_text(inst)} (under try/except* or match)"))
    for line in cls.parametrized:
        out.append(
            Evidence(
                line,
                f"line {line}: instantiate_parametrized_tests({cls.name}) (not a device instantiation)",
            )
        )

    with_device = [m for m in cls.test_methods if m.takes_device]
    without = [m for m in cls.test_methods if not m.takes_device]
    total = len(cls.test_methods)
    if not with_device:
        out.append(Evidence(None, f"no test method takes device/devices ({plural(total, 'test method')})"))
    elif not without:
        first = with_device[0]
        out.append(
            Evidence(
                first.line,
                (
                    f"all {total} test methods take device/devices (e.g. line {first.line}: {first.signature()})"
                    if total > 1
                    else f"the only test method takes device/devices (line {first.line}: {first.signature()})"
                ),
            )
        )
    else:
        for group in (with_device, without):
            for m in group[:_EVIDENCE_LIMIT]:
                out.append(Evidence(m.line, f"line {m.line}: {m.signature()}"))
            if len(group) > _EVIDENCE_LIMIT:
                kind = "with" if group is with_device else "without"
                out.append(Evidence(None, f"... and {len(group) - _EVIDENCE_LIMIT} more {kind} device"))
    for d in cls.decorators:
        if d.rsplit(".", 1)[-1] in FORBIDDEN_ONLY_DECORATORS:
            out.append(Evidence(cls.line, f"line {cls.line}: @{d} on class {cls.name}"))
    for m in cls.test_methods:
        for d in m.decorators:
            if d.rsplit(".", 1)[-1] in FORBIDDEN_ONLY_DECORATORS:
                out.append(Evidence(m.line, f"line {m.line}: @{d} on {m.name}"))
    return tuple(out) + needs_evidence(cls)


def _need_text(who: str, need: DeviceNeed) -> Evidence:
    return Evidence(need.line, f"line {need.line}: {who} needs {need.device} ({need.what})")


def needs_evidence(cls: TestClassFacts) -> tuple[Evidence, ...]:
    """What the class and its tests (those without `device`) need a device for, one line per
    test (its first need), the class's own needs first."""
    out = [_need_text(f"class {cls.name}", n) for n in cls.needs[:_EVIDENCE_LIMIT]]
    needing = [m for m in cls.test_methods if m.needs and not m.takes_device]
    out += [_need_text(m.name, m.needs[0]) for m in needing[:_EVIDENCE_LIMIT]]
    if len(needing) > _EVIDENCE_LIMIT:
        out.append(Evidence(None, f"... and {len(needing) - _EVIDENCE_LIMIT} more tests that need a device"))
    return tuple(out)


def needs_gpu_warnings(cls: TestClassFacts) -> tuple[Evidence, ...]:
    """Why a class labelled GENERIC looks like it needs a GPU: every need of the class and of
    each of its tests (guards, data placed on a device, device APIs called)."""
    out = [_need_text(f"class {cls.name}", n) for n in cls.needs]
    out += [_need_text(m.name, n) for m in cls.test_methods for n in m.needs]
    return tuple(out)
