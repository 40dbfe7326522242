"""The house rules, checked: the folders are floors, no import cycle, small functions and modules.

- No import runs both ways between two folders, and the folders' import graph has no cycle.
- No cycle between modules (module-level imports; an import inside a function is a deliberate
  late binding and does not count).
- No function (or method) holds more than 60 statements (its nested functions count on their own).
- No module is longer than 600 lines.
- The files loaded into the target interpreter import nothing from the tool.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
PACKAGES = ("codemod", "transforms")
MAX_STATEMENTS = 60
MAX_LINES = 600
# Run inside the user's interpreter, which may not have the tool installed.
STANDALONE = (
    "codemod/ab/plugin.py",
    "codemod/ab/probe.py",
    "codemod/ab/forkserver.py",
    "codemod/ab/warmup.py",
    "codemod/ab/packplugin.py",
    "codemod/engine/discover_plugin.py",
)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((PROJECT / package).rglob("*.py")):
            parts = list(path.relative_to(PROJECT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = modules()


def folder_of(module: str) -> str:
    path = MODULES[module]
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def imported_modules(module: str) -> set[str]:
    """The tool's modules that `module` imports at module level."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


IMPORTS = {module: imported_modules(module) for module in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == 1:
                return stack[stack.index(succ) :] + [succ]
            if succ not in state:
                cycle = visit(succ)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_no_import_cycle_between_modules():
    assert find_cycle(IMPORTS) is None


def test_folders_are_floors():
    graph: dict[str, set[str]] = {}
    for module, targets in IMPORTS.items():
        for target in targets:
            a, b = folder_of(module), folder_of(target)
            if a != b:
                graph.setdefault(a, set()).add(b)
    both_ways = sorted(f"{a} <-> {b}" for a in graph for b in graph[a] if a < b and a in graph.get(b, ()))
    assert both_ways == []
    assert find_cycle(graph) is None


def statement_counts(tree: ast.AST):
    """(qualified name, line, statements) of every function, nested functions counted apart."""

    def count(body: list[ast.stmt]) -> int:
        total = 0
        for stmt in body:
            total += 1
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(stmt, field, []) or []:
                    if isinstance(child, (ast.ExceptHandler, ast.match_case)):
                        total += count(child.body)
                    elif isinstance(child, ast.stmt):
                        total += count([child])
        return total

    def walk(node: ast.AST, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                yield name, child.lineno, count(child.body)
                yield from walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_functions_are_small(module):
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    too_long = [f"{name} (line {line}): {n} statements" for name, line, n in statement_counts(tree) if n > MAX_STATEMENTS]
    assert too_long == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_hold_one_idea(module):
    lines = MODULES[module].read_text().count("\n")
    assert lines <= MAX_LINES, f"{MODULES[module].relative_to(PROJECT)}: {lines} lines"


@pytest.mark.parametrize("relpath", STANDALONE)
def test_standalone_files_import_nothing_of_the_tool(relpath):
    tree = ast.parse((PROJECT / relpath).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and (node.module or "").split(".")[0] not in PACKAGES, relpath
        elif isinstance(node, ast.Import):
            assert all(alias.name.split(".")[0] not in PACKAGES for alias in node.names), relpath


def test_the_checks_can_fail():
    # the cycle finder and the statement counter are real: a made-up cycle and a long function are seen
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    source = "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(61)) + "    if x0:\n        y = 1\n"
    assert [n for _, _, n in statement_counts(ast.parse(source))] == [63]
