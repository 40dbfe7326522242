"""What a warm interpreter does before it forks, read from the test files (``ast`` only).

`warm_plan` parses each file once and gives both: the installed modules the files import at
module level (torch and ``torch.testing._internal``...), imported once by the server, and the
test base classes those files' classes derive from (``common_utils.TestCase``...), of which
the server runs one throwaway test, because a first test imports much more than its module did:
the first test of a ``common_utils.TestCase`` calls ``torch.compiler.set_stance``, which
imports ``torch._dynamo`` (about 850 modules, 1-2 s).  Warmed once, no forked file pays it.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Top-level packages whose modules are worth importing once.  Only
# installed code: a module of the tree under test is imported by pytest itself.
PRELOAD_PACKAGES = ("torch",)
# At most this many base classes are warmed (the most used first): each costs a test run.
MAX_WARM_UP_CLASSES = 12


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return None


def _imported(node: ast.stmt) -> list[str]:
    """The module names an import statement may import (`from pkg import mod`: mod may be a
    submodule; lower-case names only, the server skips those that are not modules)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name != "*" and a.name[:1].islower()]
    return []


@dataclass(frozen=True)
class WarmPlan:
    preload: list[str]  # modules of PRELOAD_PACKAGES, first-seen order, `torch` first
    warm_up: list[str]  # base classes as ``module:Name``, the most used first


def warm_plan(files: Iterable[Path]) -> WarmPlan:
    """What the server imports and warms for `files` (each parsed once: on the way to the
    server's start, 300 files cost 0.13 s parsed twice)."""
    statements = []
    for path in files:
        tree = _parse(path)
        statements.append(list(_module_level(tree.body if tree else [])))
    return WarmPlan(_preload_modules(statements), _warm_up_classes(statements))


def _preload_modules(files: list[list[ast.stmt]]) -> list[str]:
    seen: dict[str, None] = {}
    for statements in files:
        for node in statements:
            for name in _imported(node):
                if name.split(".")[0] in PRELOAD_PACKAGES:
                    seen.setdefault(name, None)
    mods = list(seen)
    if any(m.split(".")[0] == "torch" for m in mods):
        mods = ["torch"] + [m for m in mods if m != "torch"]
    return mods


def _module_level(body: list) -> Iterable[ast.stmt]:
    """Statements run at import: the body, and the bodies of module-level
    if/try blocks (``try: import torch ... except ImportError``)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _module_level(node.body)
            for h in node.handlers:
                yield from _module_level(h.body)
            yield from _module_level(node.orelse)
            yield from _module_level(node.finalbody)


def _bindings(statements: list[ast.stmt]) -> dict[str, str]:
    """Local name -> the dotted name it stands for, from the module-level imports."""
    names: dict[str, str] = {}
    for node in statements:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:  # `import a.b` binds `a`
                    top = a.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                if a.name != "*":
                    names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _dotted(expr: ast.expr) -> str | None:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    return ".".join([expr.id, *reversed(parts)])


def _base_classes(statements: list[ast.stmt]) -> list[str]:
    """The PRELOAD_PACKAGES classes a file's module-level classes derive from, as
    ``module:Name`` (the module being where the file's import names it)."""
    names = _bindings(statements)
    found = []
    for node in statements:
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            dotted = _dotted(base)
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            full = names.get(head, "") + ("." + rest if rest else "")
            module, _, name = full.rpartition(".")
            if module.split(".")[0] in PRELOAD_PACKAGES and name[:1].isupper():
                found.append(f"{module}:{name}")
    return found


def _warm_up_classes(files: list[list[ast.stmt]]) -> list[str]:
    """The most used first (ties in first-seen order), at most MAX_WARM_UP_CLASSES."""
    counts: Counter[str] = Counter()
    for statements in files:
        counts.update(dict.fromkeys(_base_classes(statements), 1))
    return [name for name, _ in counts.most_common(MAX_WARM_UP_CLASSES)]
