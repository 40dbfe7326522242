"""Decisions: which `HardwareClassification` value a test class gets, and why.

The linter's rules live in `transforms.rules` (a generation per linter, each a registry with
examples), the deliberate deviations from them in `transforms.rules.deviations`, the
restructuring advice in `transforms.rules.advice` (which of it fits a class is
`transforms.diagnosis`'s to say), the value a class's mechanics make true in `truth.py`.
Here they are combined: `infer(cls, gen)` picks the true value when `gen`'s rules accept it
and no deviation refuses it (under the older generation, whose rules make the values
mutually exclusive, that is the one value that passes) and otherwise explains, per
candidate value, what breaks and which restructuring fits; `decide(cls, gen, override,
force)` adds existing labels and user overrides.
Findings for the engine come from `decision_findings` and `module_findings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from transforms.core.base import Finding, Severity
from transforms.core.device_needs import test_needs
from transforms.core.facts import UNKNOWN, ExistingLabel, ModuleFacts, TestClassFacts
from transforms.core.members import DEVICE_MEMBERS, ENUM_NAME, HW_ATTRIBUTE, MEMBERS, Member, normalise_member
from transforms.core.strenum import StrEnum
from transforms.diagnosis.diagnose import ClassDiagnosis, diagnose_facts, split_device
from transforms.label.evidence import Evidence, call_text, evidence, needs_gpu_warnings
from transforms.label.truth import Truth, true_value
from transforms.rules.advice import ADVICE, BY_HAND, Pattern
from transforms.rules.deviations import Refusal, deviation, refusals
from transforms.rules.registry import Generation, Violation

__all__ = [
    "STATUS_SEVERITY",
    "Decision",
    "Status",
    "broken_text",
    "decide",
    "decision_findings",
    "facts_advice",
    "infer",
    "keep_deviation_advice",
    "module_findings",
    "needs_advice",
    "refine",
]


class Status(StrEnum):
    """What a decision does with a class (a finding's rule is `hw/<status>`)."""

    LABEL = "label"  # gets the inferred (or requested) value
    ALREADY = "already"  # labelled already; left alone
    ALREADY_DISAGREES = "already-disagrees"  # labelled already, with a value the tool would not write
    NEEDS_MANUAL = "needs-manual"  # no value fits
    FORCED = "forced"  # gets a requested value that breaks a rule or is false (--force)
    INVALID_LABEL = "invalid-label"  # carries a label the linter does not read as one
    REFUSED = "refused"  # a requested value that breaks a rule or is false: not written


STATUS_SEVERITY: Mapping[Status, Severity] = {
    Status.LABEL: Severity.INFO,
    Status.ALREADY: Severity.INFO,
    Status.ALREADY_DISAGREES: Severity.WARNING,
    Status.NEEDS_MANUAL: Severity.WARNING,
    Status.FORCED: Severity.WARNING,
    Status.INVALID_LABEL: Severity.ERROR,
    Status.REFUSED: Severity.ERROR,
}

# A value -> the rules of it that a class breaks.
Violations = dict[Member, tuple[Violation, ...]]


@dataclass(frozen=True, kw_only=True)
class Decision:
    cls_name: str
    line: int
    status: Status
    value: Member | None  # the value written (label/forced) or found (already...)
    inferred: Member | None  # what the rules alone say, None when nothing passes
    evidence: tuple[Evidence, ...] = ()
    violations: Violations = field(default_factory=dict)
    patterns: tuple[Pattern, ...] = ()
    message: str = ""
    # Deliberate deviations that refused a value the linter would accept.
    refusals: tuple[Refusal, ...] = ()
    # Warnings about a label the rules allow but that may mislead (GENERIC tests needing a GPU),
    # and what would make it honest (`needs_advice`).
    warnings: tuple[Evidence, ...] = ()
    needs_advice: str = ""

    @property
    def edits(self) -> bool:
        """True when the class gets a `hw_classification` line."""
        return self.status in (Status.LABEL, Status.FORCED)


# --------------------------------------------------------------------------- inference


def _all_violations(cls: TestClassFacts, gen: Generation) -> Violations:
    return {value: tuple(gen.check(cls, value)) for value in MEMBERS}


def _rules_summary(violations: tuple[Violation, ...]) -> str:
    names: list[str] = []
    for v in violations:
        if v.rule not in names:
            names.append(v.rule)
    return ", ".join(names)


def broken_text(violations: tuple[Violation, ...], limit: int = 2) -> str:
    """The first `limit` violations, each rule's statement said once: "XPU test methods must take
    device or devices, but test_a(self) at line 4 does not, and test_b(self) at line 9 does not"."""
    by_rule: dict[str, list[str]] = {}
    for v in violations[:limit]:
        statement, sep, case = v.message.partition(", but ")
        cases = by_rule.setdefault(statement if sep else v.message, [])
        if sep:
            cases.append(case)
    parts = [f"{statement}, but {' and '.join(cases)}" if cases else statement for statement, cases in by_rule.items()]
    more = f" (+{len(violations) - limit} more)" if len(violations) > limit else ""
    return "; ".join(parts) + more


def _some(names: list[str], limit: int = 3) -> str:
    return ", ".join(names[:limit]) + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


def needs_advice(cls: TestClassFacts, gen: Generation) -> tuple[tuple[Pattern, ...], str]:
    """What would make the GENERIC label of a class whose tests need an accelerator honest: the
    patterns and the sentence that says so. Split-class where some tests need none: done by the
    tool where `gen` takes the one device the others need as a label (`split_device`), else by
    hand; inject-device (ACCELERATOR) for the tests that need one."""
    needing = [m.name for m in cls.test_methods if test_needs(cls, m)]
    free = len(cls.test_methods) - len(needing)
    if not free:
        return (Pattern.INJECT_DEVICE,), "consider inject-device (give the tests a `device` parameter: ACCELERATOR)"
    found = split_device(cls, gen)
    if found is not None:
        value = found[0]
        return (Pattern.SPLIT_CLASS,), (
            f"split-class fits: the {len(needing)} that need {value.lower()} ({_some(needing)}) to a class of "
            f"their own labelled {value}, the {free} others stay GENERIC (decouple apply --restructure split-class)"
        )
    return (Pattern.SPLIT_CLASS, Pattern.INJECT_DEVICE), (
        f"{len(needing)} of {len(cls.test_methods)} tests need one ({_some(needing)}): split them into a class "
        f"of their own (split-class, by hand) whose tests take `device` (inject-device: ACCELERATOR), "
        f"the {free} others stay GENERIC"
    )


def _named_devices(cls: TestClassFacts) -> set[str]:
    """Device values named (in any case) by a literal only_for."""
    named: set[str] = set()
    for inst in cls.instantiations:
        if isinstance(inst.only_for, tuple):
            named.update(d.upper() for d in inst.only_for)
    return named


def _closest(cls: TestClassFacts, violations: Violations) -> list[Member]:
    """Candidate values, most plausible first: the devices only_for names, then
    GENERIC/ACCELERATOR, then the other devices; within a rank by how few distinct
    rules they break."""
    named = _named_devices(cls)

    def key(value: Member) -> tuple[int, int, int, int]:
        vs = violations[value]
        rank = 0 if value in named else (2 if value in DEVICE_MEMBERS else 1)
        return (rank, len({v.rule for v in vs}), len(vs), MEMBERS.index(value))

    return sorted(violations, key=key)


def _labelled_message(cls: TestClassFacts, value: Member, truth: Truth, gen: Generation) -> str:
    if value in (Member.GENERIC, Member.ACCELERATOR) or gen.rules.by_value()[value]:
        return f"{cls.name}: {value} (all {value} rules pass)"
    return f"{cls.name}: {value} ({truth.reason}; the {gen.name} rules only ask for the declaration)"


def infer(cls: TestClassFacts, gen: Generation, advice: bool = True) -> Decision:
    """The value that is true (`truth.true_value`) and that `gen`'s rules accept and no deviation
    refuses; where the rules leave exactly one value, that one (a GENERIC label on tests that
    need a GPU then comes with a warning).  Ignores any existing label and override. `advice`
    False: a class left to a human gets only the patterns its deviations name, not the advice read
    from its facts (for a caller that diagnoses the class itself and `refine`s the decision)."""
    ev = evidence(cls)
    violations = _all_violations(cls, gen)
    found = tuple(refusals(cls))
    refused = {v for r in found for v in r.values}
    accepted = [v for v in MEMBERS if not violations[v]]  # by the linter
    passing = [v for v in accepted if v not in refused]
    truth = true_value(cls)
    # The true value if the linter accepts it, else the one value it leaves (if it leaves one).
    value = truth.value if truth.value in accepted else (accepted[0] if len(accepted) == 1 else None)

    if value is not None and value in passing:
        message = _labelled_message(cls, value, truth, gen)
        warnings = needs_gpu_warnings(cls) if value == Member.GENERIC else ()
        patterns, advice_text = needs_advice(cls, gen) if warnings else ((), "")
        if warnings:
            # The rules pass, but a GENERIC label on tests that need a GPU misleads.
            message += f"; warning: the tests look like they need an accelerator ({warnings[0].text}); {advice_text}"
        return Decision(
            cls_name=cls.name,
            line=cls.line,
            status=Status.LABEL,
            value=value,
            inferred=value,
            evidence=ev,
            patterns=patterns,
            message=message,
            warnings=warnings,
            needs_advice=advice_text,
        )

    if value is not None:  # the linter would accept it, but a deliberate deviation says it is false
        hits = tuple(r for r in found if value in r.values)
        patterns = _with_advice(cls, hits, advice)
        why = "; ".join(f"{r.message}: {deviation(r.deviation).why}" for r in hits)
        message = f"{cls.name}: the linter would accept {value}, but the label would be false ({why}); not labelled"
        return Decision(
            cls_name=cls.name,
            line=cls.line,
            status=Status.NEEDS_MANUAL,
            value=None,
            inferred=None,
            evidence=ev,
            violations=violations,
            patterns=patterns,
            message=message + f"; fitting pattern: {', '.join(patterns)}",
            refusals=hits,
        )

    patterns = _with_advice(cls, found, advice)
    inst = cls.instantiation
    if inst is not None and inst.only_for == UNKNOWN:
        message = (
            f"{cls.name}: only_for is not a literal (line {inst.line}: {call_text(inst)}); "
            "cannot tell which devices the tests run on"
        )
    elif truth.value is not None and violations[truth.value]:
        broken = broken_text(violations[truth.value])
        others = [v for v in passing if v != truth.value]
        message = (
            f"{cls.name}: {truth.value} ({truth.reason}) breaks {_rules_summary(violations[truth.value])} ({broken})"
        )
        if others:
            message += f"; the {gen.name} rules accept {', '.join(others)}, but none is true"
    elif passing:
        message = f"{cls.name}: the {gen.name} rules accept {', '.join(passing)}, but none is true: {truth.reason}"
    else:
        order = _closest(cls, violations)
        parts = [f"{v} breaks {_rules_summary(violations[v])}" for v in order[:2]]
        message = f"{cls.name}: no classification satisfies the rules ({'; '.join(parts)})"
    if patterns:
        message += f"; fitting pattern: {', '.join(patterns)}"
    return Decision(
        cls_name=cls.name,
        line=cls.line,
        status=Status.NEEDS_MANUAL,
        value=None,
        inferred=None,
        evidence=ev,
        violations=violations,
        patterns=patterns,
        message=message,
        refusals=found,
    )


def _with_advice(cls: TestClassFacts, hits: tuple[Refusal, ...], advice: bool) -> tuple[Pattern, ...]:
    """The restructurings the deviations in `hits` name, then (with `advice`) the rest of the advice."""
    patterns = tuple(dict.fromkeys(deviation(r.deviation).pattern for r in hits))
    if not advice:
        return patterns
    return patterns + tuple(p for p in facts_advice(cls) if p not in patterns)


def decide(
    cls: TestClassFacts, gen: Generation, override: str | None = None, force: bool = False, advice: bool = True
) -> Decision:
    """What to do with `cls` under `gen`'s rules: inference, existing label and override
    (`--classification`, `--set Cls=X`) combined. Raises ValueError for an unknown override name.
    `advice` False: see `infer`; only a decision whose inference left the class to a human
    (`inferred` None) can differ."""
    wanted = normalise_member(override) if override is not None else None
    inferred = infer(cls, gen, advice)
    label = cls.label
    if label is not None and not label.valid:
        return Decision(
            cls_name=cls.name,
            line=cls.line,
            status=Status.INVALID_LABEL,
            value=None,
            inferred=inferred.inferred,
            evidence=inferred.evidence,
            message=f"{cls.name}: existing label at line {label.line} is invalid: {label.problem}; "
            f"fix it by hand (left untouched)",
        )
    if label is not None:
        return _labelled(cls, label, inferred, wanted, gen)
    if wanted is None:
        return inferred
    return _requested(cls, wanted, force, inferred, gen, advice)


def _labelled(
    cls: TestClassFacts, label: ExistingLabel, inferred: Decision, wanted: Member | None, gen: Generation
) -> Decision:
    """A class with a valid label: left alone, and said whether the tool agrees."""
    current = normalise_member(label.member or "")
    own = tuple(gen.check(cls, current))
    violations: Violations = {current: own} if own else {}
    broken = f"; the label breaks {_rules_summary(own)}" if own else ""
    false = tuple(r for r in inferred.refusals if current in r.values)
    status = Status.ALREADY_DISAGREES
    patterns: tuple[Pattern, ...] = ()
    refused: tuple[Refusal, ...] = ()
    if false and not own:
        violations, patterns, refused = {}, inferred.patterns, false
        message = (
            f"{cls.name}: already labelled {current} at line {label.line}; the linter accepts it, "
            f"but {false[0].message}: {deviation(false[0].deviation).why} (left untouched)"
        )
    elif label.shadowed_by and not own:
        lines = ", ".join(map(str, label.shadowed_by))
        message = (
            f"{cls.name}: {HW_ATTRIBUTE} is assigned again at line {lines}: the linter reads the "
            f"first ({current}, line {label.line}), Python keeps the last (left untouched)"
        )
    elif wanted is not None and wanted != current:
        message = (
            f"{cls.name}: already labelled {current} at line {label.line}; "
            f"requested {wanted} not applied (left untouched){broken}"
        )
    elif wanted is None and inferred.inferred is not None and inferred.inferred != current:
        message = (
            f"{cls.name}: already labelled {current} at line {label.line}, but the rules "
            f"point to {inferred.inferred} (left untouched){broken}"
        )
    else:
        status = Status.ALREADY
        message = f"{cls.name}: already labelled {current} at line {label.line}{broken}"
    return Decision(
        cls_name=cls.name,
        line=cls.line,
        status=status,
        value=current,
        inferred=inferred.inferred,
        evidence=inferred.evidence,
        violations=violations,
        patterns=patterns,
        message=message,
        refusals=refused,
    )


def _requested(
    cls: TestClassFacts, wanted: Member, force: bool, inferred: Decision, gen: Generation, advice: bool
) -> Decision:
    """An unlabelled class with a requested value (`--classification`, `--set`): labelled when
    the value's rules pass and no deviation says it is false, else forced or refused."""
    own = tuple(gen.check(cls, wanted))
    false_refusals = tuple(r for r in inferred.refusals if wanted in r.values)
    if not own and not false_refusals:
        warnings = needs_gpu_warnings(cls) if wanted == Member.GENERIC else ()
        return Decision(
            cls_name=cls.name,
            line=cls.line,
            status=Status.LABEL,
            value=wanted,
            inferred=inferred.inferred,
            evidence=inferred.evidence,
            patterns=inferred.patterns,
            message=f"{cls.name}: {wanted} (requested; all {wanted} rules pass)",
            warnings=warnings,
            needs_advice=needs_advice(cls, gen)[1] if warnings else "",
        )
    violations: Violations = {}
    if not own:  # the linter accepts it; a deliberate deviation says it is false
        why = f"{false_refusals[0].message}: {deviation(false_refusals[0].deviation).why}"
        if force:
            message = f"{cls.name}: {wanted} forced although it is false ({why}); the linter accepts it"
        else:
            message = (
                f"{cls.name}: requested {wanted} would pass the linter but is false ({why}); "
                "not applied (use --force to write it anyway)"
            )
    else:
        violations, false_refusals = {wanted: own}, ()
        rules = _rules_summary(own)
        if force:
            message = f"{cls.name}: {wanted} forced although it breaks {rules} (the linter will reject it)"
        else:
            message = f"{cls.name}: requested {wanted} breaks {rules}; not applied (use --force to write it anyway)"
    return Decision(
        cls_name=cls.name,
        line=cls.line,
        status=Status.FORCED if force else Status.REFUSED,
        value=wanted if force else None,
        inferred=inferred.inferred,
        evidence=inferred.evidence,
        violations=violations,
        patterns=inferred.patterns or (facts_advice(cls) if advice else ()),
        message=message,
        refusals=false_refusals,
    )


# --------------------------------------------------------------------------- advice


def facts_advice(cls: TestClassFacts) -> tuple[Pattern, ...]:
    """The restructuring advice that fits `cls`, from its facts alone (the label transform
    refines it with the method bodies, see refine)."""
    return diagnose_facts(cls).fitting


def refine(decision: Decision, diag: ClassDiagnosis) -> Decision:
    """`decision` with its advice replaced by the precise diagnosis (method bodies read): the
    transforms that fit, the widening they cause and what stays manual."""
    message = decision.message.split("; fitting pattern:")[0]
    steps = [p for p in diag.advice if p not in BY_HAND]
    if steps:
        message += f"; fitting transform: {', '.join(steps)} (decouple apply --restructure auto)"
    if len(steps) < len(diag.advice):
        message += f"; by hand: {', '.join(p for p in diag.advice if p in BY_HAND)}"
    if diag.widening:
        message += f"; note: {'; '.join(diag.widening)}"
    if diag.could_widen:
        named = ",".join(dict.fromkeys(w.step for w in diag.could_widen))
        notes = "; ".join(w.note() for w in diag.could_widen)
        message += f"; could be widened: {notes} (only when named: --restructure {named})"
    if diag.manual:
        message += f"; manual: {'; '.join(diag.manual)}"
    return replace(decision, patterns=diag.fitting, message=message)


def keep_deviation_advice(decision: Decision) -> Decision:
    """After refine replaced the advice: the deviations' own patterns come first."""
    own = tuple(deviation(r.deviation).pattern for r in decision.refusals)
    patterns = tuple(dict.fromkeys(own + decision.patterns))
    return replace(decision, patterns=patterns) if patterns != decision.patterns else decision


# --------------------------------------------------------------------------- findings


def _record(obj: Violation | Evidence | Refusal) -> dict:
    """`dataclasses.asdict` of a record whose fields hold plain values (no nested dataclass,
    nothing mutable), without its deep copies: several times cheaper, and each class's finding
    carries one per rule broken under each of the six values."""
    return dict(vars(obj))


def _violation_dicts(violations: Violations) -> dict[Member, list[dict]]:
    return {value: [_record(v) for v in vs] for value, vs in violations.items()}


def _fix_text(decision: Decision) -> str | None:
    if decision.edits and decision.value:
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
        "evidence": [_record(e) for e in decision.evidence],
        "violations": _violation_dicts(decision.violations),
        "patterns": list(decision.patterns),
        "deviations": [_record(r) for r in decision.refusals],
    }
    out = [
        Finding(
            rule=f"hw/{decision.status}",
            message=decision.message,
            line=decision.line,
            # An existing label the linter will reject is worth a warning, not a shrug.
            severity=Severity.WARNING
            if decision.status == Status.ALREADY and decision.violations
            else STATUS_SEVERITY[decision.status],
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
                    f"{decision.cls_name}: labelled GENERIC, which the rules accept, but its tests look "
                    f"like they need an accelerator ({'; '.join(e.text for e in decision.warnings)}); "
                    f"{decision.needs_advice}"
                ),
                line=decision.line,
                severity=Severity.WARNING,
                cls=decision.cls_name,
                data={"evidence": [_record(e) for e in decision.warnings]},
            )
        )
    return out


def module_findings(facts: ModuleFacts, gen: Generation) -> list[Finding]:
    """Module-level findings: duplicate test classes and duplicate instantiations, errors where
    `gen`'s linter reports them, else warnings (the last one is still the one checked, and
    the one Python keeps)."""
    out: list[Finding] = []
    severity = Severity.ERROR if gen.reports_duplicates else Severity.WARNING
    tail = "" if gen.reports_duplicates else f" (the {gen.name} linter does not report it)"
    for name, lines in facts.duplicate_classes:
        shown = ", ".join(map(str, lines))
        out.append(
            Finding(
                rule="hw/duplicate_class",
                message=(
                    f"test class {name} is defined {len(lines)} times (lines {shown}); "
                    f"only the last definition is linted{tail}"
                ),
                line=lines[1],
                severity=severity,
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
                    f"(lines {shown}); only the last call is linted{tail}"
                ),
                line=lines[1],
                severity=severity,
                cls=name,
                data={"lines": list(lines)},
            )
        )
    out.sort(key=lambda f: f.line)
    return out
