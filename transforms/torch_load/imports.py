"""Import placement: how the file can name a dotted global, and which imports to add.

`ImportMap` learns the file's imports once; the planner then asks it how the file spells each
global (`expr_for`, which reserves the name of an import still to be added, so that two globals
never get the same alias) and tells it which it needs (`need`); `render` gives the import
lines and in-line extensions that the editor writes.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Sequence
from typing import NamedTuple

import libcst as cst

from transforms.core.analysis import TRY_STAR_TYPES
from transforms.torch_load.analysis.calls import dotted as _dotted
from transforms.torch_load.analysis.discovery import Discovery, norm_path
from transforms.torch_load.analysis.source import LoadSource


class RenderedImports(NamedTuple):
    lines: list[tuple[int, str]]  # (line number to insert before, statement) per new import line
    edits: list[tuple[int, str, str]]  # (line, old code, new code) per import extended in place


class ImportMap:
    """How the file can name a dotted global, and which imports must be added."""

    def __init__(self, src: LoadSource, discovery: Discovery | None):
        self.src = src
        self.discovery = discovery
        self.bindings: dict[str, str] = {}  # dotted target -> local expression
        self.module_aliases: dict[str, str] = {}  # imported module path -> expression
        self.torch_alias: str | None = None
        self.top_level_defs: set[str] = set()
        self.from_lines: dict[str, int] = {}  # module -> the line of its first one-line from-import
        self.last_import_line = 0
        # (first line, last line, module) of each module-level import above the first def
        self.anchors: list[tuple[int, int, str]] = []
        self.first_def_line: int | None = None
        self.docstring_end = 0
        self.future_end = 0
        self.added: list[tuple[str, str, str | None]] = []  # (module, name, alias)
        self.add_torch = False
        self.add_builtins = False
        self.taken: set[str] = set()  # every name used or bound anywhere in the file
        self.assigned: set[str] = set()  # every name bound anywhere in the file
        self._dotted_expr: dict[str, str] = {}
        self.reserved: dict[str, tuple[str, str]] = {}  # new-import name -> (module, name)

        tree = ast.parse(src.text)
        self._learn_names(tree)
        self._learn_module(src.module)
        if self.torch_alias is None:
            self._learn_guarded_torch(tree.body)

    # -- learning existing imports
    def _learn_names(self, tree: ast.Module) -> None:
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                self.taken.add(n.id)
                if not isinstance(n.ctx, ast.Load):
                    self.assigned.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.assigned.add(n.name)
            elif isinstance(n, ast.arg):
                self.assigned.add(n.arg)
            elif isinstance(n, ast.alias):
                self.assigned.add((n.asname or n.name).split(".")[0])
        self.taken |= self.assigned

    def _learn_module(self, module: cst.Module) -> None:
        for i, stmt in enumerate(module.body):
            sp = self.src.pos(stmt)
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                self.top_level_defs.add(stmt.name.value)
                if self.first_def_line is None:
                    self.first_def_line = (
                        self.src.pos(stmt.decorators[0]).start.line if stmt.decorators else sp.start.line
                    )
                continue
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if (
                        i == 0
                        and isinstance(small, cst.Expr)
                        and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
                    ):
                        self.docstring_end = sp.end.line - (1 if sp.end.column == 0 else 0)
                    if isinstance(small, cst.Assign):
                        for t in small.targets:
                            if isinstance(t.target, cst.Name):
                                self.top_level_defs.add(t.target.value)
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        end = sp.end.line - (1 if sp.end.column == 0 and sp.end.line > sp.start.line else 0)
                        if self.first_def_line is None:
                            self.last_import_line = end
                            anchor = _imported_module(small)
                            if anchor and anchor != "__future__":
                                self.anchors.append((sp.start.line, end, anchor))
                        self._learn(small, sp.start.line, end, stmt)
                        if isinstance(small, cst.ImportFrom) and _dotted(small.module or cst.Name("x")) == "__future__":
                            self.future_end = end

    def _learn_guarded_torch(self, body: Sequence[ast.stmt], guarded: bool = False) -> None:
        """`import torch` inside a module-level try/if/with (an optional dependency:
        `try: import torch / except ImportError: torch = None`) binds torch too; adding an
        unconditional `import torch` would defeat the guard."""
        for stmt in body:
            if isinstance(stmt, ast.Import) and guarded:
                for a in stmt.names:
                    if a.name == "torch" or a.name.startswith("torch."):
                        bound = a.asname if a.asname and a.name == "torch" else (None if a.asname else "torch")
                        if bound and self.torch_alias is None:
                            self.torch_alias = bound
            elif isinstance(stmt, (ast.If, ast.With, ast.Try, *TRY_STAR_TYPES)):  # try/except* binds conditionally too
                self._learn_guarded_torch(getattr(stmt, "body", []), True)
                self._learn_guarded_torch(getattr(stmt, "orelse", []), True)
                self._learn_guarded_torch(getattr(stmt, "finalbody", []), True)
                for h in getattr(stmt, "handlers", []):
                    self._learn_guarded_torch(h.body, True)

    def _learn(self, small: cst.Import | cst.ImportFrom, start: int, end: int, stmt: cst.SimpleStatementLine) -> None:
        if isinstance(small, cst.Import):
            for a in small.names:
                path = _dotted(a.name)
                if not path:
                    continue
                if a.asname is not None:
                    alias = _bound(a.asname)
                    self.module_aliases[path] = alias
                    if path == "torch" and self.torch_alias is None:
                        self.torch_alias = alias
                else:
                    top = path.split(".")[0]
                    self.module_aliases[path] = path
                    self.module_aliases.setdefault(top, top)
                    if top == "torch" and self.torch_alias is None:
                        self.torch_alias = "torch"
            return
        if small.relative or small.module is None:
            return
        mod = _dotted(small.module)
        if isinstance(small.names, cst.ImportStar):
            return
        for a in small.names:
            name = _dotted(a.name) or ""  # a from-import names a Name
            bound = _bound(a.asname) if a.asname is not None else name
            self.bindings[f"{mod}.{name}"] = bound
            self.module_aliases.setdefault(f"{mod}.{name}", bound)
        if (
            mod is not None
            and mod not in self.from_lines
            and start == end
            and small.lpar is None
            and len(stmt.body) == 1
        ):
            self.from_lines[mod] = start

    # -- queries
    def torch_name(self) -> str:
        return self.torch_alias or "torch"

    def need_torch(self) -> None:
        if self.torch_alias is None:
            self.add_torch = True

    def _split(self, dotted: str) -> tuple[str, str]:
        d = self.discovery
        if d is not None and dotted in d.resolved:
            return d.resolved[dotted]
        mod, _, name = dotted.rpartition(".")
        return mod, name

    def is_local(self, dotted: str) -> bool:
        mod, qual = self._split(dotted)
        head = qual.split(".")[0]
        if head not in self.top_level_defs:
            return False
        if mod == "__main__":
            return True
        path = self.src.path
        if path:
            parts = norm_path(path)
            if parts:
                parts[-1] = parts[-1].rsplit(".", 1)[0]
                mparts = mod.split(".")
                return parts[-len(mparts) :] == mparts
            return False
        # no path: a top-level definition of that name outside torch's namespace
        return not mod.startswith("torch")

    def expr_for(self, dotted: str) -> str:
        if dotted in self._dotted_expr:
            return self._dotted_expr[dotted]
        e = self._compute(dotted)
        self._dotted_expr[dotted] = e
        return e

    def _spellings(self, dotted: str) -> list[tuple[str, str]]:
        """(module, qualname) spellings of one object: where it lives, then the
        re-exports discovery saw (torch.nn.Linear for torch.nn.modules.linear.Linear)."""
        mod, qual = self._split(dotted)
        out = [(mod, qual)]
        d = self.discovery
        for a in d.aliases.get(dotted, []) if d is not None else []:
            am = a[: len(a) - len(qual) - 1] if a.endswith("." + qual) else a.rpartition(".")[0]
            if am and (am, qual) not in out:
                out.append((am, qual))
        return out

    def _existing(self, mod: str, qual: str) -> str | None:
        head, _, rest = qual.partition(".")
        tail = f".{rest}" if rest else ""
        if f"{mod}.{head}" in self.bindings:
            return self.bindings[f"{mod}.{head}"] + tail
        if mod in self.module_aliases:
            return f"{self.module_aliases[mod]}.{qual}"
        if mod == "torch":
            return f"{self.torch_name()}.{qual}"
        if mod == "torch.nn" and self.torch_alias is not None:  # torch/__init__ imports nn
            return f"{self.torch_alias}.nn.{qual}"
        return None

    def _import_source(self, dotted: str) -> tuple[str, str]:
        """Where a new import takes the name from: the shortest public spelling."""
        best = self._spellings(dotted)[0]
        for m, q in self._spellings(dotted)[1:]:
            if not any(p.startswith("_") for p in m.split(".")) and len(m) < len(best[0]):
                best = (m, q)
        return best

    def _compute(self, dotted: str) -> str:
        mod, qual = self._split(dotted)
        head = qual.partition(".")[0]
        if mod == "builtins":
            return f"builtins.{qual}" if head in self.assigned else qual
        if self.is_local(dotted):
            return qual
        for m, q in self._spellings(dotted):
            e = self._existing(m, q)
            if e is not None:
                return e
        mod, qual = self._import_source(dotted)
        head, _, rest = qual.partition(".")
        tail = f".{rest}" if rest else ""
        # a new import: `from mod import head [as alias]`
        alias = None
        used = {a or n for _, n, a in self.added} | {k for k, v in self.reserved.items() if v != (mod, head)}
        if head in self.taken or head in used:
            alias = self._alias(mod, head, used)
        self.reserved[alias or head] = (mod, head)
        return (alias or head) + tail

    def _alias(self, mod: str, head: str, used: set[str]) -> str:
        comps = [c for c in reversed(mod.split(".")) if c not in ("modules", head.lower(), "_C")]
        cand = head
        for c in comps:
            cand = "".join(w.capitalize() for w in c.strip("_").split("_")) + cand
            if cand not in self.taken and cand not in used:
                return cand
        i = 2
        while f"{head}{i}" in self.taken or f"{head}{i}" in used:
            i += 1
        return f"{head}{i}"

    def need(self, dotted: str) -> None:
        mod, qual = self._split(dotted)
        expr = self.expr_for(dotted)
        if mod == "builtins":
            if expr.startswith("builtins.") and "builtins" not in self.module_aliases:
                self.add_builtins = True
            return
        if self.is_local(dotted) or any(self._existing(m, q) is not None for m, q in self._spellings(dotted)):
            return
        mod, qual = self._import_source(dotted)
        head = qual.split(".")[0]
        bound = expr.split(".")[0]
        alias = bound if bound != head else None
        if (mod, head, alias) not in self.added:
            self.added.append((mod, head, alias))
            self.bindings[f"{mod}.{head}"] = bound

    def render(self) -> RenderedImports:
        """The new import lines and the imports extended in place."""
        lines: list[tuple[str, str]] = []  # (module, text)
        edits = []
        if self.add_torch:
            lines.append(("torch", "import torch"))
        if self.add_builtins:
            lines.append(("builtins", "import builtins"))
        by_mod: dict[str, list[str]] = {}
        for mod, name, alias in self.added:
            by_mod.setdefault(mod, []).append(f"{name} as {alias}" if alias else name)
        for mod, names in by_mod.items():
            if mod in self.from_lines:
                line = self.from_lines[mod]
                body = self.src.lines.line_body(line)
                code = body.split("#", 1)[0].rstrip()
                if not code.rstrip().endswith((",", "\\")) and "(" not in code:
                    edits.append((line, code, code + ", " + ", ".join(names)))
                    continue
            lines.append((mod, f"from {mod} import {', '.join(names)}"))
        inserts = sorted(((self._place(mod), mod.lower(), text) for mod, text in lines), key=lambda x: (x[0], x[1]))
        return RenderedImports([(at, text) for at, _, text in inserts], edits)

    def _place(self, mod: str) -> int:
        """The line a new import of `mod` goes before: beside the imports of the same
        top-level package (for a standard-library module: of the standard library), in
        usort (case-insensitive module name) order among them; without such imports,
        after the last import above the first definition."""
        top = mod.split(".")[0]
        related = [a for a in self.anchors if a[2].split(".")[0] == top]
        if not related and top in sys.stdlib_module_names:
            related = [a for a in self.anchors if a[2].split(".")[0] in sys.stdlib_module_names]
        if not related:
            return max(self.last_import_line, self.docstring_end, self.future_end) + 1
        for start, _, other in related:
            if other.lower() > mod.lower():
                return start
        return related[-1][1] + 1


def _bound(asname: cst.AsName) -> str:
    """The name an `import ... as NAME` binds."""
    return cst.ensure_type(asname.name, cst.Name).value


def _imported_module(small: cst.Import | cst.ImportFrom) -> str | None:
    """The module an import statement names (its first, for `import a, b`); None for
    relative imports."""
    if isinstance(small, cst.Import):
        return _dotted(small.names[0].name)
    if small.relative or small.module is None:
        return None
    return _dotted(small.module)
