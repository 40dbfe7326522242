"""Which devices a test needs, read from its code with `ast` (the facts behind honest labels).

A test *needs* a device when it cannot do what it tests without one:
- a guard that skips it otherwise: `@skipIf(not TEST_CUDA, ...)`, `@skipUnless(HAS_GPU, ...)`,
  a decorator of `GPU_DECORATORS` (`@requires_cuda`, `@requires_gpu_and_triton`,
  `@skip_if_lt_x_gpu(2)`, `@requires_nccl()`, ...), `if not torch.cuda.is_available():
  self.skipTest(...)`; for a class, its decorators and a module-level `if` around the class
  (`if HAS_GPU:`, `if torch.mtia.is_available() and has_triton():`) or around the module's
  `run_tests()` (or an `if not TEST_CUDA: TestCase = NoTest` that disables the module);
- data placed on the device: `device="cuda"`, `device=GPU_TYPE`, `.to("cuda:0")`, `.cuda()`,
  `with torch.device("cuda")`, `torch.set_default_device("xpu")`, `device = "cuda"`;
- a device API called: `torch.cuda.synchronize()`, `torch.backends.cuda.enable_flash_sdp(...)`,
  `torch.xpu.*`, `torch.mps.*`, `torch.accelerator.synchronize()` (some accelerator);
- any of these in a method of the class the test (or a setUp-style method) uses on `self`
  (`self._capture()`, `self.run_subtests(..., self._check)`): one level, the helper's own needs.
A device used only as a value (`hash(torch.device("cuda:0"))`, `f(5, "cuda")`,
`x.device.type == "cuda"`), a probe or a device comparison that only chooses a branch
(`if torch.cuda.is_available():`, `if t.device.type == "cuda":`) and what that branch does
(`x = x.cuda()` under it: the test runs without the device too; unless the other branch skips the
test, a guard), and the lazy no-op calls (`torch.cuda.manual_seed(0)`) are not needs.
`skipIfRocm` only says "not on ROCm builds", which CPU tests say too: not a need either.

Each need is a `DeviceNeed` (device, line, what); `read_class` reads, in one walk over each
statement of a class body, the needs of its tests and setUp-style methods, its decorators' needs
and the calls of torch's device modules the way the newer linter's accelerator_availability rule
sees them; what the module around a class adds (guards, inherited methods) is `module_needs.py`'s.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from transforms.core.facts import DeviceNeed, Need, TestClassFacts, TestMethod, TorchCall
from transforms.core.members import Member

__all__ = [
    "DEVICE_MODULES",
    "GPU_DECORATORS",
    "SETUP_METHODS",
    "FUNCTIONS",
    "ClassDevices",
    "Flags",
    "dotted_name",
    "method_needs",
    "needed_value",
    "nodes_of",
    "read_class",
    "requires",
    "short_text",
    "source_of",
    "test_needs",
    "unique",
]

# Module-level flags that are true only with that device (the last name part is matched).
_FLAGS: Mapping[str, Need] = {
    "TEST_CUDA": Need.CUDA,
    "HAS_CUDA": Need.CUDA,
    "TEST_MULTIGPU": Need.CUDA,
    "TEST_CUDNN": Need.CUDA,
    "TEST_CUDA_GRAPH": Need.CUDA,
    "TEST_NCCL": Need.CUDA,
    "HAS_CUDA_AND_TRITON": Need.CUDA,
    "TEST_WITH_ROCM": Need.ROCM,
    "HAS_GPU": Need.GPU,
    "HAS_GPU_AND_TRITON": Need.GPU,
    "HAS_MULTIGPU": Need.GPU,
    "TEST_GPU": Need.GPU,
    "TEST_XPU": Need.XPU,
    "HAS_XPU": Need.XPU,
    "HAS_XPU_AND_TRITON": Need.XPU,
    "TEST_MPS": Need.MPS,
    "HAS_MPS": Need.MPS,
    "TEST_HPU": Need.HPU,
    "CUDA_HOME": Need.CUDA,  # the CUDA toolkit
    "ROCM_HOME": Need.ROCM,
}
_SM_FLAG = re.compile(r"^SM\d+OrLater$")  # CUDA compute capability
# Probes: true only with the device, but calling them does not need one.
_PROBES: Mapping[str, Need] = {
    "torch.cuda.is_available": Need.CUDA,
    "torch.cuda.device_count": Need.CUDA,
    "torch.xpu.is_available": Need.XPU,
    "torch.xpu.device_count": Need.XPU,
    "torch.backends.mps.is_available": Need.MPS,
    "torch.mps.is_available": Need.MPS,
    "torch.accelerator.is_available": Need.GPU,
    "torch.accelerator.device_count": Need.GPU,
    "torch.mtia.is_available": Need.MTIA,
    "torch.mtia.device_count": Need.MTIA,
    "torch.hpu.is_available": Need.HPU,
    "torch.hpu.device_count": Need.HPU,
}
_ROCM_BUILD = "torch.version.hip"
# The decorators that skip a test (or a class) without the device, matched on the last part of
# their name: the one table of them.  One given `allow_cpu=` (`@skip_if_lt_x_gpu(2, allow_cpu=True)`)
# runs on a machine without an accelerator too: no need.
GPU_DECORATORS: tuple[tuple[re.Pattern[str], Need], ...] = (
    (re.compile(r"^requires_(multi)?cuda"), Need.CUDA),  # requires_cuda, requires_cuda_and_triton, ...
    (re.compile(r"^requires_nccl"), Need.CUDA),  # NCCL, the collectives of CUDA (and of ROCm, CUDA there)
    (re.compile(r"^requires_(multi)?gpu"), Need.GPU),  # requires_gpu, requires_gpu_and_triton, ...
    # Fewer than N accelerators (CUDA, HPU, XPU: upstream's definition has moved between them).
    (re.compile(r"^(skip_if_lt_x_gpu|skip_if_no_gpu|skip_if_not_multigpu)$"), Need.GPU),
    (re.compile(r"^requires_(xpu|xccl)"), Need.XPU),
    (re.compile(r"^requires_mps"), Need.MPS),
)
# Device API modules (by dotted prefix) and the calls of them that need no device.
_APIS: Mapping[str, Need] = {
    "torch.cuda.": Need.CUDA,
    "torch.backends.cuda.": Need.CUDA,
    "torch.xpu.": Need.XPU,
    "torch.mps.": Need.MPS,
    "torch.backends.mps.": Need.MPS,
    "torch.accelerator.": Need.GPU,
    "torch.mtia.": Need.MTIA,
    "torch.hpu.": Need.HPU,
}
_NO_DEVICE_CALLS = frozenset(
    {"manual_seed", "manual_seed_all", "seed", "seed_all", "is_initialized", "current_accelerator", "get_device_name"}
)
_DEVICE_STRING = re.compile(r"^(cuda|xpu|mps|mtia|hpu)(:\d+)?$")
_DEVICE_VALUE_NAMES = {"GPU_TYPE": Need.GPU}
_SKIP_CALLS = {"skipTest", "SkipTest", "skip"}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Methods every test of a class runs: their needs are the class's.
SETUP_METHODS = frozenset({"setUp", "setUpClass", "tearDown", "tearDownClass", "asyncSetUp"})
# Cheap pre-check: a statement without any of these (lowercased) words, `SM<digit>` or a module
# flag names no device (a part of a callee comes from an identifier or a string in the source).
_DEVICE_WORDS = tuple("cuda cudnn xpu mps gpu hip rocm accelerator hpu ipu mtia xla nccl xccl".split())
_SM_TEXT = re.compile(r"SM\d")
# torch's device modules (torch.cuda, torch.backends.mps, torch.accelerator, ...): a call whose
# callee names one of them is what the newer linter's accelerator_availability rule looks for.
DEVICE_MODULES = frozenset({"accelerator", "cuda", "hpu", "ipu", "mps", "mtia", "xla", "xpu"})


# A need -> the value of the one device it ties a test to (GPU: some accelerator, none in particular;
# ROCm: PyTorch's CUDA device on AMD).
_VALUE_OF: Mapping[Need, Member | None] = {
    Need.CUDA: Member.CUDA,
    Need.ROCM: Member.CUDA,
    Need.XPU: Member.XPU,
    Need.MPS: Member.MPS,
    Need.GPU: None,
    Need.MTIA: None,
    Need.HPU: None,
}


def test_needs(cls: TestClassFacts, m: TestMethod) -> tuple[DeviceNeed, ...]:
    """Everything test `m` needs: its own needs and its class's."""
    return cls.needs + m.needs


def needed_value(needs: Iterable[DeviceNeed]) -> Member | None:
    """The one device value `needs` tie a test to (None: none, some accelerator, or several)."""
    values = {_VALUE_OF[n.device] for n in needs} - {None}
    return values.pop() if len(values) == 1 else None


def nodes_of(root: ast.AST) -> list[ast.AST]:
    """Every node under `root` (itself first), breadth first as `ast.walk` gives them, without
    its generators (the walk is most of what reading the needs costs)."""
    out = [root]
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                out.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                out.append(value)
    return out


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def short_text(node: ast.AST) -> str:
    """`node` as source, cut to 80 characters (for evidence)."""
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."


# --------------------------------------------------------------------------- conditions


# Flags a module defines from others (`TEST_MULTIGPU = TEST_CUDA and ...`): name -> device.
Flags = Mapping[str, Need]


def _atom(node: ast.expr, flags: Flags) -> Need | None:
    """The device an atom of a condition is true only with: a flag (the module's own too), a
    probe call, a comparison of a probe (`torch.cuda.device_count() >= 2`), the ROCm build."""
    if isinstance(node, ast.Compare):
        return _atom(node.left, flags)
    if isinstance(node, ast.Call):
        return _PROBES.get(dotted_name(node.func) or "")
    name = dotted_name(node)
    if name is None:
        return None
    if name == _ROCM_BUILD:
        return Need.ROCM
    last = name.rsplit(".", 1)[-1]
    if last in flags and "." not in name:
        return flags[last]
    if last in _FLAGS:
        return _FLAGS[last]
    return Need.CUDA if _SM_FLAG.match(last) else None


def requires(cond: ast.expr, truth: bool, flags: Flags = {}) -> dict[Need, ast.expr]:  # noqa: B006 - read only
    """The devices `cond` needs in order to evaluate to `truth` (device -> the atom that says so)."""
    if isinstance(cond, ast.UnaryOp) and isinstance(cond.op, ast.Not):
        return requires(cond.operand, not truth, flags)
    if isinstance(cond, ast.BoolOp):
        every = isinstance(cond.op, ast.And) == truth  # all operands take `truth`
        parts = [requires(v, truth, flags) for v in cond.values]
        if every:
            out: dict[Need, ast.expr] = {}
            for part in parts:
                out.update(part)
            return out
        # Some operand: only what all of them share (ROCm counts as CUDA, PyTorch's device there).
        family = [{Need.CUDA if n == Need.ROCM else n: atom for n, atom in p.items()} for p in parts]
        common = set(family[0]).intersection(*family[1:])
        return {need: family[0][need] for need in common}
    need = _atom(cond, flags)
    return {need: cond} if need is not None and truth else {}


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _needs_of_decorator(dec: ast.expr, flags: Flags) -> list[DeviceNeed]:
    target = dec.func if isinstance(dec, ast.Call) else dec
    last = (dotted_name(target) or "").rsplit(".", 1)[-1]
    for pattern, need in GPU_DECORATORS:
        if pattern.match(last):
            if isinstance(dec, ast.Call) and any(
                kw.arg == "allow_cpu" and not _is_false(kw.value) for kw in dec.keywords
            ):
                return []  # it runs without an accelerator too
            return [DeviceNeed(need, dec.lineno, "@" + short_text(target))]
    if last in ("skipIf", "skipUnless") and isinstance(dec, ast.Call) and dec.args:
        # The test runs when a skipIf condition is false and a skipUnless condition is true.
        found = requires(dec.args[0], last == "skipUnless", flags)
        return [DeviceNeed(need, dec.lineno, f"@{last}({short_text(dec.args[0])})") for need in found]
    return []


# --------------------------------------------------------------------------- a function's body


def _device_of(node: ast.expr | None) -> Need | None:
    """The device a device-valued expression names: "cuda:0", GPU_TYPE, torch.device("xpu")."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        m = _DEVICE_STRING.match(node.value)
        return Need(m.group(1)) if m else None
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            m = re.match(r"^(cuda|xpu|mps|mtia|hpu)(:|$)", head.value)
            return Need(m.group(1)) if m else None
        return None
    if isinstance(node, ast.Call) and dotted_name(node.func) == "torch.device" and node.args:
        return _device_of(node.args[0])
    name = dotted_name(node)
    return _DEVICE_VALUE_NAMES.get(name.rsplit(".", 1)[-1]) if name else None


def _placements(node: ast.AST) -> Iterator[ast.expr]:
    """The expressions `node` uses as the device to put data or work on."""
    if isinstance(node, ast.Call):
        for kw in node.keywords:
            if kw.arg in ("device", "device_type"):
                yield kw.value
        callee = dotted_name(node.func) or ""
        is_to = isinstance(node.func, ast.Attribute) and node.func.attr == "to"
        if (is_to or callee == "torch.set_default_device") and node.args:
            yield node.args[0]
    elif isinstance(node, ast.withitem):
        yield node.context_expr
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and ("device" in t.id.lower() or t.id == "dev") for t in targets):
            if node.value is not None:
                yield node.value


def _needs_of_call(node: ast.Call) -> DeviceNeed | None:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("cuda", "xpu") and dotted_name(func.value) != "torch":
        return DeviceNeed(Need(func.attr), node.lineno, f".{func.attr}()")
    callee = dotted_name(func)
    if callee is None or callee in _PROBES:
        return None
    for prefix, need in _APIS.items():
        if callee.startswith(prefix):
            if callee.rsplit(".", 1)[-1] in _NO_DEVICE_CALLS or "available" in callee.rsplit(".", 1)[-1]:
                return None
            return DeviceNeed(need, node.lineno, callee + "()")
    return None


def _leaves(stmts: list[ast.stmt]) -> bool:
    """The branch leaves the test at once: `self.skipTest(...)`, `raise SkipTest(...)`, `return`."""
    if not stmts:
        return False
    first = stmts[0]
    return isinstance(first, ast.Return) or (
        isinstance(first, (ast.Expr, ast.Raise))
        and any(
            isinstance(n, ast.Call) and (dotted_name(n.func) or "").rsplit(".", 1)[-1] in _SKIP_CALLS
            for n in ast.walk(first)
        )
    )


def _skip_guards(body: list[ast.stmt], flags: Flags) -> Iterator[DeviceNeed]:
    """`if not TEST_CUDA: self.skipTest(...)` (or raise SkipTest / return) among the first
    statements, or `if TEST_CUDA: ... else: self.skipTest(...)`: the test goes on only with the
    device."""
    for stmt in body[:4]:
        if not isinstance(stmt, ast.If):
            continue
        for branch, truth, shape in ((stmt.body, False, "{}: skip"), (stmt.orelse, True, "{}: ... else: skip")):
            if _leaves(branch):
                for need in requires(stmt.test, truth, flags):
                    yield DeviceNeed(need, stmt.lineno, "if " + shape.format(short_text(stmt.test)))


def _on_a_device(test: ast.expr) -> bool | None:
    """A comparison with a device's name (`t.device.type == "cuda"`, `"cuda" in str(device)`):
    True when it holds only on that device, False when it fails only there, else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    named = [s for s in (left, right) if isinstance(s, ast.Constant) and isinstance(s.value, str)]
    if not any(_DEVICE_STRING.match(str(s.value)) for s in named):
        return None
    left_named = left in named
    if isinstance(op, (ast.Eq, ast.Is)) or (isinstance(op, ast.In) and left_named):
        return True
    if isinstance(op, (ast.NotEq, ast.IsNot)) or (isinstance(op, ast.NotIn) and left_named):
        return False
    return None


def _device_only(test: ast.expr, truth: bool, flags: Flags) -> bool:
    """Whether `test` takes `truth` only when a device is there (a probe, a flag, a comparison
    with a device's name)."""
    return bool(requires(test, truth, flags)) or _on_a_device(test) is truth


def _device_branches(nodes: list[ast.AST], flags: Flags) -> set[int]:
    """The nodes (by id) of the branches that run only when a device is there
    (`if torch.cuda.is_available(): x = x.cuda()`, `x.cuda() if TEST_CUDA else x`,
    `if t.device.type == "cuda": torch.cuda.synchronize()`): the test runs without the device too,
    so what they use is no need of it.  Not when the other branch leaves the test: that is a guard
    (`_skip_guards`)."""
    inside: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.If):
            sides = ((node.body, node.orelse, True), (node.orelse, node.body, False))
            for branch, other, truth in sides:
                if branch and not _leaves(other) and _device_only(node.test, truth, flags):
                    inside.update(id(n) for stmt in branch for n in nodes_of(stmt))
        elif isinstance(node, ast.IfExp):
            for expr, truth in ((node.body, True), (node.orelse, False)):
                if _device_only(node.test, truth, flags):
                    inside.update(id(n) for n in nodes_of(expr))
    return inside


def _needs_in(fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST], flags: Flags) -> list[DeviceNeed]:
    """What a test (or a setUp-style method) needs: its guards, its early skips, and over `nodes`
    (its own, decorators and defaults included) the devices it places data on and the device
    APIs it calls, outside the branches that run only when the device is there."""
    found: list[DeviceNeed] = []
    for dec in fn.decorator_list:
        found += _needs_of_decorator(dec, flags)
    found += _skip_guards(fn.body, flags)
    conditional = _device_branches(nodes, flags)
    for node in nodes:
        if id(node) in conditional:
            continue
        if isinstance(node, ast.Call):
            call_need = _needs_of_call(node)
            if call_need is not None:
                found.append(call_need)
        for place in _placements(node):
            need = _device_of(place)
            if need is not None:
                found.append(DeviceNeed(need, place.lineno, _placement_text(node, place)))
    return found


def _placement_text(node: ast.AST, place: ast.expr) -> str:
    if isinstance(node, ast.Call):
        for kw in node.keywords:
            if kw.value is place:
                return f"{kw.arg}={short_text(place)}"
        return f"{short_text(node.func)}({short_text(place)})"
    if isinstance(node, ast.withitem):
        return f"with {short_text(place)}"
    return f"{short_text(node)}"


def unique(needs: Iterable[DeviceNeed]) -> tuple[DeviceNeed, ...]:
    seen: dict[tuple[Need, str], DeviceNeed] = {}
    for n in needs:
        seen.setdefault((n.device, n.what), n)
    return tuple(sorted(seen.values(), key=lambda n: (n.line, n.device, n.what)))


# --------------------------------------------------------------------------- a class, a module


@dataclass(frozen=True)
class ClassDevices:
    """What a class's own code says about devices."""

    calls: tuple[TorchCall, ...]  # calls of torch's device modules in its body, in the linter's order
    methods: Mapping[int, tuple[DeviceNeed, ...]]  # the needs of each test or setUp-style method, by `def` line
    own: tuple[DeviceNeed, ...]  # what every test needs from the class: its decorators, its setUp-style methods


def source_of(lines: list[str] | None, node: ast.stmt) -> str | None:
    """The lines of `node`, its decorators included (None: the lines are not known)."""
    if lines is None or node.end_lineno is None:
        return None
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
    return "\n".join(lines[first - 1 : node.end_lineno])


def _mentions_devices(text: str | None, flags: Flags) -> bool:
    """Cheap pre-check: False means "certainly neither a need nor a device call in `text`"."""
    if text is None:
        return True
    lowered = text.lower()
    if any(w in lowered for w in _DEVICE_WORDS) or any(f in text for f in flags):
        return True
    return _SM_TEXT.search(text) is not None


def read_class(
    node: ast.ClassDef,
    lines: list[str] | None = None,
    flags: Flags = {},  # noqa: B006 - read only
    inherited: Mapping[str, tuple[DeviceNeed, ...]] = {},  # noqa: B006 - read only
) -> ClassDevices:
    """One walk over each statement of the class body gives both its device calls and the needs
    of its test and setUp-style methods, theirs and those of the class's other methods they use
    on `self` (`uses_of`).  `inherited`: `method_needs` of the classes it derives from (the
    setUp-style ones run before every test).  `lines`, the module's source lines, let a statement
    that names no device skip the walk."""
    own: list[DeviceNeed] = [
        replace(n, what=f"{name} (inherited): {n.what}")
        for name, needs in inherited.items()
        if name in SETUP_METHODS
        for n in needs
    ]
    if not inherited and not _mentions_devices(source_of(lines, node), flags):
        return ClassDevices((), {}, ())
    for dec in node.decorator_list:
        own += _needs_of_decorator(dec, flags)
    calls: list[TorchCall] = []
    methods: dict[int, tuple[DeviceNeed, ...]] = {}
    # The other methods that need a device, by name: its own, else the ones it inherits.
    defined = {s.name for s in node.body if isinstance(s, FUNCTIONS)}
    helpers = {k: v for k, v in inherited.items() if k not in defined and k not in SETUP_METHODS}
    runners: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.AST] | None]] = []
    for stmt in node.body:
        mentions = _mentions_devices(source_of(lines, stmt), flags)
        if not isinstance(stmt, FUNCTIONS):
            if mentions:
                calls += _device_calls(nodes_of(stmt), node.name)
            continue
        runs = stmt.name.startswith("test") or stmt.name in SETUP_METHODS
        nodes = nodes_of(stmt) if mentions else None
        if nodes is not None:
            calls += _device_calls(nodes, f"{node.name}.{stmt.name}")
            needs = unique(_needs_in(stmt, nodes, flags))
            if runs:
                methods[stmt.lineno] = needs
            elif needs:
                helpers[stmt.name] = needs
        if runs:
            runners.append((stmt, nodes))
    for fn, nodes in runners:
        used = uses_of(fn, nodes, helpers, lines)
        if used:
            via = [replace(n, what=f"self.{name}: {n.what}") for name in used for n in helpers[name]]
            methods[fn.lineno] = unique([*methods.get(fn.lineno, ()), *via])
        if fn.name in SETUP_METHODS:
            own += methods.get(fn.lineno, ())
    return ClassDevices(tuple(calls), methods, unique(own))


def method_needs(
    node: ast.ClassDef,
    lines: list[str] | None = None,
    flags: Flags = {},  # noqa: B006 - read only
) -> dict[str, tuple[DeviceNeed, ...]]:
    """What each method of `node` that is not a test needs a device for (its helpers and its
    setUp-style methods), by name: what a class derived from it inherits."""
    if not _mentions_devices(source_of(lines, node), flags):
        return {}
    found = {}
    for stmt in node.body:
        if isinstance(stmt, FUNCTIONS) and not stmt.name.startswith("test"):
            if _mentions_devices(source_of(lines, stmt), flags):
                needs = unique(_needs_in(stmt, nodes_of(stmt), flags))
                if needs:
                    found[stmt.name] = needs
    return found


def uses_of(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    nodes: list[ast.AST] | None,
    helpers: Collection[str],
    lines: list[str] | None,
) -> list[str]:
    """The names among `helpers` that `fn` uses as `self.<name>`, called or passed on
    (`self.run_subtests(..., self._check)` runs it too), each once.  `nodes`: `nodes_of(fn)`,
    if walked already."""
    if not helpers:
        return []
    text = source_of(lines, fn)
    if text is not None and not any(f"self.{name}" in text for name in helpers):
        return []
    found: dict[str, None] = {}
    for sub in nodes if nodes is not None else nodes_of(fn):
        if (
            isinstance(sub, ast.Attribute)
            and sub.attr in helpers
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "self"
        ):
            found[sub.attr] = None
    return list(found)


# --------------------------------------------------------------------------- torch.<...>() calls


def _leftmost(node: ast.expr) -> ast.expr:
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return node


def _device_calls(nodes: list[ast.AST], owner: str) -> list[TorchCall]:
    """The calls among `nodes` whose callee, as `ast.unparse` spells it and split at its dots,
    starts with `torch` and has a part naming a device module (breadth first, as the linter walks)."""
    found: list[TorchCall] = []
    for sub in nodes:
        if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)):
            continue
        left = _leftmost(sub.func)
        if not (isinstance(left, ast.Name) and left.id == "torch"):
            continue
        parts = ast.unparse(sub.func).split(".")
        if parts[0] == "torch" and DEVICE_MODULES.intersection(parts):
            found.append(TorchCall(sub.lineno, owner, ".".join(parts)))
    return found
