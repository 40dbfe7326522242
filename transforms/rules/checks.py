"""The rules both generations of the linter share, each with its examples for every value a
generation may register it for (`RuleSet.add` keeps the examples of the values it registers).

The messages are the tool's own wording of what the linter checks; the linter's name of each
rule (`instantiation`, `device_param`, `decorator`, `only_for`) is the rule's `name`.
"""

from __future__ import annotations

from transforms.core.facts import UNKNOWN, TestClassFacts
from transforms.core.members import Member
from transforms.rules.examples import CLS, DEVICE_TEST, PLAIN_TEST, ex, inst
from transforms.rules.registry import RuleCheck, Violation

__all__ = [
    "FORBIDDEN_ONLY_DECORATORS",
    "FORBIDS_DEVICE_PARAM",
    "FORBIDS_INSTANTIATION",
    "NO_ONLY_DECORATOR",
    "NO_ONLY_FOR",
    "REQUIRES_DEVICE_PARAM",
    "REQUIRES_INSTANTIATION",
    "shown",
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


def shown(value: object) -> str:
    """An option's value as a message shows it."""
    if value == UNKNOWN:
        return "a non-literal value"
    if isinstance(value, tuple):
        return repr(value[0]) if len(value) == 1 else repr(list(value))
    return repr(value)


# --------------------------------------------------------------------------- instantiation


def _forbids_instantiation(cls: TestClassFacts, value: Member) -> list[Violation]:
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


FORBIDS_INSTANTIATION = RuleCheck(
    name="instantiation",
    check=_forbids_instantiation,
    valid=(ex("GENERIC", PLAIN_TEST), ex("GENERIC", PLAIN_TEST + "instantiate_parametrized_tests(TestFoo)\n")),
    invalid=(ex("GENERIC", PLAIN_TEST + inst()), ex("GENERIC", PLAIN_TEST + "for _ in range(1):\n    " + inst())),
)


def _requires_instantiation(cls: TestClassFacts, value: Member) -> list[Violation]:
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


REQUIRES_INSTANTIATION = RuleCheck(
    name="instantiation",
    check=_requires_instantiation,
    valid=(
        ex("ACCELERATOR", DEVICE_TEST + inst()),
        ex("CPU", DEVICE_TEST + "if True:\n    " + inst(", only_for='cpu'")),
        ex("CUDA", DEVICE_TEST + "while True:\n    " + inst(", only_for='cuda'") + "    break\n"),
    ),
    invalid=(
        ex("ACCELERATOR", DEVICE_TEST),
        ex("ACCELERATOR", DEVICE_TEST + "def load():\n    " + inst()),
        ex("CUDA", DEVICE_TEST + "instantiate_parametrized_tests(TestFoo)\n"),
    ),
)


# --------------------------------------------------------------------------- device parameter


def _forbids_device_param(cls: TestClassFacts, value: Member) -> list[Violation]:
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


FORBIDS_DEVICE_PARAM = RuleCheck(
    name="device_param",
    check=_forbids_device_param,
    valid=(
        ex("GENERIC", PLAIN_TEST),
        ex("GENERIC", CLS + "    def test_a(self, *devices):\n        pass\n"),
        ex("GENERIC", CLS + "    def test_a(self, **device):\n        pass\n"),
        ex("GENERIC", CLS + "    def helper(self, device):\n        pass\n    def test_a(self):\n        pass\n"),
    ),
    invalid=(
        ex("GENERIC", DEVICE_TEST),
        ex("GENERIC", CLS + "    async def testAsync(self, *, devices):\n        pass\n"),
        ex("GENERIC", CLS + "    def test_a(self, device, /):\n        pass\n"),
    ),
)


def _requires_device_param(cls: TestClassFacts, value: Member) -> list[Violation]:
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


REQUIRES_DEVICE_PARAM = RuleCheck(
    name="device_param",
    check=_requires_device_param,
    valid=(
        ex("ACCELERATOR", DEVICE_TEST + inst()),
        ex("ACCELERATOR", CLS + "    def testAdd(self, devices):\n        pass\n" + inst()),
    ),
    invalid=(
        ex("ACCELERATOR", PLAIN_TEST + inst()),
        ex("CPU", CLS + "    def test_a(self, *devices):\n        pass\n" + inst(", only_for='cpu'")),
        ex("ACCELERATOR", DEVICE_TEST + "    def testB(self):\n        pass\n" + inst()),
    ),
)


# --------------------------------------------------------------------------- ACCELERATOR


def _no_only_decorator(cls: TestClassFacts, value: Member) -> list[Violation]:
    return [
        Violation(
            value,
            "decorator",
            f"{value} test methods may not use @{written} (only @onlyAccelerator is "
            f"allowed), found on {m.name} at line {m.line}",
            m.line,
        )
        for m in cls.test_methods
        for written, name in zip(m.decorators, m.decorator_names, strict=False)
        if name in FORBIDDEN_ONLY_DECORATORS
    ]


NO_ONLY_DECORATOR = RuleCheck(
    name="decorator",
    check=_no_only_decorator,
    valid=(
        ex("ACCELERATOR", CLS + "    @onlyAccelerator\n    def test_a(self, device):\n        pass\n" + inst()),
        ex("ACCELERATOR", CLS + "    @onlyROCM\n    def test_a(self, device):\n        pass\n" + inst()),
    ),
    invalid=(
        ex("ACCELERATOR", CLS + "    @onlyCUDA\n    def test_a(self, device):\n        pass\n" + inst()),
        ex("ACCELERATOR", CLS + "    @cdt.onlyOn(['cuda'])\n    def test_a(self, device):\n        pass\n" + inst()),
        ex(
            "ACCELERATOR",
            CLS + "    @onlyNativeDeviceTypesAnd(['hpu'])\n    def test_a(self, device):\n        pass\n" + inst(),
        ),
    ),
)


def _no_only_for(cls: TestClassFacts, value: Member) -> list[Violation]:
    inst = cls.instantiation
    if inst is None or inst.only_for is None:
        return []
    return [
        Violation(
            value,
            "only_for",
            f"{value} classes must not restrict devices with only_for (use except_for), "
            f"but line {inst.line} passes only_for={shown(inst.only_for)}",
            inst.line,
        )
    ]


NO_ONLY_FOR = RuleCheck(
    name="only_for",
    check=_no_only_for,
    valid=(
        ex("ACCELERATOR", DEVICE_TEST + inst(", except_for='cpu'")),
        ex("ACCELERATOR", DEVICE_TEST + inst(", only_for=None")),
    ),
    invalid=(
        ex("ACCELERATOR", DEVICE_TEST + inst(", only_for=('cuda', 'xpu')")),
        ex("ACCELERATOR", DEVICE_TEST + inst(", only_for=DEVICES")),
        ex("ACCELERATOR", DEVICE_TEST + inst(", only_for=[]")),
    ),
)
