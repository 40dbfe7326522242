"""The house rules, checked: the folders are floors, no import cycle, small functions and modules.

- No import runs both ways between two folders, and the folders' import graph has no cycle.
- No cycle between modules (module-level imports; an import inside a function is a deliberate
  late binding and does not count).
- No function (or method) holds more than 60 statements (its nested functions count on their own).
- No module is longer than 600 lines.
- The files loaded into the target interpreter (codemod/target/) import only the standard library
  and pytest, and the tool imports none of them.
- No module imports another module's private name (what two modules share is public).
- No folder holds more than 13 modules.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
PACKAGES = ("codemod", "transforms")
MAX_STATEMENTS = 60
MAX_LINES = 600
# Run inside the user's interpreter, which may not have the tool installed: the whole folder.
TARGET_FOLDER = "codemod/target"
STANDALONE = tuple(sorted(str(p.relative_to(PROJECT)) for p in (PROJECT / TARGET_FOLDER).glob("*.py")))
# What they may import: the standard library and pytest anywhere; torch (what they inspect in the
# target) only inside a function, never at module level.
TARGET_ANYWHERE = {"pytest", "_pytest"}
TARGET_IN_FUNCTIONS = {"torch"}
# What they may import under `if TYPE_CHECKING:` (never run): a sibling's types.
TARGET_TYPES = "codemod.target."


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


def target_import_errors(source: str) -> list[str]:
    """The imports of a target file that break the folder's rule."""
    tree = ast.parse(source)
    in_function: set[int] = set()
    types_only: set[int] = set()  # under `if TYPE_CHECKING:`: never run in the target
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function.update(id(child) for child in ast.walk(node) if child is not node)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            types_only.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    errors = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            errors.append(f"line {node.lineno}: a relative import")
            continue
        if isinstance(node, ast.ImportFrom) and id(node) in types_only and (node.module or "").startswith(TARGET_TYPES):
            continue  # the types of a sibling target file, for mypy only
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        allowed = TARGET_ANYWHERE | (TARGET_IN_FUNCTIONS if id(node) in in_function else set())
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in allowed:
                errors.append(f"line {node.lineno}: import {name}")
    return errors


def test_the_target_folder_holds_the_standalone_files():
    assert len(STANDALONE) >= 8, STANDALONE  # the folder was found: its package file, the six loaded ones, the types


@pytest.mark.parametrize("relpath", STANDALONE)
def test_target_files_import_only_stdlib_and_pytest(relpath):
    assert target_import_errors((PROJECT / relpath).read_text()) == []


def test_no_target_file_is_imported_by_the_tool():
    # the runner imports the target folder's package file (where the files are) and, under
    # TYPE_CHECKING only, the capture plugin's event types: it never runs a target file itself
    imported = sorted(f"{m} -> {t}" for m, targets in IMPORTS.items() for t in targets if t.startswith("codemod.target."))
    assert imported == []


def private_imports(source: str) -> list[str]:
    """The `_private` names `source` imports from the tool's modules (late imports included)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_crosses_modules(module):
    assert private_imports(MODULES[module].read_text()) == []


MAX_MODULES_PER_FOLDER = 13


def test_no_folder_holds_more_than_about_twelve_modules():
    sizes: dict[str, int] = {}
    for module, path in MODULES.items():
        if path.name != "__init__.py":
            sizes[folder_of(module)] = sizes.get(folder_of(module), 0) + 1
    assert {f: n for f, n in sizes.items() if n > MAX_MODULES_PER_FOLDER} == {}
    # the counter sees every module of a folder (the target folder's, counted on disk)
    assert sizes["codemod.target"] == len([p for p in STANDALONE if not p.endswith("__init__.py")])


def test_the_checks_can_fail():
    # the cycle finder and the statement counter are real: a made-up cycle and a long function are seen
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    source = "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(61)) + "    if x0:\n        y = 1\n"
    assert [n for _, _, n in statement_counts(ast.parse(source))] == [63]
    assert target_import_errors("import torch\nimport os\n") == ["line 1: import torch"]
    assert target_import_errors("def f():\n    import torch\n    from codemod import x\n") == ["line 3: import codemod"]
    assert target_import_errors("from . import x\n") == ["line 1: a relative import"]
    types = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from codemod.target.eventtypes import Event\n"
    assert target_import_errors(types) == []
    assert target_import_errors(types.replace("codemod.target.eventtypes", "codemod.util.x")) == ["line 3: import codemod.util.x"]
    assert private_imports("from codemod.ab.x import _y, z\ndef f():\n    from transforms.a import _b\n") == [
        "codemod.ab.x._y",
        "transforms.a._b",
    ]
