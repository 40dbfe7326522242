"""Deliberate deviations: labels the linter would accept but that are false.

The linter checks the letter of a file; in a few places the letter hides what
Python does.  There the tool refuses the label the linter would accept, reports
manual work with the restructuring that makes letter and meaning agree, and
says why.  Each deviation is a small pure function with its own examples
(`fires`: modules where it refuses the listed values for `TestFoo`; `quiet`:
modules where it refuses nothing), run by the tests.  docs/classify-apply.md lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from transforms.core.facts import TestClassFacts
from transforms.core.members import MEMBERS, Member
from transforms.rules.advice import Pattern
from transforms.rules.linter import FORBIDDEN_ONLY_DECORATORS

__all__ = ["DEVIATIONS", "Deviation", "Refusal", "deviation", "refusals"]


@dataclass(frozen=True)
class Refusal:
    deviation: str  # the Deviation's name
    values: tuple[Member, ...]  # the values refused
    message: str  # what was found, where
    line: int


@dataclass(frozen=True, kw_only=True)
class Deviation:
    name: str
    why: str  # why the linter's verdict would be wrong (docs/classify-apply.md, messages)
    pattern: Pattern  # the fitting restructuring
    find: Callable[[TestClassFacts], Refusal | None]
    fires: tuple[tuple[str, tuple[Member, ...]], ...]  # (module source, values refused)
    quiet: tuple[str, ...]  # module sources where nothing is refused


_HEAD = "class TestFoo(TestCase):\n    def test_a(self, device):\n        pass\n"
_PLAIN = "class TestFoo(TestCase):\n    def test_a(self):\n        pass\n"


def _options_out_of_sight(cls: TestClassFacts) -> Refusal | None:
    for inst in cls.instantiations:
        if inst.positional or inst.star:
            what = f"passes {', '.join(inst.positional)} by position" if inst.positional else "passes *args / **kwargs"
            return Refusal(
                "options-out-of-sight", MEMBERS, f"line {inst.line}: instantiate_device_type_tests {what}", inst.line
            )
    return None


def _class_only_decorator(cls: TestClassFacts) -> Refusal | None:
    names = [n for n in cls.decorator_names if n in FORBIDDEN_ONLY_DECORATORS]
    if not names:
        return None
    return Refusal(
        "class-only-decorator",
        (Member.ACCELERATOR,),
        f"line {cls.line}: class {cls.name} is decorated with @{names[0]}",
        cls.line,
    )


def _hidden_instantiation(cls: TestClassFacts) -> Refusal | None:
    if cls.instantiations or not cls.hidden_instantiations:
        return None
    inst = cls.hidden_instantiations[0]
    return Refusal(
        "hidden-instantiation",
        MEMBERS,
        f"line {inst.line}: {cls.name} is instantiated only under try/except* or match",
        inst.line,
    )


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        name="options-out-of-sight",
        why="the linter reads only_for/except_for/allow_* as keyword arguments only; passed by "
        "position or through *args/**kwargs they still restrict the devices, so the linter "
        "would check the label against options it cannot see",
        pattern=Pattern.KEYWORD_ARGS,
        find=_options_out_of_sight,
        fires=(
            (_HEAD + "instantiate_device_type_tests(TestFoo, globals(), None, 'cuda')\n", MEMBERS),
            (_HEAD + "instantiate_device_type_tests(TestFoo, globals(), **OPTS)\n", MEMBERS),
            (_HEAD + "instantiate_device_type_tests(TestFoo, *ARGS)\n", MEMBERS),
        ),
        quiet=(_HEAD + "instantiate_device_type_tests(TestFoo, globals(), only_for='cuda')\n",),
    ),
    Deviation(
        name="class-only-decorator",
        why="the linter checks @onlyCUDA-style guards on test methods only; on the class they "
        "still skip every test outside that device, so ACCELERATOR would be false",
        pattern=Pattern.CUDA_TO_ACCELERATOR,
        find=_class_only_decorator,
        fires=(
            (
                "@onlyOn(['cuda'])\n" + _HEAD + "instantiate_device_type_tests(TestFoo, globals())\n",
                (Member.ACCELERATOR,),
            ),
        ),
        quiet=("@onlyAccelerator\n" + _HEAD + "instantiate_device_type_tests(TestFoo, globals())\n",),
    ),
    Deviation(
        name="hidden-instantiation",
        why="the linter does not look inside try/except* or match blocks; a class instantiated "
        "only there would pass as GENERIC although its tests run per device",
        pattern=Pattern.MOVE_INSTANTIATION,
        find=_hidden_instantiation,
        fires=(
            (
                _PLAIN + "try:\n    pass\nexcept* ValueError:\n    instantiate_device_type_tests(TestFoo, globals())\n",
                MEMBERS,
            ),
        ),
        quiet=(_PLAIN + "try:\n    instantiate_device_type_tests(TestFoo, globals())\nexcept ValueError:\n    pass\n",),
    ),
)


def refusals(cls: TestClassFacts) -> list[Refusal]:
    """Every deviation that applies to `cls`."""
    return [r for r in (d.find(cls) for d in DEVIATIONS) if r is not None]


def deviation(name: str) -> Deviation:
    return next(d for d in DEVIATIONS if d.name == name)
