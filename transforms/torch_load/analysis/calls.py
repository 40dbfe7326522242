"""Finding the calls: qualified-name resolution of torch.load and the site of each call
(enclosing statement, function, class, existing safe_globals blocks)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import ExpressionContext

from transforms.torch_load.analysis.modes import LOAD_NAMES, SAFE_GLOBALS_NAME
from transforms.torch_load.analysis.source import LoadSource
from transforms.torch_load.analysis.unsafe_globals import normalise

__all__ = ["Site", "dotted", "find_calls", "site_of"]


@dataclass(kw_only=True)
class Site:
    """Where one call sits: what a with-block around it would wrap, and what encloses it."""

    call: cst.Call
    line: int  # start line of the call
    end_line: int
    stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement | None = None  # the statement to wrap
    stmt_lines: tuple[int, int] = (0, 0)
    block: cst.CSTNode | None = None  # the block (module or indented block) holding stmt
    index: int = -1  # index of stmt in block body
    no_wrap: str | None = None  # why wrapping is impossible
    func: str | None = None  # innermost enclosing def name
    cls: str | None = None  # innermost enclosing class name
    enclosing_entries: list[tuple[str, set[str]]] = field(default_factory=list)  # (code, qualnames)
    comment_line: int = 0  # line above which an --explain comment goes


def dotted(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _indirect(why: str) -> str:
    return (
        f"torch.load is referenced indirectly ({why}); the eventual call cannot be "
        "resolved statically: make it explicit by hand"
    )


class _CallCollector(cst.CSTVisitor):
    """The calls of torch.load (and nothing else), and the references to it that cannot be
    rewritten (with why)."""

    def __init__(self, src: LoadSource):
        super().__init__()
        self.src = src
        self.calls: list[cst.Call] = []
        self.refs: list[tuple[cst.CSTNode, str]] = []
        self.func_nodes: set[int] = set()
        self.star: list[str | None] = []

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if (
            isinstance(node.names, cst.ImportStar)
            and not node.relative
            and dotted(node.module or cst.Name("x")) in ("torch", "torch.serialization")
        ):
            self.star.append(dotted(node.module) if node.module is not None else None)
        return False

    def visit_Call(self, node: cst.Call) -> None:
        q = self.src.qnames(node.func)
        name = dotted(node.func)
        if (q and q <= LOAD_NAMES) or (not q and name in LOAD_NAMES):
            self.calls.append(node)
            self.func_nodes.add(id(node.func))
        elif q & LOAD_NAMES:
            # `from torch import load` and also `def load(...)` / `load = ...`:
            # which one runs depends on control flow; never guess.
            self.func_nodes.add(id(node.func))
            others = ", ".join(sorted(q - LOAD_NAMES))
            self.refs.append(
                (
                    node,
                    f"`{name or 'load'}` may be torch.load or another "
                    f"binding ({others}) here: not rewritten; make the call "
                    "explicit by hand",
                )
            )
        elif not q and self.star and isinstance(node.func, cst.Name) and node.func.value == "load":
            self.func_nodes.add(id(node.func))
            self.refs.append(
                (
                    node,
                    f"`load` probably comes from `from {self.star[0]} import *`: "
                    "not rewritten; import torch.load explicitly or make the "
                    "call explicit by hand",
                )
            )

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if id(node) not in self.func_nodes and self.src.qnames(node) & LOAD_NAMES:
            self.refs.append((node, _indirect(f"`{dotted(node) or 'torch.load'}` used as a value")))
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        if self.src.contexts.get(node) in (ExpressionContext.STORE, ExpressionContext.DEL):
            return  # `def load(...)`, `load = ...`: a binding, not a use
        if id(node) not in self.func_nodes and self.src.qnames(node) & LOAD_NAMES:
            self.refs.append((node, _indirect(f"`{node.value}` used as a value")))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        try:
            val = ast.literal_eval(node.value)
        except Exception:
            return
        if isinstance(val, str) and val.strip() in LOAD_NAMES:
            self.refs.append((node, _indirect(f"the string {node.value} (mock.patch or getattr target)")))


def find_calls(src: LoadSource) -> tuple[list[cst.Call], list[tuple[cst.CSTNode, str]]]:
    """(the torch.load calls, in the file's order; the references that are left for a human,
    with the message saying why)."""
    collector = _CallCollector(src)
    src.module.visit(collector)
    return collector.calls, collector.refs


# --------------------------------------------------------------------------- site analysis


def site_of(src: LoadSource, call: cst.Call) -> Site:
    p = src.pos(call)
    site = Site(call=call, line=p.start.line, end_line=p.end.line)
    node: cst.CSTNode = call
    child = None
    stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement | None = None
    while True:
        parent = src.parents.get(node)
        if parent is None:
            break
        if isinstance(node, cst.Lambda) and site.no_wrap is None:
            site.no_wrap = "inside a lambda, evaluated later"
        elif isinstance(node, cst.GeneratorExp) and site.no_wrap is None:
            site.no_wrap = "inside a generator expression, evaluated lazily"
        elif isinstance(node, (cst.Yield,)) and site.no_wrap is None and stmt is None:
            site.no_wrap = "in a yield statement (the block would stay open while suspended)"
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            if stmt is None and site.no_wrap is None:
                what = "function" if isinstance(node, cst.FunctionDef) else "class"
                site.no_wrap = f"in a {what} header (default, decorator, annotation or base) or one-line {what} body"
            if isinstance(node, cst.FunctionDef) and site.func is None:
                site.func = node.name.value
            if isinstance(node, cst.ClassDef) and site.cls is None and site.func is not None:
                site.cls = node.name.value
        if isinstance(node, cst.With) and child is node.body:
            site.enclosing_entries += _safe_globals_entries(src, node)
        if (
            stmt is None
            and isinstance(parent, (cst.IndentedBlock, cst.Module))
            and isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        ):
            stmt = node
            site.stmt = node
            site.block = parent
            site.index = next(i for i, s in enumerate(parent.body) if s is node)
        child = node
        node = parent
    if stmt is None:
        site.no_wrap = site.no_wrap or "no enclosing statement"
        site.comment_line = site.line
        return site
    sp = src.pos(stmt)
    first = sp.start.line
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.decorators:
        first = src.pos(stmt.decorators[0]).start.line
    last = sp.end.line
    if sp.end.column == 0 and last > first:
        last -= 1
    site.stmt_lines = (first, last)
    site.comment_line = first
    if site.no_wrap is None and isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        site.no_wrap = "in a function or class header"
    if site.no_wrap is None and _contains_yield(stmt):
        site.no_wrap = "the statement yields (the block would stay open while suspended)"
    return site


class _YieldFinder(cst.CSTVisitor):
    """Nested functions, lambdas and classes are their own frames: their yields do not count."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True


def _contains_yield(stmt: cst.CSTNode) -> bool:
    """Does the statement to wrap suspend (``yield``/``yield from``) anywhere in it,
    including the bodies of a compound statement?"""
    finder = _YieldFinder()
    stmt.visit(finder)
    return finder.found


def _safe_globals_entries(src: LoadSource, with_node: cst.With) -> list[tuple[str, set[str]]]:
    """(code, qualified names) of each entry of the safe_globals([...]) items of a with."""
    out: list[tuple[str, set[str]]] = []
    for item in with_node.items:
        e = item.item
        if not (
            isinstance(e, cst.Call) and (SAFE_GLOBALS_NAME in src.qnames(e.func) or dotted(e.func) == SAFE_GLOBALS_NAME)
        ):
            continue
        if not e.args:
            continue
        elements = getattr(e.args[0].value, "elements", None)
        if elements is None:
            continue
        for el in elements:
            v = el.value
            extra: set[str] = set()
            if isinstance(v, cst.Tuple) and v.elements:
                # (obj, "dotted.name") entries (torch >= 2.6) cover obj
                if len(v.elements) > 1 and isinstance(v.elements[1].value, cst.SimpleString):
                    try:
                        name = ast.literal_eval(v.elements[1].value.value)
                        if isinstance(name, str):
                            extra.add(normalise(name))
                    except Exception:
                        pass
                v = v.elements[0].value
            out.append((src.code(v).strip(), src.qnames(v) | extra))
    return out
