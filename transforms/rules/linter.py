"""The upstream test linter's rules, mirrored exactly, each with its own examples: the
generation of the linter the tool follows today, one `RuleSet` (registry.py).

`lint_module` applies the whole table to a module the way the linter does
(missing/invalid label, duplicate definitions and instantiations included): it
is the tool's prediction of the linter's error messages, which the linter gate
compares with the real linter's output.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from transforms.core.facts import UNKNOWN, ModuleFacts, TestClassFacts
from transforms.core.members import DEVICE_MEMBERS, Member
from transforms.rules.registry import Check, Example, Rule, RuleSet, Violation

__all__ = [
    "FORBIDDEN_ONLY_DECORATORS",
    "GENERATION",
    "RULES",
    "REGISTRY",
    "LinterMessage",
    "check",
    "lint_module",
]

# Method decorators an ACCELERATOR class may not use (matched by the last name part).
FORBIDDEN_ONLY_DECORATORS = frozenset(
    {
        "onlyCPU",
        "onlyCUDA",
        "onlyMPS",
        "onlyXPU",
        "onlyHPU",
        "onlyPRIVATEUSE1",
        "onlyOn",
        "onlyCUDAAndPRIVATEUSE1",
        "onlyNativeDeviceTypes",
        "onlyNativeDeviceTypesAnd",
    }
)


GENERATION = RuleSet()
rule = GENERATION.rule


def _ex(value: str, source: str) -> Example:
    return Example(Member(value), source)


_CLS = "class TestFoo(TestCase):\n"
_DEVICE_TEST = _CLS + "    def test_a(self, device):\n        pass\n"
_PLAIN_TEST = _CLS + "    def test_a(self):\n        pass\n"
_INST = "instantiate_device_type_tests(TestFoo, globals(){})\n"


def _inst(args: str = "") -> str:
    return _INST.format(args)


def _fmt(value: object) -> str:
    if value == UNKNOWN:
        return "a non-literal value"
    if isinstance(value, tuple):
        return repr(value[0]) if len(value) == 1 else repr(list(value))
    return repr(value)


# --------------------------------------------------------------------------- instantiation


@rule(
    "instantiation",
    "GENERIC",
    valid=(_ex("GENERIC", _PLAIN_TEST), _ex("GENERIC", _PLAIN_TEST + "instantiate_parametrized_tests(TestFoo)\n")),
    invalid=(_ex("GENERIC", _PLAIN_TEST + _inst()), _ex("GENERIC", _PLAIN_TEST + "for _ in range(1):\n    " + _inst())),
)
def forbids_instantiation(cls: TestClassFacts, value: Member) -> list[Violation]:
    inst = cls.instantiation
    if inst is None:
        return []
    return [
        Violation(
            value,
            "instantiation",
            f"{value} classes must not be instantiated, but {cls.name} is passed to "
            f"instantiate_device_type_tests at line {inst.line}",
            cls.line,
        )
    ]


@rule(
    "instantiation",
    "ACCELERATOR",
    *DEVICE_MEMBERS,
    valid=(
        _ex("ACCELERATOR", _DEVICE_TEST + _inst()),
        _ex("CPU", _DEVICE_TEST + "if True:\n    " + _inst(", only_for='cpu'")),
        _ex("CUDA", _DEVICE_TEST + "while True:\n    " + _inst(", only_for='cuda'") + "    break\n"),
    ),
    invalid=(
        _ex("ACCELERATOR", _DEVICE_TEST),
        _ex("ACCELERATOR", _DEVICE_TEST + "def load():\n    " + _inst()),
        _ex("CUDA", _DEVICE_TEST + "instantiate_parametrized_tests(TestFoo)\n"),
    ),
)
def requires_instantiation(cls: TestClassFacts, value: Member) -> list[Violation]:
    if cls.instantiation is not None:
        return []
    extra = ""
    if cls.parametrized:
        extra = f" (instantiate_parametrized_tests at line {', '.join(map(str, cls.parametrized))} does not count)"
    if cls.hidden_instantiations:
        extra += (
            f" (the call at line {cls.hidden_instantiations[0].line} is under try/except* or "
            "match, where the linter does not look)"
        )
    return [
        Violation(
            value,
            "instantiation",
            f"{value} classes must be passed to instantiate_device_type_tests, "
            f"but {cls.name} is not instantiated anywhere{extra}",
            cls.line,
        )
    ]


# --------------------------------------------------------------------------- device parameter


@rule(
    "device_param",
    "GENERIC",
    valid=(
        _ex("GENERIC", _PLAIN_TEST),
        _ex("GENERIC", _CLS + "    def test_a(self, *devices):\n        pass\n"),
        _ex("GENERIC", _CLS + "    def test_a(self, **device):\n        pass\n"),
        _ex("GENERIC", _CLS + "    def helper(self, device):\n        pass\n    def test_a(self):\n        pass\n"),
    ),
    invalid=(
        _ex("GENERIC", _DEVICE_TEST),
        _ex("GENERIC", _CLS + "    async def testAsync(self, *, devices):\n        pass\n"),
        _ex("GENERIC", _CLS + "    def test_a(self, device, /):\n        pass\n"),
    ),
)
def forbids_device_param(cls: TestClassFacts, value: Member) -> list[Violation]:
    return [
        Violation(
            value,
            "device_param",
            f"{value} test methods must not take device/devices, but {m.signature()} at line {m.line} does",
            m.line,
        )
        for m in cls.test_methods
        if m.takes_device
    ]


@rule(
    "device_param",
    "ACCELERATOR",
    *DEVICE_MEMBERS,
    valid=(
        _ex("ACCELERATOR", _DEVICE_TEST + _inst()),
        _ex("ACCELERATOR", _CLS + "    def testAdd(self, devices):\n        pass\n" + _inst()),
    ),
    invalid=(
        _ex("ACCELERATOR", _PLAIN_TEST + _inst()),
        _ex("CPU", _CLS + "    def test_a(self, *devices):\n        pass\n" + _inst(", only_for='cpu'")),
        _ex("ACCELERATOR", _DEVICE_TEST + "    def testB(self):\n        pass\n" + _inst()),
    ),
)
def requires_device_param(cls: TestClassFacts, value: Member) -> list[Violation]:
    return [
        Violation(
            value,
            "device_param",
            f"{value} test methods must take device or devices, but {m.signature()} at line {m.line} does not",
            m.line,
        )
        for m in cls.test_methods
        if not m.takes_device
    ]


# --------------------------------------------------------------------------- ACCELERATOR


@rule(
    "decorator",
    "ACCELERATOR",
    valid=(
        _ex("ACCELERATOR", _CLS + "    @onlyAccelerator\n    def test_a(self, device):\n        pass\n" + _inst()),
        _ex("ACCELERATOR", _CLS + "    @onlyROCM\n    def test_a(self, device):\n        pass\n" + _inst()),
    ),
    invalid=(
        _ex("ACCELERATOR", _CLS + "    @onlyCUDA\n    def test_a(self, device):\n        pass\n" + _inst()),
        _ex("ACCELERATOR", _CLS + "    @cdt.onlyOn(['cuda'])\n    def test_a(self, device):\n        pass\n" + _inst()),
        _ex(
            "ACCELERATOR",
            _CLS + "    @onlyNativeDeviceTypesAnd(['hpu'])\n    def test_a(self, device):\n        pass\n" + _inst(),
        ),
    ),
)
def no_only_decorator(cls: TestClassFacts, value: Member) -> list[Violation]:
    return [
        Violation(
            value,
            "decorator",
            f"{value} test methods may not use @{shown} (only @onlyAccelerator is "
            f"allowed), found on {m.name} at line {m.line}",
            m.line,
        )
        for m in cls.test_methods
        for shown, name in zip(m.decorators, m.decorator_names, strict=False)
        if name in FORBIDDEN_ONLY_DECORATORS
    ]


@rule(
    "only_for",
    "ACCELERATOR",
    valid=(
        _ex("ACCELERATOR", _DEVICE_TEST + _inst(", except_for='cpu'")),
        _ex("ACCELERATOR", _DEVICE_TEST + _inst(", only_for=None")),
    ),
    invalid=(
        _ex("ACCELERATOR", _DEVICE_TEST + _inst(", only_for=('cuda', 'xpu')")),
        _ex("ACCELERATOR", _DEVICE_TEST + _inst(", only_for=DEVICES")),
        _ex("ACCELERATOR", _DEVICE_TEST + _inst(", only_for=[]")),
    ),
)
def no_only_for(cls: TestClassFacts, value: Member) -> list[Violation]:
    inst = cls.instantiation
    if inst is None or inst.only_for is None:
        return []
    return [
        Violation(
            value,
            "only_for",
            f"{value} classes must not restrict devices with only_for (use except_for), "
            f"but line {inst.line} passes only_for={_fmt(inst.only_for)}",
            inst.line,
        )
    ]


# --------------------------------------------------------------------------- CPU / CUDA / MPS / XPU


@rule(
    "only_for",
    *DEVICE_MEMBERS,
    valid=(
        _ex("CPU", _DEVICE_TEST + _inst(", only_for='cpu'")),
        _ex("CUDA", _DEVICE_TEST + _inst(", only_for=['cuda']")),
        _ex("XPU", _DEVICE_TEST + _inst(", only_for=('xpu',), allow_xpu=True")),
    ),
    invalid=(
        _ex("CUDA", _DEVICE_TEST + _inst()),
        _ex("CUDA", _DEVICE_TEST + _inst(", only_for='CUDA'")),
        _ex("CUDA", _DEVICE_TEST + _inst(", only_for=('cuda', 'cuda')")),
        _ex("CPU", _DEVICE_TEST + _inst(", only_for=DEVICES")),
    ),
)
def only_for_exactly(cls: TestClassFacts, value: Member) -> list[Violation]:
    inst = cls.instantiation
    want = value.lower()
    if inst is None or inst.only_for == (want,):
        return []
    if inst.only_for is None:
        what = "passes no only_for (as a keyword)"
    elif inst.only_for == UNKNOWN:
        what = "passes only_for that is not a literal"
    else:
        what = f"passes only_for={_fmt(inst.only_for)}"
    return [
        Violation(
            value,
            "only_for",
            f"{value} classes need only_for={want!r} (exactly that one device, lowercase), but line {inst.line} {what}",
            inst.line,
        )
    ]


@rule(
    "except_for",
    *DEVICE_MEMBERS,
    valid=(_ex("CPU", _DEVICE_TEST + _inst(", only_for='cpu', except_for=None")),),
    invalid=(
        _ex("CPU", _DEVICE_TEST + _inst(", only_for='cpu', except_for='cuda'")),
        _ex("CUDA", _DEVICE_TEST + _inst(", only_for='cuda', except_for=SKIP")),
    ),
)
def no_except_for(cls: TestClassFacts, value: Member) -> list[Violation]:
    inst = cls.instantiation
    if inst is None or inst.except_for is None:
        return []
    return [
        Violation(
            value,
            "except_for",
            f"{value} classes must not pass except_for, but line {inst.line} passes except_for={_fmt(inst.except_for)}",
            inst.line,
        )
    ]


def _allow_flag(flag: str) -> Check:
    def check_flag(cls: TestClassFacts, value: Member) -> list[Violation]:
        inst = cls.instantiation
        if inst is None:
            return []
        got = getattr(inst, flag)
        if got is True or got == UNKNOWN:  # a non-literal cannot be read: the check is skipped
            return []
        what = "omits it" if got is None else f"passes {flag}={got!r}"
        return [Violation(value, flag, f"{value} classes need {flag}=True, but line {inst.line} {what}", inst.line)]

    check_flag.__name__ = f"requires_{flag}"
    return check_flag


rule(
    "allow_mps",
    "MPS",
    valid=(
        _ex("MPS", _DEVICE_TEST + _inst(", only_for='mps', allow_mps=True")),
        _ex("MPS", _DEVICE_TEST + _inst(", only_for='mps', allow_mps=MACOS_VERSION >= 15")),
    ),
    invalid=(
        _ex("MPS", _DEVICE_TEST + _inst(", only_for='mps'")),
        _ex("MPS", _DEVICE_TEST + _inst(", only_for='mps', allow_mps=False")),
    ),
)(_allow_flag("allow_mps"))

rule(
    "allow_xpu",
    "XPU",
    valid=(
        _ex("XPU", _DEVICE_TEST + _inst(", only_for='xpu', allow_xpu=True")),
        _ex("XPU", _DEVICE_TEST + _inst(", only_for='xpu', allow_xpu=HAS_XPU")),
    ),
    invalid=(
        _ex("XPU", _DEVICE_TEST + _inst(", only_for='xpu'")),
        _ex("XPU", _DEVICE_TEST + _inst(", only_for='xpu', allow_xpu=False")),
    ),
)(_allow_flag("allow_xpu"))


REGISTRY: list[Rule] = GENERATION.rules
# value -> its rules, in registration order (the order the linter reports them in).
RULES: Mapping[Member, tuple[Rule, ...]] = GENERATION.by_value()
check = GENERATION.check


# --------------------------------------------------------------------------- whole module


@dataclass(frozen=True)
class LinterMessage:
    """What the linter reports, reduced to what can be compared: name (with brackets), line."""

    name: str
    line: int
    cls: str = ""


def lint_module(facts: ModuleFacts) -> list[LinterMessage]:
    """The linter's error messages for a module, as the tool predicts them."""
    out: list[LinterMessage] = []
    for name, lines in facts.duplicate_classes:
        out += [LinterMessage("[duplicate_class]", line, name) for line in lines[1:]]
    for name, lines in facts.duplicate_instantiations:
        out += [LinterMessage("[duplicate_instantiation]", line, name) for line in lines[1:]]
    for cls in facts.classes:
        label = cls.label
        if label is None or not label.valid:
            out.append(LinterMessage("[hw_classification]", cls.line, cls.name))
            continue
        out += [LinterMessage(f"[{v.rule}]", v.line, cls.name) for v in check(cls, label.member or "")]
    return sorted(out, key=lambda m: (m.line, m.name))
