"""A precise diagnosis of a test class that no label fits, and the advice that follows.

For every test of a class it records: whether it takes `device`, its guards, the
`torch.cuda.*` APIs it uses (with their equivalent, or none) and the device set it runs on
today (`reading.py`, `devices.py`); for the class: how it is instantiated and the device set
that gives.  `advise` turns that into the names of the restructuring transforms
(transforms/restructure/, described in `rules/advice.py`) that fit, never one that would
silently drop a device a test runs on today, and says why the rest stays manual.

Pure and `ast`-only, like the core scan.  `diagnose(tree, text)` is the precise entry point;
`diagnose_facts(cls)` works from a `TestClassFacts` alone (no access to the method bodies),
for callers that only have the facts.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

from transforms.core import analysis
from transforms.core.device_needs import needed_value, test_needs
from transforms.core.facts import UNKNOWN, DeviceList, DeviceNeed, Instantiation, ModuleFacts, Option, TestClassFacts
from transforms.core.members import Member
from transforms.core.source_lines import split_lines
from transforms.diagnosis.devices import (
    ACCELERATOR_GUARD,
    ACCELERATORS,
    GENERIC,
    NOT_INSTANTIATED,
    UNREAD,
    class_devices,
    guarded,
    instantiated_devices,
)
from transforms.diagnosis.reading import (
    CudaUse,
    cuda_uses,
    keyword_value,
    module_literals,
    positional_slots,
    read_guards,
)
from transforms.rules.advice import WIDENING, Pattern
from transforms.rules.registry import Generation


@dataclass(frozen=True, kw_only=True)
class TestDiagnosis:
    __test__ = False

    name: str
    line: int
    takes_device: bool
    guards: tuple[str, ...]  # decorators that restrict devices, as written (callee)
    guard_devices: tuple[str, ...] | None  # devices the guards keep; None: unrestricted
    machine_guards: tuple[str, ...]  # skipIf(not TEST_CUDA) & co.: need a CUDA machine
    cuda_uses: tuple[CudaUse, ...] | None  # None: unknown (diagnosed from facts)
    devices: tuple[str, ...]  # where it runs today
    parametrized: bool = False  # has a parametrize/dtypes-style decorator
    needs: tuple[DeviceNeed, ...] = ()  # what it (or its class) needs a device for

    @property
    def cuda_only_apis(self) -> tuple[str, ...]:
        return tuple(sorted({u.api for u in self.cuda_uses or () if u.equivalent is None}))

    @property
    def accelerator_guarded(self) -> bool:
        return ACCELERATOR_GUARD in self.guards


@dataclass(frozen=True, kw_only=True)
class Widening:
    """A restructuring step that would fit the class but adds devices its tests run on (one of
    `advice.WIDENING`): advised only where widening was asked for (`diagnose(widen=True)`), else
    recorded so that it can be proposed apart ("could be widened: cuda-to-accelerator")."""

    step: Pattern
    tests: tuple[str, ...]  # the tests whose devices it widens
    adds: tuple[str, ...]  # the devices it adds

    def note(self) -> str:
        return f"{self.step} widens {', '.join(self.tests)}: adds {', '.join(self.adds)}"


@dataclass(frozen=True, kw_only=True)
class ClassDiagnosis:
    name: str
    line: int
    instantiation: str | None  # the call's text, None when not instantiated
    positional: tuple[Option, ...]  # the options passed by position
    only_for: DeviceList
    only_for_name: str | None  # `only_for=NAME`: the name
    only_for_literal: tuple[str, ...] | None  # ... and the literal it is bound to once
    devices: tuple[str, ...]  # the class's device set today ("generic" when not instantiated)
    tests: tuple[TestDiagnosis, ...]
    advice: tuple[Pattern, ...] = ()  # in the order the transforms apply
    manual: tuple[str, ...] = ()  # why (part of) the class stays manual
    widening: tuple[str, ...] = ()  # the advice adds devices: which and why
    could_widen: tuple[Widening, ...] = ()  # widening steps that fit but were not asked for
    # Not instantiated, under a generation whose GENERIC forbids accelerator calls and which only
    # declares this device: the tests that need it (`split_tests`) can move to a class of that value.
    split_device: Member | None = None
    split_tests: tuple[str, ...] = ()

    @property
    def fitting(self) -> tuple[Pattern, ...]:
        """Everything that fits: the advice, then the widening steps that were not asked for."""
        return tuple(dict.fromkeys(self.advice + tuple(w.step for w in self.could_widen)))


# --------------------------------------------------------------------------- diagnosis


def _instantiation_calls(tree: ast.Module) -> dict[int, ast.Call]:
    return {
        stmt.value.lineno: stmt.value
        for stmt in analysis.module_level(tree.body)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and analysis.instantiates_devices(stmt.value)
    }


def class_nodes(tree: ast.Module) -> dict[int, ast.ClassDef]:
    return {s.lineno: s for s in analysis.module_level(tree.body) if isinstance(s, ast.ClassDef)}


def diagnose(
    tree: ast.Module,
    text: str | None = None,
    gen: Generation | None = None,
    facts: ModuleFacts | None = None,
    only: Container[int] | None = None,
    widen: bool = False,
) -> tuple[ClassDiagnosis, ...]:
    """A diagnosis, with advice, for every test class of the module (`gen`: the generation of the
    rules the advice must satisfy; None: the one whose values exclude each other). `facts`:
    `analysis.analyse(tree, text)`, when the caller has it already. `only`: the lines of the
    classes to diagnose, when not all (each diagnosis is the same either way). `widen`: the advice
    may add devices (`advice.WIDENING`, only where such a step was named); else it keeps every
    test's devices and records the widening steps that would fit (`could_widen`)."""
    facts = facts if facts is not None else analysis.analyse(tree, text)
    nodes = class_nodes(tree)
    calls = _instantiation_calls(tree)
    # The module's constants matter only to an only_for / except_for given by name: a module whose
    # instantiations (every one read from the tree) name none is spared the walk over all its
    # nodes that finds them.
    named = any(_names_a_device_list(c) for c in calls.values()) or any(
        inst.line not in calls for cls in facts.classes for inst in cls.instantiations[-1:]
    )
    literals = module_literals(tree) if named else {}
    lines = split_lines(text) if text is not None else None
    return tuple(
        _with_split(_diagnose(cls, nodes.get(cls.line), calls, literals, lines, widen), cls, gen)
        for cls in facts.classes
        if only is None or cls.line in only
    )


def diagnose_facts(cls: TestClassFacts) -> ClassDiagnosis:
    """The same from the facts alone: no method bodies (CUDA API uses unknown), guards by
    name only, no module constants."""
    return _diagnose(cls, None, {}, None)


def _diagnose(
    cls: TestClassFacts,
    node: ast.ClassDef | None,
    calls: Mapping[int, ast.Call],
    literals: Mapping[str, tuple[ast.Assign, tuple[str, ...]]] | None,
    lines: Sequence[str] | None = None,
    widen: bool = False,
) -> ClassDiagnosis:
    """`literals` None: the module is unknown (facts only); a name passed as only_for may
    then be a literal bound once, and inline-only-for is advised for the transform to check.
    `lines`: the module's source lines, if known (a method body without the word `cuda` in them
    is not walked for its `torch.cuda` uses)."""
    inst = cls.instantiations[-1] if cls.instantiations else None
    call = calls.get(inst.line) if inst is not None else None
    if call is None and inst is not None and inst.text:
        try:
            parsed = ast.parse(inst.text).body[0]
            call = parsed.value if isinstance(parsed, ast.Expr) and isinstance(parsed.value, ast.Call) else None
        except SyntaxError:
            call = None
    only_for = inst.actual_devices(Option.ONLY_FOR) if inst is not None else None  # positional ones too
    except_for = inst.actual_devices(Option.EXCEPT_FOR) if inst is not None else None
    name = literal = None
    if call is not None:
        arg = keyword_value(call, "only_for")
        if isinstance(arg, ast.Name):
            name = arg.id
            if literals is not None and name in literals:
                literal = literals[name][1]
                only_for = literal
        arg = keyword_value(call, "except_for")
        if isinstance(arg, ast.Name) and literals is not None and arg.id in literals:
            except_for = literals[arg.id][1]
    devices = (
        class_devices(inst)
        if inst is None
        else instantiated_devices(only_for, except_for, inst.actual(Option.ALLOW_MPS), inst.actual(Option.ALLOW_XPU))
    )
    fns = {}
    if node is not None:
        fns = {s.lineno: s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    tests = []
    for m in cls.test_methods:
        fn = fns.get(m.line)
        if fn is not None:
            guards, keep, machine, param = read_guards(fn.decorator_list)
            uses: tuple[CudaUse, ...] | None = cuda_uses(fn) if lines is None or _mentions_cuda(fn, lines) else ()
        else:
            guards, keep, machine, param = read_guards(ast.Name(d) for d in m.decorators)
            uses = None
        if inst is not None:
            test_devices = guarded(devices, keep, ACCELERATOR_GUARD in guards)
        else:
            test_devices = (NOT_INSTANTIATED,) if m.takes_device else (GENERIC,)
        tests.append(
            TestDiagnosis(
                name=m.name,
                line=m.line,
                takes_device=m.takes_device,
                guards=guards,
                guard_devices=keep,
                machine_guards=machine,
                cuda_uses=uses,
                devices=test_devices,
                parametrized=param,
                needs=test_needs(cls, m),
            )
        )
    diag = ClassDiagnosis(
        name=cls.name,
        line=cls.line,
        instantiation=inst.text if inst is not None else None,
        positional=positional_slots(call) if call is not None else (),
        only_for=inst.actual_devices(Option.ONLY_FOR) if inst else None,
        only_for_name=name,
        only_for_literal=literal,
        devices=devices or (UNREAD,),
        tests=tuple(tests),
    )
    return advise(diag, inst, module_known=literals is not None, widen=widen)


def _names_a_device_list(call: ast.Call) -> bool:
    return any(isinstance(keyword_value(call, k), ast.Name) for k in ("only_for", "except_for"))


def _mentions_cuda(fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: Sequence[str]) -> bool:
    """Whether the word `cuda` is in the lines of `fn`'s body: a `torch.cuda` reference spells
    it (an identifier cannot be split across lines), so a body without it has none."""
    return any("cuda" in line for line in lines[fn.body[0].lineno - 1 : fn.end_lineno])


def split_device(cls: TestClassFacts, gen: Generation | None) -> tuple[Member, tuple[str, ...]] | None:
    """The device a non-instantiated class's device tests can move to under `gen`: GENERIC is
    refused for accelerator calls only (or accepted, though some tests need a device), the tests
    split into ones that need no device and ones that need that one device (which `gen` only
    declares), and no test of the first kind makes an accelerator call (calls outside the tests go
    to the shared base). Returns the device's value and the tests that need it."""
    if gen is None or cls.instantiations or cls.hidden_instantiations or not gen.accelerator_modules:
        return None
    broken = {v.rule for v in gen.check(cls, Member.GENERIC)}
    if not broken <= {"accelerator_availability"} or any(m.takes_device for m in cls.test_methods):
        return None
    devices = {m.name: needed_value(test_needs(cls, m)) for m in cls.test_methods}
    free = [m.name for m in cls.test_methods if not test_needs(cls, m)]
    needing = {v for v in devices.values() if v is not None}
    if not free or len(needing) != 1 or len(free) + sum(v is not None for v in devices.values()) != len(devices):
        return None
    value = needing.pop()
    if gen.rules.by_value()[value]:
        return None  # the generation checks more than the declaration for that value
    calling = {c.owner for c in cls.device_calls if gen.accelerator_modules.intersection(c.callee.split("."))}
    if any(f"{cls.name}.{name}" in calling for name in free):
        return None
    return value, tuple(name for name, v in devices.items() if v is not None)


def _with_split(diag: ClassDiagnosis, cls: TestClassFacts, gen: Generation | None) -> ClassDiagnosis:
    found = split_device(cls, gen)
    if found is None:
        return diag
    value, tests = found
    return dataclasses.replace(diag, split_device=value, split_tests=tests, advice=diag.advice + (Pattern.SPLIT_CLASS,))


# --------------------------------------------------------------------------- advice


def test_target(t: TestDiagnosis, single: Member | None = None, convert_cuda: bool = True) -> Member | None:
    """The class value a test belongs in after restructuring, or None (manual). `single`:
    the value of a one-device only_for (every device test goes there); `convert_cuda`:
    an @onlyCUDA test without CUDA-only APIs counts as ACCELERATOR (cuda-to-accelerator
    will convert it); split-class, which runs after it, passes False."""
    if not t.takes_device:
        return Member.GENERIC
    if single is not None:
        return single
    if t.guard_devices is None:
        return None if (t.accelerator_guarded and t.cuda_only_apis) else Member.ACCELERATOR
    if t.guard_devices == ("cpu",):
        return Member.CPU
    if t.guard_devices == ("cuda",) and t.cuda_uses is not None:
        return Member.ACCELERATOR if convert_cuda and not t.cuda_only_apis else Member.CUDA
    return None


def _drop_only_for(listed: tuple[str, ...], tests: tuple[str, ...]) -> tuple[str | None, Widening | None]:
    """(None or why not, the widening) for dropping a whitelist of several devices."""
    lowered = tuple(d.lower() for d in listed)
    off = [d for d in lowered if d not in ("cpu",) + ACCELERATORS]
    if off:
        return f"only_for lists {', '.join(off)}, which no default device list carries", None
    before = instantiated_devices(lowered, None, "mps" in lowered or None, "xpu" in lowered or None)
    after = instantiated_devices(
        None, None if "cpu" in lowered else ("cpu",), "mps" in lowered or None, "xpu" in lowered or None
    )
    added = tuple(d for d in after or () if d not in (before or ()))
    return None, (Widening(step=Pattern.DROP_ONLY_FOR, tests=tests, adds=added) if added else None)


@dataclass
class _Advice:
    """What `advise` finds, as it goes."""

    advice: list[Pattern] = dataclasses.field(default_factory=list)
    manual: list[str] = dataclasses.field(default_factory=list)
    widenings: list[Widening] = dataclasses.field(default_factory=list)


def advise(
    diag: ClassDiagnosis, inst: Instantiation | None, module_known: bool = True, widen: bool = False
) -> ClassDiagnosis:
    """The advice for `diag`'s class, what stays manual and why. `widen` False: no step of
    `advice.WIDENING` is advised; where one would fit it is recorded in `could_widen`, and the
    advice is what keeps every test's devices (an @onlyCUDA test goes to a CUDA class)."""
    found = _Advice()
    if diag.positional:
        found.advice.append(Pattern.KEYWORD_ARGS)
    only_for = _advise_only_for(diag, module_known, widen, found)
    device_tests = [t for t in diag.tests if t.takes_device]
    free = [t for t in diag.tests if not t.takes_device]
    if inst is None and device_tests:
        found.manual.append("tests take `device` but the class is not passed to instantiate_device_type_tests")
    if inst is not None and not device_tests:
        found.manual.append("instantiated, but no test takes `device` (inject-device)")
        found.advice.append(Pattern.INJECT_DEVICE)
    if inst is not None and device_tests:
        single = only_for[0] if isinstance(only_for, tuple) and len(only_for) == 1 else None
        if single is None:
            whitelist = isinstance(only_for, tuple) and len(only_for) > 1
            _advise_device_tests(diag, device_tests, bool(free), whitelist, widen, found)
        else:  # every device test stays in the class
            found.manual += [_no_device_left(t) for t in device_tests if not t.devices and UNREAD not in diag.devices]
        if single is not None and free:
            # A GENERIC class runs on every machine: a test that needs the one device would fail where
            # only_for kept it from being generated (every machine has a CPU).
            needing = [t for t in free if t.needs] if single.lower() != "cpu" else []
            if needing:
                found.manual.append(_why_free_needs(needing, single))
                found.advice.append(Pattern.INJECT_DEVICE)
            else:
                found.advice.append(Pattern.SPLIT_CLASS)
        if free and any(t.parametrized for t in free):
            found.manual.append(
                "device-free tests are parametrized: a GENERIC class would need instantiate_parametrized_tests"
            )
    advice = found.advice if widen else [a for a in found.advice if a not in WIDENING]
    return dataclasses.replace(
        diag,
        advice=tuple(advice),
        manual=tuple(found.manual),
        widening=tuple(w.note() for w in found.widenings) if widen else (),
        could_widen=() if widen else tuple(found.widenings),
    )


def _advise_only_for(diag: ClassDiagnosis, module_known: bool, widen: bool, found: _Advice) -> DeviceList:
    """The advice on the class's only_for; returns it as far as it can be read (a name bound to a
    literal: the literal)."""
    only_for = diag.only_for
    if only_for == UNKNOWN:
        if diag.only_for_literal is not None:
            found.advice.append(Pattern.INLINE_ONLY_FOR)
            only_for = diag.only_for_literal
        elif diag.only_for_name is not None and not module_known:
            found.advice.append(Pattern.INLINE_ONLY_FOR)  # if the name is bound once to a literal
        elif diag.only_for_name is not None:
            found.manual.append(f"only_for={diag.only_for_name} is not bound once, at module level, to a literal")
        else:
            found.manual.append("only_for is not a literal; cannot tell which devices the tests run on")
    if isinstance(only_for, tuple) and len(only_for) > 1:
        why_not, widening = _drop_only_for(only_for, tuple(t.name for t in diag.tests))
        if why_not:
            found.manual.append(why_not)
        else:
            found.advice.append(Pattern.DROP_ONLY_FOR)
            found.widenings += [widening] if widening else []
            if not widen:
                found.manual.append(f"only_for={only_for!r} names several devices: no label fits a whitelist")
    return only_for


def _advise_device_tests(
    diag: ClassDiagnosis, device_tests: list[TestDiagnosis], free: bool, whitelist: bool, widen: bool, found: _Advice
) -> None:
    """The advice on the `device` tests of a class instantiated for several devices: where each
    goes (`test_target`), cuda-to-accelerator for the @onlyCUDA ones it converts, split-class
    where they go to several classes (or beside device-free tests)."""
    targets = {t.name: test_target(t, convert_cuda=widen) for t in device_tests}
    for t in device_tests:
        if targets[t.name] is None:
            found.manual.append(_why_manual(t))
        elif not t.devices and UNREAD not in diag.devices:
            found.manual.append(_no_device_left(t))
    # The @onlyCUDA tests cuda-to-accelerator would convert (whether it runs or not).
    converts = [t for t in device_tests if t.guard_devices == ("cuda",) and test_target(t) == Member.ACCELERATOR]
    added = tuple(d for d in diag.devices if d not in ("cpu", "cuda"))
    if converts:
        found.advice.append(Pattern.CUDA_TO_ACCELERATOR)
        if added:
            found.widenings.append(
                Widening(step=Pattern.CUDA_TO_ACCELERATOR, tests=tuple(t.name for t in converts), adds=added)
            )
    kinds = set(targets.values())
    # A whitelist of several devices stays until drop-only-for (a widening) removes it.
    if None not in kinds and (free or len(kinds) > 1) and not (whitelist and not widen):
        found.advice.append(Pattern.SPLIT_CLASS)
    elif not free and len(kinds) == 1 and kinds <= {Member.CPU, Member.CUDA}:
        value = str(kinds.pop())
        found.manual.append(
            f"every test keeps to {value.lower()} (@only{value}): only_for={value.lower()!r} "
            "in its instantiation fits (by hand)"
        )


def _no_device_left(t: TestDiagnosis) -> str:
    return f"{t.name}: its guards leave no device of the class ({', '.join(t.guards)})"


def _why_free_needs(tests: list[TestDiagnosis], device: str) -> str:
    """Why device-free tests that need the one device of the class's only_for stay in it."""
    which = " and ".join(f"{t.name} (line {t.needs[0].line}: {t.needs[0].what})" for t in tests[:2])
    more = f" (+{len(tests) - 2} more)" if len(tests) > 2 else ""
    one = len(tests) == 1
    return (
        f"{which}{more} {'takes' if one else 'take'} no `device` but {'needs' if one else 'need'} {device}: "
        f"only_for={device!r} keeps {'it' if one else 'them'} to machines that have one, a GENERIC class "
        f"would run {'it' if one else 'them'} on every machine (inject-device)"
    )


def _why_manual(t: TestDiagnosis) -> str:
    if t.guard_devices == ("cuda",) and t.cuda_uses is None:
        return (
            f"{t.name}: @onlyCUDA; whether it becomes @onlyAccelerator or moves to a CUDA class "
            "depends on the torch.cuda APIs it uses (run with --restructure to see)"
        )
    if t.accelerator_guarded:
        return f"{t.name}: @onlyAccelerator but uses CUDA-only {', '.join(t.cuda_only_apis)}"
    return f"{t.name}: guard {', '.join(t.guards)} keeps {', '.join(t.guard_devices or ())}; no transform fits"
