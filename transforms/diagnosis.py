"""A precise diagnosis of a test class that no label fits, and the advice that follows.

For every test of a class it records: whether it takes `device`, its guards
(`@onlyCPU`, `@onlyCUDA`, `@onlyOn(...)`, `@onlyAccelerator`, `skipIf(not TEST_CUDA)`
...), the `torch.cuda.*` APIs it uses (with the `torch.accelerator` / `torch.Stream`
equivalent from `CUDA_EQUIVALENTS`, or none), and the device set it runs on today;
for the class: how it is instantiated and the device set that gives.  `advise`
turns that into the names of the restructuring transforms (transforms/restructure/)
that fit, never one that would silently drop a device a test runs on today, and
says why the rest stays manual.

Device sets are spelled over `cpu`, `cuda`, `mps`, `xpu`, other device names a
whitelist spells out (`meta`, ...) and `other-accelerators` (HPU, PrivateUse1 and
the like, which the default device list includes whenever they are present);
`generic` means "runs once, without a device" (a GENERIC test).

Pure and `ast`-only, like analysis.py.  `diagnose(tree, text)` is the precise
entry point; `diagnose_facts(cls)` works from a `TestClassFacts` alone (no
access to the method bodies), for callers that only have the facts.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from transforms import analysis, class_reading
from transforms.facts import UNKNOWN, Instantiation, TestClassFacts

GENERIC = "generic"
OTHER = "other-accelerators"
ACCELERATORS = ("cuda", "mps", "xpu")
# Devices a whitelist may name that dropping it keeps (mps / xpu with their allow_* flag).
DEFAULT_LIST = ("cpu", "cuda", OTHER)
_ORDER = ("cpu", "cuda", "mps", "xpu", OTHER)

# torch.cuda.<name> -> the device-generic spelling in torch 2.14 (None: CUDA only, or no
# drop-in equivalent).  One table, read by the diagnosis and by cuda-to-accelerator.
CUDA_EQUIVALENTS: Mapping[str, str | None] = {
    "is_available": "torch.accelerator.is_available",
    "device_count": "torch.accelerator.device_count",
    "current_device": "torch.accelerator.current_device_index",
    "set_device": "torch.accelerator.set_device_index",
    "synchronize": "torch.accelerator.synchronize",
    "current_stream": "torch.accelerator.current_stream",
    "set_stream": "torch.accelerator.set_stream",
    "Stream": "torch.Stream",
    "Event": "torch.Event",
    "empty_cache": "torch.accelerator.empty_cache",
    "memory_allocated": "torch.accelerator.memory_allocated",
    "max_memory_allocated": "torch.accelerator.max_memory_allocated",
    "memory_reserved": "torch.accelerator.memory_reserved",
    "max_memory_reserved": "torch.accelerator.max_memory_reserved",
    "memory_stats": "torch.accelerator.memory_stats",
    "reset_peak_memory_stats": "torch.accelerator.reset_peak_memory_stats",
    "reset_accumulated_memory_stats": "torch.accelerator.reset_accumulated_memory_stats",
    # CUDA only: the accelerator API differs (torch.accelerator.Graph is not a drop-in
    # CUDAGraph) or does not exist.
    "CUDAGraph": None,
    "graph": None,
    "graphs": None,
    "make_graphed_callables": None,
    "get_device_capability": None,
    "get_device_properties": None,
    "get_arch_list": None,
    "is_bf16_supported": None,
    "mem_get_info": None,
    "nvtx": None,
    "jiterator": None,
    "cudart": None,
    "nccl": None,
    "comm": None,
    "amp": None,
    "stream": None,
    "ExternalStream": None,
    "_sleep": None,
}

# Method decorators that restrict the devices a test runs on -> the devices kept.
_NATIVE = ("cpu", "cuda", "mps", "xpu")
DEVICE_GUARDS: Mapping[str, tuple[str, ...]] = {
    "onlyCPU": ("cpu",),
    "onlyCUDA": ("cuda",),
    "onlyMPS": ("mps",),
    "onlyXPU": ("xpu",),
    "onlyHPU": ("hpu",),
    "onlyPRIVATEUSE1": ("privateuse1",),
    "onlyCUDAAndPRIVATEUSE1": ("cuda", "privateuse1"),
    "onlyNativeDeviceTypes": _NATIVE,
}
ACCELERATOR_GUARD = "onlyAccelerator"
# Conditions of skipIf/skipUnless that need a CUDA machine (not a device restriction).
_CUDA_CONDITIONS = ("TEST_CUDA", "TEST_MULTIGPU", "torch.cuda.is_available", "TEST_CUDNN")

# The restructuring transforms, with what each does (the advice text).
ADVICE: Mapping[str, str] = {
    "keyword-args": (
        "pass only_for/except_for/allow_* of instantiate_device_type_tests as keywords (the linter reads keywords only)"
    ),
    "inline-only-for": "inline the module-level literal the only_for/except_for name is bound to",
    "drop-only-for": (
        "drop the only_for whitelist: with cpu listed, ACCELERATOR on the default device list "
        "(keeps every listed device, adds the other accelerators: a widening); accelerators "
        "only, except_for=('cpu',) with allow_mps/allow_xpu=True where listed"
    ),
    "split-class": (
        "split the class: a test-less base with the shared members, the device-free tests "
        "in a GENERIC class (keeps the name), the device tests in a class per guard "
        "(@onlyCPU -> CPU, CUDA-only APIs -> CUDA, unguarded -> ACCELERATOR)"
    ),
    "cuda-to-accelerator": (
        "@onlyCUDA -> @onlyAccelerator and torch.cuda.<fn> -> its torch.accelerator "
        "equivalent, where every CUDA-specific use of the test has one"
    ),
    "inject-device": (
        "give the tests a `device` parameter in place of hard-coded 'cuda' / .cuda() (manual: no transform does this)"
    ),
}


@dataclass(frozen=True)
class CudaUse:
    api: str  # "torch.cuda.synchronize"
    line: int
    equivalent: str | None


@dataclass(frozen=True)
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

    @property
    def cuda_only_apis(self) -> tuple[str, ...]:
        return tuple(sorted({u.api for u in self.cuda_uses or () if u.equivalent is None}))

    @property
    def accelerator_guarded(self) -> bool:
        return ACCELERATOR_GUARD in self.guards


@dataclass(frozen=True)
class ClassDiagnosis:
    name: str
    line: int
    instantiation: str | None  # the call's text, None when not instantiated
    positional: tuple[str, ...]  # slots passed positionally (only_for, ...)
    only_for: object  # facts.DeviceList
    only_for_name: str | None  # `only_for=NAME`: the name
    only_for_literal: tuple[str, ...] | None  # ... and the literal it is bound to once
    devices: tuple[str, ...]  # the class's device set today ("generic" when not instantiated)
    tests: tuple[TestDiagnosis, ...]
    advice: tuple[str, ...] = ()  # transform names, in the order they apply
    manual: tuple[str, ...] = ()  # why (part of) the class stays manual
    widening: tuple[str, ...] = ()  # the advice adds devices: which and why


# --------------------------------------------------------------------------- device sets


def ordered(devices: Iterable[str]) -> tuple[str, ...]:
    found = set(devices)
    known = [d for d in _ORDER if d in found]
    return tuple(known + sorted(found - set(_ORDER)))


def instantiated_devices(
    only_for: object = None, except_for: object = None, allow_mps: object = None, allow_xpu: object = None
) -> tuple[str, ...] | None:
    """The devices `instantiate_device_type_tests` makes a class for; None when unknown."""
    if UNKNOWN in (only_for, except_for, allow_mps, allow_xpu):
        return None
    pool = list(DEFAULT_LIST) + (["mps"] if allow_mps is True else []) + (["xpu"] if allow_xpu is True else [])
    if isinstance(only_for, tuple):
        wanted = {d.lower() for d in only_for}
        # Names off the default list (meta, lazy, hpu...) stay as written: they may exist.
        pool = [d for d in pool if d in wanted] + sorted(wanted - set(_ORDER) - {"mps", "xpu"})
    if isinstance(except_for, tuple):
        pool = [d for d in pool if d not in {d.lower() for d in except_for}]
    return ordered(pool)


def class_devices(inst: Instantiation | None) -> tuple[str, ...] | None:
    if inst is None:
        return (GENERIC,)
    return instantiated_devices(*(inst.actual(o) for o in ("only_for", "except_for", "allow_mps", "allow_xpu")))


def guarded(
    devices: tuple[str, ...] | None, guard_devices: tuple[str, ...] | None, accelerator: bool
) -> tuple[str, ...]:
    if devices is None:
        return ("unknown",)
    if devices == (GENERIC,):
        return devices
    kept = [
        d
        for d in devices
        if guard_devices is None or d in guard_devices or (d == OTHER and any(g not in _ORDER for g in guard_devices))
    ]
    if accelerator:
        kept = [d for d in kept if d != "cpu"]
    return ordered(kept)


# --------------------------------------------------------------------------- reading tests


def _callee(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    name = class_reading.dotted_name(target)
    return name if name is not None else ast.unparse(target)


def _strings(nodes: Iterable[ast.expr]) -> list[str] | None:
    out: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value.lower())
        elif isinstance(node, (ast.Tuple, ast.List)):
            inner = _strings(node.elts)
            if inner is None:
                return None
            out += inner
        else:
            return None
    return out


def read_guards(
    decorators: Iterable[ast.expr],
) -> tuple[tuple[str, ...], tuple[str, ...] | None, tuple[str, ...], bool]:
    """(device guards as written, devices they keep or None, machine guards, parametrized)."""
    guards: list[str] = []
    keep: set | None = None
    machine: list[str] = []
    parametrized = False
    for node in decorators:
        name = _callee(node)
        last = name.rsplit(".", 1)[-1]
        args = node.args if isinstance(node, ast.Call) else []
        devices: tuple[str, ...] | None = None
        if last in DEVICE_GUARDS:
            devices = DEVICE_GUARDS[last]
        elif last in ("onlyOn", "onlyNativeDeviceTypesAnd"):
            listed = _strings(args)
            base = _NATIVE if last == "onlyNativeDeviceTypesAnd" else ()
            devices = tuple(base) + tuple(listed) if listed is not None else ("unknown",)
        elif last == ACCELERATOR_GUARD:
            guards.append(name)
            continue
        elif last in ("skipIf", "skipUnless") and args:
            cond = ast.unparse(args[0])
            if any(c in cond for c in _CUDA_CONDITIONS):
                machine.append(f"{last}({cond})")
            continue
        elif last in ("parametrize", "dtypes", "dtypesIfCUDA", "dtypesIfCPU", "ops", "modules"):
            parametrized = True
            continue
        else:
            continue
        guards.append(name)
        keep = set(devices) if keep is None else keep & set(devices)
    return tuple(guards), (ordered(keep) if keep is not None else None), tuple(machine), parametrized


def cuda_uses(fn: ast.AST) -> tuple[CudaUse, ...]:
    """Every `torch.cuda.<name>` reference in `fn` (decorators excluded), with its equivalent."""
    found: list[CudaUse] = []
    body = fn.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else [fn]
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute) and class_reading.dotted_name(node.value) == "torch.cuda":
                found.append(CudaUse(f"torch.cuda.{node.attr}", node.lineno, CUDA_EQUIVALENTS.get(node.attr)))
    return tuple(sorted(found, key=lambda u: (u.line, u.api)))


# --------------------------------------------------------------------------- module constants


def module_literals(tree: ast.Module) -> dict[str, tuple[ast.Assign, tuple[str, ...]]]:
    """Names bound exactly once in the whole module, at module level, to a string or a
    tuple/list of strings: name -> (the assignment, the strings)."""
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for n in node.names:
                stores[n] = stores.get(n, 0) + 2
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = (alias.asname or alias.name).split(".")[0]
                stores[bound] = stores.get(bound, 0) + 2
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores[node.name] = stores.get(node.name, 0) + 2
    out: dict[str, tuple[ast.Assign, tuple[str, ...]]] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stores.get(stmt.targets[0].id) == 1
        ):
            value = stmt.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out[stmt.targets[0].id] = (stmt, (str(value.value),))
            elif (
                isinstance(value, (ast.Tuple, ast.List))
                and value.elts
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)
            ):
                out[stmt.targets[0].id] = (stmt, tuple(str(e.value) for e in value.elts if isinstance(e, ast.Constant)))
    return out


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def positional_slots(call: ast.Call) -> tuple[str, ...]:
    return tuple(
        slot
        for index, slot in analysis._POSITIONAL_SLOTS.items()
        if index < len(call.args) and not isinstance(call.args[index], ast.Starred)
    )


# --------------------------------------------------------------------------- diagnosis


def _instantiation_calls(tree: ast.Module) -> dict[int, ast.Call]:
    return {
        stmt.value.lineno: stmt.value
        for stmt in analysis._module_level(tree.body)
        if isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and analysis._call_kind(stmt.value)[0] == analysis.INSTANTIATE_DEVICE
    }


def class_nodes(tree: ast.Module) -> dict[int, ast.ClassDef]:
    return {s.lineno: s for s in analysis._module_level(tree.body) if isinstance(s, ast.ClassDef)}


def diagnose(tree: ast.Module, text: str | None = None) -> tuple[ClassDiagnosis, ...]:
    """A diagnosis, with advice, for every test class of the module."""
    facts = analysis.analyse(tree, text)
    nodes = class_nodes(tree)
    calls = _instantiation_calls(tree)
    literals = module_literals(tree)
    return tuple(_diagnose(cls, nodes.get(cls.line), calls, literals) for cls in facts.classes)


def diagnose_facts(cls: TestClassFacts) -> ClassDiagnosis:
    """The same from the facts alone: no method bodies (CUDA API uses unknown), guards by
    name only, no module constants."""
    return _diagnose(cls, None, {}, None)


def _diagnose(
    cls: TestClassFacts,
    node: ast.ClassDef | None,
    calls: Mapping[int, ast.Call],
    literals: Mapping[str, tuple[ast.Assign, tuple[str, ...]]] | None,
) -> ClassDiagnosis:
    """`literals` None: the module is unknown (facts only); a name passed as only_for may
    then be a literal bound once, and inline-only-for is advised for the transform to check."""
    inst = cls.instantiations[-1] if cls.instantiations else None
    call = calls.get(inst.line) if inst is not None else None
    if call is None and inst is not None and inst.text:
        try:
            parsed = ast.parse(inst.text).body[0]
            call = parsed.value if isinstance(parsed, ast.Expr) and isinstance(parsed.value, ast.Call) else None
        except SyntaxError:
            call = None
    only_for = inst.actual("only_for") if inst is not None else None  # positional ones too
    except_for = inst.actual("except_for") if inst is not None else None
    name = literal = None
    if call is not None:
        arg = _keyword(call, "only_for")
        if isinstance(arg, ast.Name):
            name = arg.id
            if literals is not None and name in literals:
                literal = literals[name][1]
                only_for = literal
        arg = _keyword(call, "except_for")
        if isinstance(arg, ast.Name) and literals is not None and arg.id in literals:
            except_for = literals[arg.id][1]
    devices = (
        class_devices(inst)
        if inst is None
        else instantiated_devices(only_for, except_for, inst.actual("allow_mps"), inst.actual("allow_xpu"))
    )
    fns = {}
    if node is not None:
        fns = {s.lineno: s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    tests = []
    for m in cls.test_methods:
        fn = fns.get(m.line)
        if fn is not None:
            guards, keep, machine, param = read_guards(fn.decorator_list)
            uses: tuple[CudaUse, ...] | None = cuda_uses(fn)
        else:
            guards, keep, machine, param = read_guards(ast.Name(d) for d in m.decorators)
            uses = None
        if inst is not None:
            test_devices = guarded(devices, keep, ACCELERATOR_GUARD in guards)
        else:
            test_devices = ("not-instantiated",) if m.takes_device else (GENERIC,)
        tests.append(TestDiagnosis(m.name, m.line, m.takes_device, guards, keep, machine, uses, test_devices, param))
    diag = ClassDiagnosis(
        name=cls.name,
        line=cls.line,
        instantiation=inst.text if inst is not None else None,
        positional=positional_slots(call) if call is not None else (),
        only_for=inst.actual("only_for") if inst else None,
        only_for_name=name,
        only_for_literal=literal,
        devices=devices or ("unknown",),
        tests=tuple(tests),
    )
    return advise(diag, inst, module_known=literals is not None)


# --------------------------------------------------------------------------- advice


def test_target(t: TestDiagnosis, single: str | None = None, convert_cuda: bool = True) -> str | None:
    """The class value a test belongs in after restructuring, or None (manual). `single`:
    the value of a one-device only_for (every device test goes there); `convert_cuda`:
    an @onlyCUDA test without CUDA-only APIs counts as ACCELERATOR (cuda-to-accelerator
    will convert it); split-class, which runs after it, passes False."""
    if not t.takes_device:
        return "GENERIC"
    if single is not None:
        return single
    if t.guard_devices is None:
        return None if (t.accelerator_guarded and t.cuda_only_apis) else "ACCELERATOR"
    if t.guard_devices == ("cpu",):
        return "CPU"
    if t.guard_devices == ("cuda",) and t.cuda_uses is not None:
        return "ACCELERATOR" if convert_cuda and not t.cuda_only_apis else "CUDA"
    return None


def _drop_only_for(listed: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
    """(None or why not, widening notes) for dropping a whitelist of several devices."""
    lowered = tuple(d.lower() for d in listed)
    off = [d for d in lowered if d not in ("cpu",) + ACCELERATORS]
    if off:
        return f"only_for lists {', '.join(off)}, which no default device list carries", ()
    before = instantiated_devices(lowered, None, "mps" in lowered or None, "xpu" in lowered or None)
    after = instantiated_devices(
        None, None if "cpu" in lowered else ("cpu",), "mps" in lowered or None, "xpu" in lowered or None
    )
    added = [d for d in after or () if d not in (before or ())]
    note = f"drop-only-for widens only_for={listed!r}: adds {', '.join(added)}" if added else ""
    return None, ((note,) if note else ())


def advise(diag: ClassDiagnosis, inst: Instantiation | None, module_known: bool = True) -> ClassDiagnosis:
    advice: list[str] = []
    manual: list[str] = []
    widening: list[str] = []
    if diag.positional:
        advice.append("keyword-args")
    only_for = diag.only_for
    if only_for == UNKNOWN:
        if diag.only_for_literal is not None:
            advice.append("inline-only-for")
            only_for = diag.only_for_literal
        elif diag.only_for_name is not None and not module_known:
            advice.append("inline-only-for")  # if the name is bound once to a literal
        elif diag.only_for_name is not None:
            manual.append(f"only_for={diag.only_for_name} is not bound once, at module level, to a literal")
        else:
            manual.append("only_for is not a literal; cannot tell which devices the tests run on")
    if isinstance(only_for, tuple) and len(only_for) > 1:
        why_not, notes = _drop_only_for(only_for)
        if why_not:
            manual.append(why_not)
        else:
            advice.append("drop-only-for")
            widening += notes
    tests = diag.tests
    device_tests = [t for t in tests if t.takes_device]
    free = [t for t in tests if not t.takes_device]
    if inst is None and device_tests:
        manual.append("tests take `device` but the class is not passed to instantiate_device_type_tests")
    if inst is not None and not device_tests:
        manual.append("instantiated, but no test takes `device` (inject-device)")
        advice.append("inject-device")
    if inst is not None and device_tests:
        single = isinstance(only_for, tuple) and len(only_for) == 1
        targets = {t.name: (diag.name if single else test_target(t)) for t in device_tests}
        for t in device_tests:
            if targets[t.name] is None:
                manual.append(_why_manual(t))
            elif not t.devices and "unknown" not in diag.devices:
                manual.append(f"{t.name}: its guards leave no device of the class ({', '.join(t.guards)})")
        if not single:
            converts = [t for t in device_tests if t.guard_devices == ("cuda",) and targets[t.name] == "ACCELERATOR"]
            if converts:
                advice.append("cuda-to-accelerator")
                added = [d for d in diag.devices if d not in ("cpu", "cuda")]
                if added:
                    widening.append(
                        f"cuda-to-accelerator widens {', '.join(t.name for t in converts)}: adds {', '.join(added)}"
                    )
            kinds = {targets[t.name] for t in device_tests}
            if None not in kinds and (free or len(kinds) > 1 or kinds & {"CPU", "CUDA"}):
                advice.append("split-class")
        elif free:
            advice.append("split-class")
        if free and any(t.parametrized for t in free):
            manual.append(
                "device-free tests are parametrized: a GENERIC class would need instantiate_parametrized_tests"
            )
    return dataclasses.replace(diag, advice=tuple(advice), manual=tuple(manual), widening=tuple(widening))


def _why_manual(t: TestDiagnosis) -> str:
    if t.guard_devices == ("cuda",) and t.cuda_uses is None:
        return (
            f"{t.name}: @onlyCUDA; whether it becomes @onlyAccelerator or moves to a CUDA class "
            "depends on the torch.cuda APIs it uses (run with --restructure to see)"
        )
    if t.accelerator_guarded:
        return f"{t.name}: @onlyAccelerator but uses CUDA-only {', '.join(t.cuda_only_apis)}"
    return f"{t.name}: guard {', '.join(t.guards)} keeps {', '.join(t.guard_devices or ())}; no transform fits"


def refine(decision, diag: ClassDiagnosis):
    """A classify.Decision with its advice replaced by the precise diagnosis (method bodies
    read): the transforms that fit, the widening they cause and what stays manual."""
    message = decision.message.split("; fitting pattern:")[0]
    if diag.advice:
        message += f"; fitting transform: {', '.join(diag.advice)} (decouple apply --restructure auto)"
    if diag.widening:
        message += f"; note: {'; '.join(diag.widening)}"
    if diag.manual:
        message += f"; manual: {'; '.join(diag.manual)}"
    return dataclasses.replace(decision, patterns=diag.advice, message=message)
