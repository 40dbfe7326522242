"""gen1: the generation of the linter whose rules are module functions registered with
`@_register(...)` (late 2026; the first the tool followed).

GENERIC must not be instantiated nor take `device`; ACCELERATOR and the device values
(CPU, CUDA, MPS, XPU) must be instantiated with every test taking `device`; ACCELERATOR must
not use a device-specific `@only*` nor `only_for`; a device value needs `only_for` exactly
that device, no `except_for`, and `allow_mps=True` / `allow_xpu=True` for MPS / XPU.  It
judges every `test_*.py` / `*_test.py` it is named, reports duplicate classes and
instantiations and an unparseable file (`[parse_error]`).
"""

from __future__ import annotations

from transforms.core.facts import UNKNOWN, TestClassFacts
from transforms.core.members import DEVICE_MEMBERS, Member
from transforms.rules.checks import (
    FORBIDDEN_ONLY_DECORATORS,
    FORBIDS_DEVICE_PARAM,
    FORBIDS_INSTANTIATION,
    NO_ONLY_DECORATOR,
    NO_ONLY_FOR,
    REQUIRES_DEVICE_PARAM,
    REQUIRES_INSTANTIATION,
    shown,
)
from transforms.rules.examples import DEVICE_TEST, ex, inst
from transforms.rules.registry import Check, FileSelection, Generation, RuleCheck, RuleSet, Violation

__all__ = ["GEN1"]


def _only_for_exactly(cls: TestClassFacts, value: Member) -> list[Violation]:
    call = cls.instantiation
    want = value.lower()
    if call is None or call.only_for == (want,):
        return []
    if call.only_for is None:
        what = "passes no only_for (as a keyword)"
    elif call.only_for == UNKNOWN:
        what = "passes only_for that is not a literal"
    else:
        what = f"passes only_for={shown(call.only_for)}"
    return [
        Violation(
            value,
            "only_for",
            f"{value} classes need only_for={want!r} (exactly that one device, lowercase), but line {call.line} {what}",
            call.line,
        )
    ]


ONLY_FOR_EXACTLY = RuleCheck(
    name="only_for",
    check=_only_for_exactly,
    valid=(
        ex("CPU", DEVICE_TEST + inst(", only_for='cpu'")),
        ex("CUDA", DEVICE_TEST + inst(", only_for=['cuda']")),
        ex("XPU", DEVICE_TEST + inst(", only_for=('xpu',), allow_xpu=True")),
    ),
    invalid=(
        ex("CUDA", DEVICE_TEST + inst()),
        ex("CUDA", DEVICE_TEST + inst(", only_for='CUDA'")),
        ex("CUDA", DEVICE_TEST + inst(", only_for=('cuda', 'cuda')")),
        ex("CPU", DEVICE_TEST + inst(", only_for=DEVICES")),
    ),
)


def _no_except_for(cls: TestClassFacts, value: Member) -> list[Violation]:
    call = cls.instantiation
    if call is None or call.except_for is None:
        return []
    return [
        Violation(
            value,
            "except_for",
            f"{value} classes must not pass except_for, but line {call.line} passes "
            f"except_for={shown(call.except_for)}",
            call.line,
        )
    ]


NO_EXCEPT_FOR = RuleCheck(
    name="except_for",
    check=_no_except_for,
    valid=(ex("CPU", DEVICE_TEST + inst(", only_for='cpu', except_for=None")),),
    invalid=(
        ex("CPU", DEVICE_TEST + inst(", only_for='cpu', except_for='cuda'")),
        ex("CUDA", DEVICE_TEST + inst(", only_for='cuda', except_for=SKIP")),
    ),
)


def _allow_flag(flag: str) -> Check:
    def check_flag(cls: TestClassFacts, value: Member) -> list[Violation]:
        call = cls.instantiation
        if call is None:
            return []
        got = getattr(call, flag)
        if got is True or got == UNKNOWN:  # a non-literal cannot be read: the check is skipped
            return []
        what = "omits it" if got is None else f"passes {flag}={got!r}"
        return [Violation(value, flag, f"{value} classes need {flag}=True, but line {call.line} {what}", call.line)]

    check_flag.__name__ = f"requires_{flag}"
    return check_flag


REQUIRES_ALLOW_MPS = RuleCheck(
    name="allow_mps",
    check=_allow_flag("allow_mps"),
    valid=(
        ex("MPS", DEVICE_TEST + inst(", only_for='mps', allow_mps=True")),
        ex("MPS", DEVICE_TEST + inst(", only_for='mps', allow_mps=MACOS_VERSION >= 15")),
    ),
    invalid=(
        ex("MPS", DEVICE_TEST + inst(", only_for='mps'")),
        ex("MPS", DEVICE_TEST + inst(", only_for='mps', allow_mps=False")),
    ),
)
REQUIRES_ALLOW_XPU = RuleCheck(
    name="allow_xpu",
    check=_allow_flag("allow_xpu"),
    valid=(
        ex("XPU", DEVICE_TEST + inst(", only_for='xpu', allow_xpu=True")),
        ex("XPU", DEVICE_TEST + inst(", only_for='xpu', allow_xpu=HAS_XPU")),
    ),
    invalid=(
        ex("XPU", DEVICE_TEST + inst(", only_for='xpu'")),
        ex("XPU", DEVICE_TEST + inst(", only_for='xpu', allow_xpu=False")),
    ),
)

_RULES = RuleSet()
# In the linter's registration order (the order it reports a class's messages in).
_RULES.add(REQUIRES_INSTANTIATION, Member.ACCELERATOR, *DEVICE_MEMBERS)
_RULES.add(FORBIDS_INSTANTIATION, Member.GENERIC)
_RULES.add(REQUIRES_DEVICE_PARAM, Member.ACCELERATOR, *DEVICE_MEMBERS)
_RULES.add(FORBIDS_DEVICE_PARAM, Member.GENERIC)
_RULES.add(NO_ONLY_DECORATOR, Member.ACCELERATOR)
_RULES.add(NO_ONLY_FOR, Member.ACCELERATOR)
_RULES.add(NO_EXCEPT_FOR, *DEVICE_MEMBERS)
_RULES.add(REQUIRES_ALLOW_MPS, Member.MPS)
_RULES.add(REQUIRES_ALLOW_XPU, Member.XPU)
_RULES.add(ONLY_FOR_EXACTLY, *DEVICE_MEMBERS)

GEN1 = Generation(
    name="gen1",
    summary="rules as @_register functions; device values need only_for=<device> and device parameters",
    rules=_RULES,
    files=FileSelection(include=None),
    reports_duplicates=True,
    reports_unparseable=True,
    regenerates=False,
    forbidden_decorators=FORBIDDEN_ONLY_DECORATORS,
)
