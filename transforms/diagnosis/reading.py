"""What a test's own code says about devices, read with `ast`: its guards (`@onlyCPU`,
`@onlyCUDA`, `@onlyOn(...)`, `@onlyAccelerator`, `skipIf(not TEST_CUDA)` ...), the
`torch.cuda.*` APIs it uses with their device-generic equivalent (`CUDA_EQUIVALENTS`), and
the module-level literals an `only_for=NAME` may be bound to."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from transforms.core import analysis, class_reading
from transforms.core.facts import Option
from transforms.diagnosis.devices import ACCELERATOR_GUARD, DEVICE_GUARDS, NATIVE, UNREAD, ordered

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

# Conditions of skipIf/skipUnless that need a CUDA machine (not a device restriction).
_CUDA_CONDITIONS = ("TEST_CUDA", "TEST_MULTIGPU", "torch.cuda.is_available", "TEST_CUDNN")


@dataclass(frozen=True)
class CudaUse:
    api: str  # "torch.cuda.synchronize"
    line: int
    equivalent: str | None


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
            base = NATIVE if last == "onlyNativeDeviceTypesAnd" else ()
            devices = tuple(base) + tuple(listed) if listed is not None else (UNREAD,)
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


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def positional_slots(call: ast.Call) -> tuple[Option, ...]:
    return tuple(
        slot
        for index, slot in analysis.POSITIONAL_SLOTS.items()
        if index < len(call.args) and not isinstance(call.args[index], ast.Starred)
    )
