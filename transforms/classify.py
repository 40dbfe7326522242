"""The rule table: which `HardwareClassification` value a test class satisfies.

Each value owns a few small rule functions, registered in `RULES`; each rule
looks at a `TestClassFacts` and returns `Violation`s named exactly as PyTorch's
test linter prints them (`instantiation`, `device_param`, `decorator`,
`only_for`, `except_for`, `allow_mps`, `allow_xpu`).  `check(cls, value)` runs
the rules of one value; `infer(cls)` picks the value whose rules all pass (the
rules make the values mutually exclusive, so at most one does) and otherwise
explains, per candidate value, what breaks and which restructuring pattern
fits.  `decide(cls, override, force)` adds existing labels and user overrides
on top.  Findings for the engine come from `decision_findings` and
`module_findings`.

`EXAMPLES` is a table of self-describing cases (source, class, expected value
or expected broken rules) that the test-suite runs, Fixit style.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Tuple

from transforms.analysis import (
    ENUM_NAME,
    HW_ATTRIBUTE,
    UNKNOWN,
    Instantiation,
    ModuleFacts,
    TestClassFacts,
)
from transforms import diagnosis
from transforms.base import ERROR, INFO, WARNING, Finding

__all__ = [
    "DEVICE_VALUES",
    "EXAMPLES",
    "PATTERNS",
    "RULES",
    "STATUSES",
    "VALUES",
    "Decision",
    "Evidence",
    "Example",
    "Violation",
    "check",
    "decide",
    "decision_findings",
    "evidence",
    "infer",
    "module_findings",
    "normalise_value",
]

VALUES = ("GENERIC", "ACCELERATOR", "CPU", "CUDA", "MPS", "XPU")
DEVICE_VALUES = ("CPU", "CUDA", "MPS", "XPU")

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

# Restructuring advice: the transforms of transforms/restructure/ (and inject-device), one
# line each; which ones fit a class is decided by transforms/diagnosis.py.
PATTERNS = diagnosis.ADVICE

# How many test methods to list by name in evidence before summarising.
_EVIDENCE_LIMIT = 8


@dataclass(frozen=True)
class Violation:
    """One broken linter rule: `value` is the classification, `rule` the linter's name."""

    value: str
    rule: str
    message: str
    line: int

    @property
    def code(self) -> str:
        """The linter's spelling: `ACCELERATOR[decorator]`."""
        return f"{self.value}[{self.rule}]"


@dataclass(frozen=True)
class Evidence:
    """A fact behind a decision; `text` is ready to print ("line 12: test_add(self, device)")."""

    line: Optional[int]
    text: str


@dataclass(frozen=True)
class Decision:
    cls_name: str
    line: int
    status: str  # one of STATUSES
    value: Optional[str]  # the value written (label/forced) or found (already...)
    inferred: Optional[str]  # what the rules alone say, None when nothing passes
    evidence: Tuple[Evidence, ...] = ()
    violations: Dict[str, Tuple[Violation, ...]] = field(default_factory=dict)
    patterns: Tuple[str, ...] = ()
    message: str = ""

    @property
    def edits(self) -> bool:
        """True when the class gets a `hw_classification` line."""
        return self.status in ("label", "forced")


# --------------------------------------------------------------------------- rules

Rule = Callable[[TestClassFacts, str], List[Violation]]


def _fmt_devices(value: object) -> str:
    if value == UNKNOWN:
        return "a non-literal value"
    if isinstance(value, tuple):
        return repr(value[0]) if len(value) == 1 else repr(value)
    return repr(value)


def _not_instantiated(cls: TestClassFacts, value: str) -> List[Violation]:
    if cls.instantiations:
        return [
            Violation(
                value,
                "instantiation",
                f"{value} classes must not be instantiated, but {cls.name} is passed to "
                f"instantiate_device_type_tests at line {inst.line}",
                inst.line,
            )
            for inst in cls.instantiations
        ]
    return []


def _instantiated(cls: TestClassFacts, value: str) -> List[Violation]:
    if cls.instantiations:
        return []
    extra = ""
    if cls.parametrized:
        lines = ", ".join(map(str, cls.parametrized))
        extra = f" (instantiate_parametrized_tests at line {lines} does not count)"
    return [
        Violation(
            value,
            "instantiation",
            f"{value} classes must be passed to instantiate_device_type_tests, "
            f"but {cls.name} is not instantiated anywhere{extra}",
            cls.line,
        )
    ]


def _no_device_param(cls: TestClassFacts, value: str) -> List[Violation]:
    return [
        Violation(
            value,
            "device_param",
            f"{value} test methods must not take device/devices, but "
            f"{m.signature()} at line {m.line} does",
            m.line,
        )
        for m in cls.test_methods
        if m.takes_device
    ]


def _device_param(cls: TestClassFacts, value: str) -> List[Violation]:
    return [
        Violation(
            value,
            "device_param",
            f"{value} test methods must take device or devices, but "
            f"{m.signature()} at line {m.line} does not",
            m.line,
        )
        for m in cls.test_methods
        if not m.takes_device
    ]


def _is_only_decorator(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith("only") and last != "onlyAccelerator"


def _no_only_decorator(cls: TestClassFacts, value: str) -> List[Violation]:
    found = [
        Violation(
            value,
            "decorator",
            f"{value} classes may not use @{d} (only @onlyAccelerator is allowed), "
            f"found on class {cls.name} at line {cls.line}",
            cls.line,
        )
        for d in cls.decorators
        if _is_only_decorator(d)
    ]
    found += [
        Violation(
            value,
            "decorator",
            f"{value} classes may not use @{d} (only @onlyAccelerator is allowed), "
            f"found on {m.name} at line {m.line}",
            m.line,
        )
        for m in cls.test_methods
        for d in m.decorators
        if _is_only_decorator(d)
    ]
    return found


def _no_only_for(cls: TestClassFacts, value: str) -> List[Violation]:
    return [
        Violation(
            value,
            "only_for",
            f"{value} classes must not restrict devices with only_for (use except_for), "
            f"but line {inst.line} passes only_for={_fmt_devices(inst.only_for)}",
            inst.line,
        )
        for inst in cls.instantiations
        if inst.only_for is not None
    ]


def _only_for_exactly(cls: TestClassFacts, value: str) -> List[Violation]:
    want = value.lower()
    found = []
    for inst in cls.instantiations:
        if inst.only_for == (want,):
            continue
        if inst.only_for is None:
            what = "passes no only_for"
        elif inst.only_for == UNKNOWN:
            what = "passes only_for that is not a literal"
        else:
            what = f"passes only_for={_fmt_devices(inst.only_for)}"
        found.append(
            Violation(
                value,
                "only_for",
                f"{value} classes need only_for={want!r} (exactly that one device, lowercase), "
                f"but line {inst.line} {what}",
                inst.line,
            )
        )
    return found


def _no_except_for(cls: TestClassFacts, value: str) -> List[Violation]:
    return [
        Violation(
            value,
            "except_for",
            f"{value} classes must not pass except_for, "
            f"but line {inst.line} passes except_for={_fmt_devices(inst.except_for)}",
            inst.line,
        )
        for inst in cls.instantiations
        if inst.except_for is not None
    ]


def _allow_flag(flag: str) -> Rule:
    def rule(cls: TestClassFacts, value: str) -> List[Violation]:
        found = []
        for inst in cls.instantiations:
            got = getattr(inst, flag)
            if got is True:
                continue
            what = "omits it" if got is None else (
                "passes a non-literal value" if got == UNKNOWN else f"passes {flag}={got!r}"
            )
            found.append(
                Violation(
                    value,
                    flag,
                    f"{value} classes need {flag}=True, but line {inst.line} {what}",
                    inst.line,
                )
            )
        return found

    rule.__name__ = f"_{flag}"
    return rule


_DEVICE_RULES: Tuple[Tuple[str, Rule], ...] = (
    ("instantiation", _instantiated),
    ("device_param", _device_param),
    ("only_for", _only_for_exactly),
    ("except_for", _no_except_for),
)

# value -> ((rule name, rule), ...), in the order the linter reports them.
RULES: Mapping[str, Tuple[Tuple[str, Rule], ...]] = {
    "GENERIC": (
        ("instantiation", _not_instantiated),
        ("device_param", _no_device_param),
    ),
    "ACCELERATOR": (
        ("instantiation", _instantiated),
        ("device_param", _device_param),
        ("decorator", _no_only_decorator),
        ("only_for", _no_only_for),
    ),
    "CPU": _DEVICE_RULES,
    "CUDA": _DEVICE_RULES,
    "MPS": _DEVICE_RULES + (("allow_mps", _allow_flag("allow_mps")),),
    "XPU": _DEVICE_RULES + (("allow_xpu", _allow_flag("allow_xpu")),),
}


def normalise_value(name: str) -> str:
    """'cuda' -> 'CUDA'; also accepts 'HardwareClassification.CUDA'. ValueError otherwise."""
    text = str(name).strip()
    if text.startswith(ENUM_NAME + "."):
        text = text[len(ENUM_NAME) + 1 :]
    upper = text.upper()
    if upper not in VALUES:
        raise ValueError(
            f"unknown classification {name!r}: expected one of {', '.join(VALUES)}"
        )
    return upper


def check(cls: TestClassFacts, value: str) -> List[Violation]:
    """Every rule of `value` that `cls` breaks (empty: the label would pass the linter)."""
    value = normalise_value(value)
    found: List[Violation] = []
    for _name, rule in RULES[value]:
        found.extend(rule(cls, value))
    return found


# --------------------------------------------------------------------------- evidence


def _call_text(inst: Instantiation) -> str:
    return inst.text or f"instantiate_device_type_tests({inst.target}, ...)"


def evidence(cls: TestClassFacts) -> Tuple[Evidence, ...]:
    """The facts the rules look at, as printable lines."""
    out: List[Evidence] = []
    if cls.label is not None:
        lab = cls.label
        note = "" if lab.valid else f" (invalid: {lab.problem})"
        out.append(Evidence(lab.line, f"line {lab.line}: {lab.render()}{note}"))
    if cls.instantiations:
        for inst in cls.instantiations:
            out.append(Evidence(inst.line, f"line {inst.line}: {_call_text(inst)}"))
    else:
        out.append(Evidence(None, "not instantiated anywhere"))
    for line in cls.parametrized:
        out.append(
            Evidence(
                line,
                f"line {line}: instantiate_parametrized_tests({cls.name}) "
                "(not a device instantiation)",
            )
        )

    with_device = [m for m in cls.test_methods if m.takes_device]
    without = [m for m in cls.test_methods if not m.takes_device]
    total = len(cls.test_methods)
    if not with_device:
        out.append(
            Evidence(None, f"no test method takes device/devices ({_count(total, 'test method')})")
        )
    elif not without:
        first = with_device[0]
        out.append(
            Evidence(
                first.line,
                (
                    f"all {total} test methods take device/devices "
                    f"(e.g. line {first.line}: {first.signature()})"
                    if total > 1
                    else f"the only test method takes device/devices "
                    f"(line {first.line}: {first.signature()})"
                ),
            )
        )
    else:
        for group in (with_device, without):
            for m in group[:_EVIDENCE_LIMIT]:
                out.append(Evidence(m.line, f"line {m.line}: {m.signature()}"))
            if len(group) > _EVIDENCE_LIMIT:
                kind = "with" if group is with_device else "without"
                out.append(
                    Evidence(None, f"... and {len(group) - _EVIDENCE_LIMIT} more {kind} device")
                )
    for d in cls.decorators:
        if _is_only_decorator(d):
            out.append(Evidence(cls.line, f"line {cls.line}: @{d} on class {cls.name}"))
    for m in cls.test_methods:
        for d in m.decorators:
            if _is_only_decorator(d):
                out.append(Evidence(m.line, f"line {m.line}: @{d} on {m.name}"))
    hardcoded = [m for m in cls.test_methods if m.hardcoded_devices and not m.takes_device]
    for m in hardcoded[:_EVIDENCE_LIMIT]:
        devices = ", ".join(m.hardcoded_devices)
        out.append(Evidence(m.line, f"line {m.line}: {m.name} hard-codes {devices}"))
    return tuple(out)


# --------------------------------------------------------------------------- inference


def _all_violations(cls: TestClassFacts) -> Dict[str, Tuple[Violation, ...]]:
    return {value: tuple(check(cls, value)) for value in VALUES}


def _patterns(
    cls: TestClassFacts, violations: Mapping[str, Tuple[Violation, ...]]
) -> Tuple[str, ...]:
    """Restructuring transforms that fit `cls` (from its facts; hw_label refines them with
    the method bodies, see diagnosis.refine)."""
    return diagnosis.diagnose_facts(cls).advice


def _rules_summary(violations: Tuple[Violation, ...]) -> str:
    names: List[str] = []
    for v in violations:
        if v.rule not in names:
            names.append(v.rule)
    return ", ".join(names)


def _named_devices(cls: TestClassFacts) -> set:
    """Device values named (in any case) by a literal only_for."""
    named = set()
    for inst in cls.instantiations:
        if isinstance(inst.only_for, tuple):
            named.update(d.upper() for d in inst.only_for)
    return named


def _closest(cls: TestClassFacts, violations: Mapping[str, Tuple[Violation, ...]]) -> List[str]:
    """Candidate values, most plausible first: the devices only_for names, then
    GENERIC/ACCELERATOR, then the other devices; within a rank by how few distinct
    rules they break."""
    named = _named_devices(cls)

    def key(value: str) -> Tuple[int, int, int, int]:
        vs = violations[value]
        rank = 0 if value in named else (2 if value in DEVICE_VALUES else 1)
        return (rank, len({v.rule for v in vs}), len(vs), VALUES.index(value))

    return sorted(violations, key=key)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def infer(cls: TestClassFacts) -> Decision:
    """The value whose rules all pass, ignoring any existing label and override."""
    ev = evidence(cls)
    violations = _all_violations(cls)
    passing = [v for v in VALUES if not violations[v]]
    unknown_only_for = [i for i in cls.instantiations if i.only_for == UNKNOWN]

    if unknown_only_for:
        inst = unknown_only_for[0]
        return Decision(
            cls.name,
            cls.line,
            "needs-manual",
            None,
            None,
            ev,
            violations,
            _patterns(cls, violations),
            f"{cls.name}: only_for is not a literal (line {inst.line}: {_call_text(inst)}); "
            "cannot tell which devices the tests run on",
        )

    if len(passing) == 1:
        value = passing[0]
        patterns: Tuple[str, ...] = ()
        message = f"{cls.name}: {value} (all {value} rules pass)"
        if value == "GENERIC":
            hard = sorted({d for m in cls.test_methods for d in m.hardcoded_devices})
            if hard:
                # The rules pass, but a GENERIC test that hard-codes a device is suspicious.
                patterns = ("inject-device",)
                message += (
                    f"; note: tests hard-code {', '.join(hard)}, consider inject-device "
                    "(ACCELERATOR) instead"
                )
        return Decision(
            cls.name, cls.line, "label", value, value, ev, {}, patterns, message
        )

    if len(passing) > 1:  # cannot happen with the current rules; kept honest
        return Decision(
            cls.name,
            cls.line,
            "needs-manual",
            None,
            None,
            ev,
            violations,
            (),
            f"{cls.name}: ambiguous, several values pass ({', '.join(passing)})",
        )

    patterns = _patterns(cls, violations)
    order = _closest(cls, violations)
    parts = [f"{v} breaks {_rules_summary(violations[v])}" for v in order[:2]]
    message = f"{cls.name}: no classification satisfies the rules ({'; '.join(parts)})"
    if patterns:
        message += f"; fitting pattern: {', '.join(patterns)}"  # diagnosis.refine rewrites this
    return Decision(
        cls.name, cls.line, "needs-manual", None, None, ev, violations, patterns, message
    )


def decide(cls: TestClassFacts, override: Optional[str] = None, force: bool = False) -> Decision:
    """What to do with `cls`: inference, existing label and override (`--classification`,
    `--set Cls=X`) combined. Raises ValueError for an unknown override name."""
    wanted = normalise_value(override) if override is not None else None
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
    if not own:
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
        )
    patterns = _patterns(cls, _all_violations(cls))
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
            f"{cls.name}: {wanted} forced although it breaks {rules} "
            "(the linter will reject it)",
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
        f"{cls.name}: requested {wanted} breaks {rules}; not applied "
        "(use --force to write it anyway)",
    )


# --------------------------------------------------------------------------- findings


def _violation_dicts(violations: Mapping[str, Tuple[Violation, ...]]) -> Dict[str, List[dict]]:
    return {value: [asdict(v) for v in vs] for value, vs in violations.items()}


def _fix_text(decision: Decision) -> Optional[str]:
    if decision.status in ("label", "forced") and decision.value:
        return f"{HW_ATTRIBUTE} = {ENUM_NAME}.{decision.value}"
    if decision.patterns:
        return "; ".join(f"{p}: {PATTERNS[p]}" for p in decision.patterns)
    return None


def decision_findings(decision: Decision) -> List[Finding]:
    """One finding per decision, rule `hw/<status>`; `data` carries the details."""
    data = {
        "status": decision.status,
        "value": decision.value,
        "inferred": decision.inferred,
        "evidence": [asdict(e) for e in decision.evidence],
        "violations": _violation_dicts(decision.violations),
        "patterns": list(decision.patterns),
    }
    return [
        Finding(
            rule=f"hw/{decision.status}",
            message=decision.message,
            line=decision.line,
            # An existing label the linter will reject is worth a warning, not a shrug.
            severity=WARNING if decision.status == "already" and decision.violations
            else STATUSES[decision.status],
            cls=decision.cls_name,
            fix=_fix_text(decision),
            data=data,
        )
    ]


def module_findings(facts: ModuleFacts) -> List[Finding]:
    """Module-level findings: duplicate test classes and duplicate instantiations."""
    out: List[Finding] = []
    for name, lines in facts.duplicate_classes:
        shown = ", ".join(map(str, lines))
        out.append(
            Finding(
                rule="hw/duplicate_class",
                message=f"test class {name} is defined {len(lines)} times (lines {shown})",
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
                    f"(lines {shown})"
                ),
                line=lines[1],
                severity=ERROR,
                cls=name,
                data={"lines": list(lines)},
            )
        )
    out.sort(key=lambda f: f.line)
    return out


# --------------------------------------------------------------------------- examples


@dataclass(frozen=True)
class Example:
    """A self-describing case: `value` for a labelled class, else `broken` maps candidate
    values to the rules they must break (needs-manual) and `patterns` lists the patterns
    that must be suggested."""

    name: str
    source: str
    cls: str
    value: Optional[str] = None
    broken: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)
    patterns: Tuple[str, ...] = ()


_IMPORTS = (
    "from torch.testing._internal.common_utils import TestCase, run_tests\n"
    "from torch.testing._internal.common_device_type import (\n"
    "    instantiate_device_type_tests, onlyCUDA, onlyAccelerator, dtypes)\n"
)


def _ex(name: str, body: str, cls: str = "TestFoo", **expect) -> Example:
    return Example(name=name, source=_IMPORTS + body, cls=cls, **expect)


EXAMPLES: Tuple[Example, ...] = (
    _ex(
        "generic-plain",
        "class TestFoo(TestCase):\n"
        "    def test_add(self):\n"
        "        self.assertEqual(1 + 1, 2)\n",
        value="GENERIC",
    ),
    _ex(
        "accelerator-except-cpu",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "    @dtypes(torch.float)\n"
        "    def test_mul(self, device, dtype):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), except_for='cpu')\n",
        value="ACCELERATOR",
    ),
    _ex(
        "accelerator-plain-with-onlyAccelerator",
        "class TestFoo(TestCase):\n"
        "    @onlyAccelerator\n"
        "    def test_add(self, devices):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals())\n",
        value="ACCELERATOR",
    ),
    _ex(
        "cpu-only",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for='cpu')\n",
        value="CPU",
    ),
    _ex(
        "cuda-only-list",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for=['cuda'])\n",
        value="CUDA",
    ),
    _ex(
        "mps-needs-allow-mps",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for=('mps',), allow_mps=True)\n",
        value="MPS",
    ),
    _ex(
        "mps-without-allow-mps",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for='mps')\n",
        broken={"MPS": ("allow_mps",), "ACCELERATOR": ("only_for",)},
    ),
    _ex(
        "xpu-with-allow-xpu",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for='xpu', allow_xpu=True)\n",
        value="XPU",
    ),
    _ex(
        "mixed-device-and-plain",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "    def test_shape(self):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals())\n",
        broken={"GENERIC": ("instantiation", "device_param"), "ACCELERATOR": ("device_param",)},
        patterns=("split-class",),
    ),
    _ex(
        "multi-device-only-for",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for=('cuda', 'xpu'))\n",
        broken={"ACCELERATOR": ("only_for",), "CUDA": ("only_for",)},
        patterns=("drop-only-for",),
    ),
    _ex(
        "cpu-and-cuda-whitelist-keeps-cpu",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for=('cpu', 'cuda'))\n",
        broken={"ACCELERATOR": ("only_for",), "CPU": ("only_for",)},
        patterns=("drop-only-for",),
    ),
    _ex(
        "positional-only-for",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), None, ('cuda', 'xpu'))\n",
        broken={"CUDA": ("only_for",), "ACCELERATOR": ("only_for",)},
        patterns=("keyword-args", "drop-only-for"),
    ),
    _ex(
        "onlycpu-tests-need-a-cpu-class",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "    @onlyCPU\n"
        "    def test_sub(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals())\n",
        broken={"ACCELERATOR": ("decorator",), "CPU": ("only_for",)},
        patterns=("split-class",),
    ),
    _ex(
        "onlycuda-guard",
        "class TestFoo(TestCase):\n"
        "    @onlyCUDA\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals())\n",
        # Whether it becomes @onlyAccelerator or moves to a CUDA class depends on the
        # torch.cuda APIs the body uses: only the precise diagnosis (hw_label) can tell.
        broken={"ACCELERATOR": ("decorator",), "CUDA": ("only_for",)},
    ),
    _ex(
        "instantiated-hardcoded-cuda",
        "class TestFoo(TestCase):\n"
        "    def test_add(self):\n"
        "        x = torch.ones(2, device='cuda')\n"
        "instantiate_device_type_tests(TestFoo, globals(), except_for='cpu')\n",
        broken={"GENERIC": ("instantiation",), "ACCELERATOR": ("device_param",)},
        patterns=("inject-device",),
    ),
    _ex(
        "only-for-variable",
        "DEVICES = ('cuda',)\n"
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for=DEVICES)\n",
        broken={"ACCELERATOR": ("only_for",), "CUDA": ("only_for",)},
        patterns=("inline-only-for",),
    ),
    _ex(
        "cpu-with-except-for",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for='cpu', except_for='cuda')\n",
        broken={"CPU": ("except_for",), "ACCELERATOR": ("only_for",)},
    ),
    _ex(
        "only-for-uppercase",
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "instantiate_device_type_tests(TestFoo, globals(), only_for='CUDA')\n",
        broken={"CUDA": ("only_for",), "ACCELERATOR": ("only_for",)},
    ),
    _ex(
        "parametrized-is-not-device-instantiation",
        "from torch.testing._internal.common_utils import instantiate_parametrized_tests\n"
        "class TestFoo(TestCase):\n"
        "    def test_add(self):\n"
        "        pass\n"
        "instantiate_parametrized_tests(TestFoo)\n",
        value="GENERIC",
    ),
    _ex(
        "attribute-form-under-if",
        "import torch.testing._internal.common_device_type as cdt\n"
        "class TestFoo(TestCase):\n"
        "    def test_add(self, device):\n"
        "        pass\n"
        "if True:\n"
        "    cdt.instantiate_device_type_tests(TestFoo, globals(), only_for='cpu')\n",
        value="CPU",
    ),
    _ex(
        "device-param-not-instantiated",
        "class TestFoo(TestCase):\n"
        "    @parametrize('device', ['cpu', 'cuda'])\n"
        "    def test_add(self, device):\n"
        "        pass\n",
        broken={"GENERIC": ("device_param",), "ACCELERATOR": ("instantiation",)},
    ),
)
