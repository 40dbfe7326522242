"""Decisions: which `HardwareClassification` value a test class gets, and why.

The linter's rules live in `transforms.rules.linter` (a registry with examples),
the deliberate deviations from them in `transforms.rules.deviations`, the
restructuring advice in `transforms.rules.advice` (which of it fits a class is
`transforms.diagnosis`'s to say).  Here they are combined:
`infer(cls)` picks the value whose rules all pass and that no deviation refuses
(the rules make the values mutually exclusive, so at most one does) and
otherwise explains, per candidate value, what breaks and which restructuring
fits; `decide(cls, override, force)` adds existing labels and user overrides.
Findings for the engine come from `decision_findings` and `module_findings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace

from transforms.core.base import ERROR, INFO, WARNING, Finding
from transforms.core.facts import Instantiation, ModuleFacts, TestClassFacts
from transforms.core.members import DEVICE_MEMBERS, ENUM_NAME, HW_ATTRIBUTE, MEMBERS, normalise_member
from transforms.diagnosis.diagnose import ClassDiagnosis, diagnose_facts
from transforms.rules.advice import ADVICE
from transforms.rules.deviations import Refusal, deviation, refusals
from transforms.rules.linter import FORBIDDEN_ONLY_DECORATORS, Violation, check

__all__ = [
    "STATUSES",
    "Decision",
    "Evidence",
    "decide",
    "decision_findings",
    "evidence",
    "facts_advice",
    "infer",
    "keep_deviation_advice",
    "module_findings",
    "refine",
]

# Decision statuses, their finding severities.
STATUSES = {
    "label": INFO,
    "already": INFO,
    "already-disagrees": WARNING,
    "needs-manual": WARNING,
    "forced": WARNING,
    "invalid-label": ERROR,
    "refused": ERROR,
}

# How many test methods to list by name in evidence before summarising.
_EVIDENCE_LIMIT = 8


@dataclass(frozen=True)
class Evidence:
    """A fact behind a decision; `text` is ready to print ("line 12: test_add(self, device)")."""

    line: int | None
    text: str


@dataclass(frozen=True)
class Decision:
    cls_name: str
    line: int
    status: str  # one of STATUSES
    value: str | None  # the value written (label/forced) or found (already...)
    inferred: str | None  # what the rules alone say, None when nothing passes
    evidence: tuple[Evidence, ...] = ()
    violations: dict[str, tuple[Violation, ...]] = field(default_factory=dict)
    patterns: tuple[str, ...] = ()
    message: str = ""
    # Deliberate deviations that refused a value the linter would accept.
    refusals: tuple[Refusal, ...] = ()
    # Warnings about a label the rules allow but that may mislead (GENERIC tests needing a GPU).
    warnings: tuple[Evidence, ...] = ()

    @property
    def edits(self) -> bool:
        """True when the class gets a `hw_classification` line."""
        return self.status in ("label", "forced")


# --------------------------------------------------------------------------- evidence


def _call_text(inst: Instantiation) -> str:
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
            out.append(Evidence(inst.line, f"line {inst.line}: {_call_text(inst)}"))
    else:
        out.append(Evidence(None, "not instantiated anywhere the linter looks"))
    for inst in cls.hidden_instantiations:
        out.append(Evidence(inst.line, f"line {inst.line}: {_call_text(inst)} (under try/except* or match)"))
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
        out.append(Evidence(None, f"no test method takes device/devices ({_count(total, 'test method')})"))
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
    hardcoded = [m for m in cls.test_methods if m.hardcoded_devices and not m.takes_device]
    for m in hardcoded[:_EVIDENCE_LIMIT]:
        devices = ", ".join(m.hardcoded_devices)
        out.append(Evidence(m.line, f"line {m.line}: {m.name} hard-codes {devices}"))
    return tuple(out)


# --------------------------------------------------------------------------- inference


def _all_violations(cls: TestClassFacts) -> dict[str, tuple[Violation, ...]]:
    return {value: tuple(check(cls, value)) for value in MEMBERS}


def _needs_gpu_warnings(cls: TestClassFacts) -> tuple[Evidence, ...]:
    """Why a class the rules call GENERIC looks like it needs a GPU: hard-coded device
    strings / .cuda() calls and skip-unless-GPU guards."""
    out: list[Evidence] = []
    for guard in cls.gpu_guards:
        out.append(Evidence(cls.line, f"line {cls.line}: class {cls.name} is guarded by @{guard}"))
    for m in cls.test_methods:
        for guard in m.gpu_guards:
            out.append(Evidence(m.line, f"line {m.line}: {m.name} is guarded by @{guard}"))
        if m.hardcoded_devices:
            out.append(Evidence(m.line, f"line {m.line}: {m.name} hard-codes {', '.join(m.hardcoded_devices)}"))
    return tuple(out)


def _rules_summary(violations: tuple[Violation, ...]) -> str:
    names: list[str] = []
    for v in violations:
        if v.rule not in names:
            names.append(v.rule)
    return ", ".join(names)


def _named_devices(cls: TestClassFacts) -> set:
    """Device values named (in any case) by a literal only_for."""
    named: set[str] = set()
    for inst in cls.instantiations:
        if isinstance(inst.only_for, tuple):
            named.update(d.upper() for d in inst.only_for)
    return named


def _closest(cls: TestClassFacts, violations: Mapping[str, tuple[Violation, ...]]) -> list[str]:
    """Candidate values, most plausible first: the devices only_for names, then
    GENERIC/ACCELERATOR, then the other devices; within a rank by how few distinct
    rules they break."""
    named = _named_devices(cls)

    def key(value: str) -> tuple[int, int, int, int]:
        vs = violations[value]
        rank = 0 if value in named else (2 if value in DEVICE_MEMBERS else 1)
        return (rank, len({v.rule for v in vs}), len(vs), MEMBERS.index(value))

    return sorted(violations, key=key)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def infer(cls: TestClassFacts) -> Decision:
    """The value whose rules all pass and that no deviation refuses, ignoring any existing
    label and override."""
    ev = evidence(cls)
    violations = _all_violations(cls)
    found = tuple(refusals(cls))
    refused = {v for r in found for v in r.values}
    accepted = [v for v in MEMBERS if not violations[v]]  # by the linter (at most one)
    passing = [v for v in accepted if v not in refused]

    if len(passing) == 1:
        value = passing[0]
        message = f"{cls.name}: {value} (all {value} rules pass)"
        warnings = _needs_gpu_warnings(cls) if value == "GENERIC" else ()
        patterns: tuple[str, ...] = ("inject-device",) if warnings else ()
        if warnings:
            # The rules pass, but a GENERIC label on tests that need a GPU misleads.
            message += (
                f"; warning: the tests look like they need a GPU ({warnings[0].text}), "
                "consider inject-device (ACCELERATOR)"
            )
        return Decision(cls.name, cls.line, "label", value, value, ev, {}, patterns, message, warnings=warnings)

    if accepted:  # the linter would accept it, but a deliberate deviation refuses it
        value = accepted[0]
        hits = tuple(r for r in found if value in r.values)
        patterns = tuple(dict.fromkeys(deviation(r.deviation).pattern for r in hits))
        patterns += tuple(p for p in facts_advice(cls) if p not in patterns)
        why = "; ".join(f"{r.message}: {deviation(r.deviation).why}" for r in hits)
        message = f"{cls.name}: the linter would accept {value}, but the label would be false ({why}); not labelled"
        return Decision(
            cls.name,
            cls.line,
            "needs-manual",
            None,
            None,
            ev,
            violations,
            patterns,
            message + f"; fitting pattern: {', '.join(patterns)}",
            hits,
        )

    patterns = tuple(dict.fromkeys(deviation(r.deviation).pattern for r in found))
    patterns += tuple(p for p in facts_advice(cls) if p not in patterns)
    inst = cls.instantiation
    if inst is not None and inst.only_for == "unknown":
        message = (
            f"{cls.name}: only_for is not a literal (line {inst.line}: {_call_text(inst)}); "
            "cannot tell which devices the tests run on"
        )
    else:
        order = _closest(cls, violations)
        parts = [f"{v} breaks {_rules_summary(violations[v])}" for v in order[:2]]
        message = f"{cls.name}: no classification satisfies the rules ({'; '.join(parts)})"
    if patterns:
        message += f"; fitting pattern: {', '.join(patterns)}"
    return Decision(cls.name, cls.line, "needs-manual", None, None, ev, violations, patterns, message, found)


def decide(cls: TestClassFacts, override: str | None = None, force: bool = False) -> Decision:
    """What to do with `cls`: inference, existing label and override (`--classification`,
    `--set Cls=X`) combined. Raises ValueError for an unknown override name."""
    wanted = normalise_member(override) if override is not None else None
    inferred = infer(cls)
    ev = inferred.evidence

    label = cls.label
    if label is not None and not label.valid:
        return Decision(
            cls.name,
            cls.line,
            "invalid-label",
            None,
            inferred.inferred,
            ev,
            {},
            (),
            f"{cls.name}: existing label at line {label.line} is invalid: {label.problem}; "
            f"fix it by hand (left untouched)",
        )

    if label is not None:
        current = label.member or ""
        own = tuple(check(cls, current))
        violations = {current: own} if own else {}
        broken = f"; the label breaks {_rules_summary(own)}" if own else ""
        false = [r for r in inferred.refusals if current in r.values]
        if false and not own:
            return Decision(
                cls.name,
                cls.line,
                "already-disagrees",
                current,
                inferred.inferred,
                ev,
                {},
                inferred.patterns,
                f"{cls.name}: already labelled {current} at line {label.line}; the linter accepts it, "
                f"but {false[0].message}: {deviation(false[0].deviation).why} (left untouched)",
                tuple(false),
            )
        if label.shadowed_by and not own:
            lines = ", ".join(map(str, label.shadowed_by))
            return Decision(
                cls.name,
                cls.line,
                "already-disagrees",
                current,
                inferred.inferred,
                ev,
                {},
                (),
                f"{cls.name}: {HW_ATTRIBUTE} is assigned again at line {lines}: the linter reads the "
                f"first ({current}, line {label.line}), Python keeps the last (left untouched)",
            )
        if wanted is not None and wanted != current:
            return Decision(
                cls.name,
                cls.line,
                "already-disagrees",
                current,
                inferred.inferred,
                ev,
                violations,
                (),
                f"{cls.name}: already labelled {current} at line {label.line}; "
                f"requested {wanted} not applied (left untouched){broken}",
            )
        if wanted is None and inferred.inferred is not None and inferred.inferred != current:
            return Decision(
                cls.name,
                cls.line,
                "already-disagrees",
                current,
                inferred.inferred,
                ev,
                violations,
                (),
                f"{cls.name}: already labelled {current} at line {label.line}, but the rules "
                f"point to {inferred.inferred} (left untouched){broken}",
            )
        return Decision(
            cls.name,
            cls.line,
            "already",
            current,
            inferred.inferred,
            ev,
            violations,
            (),
            f"{cls.name}: already labelled {current} at line {label.line}{broken}",
        )

    if wanted is None:
        return inferred

    own = tuple(check(cls, wanted))
    false_refusals = tuple(r for r in inferred.refusals if wanted in r.values)
    if not own and not false_refusals:
        warnings = _needs_gpu_warnings(cls) if wanted == "GENERIC" else ()
        return Decision(
            cls.name,
            cls.line,
            "label",
            wanted,
            inferred.inferred,
            ev,
            {},
            inferred.patterns,
            f"{cls.name}: {wanted} (requested; all {wanted} rules pass)",
            warnings=warnings,
        )
    patterns = inferred.patterns or facts_advice(cls)
    if not own:  # the linter accepts it; a deliberate deviation says it is false
        why = f"{false_refusals[0].message}: {deviation(false_refusals[0].deviation).why}"
        if force:
            return Decision(
                cls.name,
                cls.line,
                "forced",
                wanted,
                inferred.inferred,
                ev,
                {},
                patterns,
                f"{cls.name}: {wanted} forced although it is false ({why}); the linter accepts it",
                false_refusals,
            )
        return Decision(
            cls.name,
            cls.line,
            "refused",
            None,
            inferred.inferred,
            ev,
            {},
            patterns,
            f"{cls.name}: requested {wanted} would pass the linter but is false ({why}); "
            "not applied (use --force to write it anyway)",
            false_refusals,
        )
    rules = _rules_summary(own)
    if force:
        return Decision(
            cls.name,
            cls.line,
            "forced",
            wanted,
            inferred.inferred,
            ev,
            {wanted: own},
            patterns,
            f"{cls.name}: {wanted} forced although it breaks {rules} (the linter will reject it)",
        )
    return Decision(
        cls.name,
        cls.line,
        "refused",
        None,
        inferred.inferred,
        ev,
        {wanted: own},
        patterns,
        f"{cls.name}: requested {wanted} breaks {rules}; not applied (use --force to write it anyway)",
    )


def facts_advice(cls: TestClassFacts) -> tuple[str, ...]:
    """The restructuring advice that fits `cls`, from its facts alone (the label transform refines it
    with the method bodies, see refine)."""
    return diagnose_facts(cls).advice


def refine(decision: Decision, diag: ClassDiagnosis) -> Decision:
    """`decision` with its advice replaced by the precise diagnosis (method bodies read): the
    transforms that fit, the widening they cause and what stays manual."""
    message = decision.message.split("; fitting pattern:")[0]
    if diag.advice:
        message += f"; fitting transform: {', '.join(diag.advice)} (decouple apply --restructure auto)"
    if diag.widening:
        message += f"; note: {'; '.join(diag.widening)}"
    if diag.manual:
        message += f"; manual: {'; '.join(diag.manual)}"
    return replace(decision, patterns=diag.advice, message=message)


def keep_deviation_advice(decision: Decision) -> Decision:
    """After refine replaced the advice: the deviations' own patterns come first."""
    own = tuple(deviation(r.deviation).pattern for r in decision.refusals)
    patterns = tuple(dict.fromkeys(own + decision.patterns))
    return replace(decision, patterns=patterns) if patterns != decision.patterns else decision


# --------------------------------------------------------------------------- findings


def _violation_dicts(violations: Mapping[str, tuple[Violation, ...]]) -> dict[str, list[dict]]:
    return {value: [asdict(v) for v in vs] for value, vs in violations.items()}


def _fix_text(decision: Decision) -> str | None:
    if decision.status in ("label", "forced") and decision.value:
        return f"{HW_ATTRIBUTE} = {ENUM_NAME}.{decision.value}"
    if decision.patterns:
        return "; ".join(f"{p}: {ADVICE[p]}" for p in decision.patterns)
    return None


def decision_findings(decision: Decision) -> list[Finding]:
    """One finding per decision, rule `hw/<status>`; `data` carries the details."""
    data = {
        "status": decision.status,
        "value": decision.value,
        "inferred": decision.inferred,
        "evidence": [asdict(e) for e in decision.evidence],
        "violations": _violation_dicts(decision.violations),
        "patterns": list(decision.patterns),
        "deviations": [asdict(r) for r in decision.refusals],
    }
    out = [
        Finding(
            rule=f"hw/{decision.status}",
            message=decision.message,
            line=decision.line,
            # An existing label the linter will reject is worth a warning, not a shrug.
            severity=WARNING if decision.status == "already" and decision.violations else STATUSES[decision.status],
            cls=decision.cls_name,
            fix=_fix_text(decision),
            data=data,
        )
    ]
    if decision.warnings and decision.edits:
        out.append(
            Finding(
                rule="hw/generic-needs-gpu",
                message=(
                    f"{decision.cls_name}: labelled GENERIC as the rules demand, but its tests look "
                    f"like they need a GPU ({'; '.join(e.text for e in decision.warnings)}); consider "
                    "inject-device and ACCELERATOR"
                ),
                line=decision.line,
                severity=WARNING,
                cls=decision.cls_name,
                data={"evidence": [asdict(e) for e in decision.warnings]},
            )
        )
    return out


def module_findings(facts: ModuleFacts) -> list[Finding]:
    """Module-level findings: duplicate test classes and duplicate instantiations."""
    out: list[Finding] = []
    for name, lines in facts.duplicate_classes:
        shown = ", ".join(map(str, lines))
        out.append(
            Finding(
                rule="hw/duplicate_class",
                message=(
                    f"test class {name} is defined {len(lines)} times (lines {shown}); "
                    "only the last definition is linted"
                ),
                line=lines[1],
                severity=ERROR,
                cls=name,
                data={"lines": list(lines)},
            )
        )
    for name, lines in facts.duplicate_instantiations:
        shown = ", ".join(map(str, lines))
        out.append(
            Finding(
                rule="hw/duplicate_instantiation",
                message=(
                    f"{name} is passed to instantiate_device_type_tests {len(lines)} times "
                    f"(lines {shown}); only the last call is linted"
                ),
                line=lines[1],
                severity=ERROR,
                cls=name,
                data={"lines": list(lines)},
            )
        )
    out.sort(key=lambda f: f.line)
    return out
