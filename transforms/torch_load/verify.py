"""Verification: the output is exactly the input plus the planned edits
(check_planned_edits, run on every output before it leaves the transform), and what
the engine strips from both trees for its own, coarser comparison (strip_tree)."""

from __future__ import annotations

import ast
import io
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


def strip_tree(tree: ast.Module) -> ast.Module:
    """In place (the engine's contract): `weights_only=<constant>` on load calls,
    safe_globals with-items (blocks unwrapped), module-level `from x import ...`
    statements and `import torch` / `import builtins` are removed."""
    names = _AstNames(tree)
    _Stripper(names).visit(tree)
    # Module-level imports the transform may add or extend.
    body = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module != "__future__":
            continue
        if isinstance(stmt, ast.Import):
            stmt.names = [a for a in stmt.names if not (a.asname is None and a.name in ("torch", "builtins"))]
            if not stmt.names:
                continue
        body.append(stmt)
    tree.body = body
    return tree


class _AstNames:
    """Module-wide (scope-insensitive) names for torch, torch.serialization, load, safe_globals."""

    def __init__(self, tree: ast.Module):
        self.torch = {"torch"}
        self.serialization: set[str] = set()
        self.load: set[str] = set()
        self.safe_globals: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "torch" and a.asname:
                        self.torch.add(a.asname)
                    if a.name == "torch.serialization" and a.asname:
                        self.serialization.add(a.asname)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                for a in node.names:
                    bound = a.asname or a.name
                    if node.module == "torch" and a.name == "serialization":
                        self.serialization.add(bound)
                    elif node.module in ("torch", "torch.serialization") and a.name == "load":
                        self.load.add(bound)
                    elif node.module == "torch.serialization" and a.name == "safe_globals":
                        self.safe_globals.add(bound)

    def _is(self, func: ast.expr, attr: str, direct: set[str]) -> bool:
        if isinstance(func, ast.Name):
            return func.id in direct
        if isinstance(func, ast.Attribute) and func.attr == attr:
            v = func.value
            if isinstance(v, ast.Name):
                return v.id in self.serialization or (attr == "load" and v.id in self.torch)
            if isinstance(v, ast.Attribute) and v.attr == "serialization":
                return isinstance(v.value, ast.Name) and v.value.id in self.torch
        return False

    def is_load(self, func: ast.expr) -> bool:
        return self._is(func, "load", self.load)

    def is_safe_globals(self, func: ast.expr) -> bool:
        return self._is(func, "safe_globals", self.safe_globals)


class _Stripper(ast.NodeTransformer):
    def __init__(self, names: _AstNames):
        self.names = names

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        if self.names.is_load(node.func):
            node.keywords = [
                k
                for k in node.keywords
                if not (
                    k.arg == "weights_only"
                    and isinstance(k.value, ast.Constant)
                    and k.value.value in (None, True, False)
                )
            ]
        return node

    def _unwrap(self, node: ast.With | ast.AsyncWith) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        keep = [
            it
            for it in node.items
            if not (
                isinstance(it.context_expr, ast.Call)
                and self.names.is_safe_globals(it.context_expr.func)
                and it.optional_vars is None
            )
        ]
        if len(keep) == len(node.items):
            return node
        if keep:
            node.items = keep
            return node
        return node.body

    visit_With = _unwrap
    visit_AsyncWith = _unwrap


# --------------------------------------------------------------------------- the strict check


class EditCheckError(Exception):
    """The edited source is not exactly the input plus the planned edits."""


@dataclass(kw_only=True)
class PlannedEdits:
    """What the plan adds, in terms of the input (lines and columns of the old text).

    keywords: ``weights_only`` value ("True"/"False") per call, keyed by the end of the
    call (line, UTF-8 byte column: what ``ast`` records), set or appended;
    wraps: (first line, last line, entries, comment) of each with-block, merged;
    imports: (line to insert before, statement text) per new import line;
    import_edits: (line, new statement text) per import statement extended in place;
    comments: the ``--explain`` comment texts added above statements."""

    torch_name: str
    keywords: dict[tuple[int, int], str] = field(default_factory=dict)
    wraps: list[tuple[int, int, list[str], str | None]] = field(default_factory=list)
    imports: list[tuple[int, str]] = field(default_factory=list)
    import_edits: list[tuple[int, str]] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)


def check_planned_edits(old_text: str, new_text: str, plan: PlannedEdits) -> None:
    """The output's syntax tree is the input's with exactly the planned keywords, blocks
    and imports added (nothing else renamed, dropped or changed), and its comments (word
    for word) are the input's plus the planned ones.  Raises EditCheckError."""
    expected = expected_tree(old_text, plan)
    try:
        found = ast.parse(new_text)
    except SyntaxError as exc:
        raise EditCheckError(f"the edited source does not parse: {exc}") from None
    if ast.dump(expected) != ast.dump(found):
        raise EditCheckError("the edited source differs from the planned edits: " + _first_difference(expected, found))
    # words, not lines: a planned comment may be wrapped over several lines
    want = Counter(_comment_words(old_text)) + Counter(w for c in plan.comments for w in c.split())
    got = Counter(_comment_words(new_text))
    if want != got:
        extra = sorted((got - want).elements())[:3]
        lost = sorted((want - got).elements())[:3]
        raise EditCheckError(
            f"the comments of the edited source are not the planned ones (unplanned: {extra}, missing: {lost})"
        )


def expected_tree(old_text: str, plan: PlannedEdits) -> ast.Module:
    """The input's tree with the planned edits made on the tree (independently of the
    text edits, which check_planned_edits compares against it)."""
    tree = ast.parse(old_text)
    wraps = [(_locate(tree, first, last), entries) for first, last, entries, _ in plan.wraps]
    todo = dict(plan.keywords)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        end = (node.end_lineno or 0, node.end_col_offset or 0)  # `ast` records both for every call
        if end in todo:
            value = ast.Constant(todo.pop(end) == "True")
            kw = next((k for k in node.keywords if k.arg == "weights_only"), None)
            if kw is None:
                node.keywords.append(ast.keyword(arg="weights_only", value=value))
            else:
                kw.value = value
    if todo:
        raise EditCheckError(f"planned weights_only edits match no call (ends at {sorted(todo)})")
    for line, code in plan.import_edits:
        i = next((i for i, s in enumerate(tree.body) if s.lineno == line and isinstance(s, ast.ImportFrom)), None)
        if i is None:
            raise EditCheckError(f"the planned import edit on line {line} matches no import")
        tree.body[i] = ast.copy_location(ast.parse(code).body[0], tree.body[i])
    tree.body = _with_inserts(tree.body, plan.imports)
    for (body, first, last), entries in wraps:
        i, j = _index(body, first), _index(body, last)
        block = ast.parse(f"with {plan.torch_name}.serialization.safe_globals([{', '.join(entries)}]):\n    pass").body[
            0
        ]
        assert isinstance(block, ast.With)
        block.body = body[i : j + 1]
        body[i : j + 1] = [block]
    return tree


def _with_inserts(originals: list[ast.stmt], imports: list[tuple[int, str]]) -> list[ast.stmt]:
    """The module body with the planned import lines: each before the first statement
    at or after its line, in plan order."""
    by_line: dict[int, list[ast.stmt]] = {}
    for line, code in imports:
        by_line.setdefault(line, []).extend(ast.parse(code).body)
    out: list[ast.stmt] = []
    placed: set[int] = set()
    for s in originals:
        for line in sorted(by_line):
            if line <= s.lineno and line not in placed:
                out += by_line[line]
                placed.add(line)
        out.append(s)
    for line in sorted(by_line):
        if line not in placed:
            out += by_line[line]
    return out


def _index(body: list[Any], stmt: ast.AST) -> int:
    return next(i for i, s in enumerate(body) if s is stmt)


def _locate(tree: ast.Module, first: int, last: int) -> tuple[list[Any], ast.AST, ast.AST]:
    """(statement list, first statement, last statement) that a wrap of lines
    first..last covers: the outermost list with a statement starting on `first`
    (the lists are bodies of statements, except handlers and match cases)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop(0)
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            body = getattr(node, name, None)
            if not isinstance(body, list) or not body or not isinstance(body[0], ast.AST):
                continue
            inside = [s for s in body if first <= getattr(s, "lineno", 0) <= last]
            if inside and getattr(inside[0], "lineno", 0) == first:
                return body, inside[0], inside[-1]
            stack.extend(body)
    raise EditCheckError(f"the planned block around lines {first}-{last} matches no statement")


def _first_difference(expected: ast.Module, found: ast.Module) -> str:
    for e, f in zip(expected.body, found.body, strict=False):
        if ast.dump(e) != ast.dump(f):
            return (
                f"near line {getattr(f, 'lineno', '?')}: expected "
                f"`{_short(ast.unparse(e))}`, found `{_short(ast.unparse(f))}`"
            )
    return f"{len(expected.body)} top-level statements expected, {len(found.body)} found"


def _short(code: str) -> str:
    line = code.splitlines()[0] if code else ""
    return line if len(line) <= 100 else line[:97] + "..."


def _comment_words(text: str) -> list[str]:
    try:
        return [
            w
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
            for w in tok.string[1:].split()
        ]
    except (tokenize.TokenError, SyntaxError):
        return []
