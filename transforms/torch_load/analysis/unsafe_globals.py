"""The one list of globals that must not be allowlisted for ``weights_only`` loads.

``torch.serialization.safe_globals([...])`` tells the weights-only unpickler to
rebuild the listed objects from a checkpoint.  For ordinary classes (an
``nn.Module`` subclass, a packed-params holder) that only runs their
``__setstate__``/``__reduce__`` re-construction, which is what the test wants.
Some globals, though, turn the restricted unpickler back into the full pickle
machine: a checkpoint that may call them can run arbitrary code.  For those a
careful tool writes an explicit ``weights_only=False`` (honest: "this test
trusts its own file") instead of an allowlist that looks safe but is not.

``tier(name)`` is the single decision point used by the torch.load transform
and by the discover-globals summary.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from transforms.core.strenum import StrEnum


class Level(StrEnum):
    SAFE = "safe"
    DANGEROUS = "dangerous"


# Exact dotted names.
DANGEROUS_NAMES: dict[str, str] = {
    "torch.ScriptObject": ("rebuilds any registered TorchBind class from checkpoint data (arbitrary C++ __setstate__)"),
    "torch._C.ScriptObject": "same object as torch.ScriptObject",
    "builtins.getattr": "reaches any attribute of any object (e.g. os.system via a module)",
    "builtins.setattr": "mutates arbitrary objects while loading",
    "builtins.delattr": "mutates arbitrary objects while loading",
    "builtins.eval": "evaluates arbitrary Python source from the checkpoint",
    "builtins.exec": "executes arbitrary Python source from the checkpoint",
    "builtins.__import__": "imports any module named by the checkpoint",
    "builtins.compile": "builds code objects from checkpoint data",
    "builtins.open": "opens/overwrites arbitrary files",
    "builtins.globals": "exposes and mutates module globals",
    "builtins.vars": "exposes object and module namespaces",
    "builtins.breakpoint": "starts a debugger (or any PYTHONBREAKPOINT hook)",
    "builtins.input": "blocks on stdin",
    "functools.partial": "binds arguments to any callable the checkpoint can name",
    "operator.attrgetter": "reaches arbitrary attributes, like getattr",
    "operator.methodcaller": "calls an arbitrary method named by the checkpoint",
    "types.FunctionType": "builds a function from a code object",
    "types.CodeType": "builds a code object from raw bytecode",
}

# Every member of these modules (and of their submodules).
DANGEROUS_MODULES: dict[str, str] = {
    "os": "process, file system and environment access (os.system, os.remove, ...)",
    "posix": "the C layer under os on POSIX (posix.system)",
    "nt": "the C layer under os on Windows (nt.system)",
    "subprocess": "runs arbitrary commands",
    "sys": "interpreter state (sys.modules, sys.settrace, ...)",
    "shutil": "copies, moves and deletes file trees",
    "importlib": "imports any module named by the checkpoint",
    "pickle": "a nested unrestricted unpickler (pickle.loads)",
    "_pickle": "a nested unrestricted unpickler (C pickle)",
    "marshal": "loads raw code objects",
    "runpy": "runs arbitrary modules or files",
    "ctypes": "raw memory access and foreign function calls",
    "socket": "network access",
    "code": "interactive interpreter (code.InteractiveInterpreter.runsource)",
    "codeop": "compiles arbitrary source",
}


class Tier(NamedTuple):
    level: Level
    reason: str


def normalise(name: str) -> str:
    """``slice`` -> ``builtins.slice`` (torch >= 2.7 prints builtins without module);
    ``__builtin__.x`` (protocol 2 pickles of Python 2) -> ``builtins.x``."""
    name = name.strip()
    if "." not in name:
        return "builtins." + name
    if name.startswith("__builtin__."):
        return "builtins." + name[len("__builtin__.") :]
    return name


def tier(name: str) -> Tier:
    """Classify one dotted global: ``Tier("dangerous", why)`` or ``Tier("safe", "")``."""
    full = normalise(name)
    if full in DANGEROUS_NAMES:
        return Tier(Level.DANGEROUS, f"{full}: {DANGEROUS_NAMES[full]}")
    module = full
    while "." in module:
        module = module.rsplit(".", 1)[0]
        if module in DANGEROUS_MODULES:
            return Tier(Level.DANGEROUS, f"{full}: member of {module}: {DANGEROUS_MODULES[module]}")
    return Tier(Level.SAFE, "")


def dangerous(names: Iterable[str]) -> dict[str, str]:
    """The dangerous subset of `names`, name -> reason (input order)."""
    out: dict[str, str] = {}
    for n in names:
        t = tier(n)
        if t.level == Level.DANGEROUS:
            out[normalise(n)] = t.reason
    return out
