"""Finding the calls: qualified-name resolution of torch.load and the site of each call
(enclosing statement, function, class, existing safe_globals blocks)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from transforms.torch_load.modes import LOAD_NAMES, SAFE_GLOBALS_NAME
from transforms.torch_load.unsafe_globals import normalise


@dataclass
class _Site:
    call: Any  # libcst.Call
    line: int  # start line of the call
    end_line: int
    stmt: Any = None  # statement to wrap (libcst node) or None
    stmt_lines: tuple[int, int] = (0, 0)
    block: Any = None  # parent block node of stmt
    index: int = -1  # index of stmt in block body
    no_wrap: str | None = None  # why wrapping is impossible
    func: str | None = None  # innermost enclosing def name
    cls: str | None = None  # innermost enclosing class name
    enclosing_entries: list[tuple[str, set]] = field(default_factory=list)  # (code, qualnames)
    comment_line: int = 0  # line above which an --explain comment goes


def _dotted(node) -> str | None:
    import libcst as cst

    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


class CallFinder:
    """Mixin of the per-file run: which calls are torch.load, and where they sit."""

    def _is_stmt(self, node) -> bool:
        import libcst as cst

        return isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
            self.parents.get(node), (cst.IndentedBlock, cst.Module)
        )

    def _depth(self, node) -> int:
        """How many statements (of a block) enclose `node`."""
        n = 0
        while node is not None:
            if self._is_stmt(node):
                n += 1
            node = self.parents.get(node)
        return n

    # ------------------------------------------------------------------ collection
    def _collect(self, module):
        import libcst as cst
        from libcst.metadata import ExpressionContext, ExpressionContextProvider

        runner = self
        calls: list = []
        refs: list = []
        func_nodes: set[int] = set()
        ctx = self.wrapper_meta[ExpressionContextProvider]
        star = []

        def indirect(why):
            return (
                f"torch.load is referenced indirectly ({why}); the eventual call cannot be "
                "resolved statically: make it explicit by hand"
            )

        class V(cst.CSTVisitor):
            def visit_Import(self, node):
                return False

            def visit_ImportFrom(self, node):
                if (
                    isinstance(node.names, cst.ImportStar)
                    and not node.relative
                    and _dotted(node.module or cst.Name("x")) in ("torch", "torch.serialization")
                ):
                    star.append(_dotted(node.module))
                return False

            def visit_Call(self, node):
                q = runner.qnames(node.func)
                dotted = _dotted(node.func)
                if (q and q <= LOAD_NAMES) or (not q and dotted in LOAD_NAMES):
                    calls.append(node)
                    func_nodes.add(id(node.func))
                elif q & LOAD_NAMES:
                    # `from torch import load` and also `def load(...)` / `load = ...`:
                    # which one runs depends on control flow; never guess.
                    func_nodes.add(id(node.func))
                    others = ", ".join(sorted(q - LOAD_NAMES))
                    refs.append(
                        (
                            node,
                            f"`{dotted or 'load'}` may be torch.load or another "
                            f"binding ({others}) here: not rewritten; make the call "
                            "explicit by hand",
                        )
                    )
                elif not q and star and isinstance(node.func, cst.Name) and node.func.value == "load":
                    func_nodes.add(id(node.func))
                    refs.append(
                        (
                            node,
                            f"`load` probably comes from `from {star[0]} import *`: "
                            "not rewritten; import torch.load explicitly or make the "
                            "call explicit by hand",
                        )
                    )

            def visit_Attribute(self, node):
                if id(node) not in func_nodes and runner.qnames(node) & LOAD_NAMES:
                    refs.append((node, indirect(f"`{_dotted(node) or 'torch.load'}` used as a value")))
                    return False
                return True

            def visit_Name(self, node):
                if ctx.get(node) in (ExpressionContext.STORE, ExpressionContext.DEL):
                    return  # `def load(...)`, `load = ...`: a binding, not a use
                if id(node) not in func_nodes and runner.qnames(node) & LOAD_NAMES:
                    refs.append((node, indirect(f"`{node.value}` used as a value")))

            def visit_SimpleString(self, node):
                try:
                    val = ast.literal_eval(node.value)
                except Exception:
                    return
                if isinstance(val, str) and val.strip() in LOAD_NAMES:
                    refs.append((node, indirect(f"the string {node.value} (mock.patch or getattr target)")))

        module.visit(V())
        return calls, refs

    # ------------------------------------------------------------------ site analysis
    def _site(self, call) -> _Site:
        import libcst as cst

        p = self.pos(call)
        site = _Site(call=call, line=p.start.line, end_line=p.end.line)
        node = call
        child = None
        stmt = None
        while True:
            parent = self.parents.get(node)
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
                    site.no_wrap = (
                        f"in a {what} header (default, decorator, annotation or base) or one-line {what} body"
                    )
                if isinstance(node, cst.FunctionDef) and site.func is None:
                    site.func = node.name.value
                if isinstance(node, cst.ClassDef) and site.cls is None and site.func is not None:
                    site.cls = node.name.value
            if isinstance(node, cst.With) and child is node.body:
                self._record_enclosing(node, site)
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
        sp = self.pos(stmt)
        first = sp.start.line
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.decorators:
            first = self.pos(stmt.decorators[0]).start.line
        last = sp.end.line
        if sp.end.column == 0 and last > first:
            last -= 1
        site.stmt_lines = (first, last)
        site.comment_line = first
        if site.no_wrap is None and isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            site.no_wrap = "in a function or class header"
        if site.no_wrap is None and self._contains_yield(stmt, call):
            site.no_wrap = "the statement yields (the block would stay open while suspended)"
        return site

    def _contains_yield(self, stmt, call) -> bool:
        """Does the statement to wrap suspend (``yield``/``yield from``) anywhere in it,
        including the bodies of a compound statement?  Nested functions, lambdas and
        classes are their own frames and do not count."""
        import libcst as cst

        found = []

        class Y(cst.CSTVisitor):
            def visit_FunctionDef(self, node):
                return False

            def visit_ClassDef(self, node):
                return False

            def visit_Lambda(self, node):
                return False

            def visit_Yield(self, node):
                found.append(node)

        stmt.visit(Y())
        return bool(found)

    def _record_enclosing(self, with_node, site: _Site):
        import libcst as cst

        for item in with_node.items:
            e = item.item
            if isinstance(e, cst.Call) and (
                SAFE_GLOBALS_NAME in self.qnames(e.func) or _dotted(e.func) == SAFE_GLOBALS_NAME
            ):
                if not e.args:
                    continue
                lst = e.args[0].value
                elts = getattr(lst, "elements", None)
                if elts is None:
                    continue
                for el in elts:
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
                    code = self.module.code_for_node(v).strip()
                    site.enclosing_entries.append((code, self.qnames(v) | extra))
