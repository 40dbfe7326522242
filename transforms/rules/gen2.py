"""gen2: the generation of the linter whose rules are `Rule` classes keyed by a `RuleId` enum,
with `--regenerate` (seen December 2026).

GENERIC must not be instantiated, take `device` nor call an accelerator API anywhere in its
body (`accelerator_availability`); ACCELERATOR must be instantiated, every test taking
`device`, without a device-specific `@only*` nor `only_for`; CPU, CUDA, MPS and XPU are only
declared (no rule checks them).  It judges only `test/**/test_*.py` and `test/**/*_test.py` of
its own repository, minus two vendored folders; it reports no duplicates, and an unparseable
file gets no message at all.
"""

from __future__ import annotations

from transforms.core.device_needs import DEVICE_MODULES
from transforms.core.facts import TestClassFacts, TorchCall
from transforms.core.members import Member
from transforms.rules.checks import (
    FORBIDDEN_ONLY_DECORATORS,
    FORBIDS_DEVICE_PARAM,
    FORBIDS_INSTANTIATION,
    NO_ONLY_DECORATOR,
    NO_ONLY_FOR,
    REQUIRES_DEVICE_PARAM,
    REQUIRES_INSTANTIATION,
)
from transforms.rules.examples import CLS, PLAIN_TEST, ex
from transforms.rules.registry import FileSelection, Generation, RuleCheck, RuleSet, Violation

__all__ = ["ACCELERATOR_MODULES", "GEN2", "accelerator_calls"]

# A call whose callee, split at its dots, starts with `torch` and has one of these parts: torch's
# device modules (the facts hold exactly those calls).
ACCELERATOR_MODULES = DEVICE_MODULES


def accelerator_calls(cls: TestClassFacts) -> list[TorchCall]:
    """The class's calls the accelerator_availability rule flags, in the linter's order."""
    return [c for c in cls.device_calls if ACCELERATOR_MODULES.intersection(c.callee.split("."))]


def _no_accelerator_call(cls: TestClassFacts, value: Member) -> list[Violation]:
    return [
        Violation(
            value,
            "accelerator_availability",
            f"{value} classes must not call accelerator APIs anywhere in the class body, "
            f"but {c.owner} calls {c.callee}() at line {c.line}",
            c.line,
        )
        for c in accelerator_calls(cls)
    ]


_METHOD = "    def test_a(self):\n        "
NO_ACCELERATOR_CALL = RuleCheck(
    name="accelerator_availability",
    check=_no_accelerator_call,
    valid=(
        ex("GENERIC", PLAIN_TEST),
        ex("GENERIC", CLS + _METHOD + "torch.backends.cuda.matmul.allow_tf32 = True\n"),
        ex("GENERIC", CLS + _METHOD + "x = torch.ones(2, device='cuda')\n"),
        ex("GENERIC", CLS + _METHOD + "th.cuda.synchronize()\n"),
        ex("GENERIC", CLS + _METHOD + "torch.backends.cudnn.is_available()\n"),
        ex("GENERIC", "@unittest.skipIf(not torch.cuda.is_available(), 'cuda')\n" + PLAIN_TEST),
    ),
    invalid=(
        ex("GENERIC", CLS + _METHOD + "torch.cuda.synchronize()\n"),
        ex("GENERIC", CLS + "    @unittest.skipIf(torch.accelerator.is_available(), 'cpu')\n" + _METHOD + "pass\n"),
        ex(
            "GENERIC",
            CLS + "    def setUp(self):\n        torch.backends.cuda.enable_flash_sdp(False)\n" + _METHOD + "pass\n",
        ),
        ex("GENERIC", CLS + "    N = torch.xpu.device_count()\n" + _METHOD + "pass\n"),
        ex("GENERIC", CLS + "    def test_a(self, n=torch.cuda.device_count()):\n        pass\n"),
        ex("GENERIC", CLS + _METHOD + "torch.ones(2).cuda()\n"),
    ),
)

_RULES = RuleSet()
# In the linter's registration order (the order it reports a class's messages in).
_RULES.add(REQUIRES_INSTANTIATION, Member.ACCELERATOR)
_RULES.add(FORBIDS_INSTANTIATION, Member.GENERIC)
_RULES.add(REQUIRES_DEVICE_PARAM, Member.ACCELERATOR)
_RULES.add(FORBIDS_DEVICE_PARAM, Member.GENERIC)
_RULES.add(NO_ACCELERATOR_CALL, Member.GENERIC)
_RULES.add(NO_ONLY_DECORATOR, Member.ACCELERATOR)
_RULES.add(NO_ONLY_FOR, Member.ACCELERATOR)

GEN2 = Generation(
    name="gen2",
    summary="rules as Rule classes keyed by RuleId, with --regenerate; GENERIC must not call accelerator "
    "APIs; device values are only declared",
    rules=_RULES,
    files=FileSelection(
        include=("test/**/test_*.py", "test/**/*_test.py"),
        exclude_prefixes=("test/cpp_extensions/open_registration_extension/", "test/cpython/"),
    ),
    reports_duplicates=False,
    reports_unparseable=False,
    regenerates=True,
    forbidden_decorators=FORBIDDEN_ONLY_DECORATORS,
    accelerator_modules=ACCELERATOR_MODULES,
)
