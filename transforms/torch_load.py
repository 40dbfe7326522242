"""Make every ``torch.load`` in a test file explicit about ``weights_only``.

Since torch 2.6 ``torch.load`` defaults to ``weights_only=True``: a test that
saves a whole ``nn.Module`` (or anything else with non-allowlisted globals) and
loads it back with a bare ``torch.load`` fails with ``UnpicklingError``.  This
transform rewrites each resolved call in one of three modes:

``weights-only-false``
    add ``weights_only=False`` (the test trusts the file it wrote itself).
``safe-globals``
    wrap the enclosing statement in
    ``with torch.serialization.safe_globals([A, B]):`` using the globals that
    ``decouple discover-globals`` found for that call site, importing them.
``auto``
    ``safe-globals`` where discovery found only *safe* globals for the call
    (see transforms/unsafe_globals.py), ``weights_only=False`` otherwise;
    a load that needs nothing (a state_dict) is left alone.

Design notes
------------
* ``ast`` triage first; LibCST (with qualified names) only for files that may
  contain a candidate.  Edits are applied to the *text* at LibCST positions, so
  everything the transform does not touch stays byte-identical (no formatter).
* Only calls whose callee resolves to torch.load and nothing else are rewritten;
  `load` that may also be a local `def load`/`load = ...` (or come from
  ``from torch import *``) gets a ``torch-load/unresolved`` finding (manual).
* Discovery call sites are matched by file (path suffix), by the stripped source
  line recorded by the plugin, then by the enclosing test function/class (the
  record's test ids), then by the position among calls with the same text, and by
  line number only as the last tie-breaker; this keeps a second run over the
  rewritten file a no-op although lines moved.
* A call already inside ``with ...safe_globals([...])`` is left alone when the
  block covers what discovery found (or discovery knows nothing about it); when
  entries are missing, an inner block with *only the missing* entries is added
  (never the same entry twice: nested blocks with the same entry remove it from
  the outer one on exit).
* A wrap planned for a compound statement (a load in a ``for``/``while``/``if``/
  ``with`` header) covers the loads in its body the same way: outer statements are
  planned first and inner blocks list only what the outer one lacks.
* Consecutive statements of one block that need the same entries share one
  ``with``.
* When the enclosing function rebinds a name the ``with`` line would use (``torch``,
  an imported module or class), the call falls back to ``weights_only=False``.
* Eagerly evaluated comprehensions (list/set/dict) are wrapped like any
  statement; lambdas, generator expressions, function headers (defaults,
  decorators, annotations), one-line function/class bodies, class headers and
  statements containing ``yield`` (also in the body of a compound statement, not in
  nested defs) fall back to ``weights_only=False``
  (``torch-load/fallback``).
* In ``safe-globals`` mode dangerous globals (``torch.ScriptObject``, ...) are
  still allowlisted as asked, with a ``torch-load/dangerous-global`` warning;
  ``auto`` writes ``weights_only=False`` for them instead.

The engine passes ``path=`` (relative or absolute) to :meth:`TorchLoad.run` so
call sites can be matched with discovery; without it all discovered call sites
are candidates (matched by source line).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from transforms.base import ERROR, INFO, WARNING, Finding, TransformResult
from transforms.unsafe_globals import DANGEROUS, normalise, tier

MODES = ("weights-only-false", "safe-globals", "auto")
LOAD_NAMES = frozenset({"torch.load", "torch.serialization.load"})
SAFE_GLOBALS_NAME = "torch.serialization.safe_globals"
RULE = "torch-load/"
WRAP_LINE_LIMIT = 100
_DOTTED_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


# --------------------------------------------------------------------------- versions


def check_mode_supported(mode: str, version: Optional[tuple[int, int]]) -> Optional[str]:
    """An error message when `mode` cannot work with the target torch `version`, else None."""
    if mode not in MODES:
        return f"unknown --torch-load mode {mode!r}; choose one of {', '.join(MODES)}"
    if version is None:
        return (
            "the target interpreter has no importable torch, so it is unknown whether "
            "torch.load accepts weights_only; pass --python PATH of your PyTorch environment"
        )
    if tuple(version) < (1, 13):
        return (
            f"torch {version[0]}.{version[1]} has no weights_only argument (added in 1.13); "
            "nothing to make explicit"
        )
    if mode == "safe-globals" and tuple(version) < (2, 5):
        return (
            f"torch {version[0]}.{version[1]} has no torch.serialization.safe_globals context "
            "manager (added in 2.5); use --torch-load weights-only-false or auto"
        )
    return None


# --------------------------------------------------------------------------- discovery index


@dataclass
class Evidence:
    """What discovery knows about one call site."""

    globals: list[str] = field(default_factory=list)
    unfixable: Optional[str] = None
    ok: bool = False            # the load succeeded in the final discovery run
    source: str = "call"        # "call" (attributed call site) or "test" (per test only)
    where: str = ""             # file:line or test id, for messages


def _norm_path(p: str) -> list[str]:
    p = p.replace("\\", "/")
    parts = [x for x in p.split("/") if x not in ("", ".")]
    return parts


def _same_file(a: str, b: str) -> bool:
    pa, pb = _norm_path(a), _norm_path(b)
    if not pa or not pb:
        return False
    n = min(len(pa), len(pb))
    return pa[-n:] == pb[-n:]


@dataclass
class _CallRec:
    file: str
    line: int
    code: str
    globals: list[str]
    unfixable: Optional[str]
    ok: bool
    nodeids: list[str] = field(default_factory=list)   # tests that ran this call


class Discovery:
    """Index over the discover-globals JSON (schema_version 1)."""

    def __init__(self, data: Mapping[str, Any]):
        self.data = data
        self.resolved: dict[str, tuple[str, str]] = {}
        self.aliases: dict[str, list[str]] = {}   # dotted -> re-exports (longest first)
        for name, r in (data.get("resolved") or {}).items():
            if isinstance(r, Mapping) and r.get("module") and r.get("qualname"):
                self.resolved[normalise(name)] = (r["module"], r["qualname"])
                self.aliases[normalise(name)] = [
                    a for a in r.get("aliases") or [] if isinstance(a, str) and "." in a
                ]
        merged: dict[tuple[str, int, str], _CallRec] = {}
        self.tests: list[tuple[str, dict]] = []
        for nodeid, t in (data.get("tests") or {}).items():
            t = dict(t or {})
            self.tests.append((nodeid, t))
            for c in t.get("calls") or []:
                key = (c.get("file", ""), int(c.get("line", 0)), (c.get("code") or "").strip())
                names = [normalise(g) for g in (c.get("globals") or [])]
                for g in c.get("scan") or []:
                    if normalise(g) not in names:
                        names.append(normalise(g))
                ok = c.get("status", "ok" if not c.get("unfixable") else "failed") == "ok"
                rec = merged.get(key)
                if rec is None:
                    merged[key] = _CallRec(key[0], key[1], key[2], names, c.get("unfixable"), ok,
                                           [nodeid])
                else:
                    if nodeid not in rec.nodeids:
                        rec.nodeids.append(nodeid)
                    rec.globals += [g for g in names if g not in rec.globals]
                    rec.unfixable = rec.unfixable or c.get("unfixable")
                    rec.ok = rec.ok and ok
        self.calls = list(merged.values())

    # -- lookups
    def calls_for(self, path: Optional[str]) -> list[_CallRec]:
        if path is None:
            return list(self.calls)
        return [c for c in self.calls if _same_file(c.file, path)]

    def tests_for(self, path: Optional[str]) -> list[tuple[str, dict]]:
        out = []
        for nodeid, t in self.tests:
            f = nodeid.split("::", 1)[0]
            if path is None or _same_file(f, path):
                out.append((nodeid, t))
        return out


def _test_matches(nodeid: str, func: Optional[str], cls: Optional[str]) -> bool:
    """Does pytest id `nodeid` run function `func` (of class `cls`)?  Prefix match so
    PyTorch's instantiated device tests (TestFooCPU::test_bar_cpu) still match."""
    if not func:
        return False
    parts = nodeid.split("::")[1:]
    if not parts:
        return False
    name = parts[-1].split("[", 1)[0]
    if not (name == func or name.startswith(func + "_")):
        return False
    if cls is None:
        return True
    return any(p == cls or p.startswith(cls) for p in parts[:-1])


# --------------------------------------------------------------------------- text helpers


_NL_RE = re.compile(r"\r\n|\r|\n")


class _Text:
    def __init__(self, text: str):
        self.text = text
        self.starts = [0]
        for m in _NL_RE.finditer(text):
            self.starts.append(m.end())

    def off(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def line_of(self, off: int) -> int:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def line(self, n: int) -> str:
        s = self.starts[n - 1]
        e = self.starts[n] if n < len(self.starts) else len(self.text)
        return self.text[s:e]

    def line_body(self, n: int) -> str:
        return self.line(n).rstrip("\r\n")


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _skip_to(text: str, i: int, target: str) -> int:
    """Index of `target` at/after i, skipping only whitespace, comments and
    backslash-newlines; anything else before `target` raises ValueError (the caller
    then refuses the edit instead of writing into the wrong place)."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == target:
            return i
        if ch == "#":
            while i < n and text[i] not in "\r\n":
                i += 1
            continue
        if ch in " \t\f\r\n" or (ch == "\\" and i + 1 < n and text[i + 1] in "\r\n"):
            i += 1
            continue
        raise ValueError(f"{target!r} expected at offset {i}, found {ch!r}")
    raise ValueError(f"{target!r} not found")


def _skip_rpar(text: str, i: int, node) -> int:
    """Offset just after the closing parentheses of `node` (an expression whose
    LibCST position excludes its own ``(``...``)``), starting at its end offset `i`."""
    for _ in getattr(node, "rpar", ()) or ():
        i = _skip_to(text, i, ")") + 1
    return i


def _string_interior_lines(text: str) -> set[int]:
    """Lines that start inside a multi-line string (must not be re-indented)."""
    inside: set[int] = set()
    fstack: list[int] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            name = tokenize.tok_name.get(tok.type, "")
            if name == "FSTRING_START":
                fstack.append(tok.start[0])
            elif name == "FSTRING_END" and fstack:
                a = fstack.pop()
                inside.update(range(a + 1, tok.end[0] + 1))
            elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return inside


# --------------------------------------------------------------------------- plan records


@dataclass
class _Site:
    call: Any                  # libcst.Call
    line: int                  # start line of the call
    end_line: int
    stmt: Any = None           # statement to wrap (libcst node) or None
    stmt_lines: tuple[int, int] = (0, 0)
    block: Any = None          # parent block node of stmt
    index: int = -1            # index of stmt in block body
    no_wrap: Optional[str] = None   # why wrapping is impossible
    func: Optional[str] = None      # innermost enclosing def name
    cls: Optional[str] = None       # innermost enclosing class name
    enclosing_entries: list[tuple[str, set]] = field(default_factory=list)  # (code, qualnames)
    comment_line: int = 0      # line above which an --explain comment goes


@dataclass
class _Wrap:
    block_id: int
    index: int
    first: int
    last: int
    entries: list[str]          # expressions
    reason: str
    comment: Optional[str]
    dotted: list[str] = field(default_factory=list)   # the dotted names of `entries`
    stmt: Any = None            # the wrapped statement (libcst node)


# --------------------------------------------------------------------------- the transform


class TorchLoad:
    name = "torch-load"

    def __init__(
        self,
        mode: str,
        discovered: Optional[Mapping] = None,
        torch_version: Optional[tuple[int, int]] = None,
        explain: bool = False,
    ):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        self.mode = mode
        self.discovered = discovered
        self.discovery = Discovery(discovered) if discovered is not None else None
        self.torch_version = tuple(torch_version) if torch_version else None
        self.explain = explain

    check_mode_supported = staticmethod(check_mode_supported)

    # ------------------------------------------------------------------ triage
    def triage(self, text: str) -> bool:
        return "load" in text and "torch" in text

    @staticmethod
    def _ast_candidates(tree: ast.Module) -> bool:
        """Anything LibCST should look at: `x.load`, `from torch[.serialization] import load`,
        or a string naming torch.load (mock.patch targets)."""
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in ("torch", "torch.serialization"):
                if any(a.name in ("load", "*") for a in node.names):
                    return True
            elif isinstance(node, ast.Attribute) and node.attr == "load":
                return True
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if "torch.load" in node.value or "serialization.load" in node.value:
                    return True
        return False

    # ------------------------------------------------------------------ run
    def run(self, text: str, tree: ast.Module, path: Optional[str] = None) -> TransformResult:
        if not self.triage(text) or not self._ast_candidates(tree):
            return TransformResult(text=text)
        return _Runner(self, text, path).run()

    # ------------------------------------------------------------------ strip
    def strip(self, tree: ast.Module) -> ast.Module:
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
                stmt.names = [
                    a for a in stmt.names if not (a.asname is None and a.name in ("torch", "builtins"))
                ]
                if not stmt.names:
                    continue
            body.append(stmt)
        tree.body = body
        return tree


# --------------------------------------------------------------------------- strip helpers


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

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if self.names.is_load(node.func):
            node.keywords = [
                k for k in node.keywords
                if not (k.arg == "weights_only" and isinstance(k.value, ast.Constant)
                        and k.value.value in (None, True, False))
            ]
        return node

    def _unwrap(self, node):
        self.generic_visit(node)
        keep = [
            it for it in node.items
            if not (isinstance(it.context_expr, ast.Call)
                    and self.names.is_safe_globals(it.context_expr.func)
                    and it.optional_vars is None)
        ]
        if len(keep) == len(node.items):
            return node
        if keep:
            node.items = keep
            return node
        return node.body

    visit_With = _unwrap
    visit_AsyncWith = _unwrap


# --------------------------------------------------------------------------- the per-file run


class _Runner:
    def __init__(self, owner: TorchLoad, text: str, path: Optional[str]):
        self.o = owner
        self.text = text
        self.path = path
        self.findings: list[Finding] = []
        self.manual = 0

    # ------------------------------------------------------------------ helpers
    def find(self, rule, message, line, severity=INFO, fix=None, **data):
        self.findings.append(
            Finding(rule=RULE + rule, message=message, line=line, severity=severity, fix=fix, data=data)
        )

    def pos(self, node):
        from libcst.metadata import PositionProvider

        return self.wrapper_meta[PositionProvider][node]

    def qnames(self, node) -> set[str]:
        from libcst.metadata import QualifiedNameProvider

        try:
            v = self.wrapper_meta[QualifiedNameProvider][node]
        except KeyError:
            return set()
        if callable(v):  # LazyValue
            v = v()
        return {q.name for q in v}

    # ------------------------------------------------------------------ main
    def run(self) -> TransformResult:
        import libcst as cst
        from libcst.metadata import (
            MetadataWrapper,
            ParentNodeProvider,
            ExpressionContextProvider,
            PositionProvider,
            QualifiedNameProvider,
            ScopeProvider,
        )

        try:
            module = cst.parse_module(self.text)
        except Exception as exc:  # libcst parser disagrees with ast
            self.find("parse-error", f"LibCST cannot parse the file: {exc}", 1, ERROR)
            return TransformResult(self.text, self.findings, manual=1)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.wrapper_meta = wrapper.resolve_many(
            [PositionProvider, QualifiedNameProvider, ParentNodeProvider, ScopeProvider,
             ExpressionContextProvider]
        )
        self.parents = self.wrapper_meta[ParentNodeProvider]
        self.scopes = self.wrapper_meta[ScopeProvider]
        self.module = module
        self.T = _Text(self.text)
        self.indent_unit = module.default_indent
        self.newline = module.default_newline

        calls, refs = self._collect(module)
        for node, message in refs:
            self.find("unresolved", message, self.pos(node).start.line, WARNING)
            self.manual += 1

        self.imports = _ImportMap(self, module)
        self.kw_edits: list[tuple[int, int, str]] = []
        self.wraps: list[_Wrap] = []
        self.comments: dict[int, str] = {}
        # Every load call in the file with its span (for call-site matching).
        self.all_spans = []
        for call in calls:
            cp = self.pos(call)
            self.all_spans.append((cp.start.line, {
                self.T.line_body(n).strip() for n in range(cp.start.line, cp.end.line + 1)}))
        # Outer statements first: a wrap planned for a compound statement (a load in
        # its header) covers the loads in its body, which then add only what is missing.
        order = sorted(range(len(calls)), key=lambda i: (self._depth(calls[i]), i))
        for i in order:
            self._handle(calls[i])
        self.findings.sort(key=lambda f: f.line)  # calls were handled outer-first
        if not self.kw_edits and not self.wraps:
            return TransformResult(self.text, self.findings, manual=self.manual)
        return TransformResult(self._apply(), self.findings, manual=self.manual)

    def _is_stmt(self, node) -> bool:
        import libcst as cst

        return (isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
                and isinstance(self.parents.get(node), (cst.IndentedBlock, cst.Module)))

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
            return (f"torch.load is referenced indirectly ({why}); the eventual call cannot be "
                    "resolved statically: make it explicit by hand")

        class V(cst.CSTVisitor):
            def visit_Import(self, node):
                return False

            def visit_ImportFrom(self, node):
                if isinstance(node.names, cst.ImportStar) and not node.relative and \
                        _dotted(node.module or cst.Name("x")) in ("torch", "torch.serialization"):
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
                    refs.append((node, f"`{dotted or 'load'}` may be torch.load or another "
                                       f"binding ({others}) here: not rewritten; make the call "
                                       "explicit by hand"))
                elif not q and star and isinstance(node.func, cst.Name) and node.func.value == "load":
                    func_nodes.add(id(node.func))
                    refs.append((node, f"`load` probably comes from `from {star[0]} import *`: "
                                       "not rewritten; import torch.load explicitly or make the "
                                       "call explicit by hand"))

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
                    refs.append((node, indirect(
                        f"the string {node.value} (mock.patch or getattr target)")))

        module.visit(V())
        return calls, refs

    # ------------------------------------------------------------------ one call
    def _handle(self, call):
        import libcst as cst

        p = self.pos(call)
        line = p.start.line
        code = self.T.line_body(line).strip()
        kws = {a.keyword.value: a for a in call.args if a.keyword is not None}
        stars = [a for a in call.args if a.star in ("*", "**")]
        positional = [a for a in call.args if a.keyword is None and not a.star]
        wo = kws.get("weights_only")
        wo_none = wo is not None and isinstance(wo.value, cst.Name) and wo.value.value == "None"
        if wo is not None and not wo_none:
            self.find("skip-explicit", "torch.load already passes weights_only: left alone", line,
                      call=code)
            return
        if "pickle_module" in kws or len(positional) >= 3:
            self.find(
                "skip-pickle-module",
                "torch.load passes pickle_module (the default is then weights_only=False and "
                "weights_only=True would raise): left alone",
                line, call=code,
            )
            return
        if stars:
            kind = "**kwargs" if any(a.star == "**" for a in stars) else "*args"
            self.find(
                "skip-kwargs",
                f"torch.load passes {kind}, which may already carry weights_only (adding it can raise "
                "'got multiple values'): left alone, review by hand",
                line, WARNING, call=code,
            )
            self.manual += 1
            return

        site = self._site(call)
        evidence = self._evidence(site, call)
        action, reason, entries_dotted = self._decide(site, evidence)
        data = {"call": code, "reason": reason}
        if evidence is not None:
            data["globals"] = list(evidence.globals)
            data["evidence"] = evidence.where
        if action == "leave":
            self.find("skip-state-dict", f"left alone: {reason}", line, **data)
            return
        if action == "covered":
            self.find("skip-covered", f"left alone: {reason}", line, **data)
            return
        if action == "invalid":
            self.find("invalid-global", f"not rewritten: {reason}", line, ERROR, **data)
            self.manual += 1
            return
        if action == "refuse":
            self.find("no-discovery", f"not rewritten: {reason}", line, ERROR, **data)
            self.manual += 1
            return
        if action == "wrap":
            exprs = [self.imports.expr_for(d) for d in entries_dotted]
            covered = self._covered(site, entries_dotted, exprs)
            missing = [(d, e) for d, e in zip(entries_dotted, exprs) if not covered(d, e)]
            needs_true = self.o.torch_version is not None and tuple(self.o.torch_version) < (2, 6)
            planned = self._planned_cover(site) if site.no_wrap is None else None
            if missing and planned is not None:
                # a wrap planned for an enclosing statement (a load in its header)
                missing = [(d, e) for d, e in missing if d not in planned.dotted]
                if not missing:
                    msg = ("covered by the safe_globals block added around the enclosing "
                           f"statement (line {planned.first})")
                    if needs_true or wo_none:
                        if not self._try_set_kw(call, "True", line, code):
                            return
                        self.find("safe-globals", msg + "; added weights_only=True", line,
                                  fix="safe_globals", **data)
                        return
                    self.find("skip-covered", msg, line, **data)
                    return
            if not missing:
                self.find("skip-covered",
                          "already inside a safe_globals block that lists the needed globals",
                          line, **data)
                return
            shadowed = [] if site.no_wrap else self._shadowed(
                site.stmt, [e.split(".")[0] for _, e in missing], self.imports.torch_name())
            if site.no_wrap:
                action = "fallback"
                reason = f"cannot wrap in a with block ({site.no_wrap}); {reason}"
            elif shadowed:
                action = "fallback"
                reason = (f"{', '.join(f'`{n}`' for n in shadowed)} is rebound in the enclosing "
                          f"function, so the with block cannot name the global; {reason}")
            else:
                if (needs_true or wo_none) and not self._try_set_kw(call, "True", line, code):
                    return
                for d, _ in missing:
                    self.imports.need(d)
                self.imports.need_torch()
                exprs_missing = [e for _, e in missing]
                comment = None
                if self.o.explain:
                    comment = _explain_wrap([d for d, _ in missing])
                self._plan_wrap(_Wrap(id(site.block), site.index, site.stmt_lines[0],
                                      site.stmt_lines[1], exprs_missing, reason, comment,
                                      [d for d, _ in missing], site.stmt))
                data["entries"] = exprs_missing
                msg = f"wrapped in safe_globals([{', '.join(exprs_missing)}])"
                if needs_true:
                    msg += " and added weights_only=True (the default is False before torch 2.6)"
                self.find("safe-globals", msg, line, fix="safe_globals", **data)
                return
        # weights_only=False: plain, or as a fallback
        if not self._try_set_kw(call, "False", line, code):
            return
        if self.o.explain:
            self.comments.setdefault(site.comment_line, _explain_false(reason, evidence))
        if action == "fallback":
            self.find("fallback", f"weights_only=False instead of safe_globals: {reason}", line,
                      WARNING if self.o.mode == "safe-globals" else INFO,
                      fix="weights_only=False", **data)
        else:
            self.find("weights-only-false", f"added weights_only=False: {reason}", line,
                      fix="weights_only=False", **data)

    def _try_set_kw(self, call, value: str, line: int, code: str) -> bool:
        try:
            self._set_kw(call, value)
            return True
        except ValueError as exc:
            self.find("unresolved", f"cannot place weights_only={value} in this call's text "
                      f"({exc}): not rewritten, make it explicit by hand", line, WARNING, call=code)
            self.manual += 1
            return False

    def _plan_wrap(self, w: _Wrap):
        """Record a wrap; a second load in the same statement extends the same block."""
        for old in self.wraps:
            if old.block_id == w.block_id and old.index == w.index:
                for e, d in zip(w.entries, w.dotted):
                    if e not in old.entries:
                        old.entries.append(e)
                        old.dotted.append(d)
                old.last = max(old.last, w.last)
                return
        self.wraps.append(w)

    def _planned_cover(self, site: _Site) -> Optional[_Wrap]:
        """A planned wrap around a statement strictly enclosing `site`'s statement (their
        entries merged), or None.  Loads of the same statement share its wrap instead.
        Like an existing block, it counts as covering a def nested in it too: a second
        block with the same entry inside it would remove the entry from it on exit."""
        ancestors = set()
        node = self.parents.get(site.stmt) if site.stmt is not None else None
        while node is not None:
            if self._is_stmt(node):
                ancestors.add(id(node))
            node = self.parents.get(node)
        found = [w for w in self.wraps if w.stmt is not None and id(w.stmt) in ancestors]
        if not found:
            return None
        merged = _Wrap(0, 0, min(w.first for w in found), 0, [], "", None, [], None)
        for w in found:
            merged.dotted += [d for d in w.dotted if d not in merged.dotted]
        return merged

    def _shadowed(self, stmt, names: Sequence[str], torch_name: str) -> list[str]:
        """Names among `names` + [torch_name] that a function (or class body) around
        `stmt` rebinds, so the module-level binding the with block relies on is not the
        one seen there.  A local `import torch` still binds torch: not shadowing."""
        import libcst as cst
        from libcst.metadata import ClassScope, GlobalScope

        def binds_torch(a) -> bool:
            node = getattr(a, "node", None)
            if not isinstance(node, cst.Import):
                return False
            for al in node.names:
                path = _dotted(al.name) or ""
                if al.asname is not None:
                    if path == "torch" and getattr(al.asname.name, "value", None) == torch_name:
                        return True
                elif path.split(".")[0] == "torch" and torch_name == "torch":
                    return True
            return False

        out: list[str] = []
        scope = self.scopes.get(stmt)
        first = True
        while scope is not None and not isinstance(scope, GlobalScope):
            if first or not isinstance(scope, ClassScope):
                for n in list(names) + [torch_name]:
                    if not n or n in out:
                        continue
                    assigned = scope.assignments[n]
                    if n == torch_name and assigned and all(binds_torch(a) for a in assigned):
                        continue
                    if assigned:
                        out.append(n)
            first = False
            scope = getattr(scope, "parent", None)
        return out

    # ------------------------------------------------------------------ decision
    def _decide(self, site: _Site, ev: Optional[Evidence]):
        mode = self.o.mode
        if mode == "weights-only-false":
            if ev and ev.globals:
                return "false", "the checkpoint pickles " + ", ".join(ev.globals), []
            return "false", "explicit weights_only=False requested (--torch-load weights-only-false)", []
        if ev is None:
            if site.enclosing_entries:
                return "covered", "already inside a safe_globals block; discovery has no record of it", []
            if mode == "safe-globals":
                if self.o.discovery is None:
                    return ("refuse", "no discovery data: run `decouple discover-globals` and pass "
                            "--globals FILE (or use --torch-load weights-only-false/auto)", [])
                return "fallback", "discovery has no record of this call", []
            return "false", "no discovery data for this call", []
        if ev.unfixable:
            return ("fallback" if mode == "safe-globals" else "false",
                    f"no allowlist can fix it: {ev.unfixable}", [])
        local = [g for g in ev.globals if ".<locals>." in g]
        if local:
            return ("fallback" if mode == "safe-globals" else "false",
                    f"{', '.join(local)} is defined inside a function and cannot be imported "
                    "for a safe_globals list", [])
        bad = [g for g in ev.globals if not _DOTTED_RE.fullmatch(g)]
        if bad:
            return ("invalid", "the discovery data names globals that are not dotted Python "
                    f"names ({', '.join(repr(b) for b in bad[:3])}): check the --globals file", [])
        if not ev.globals:
            if ev.ok:
                return "leave", "discovery saw it load with weights_only=True (no globals needed)", []
            return ("fallback" if mode == "safe-globals" else "false",
                    "the load failed under weights_only=True without naming a global", [])
        danger = {g: tier(g).reason for g in ev.globals if tier(g).level == DANGEROUS}
        for g, why in danger.items():
            if mode == "auto":
                self.find("dangerous-global",
                          f"{g} is dangerous to allowlist ({why}); using weights_only=False",
                          site.line, INFO, name=g)
            else:
                self.find("dangerous-global",
                          f"{g} is dangerous to allowlist ({why}); allowlisted as requested by "
                          "--torch-load safe-globals: consider weights_only=False",
                          site.line, WARNING, name=g)
        if danger and mode == "auto":
            return "false", "the checkpoint needs " + ", ".join(danger) + " (unsafe to allowlist)", []
        v = self.o.torch_version
        if v is not None and tuple(v) < (2, 5):
            return ("fallback" if mode == "safe-globals" else "false",
                    f"torch {v[0]}.{v[1]} has no safe_globals context manager", [])
        return "wrap", "the checkpoint needs " + ", ".join(ev.globals), list(ev.globals)

    def _evidence(self, site: _Site, call) -> Optional[Evidence]:
        d = self.o.discovery
        if d is None:
            return None
        chosen = self._match_records(site, d.calls_for(self.path))
        if chosen:
            ev = Evidence(source="call", ok=all(r.ok for r in chosen))
            for r in chosen:
                ev.globals += [g for g in r.globals if g not in ev.globals]
                ev.unfixable = ev.unfixable or r.unfixable
            ev.where = ", ".join(f"{r.file}:{r.line}" for r in chosen)
            return ev
        tests = [(n, t) for n, t in d.tests_for(self.path) if _test_matches(n, site.func, site.cls)]
        # Per-test data only helps when the test's calls were not attributed.
        tests = [(n, t) for n, t in tests if not t.get("calls")]
        if tests:
            ev = Evidence(source="test", ok=all(t.get("outcome") == "passed" for _, t in tests))
            for _, t in tests:
                ev.globals += [normalise(g) for g in t.get("globals") or [] if normalise(g) not in ev.globals]
                ev.unfixable = ev.unfixable or t.get("unfixable")
            ev.where = ", ".join(n for n, _ in tests)
            return ev
        return None

    def _match_records(self, site: _Site, recs: list[_CallRec]) -> list[_CallRec]:
        """The discovery records of this call site.  Recorded lines refer to the file as
        discovery ran it and move when anything is inserted above (a second run over
        the rewritten file, another transform), so: the source text first, then the
        enclosing test function/class, then the position among the calls with the same
        text, and the line only as the last tie-breaker."""
        span = range(site.line, site.end_line + 1)
        span_codes = {self.T.line_body(n).strip() for n in span}
        cands = [r for r in recs if (r.code in span_codes) if r.code] + \
            [r for r in recs if not r.code and r.line in span]
        if not cands:
            return []
        by_func = [r for r in cands
                   if any(_test_matches(n, site.func, site.cls) for n in r.nodeids)]
        if by_func:
            cands = by_func
        lines = sorted({r.line for r in cands})
        if len(lines) == 1:
            return cands
        # Same text at several recorded lines: pair the k-th such call in this file
        # with the k-th recorded line (stable when lines shift).
        codes = {r.code for r in cands if r.code}
        mine = sorted(ln for ln, codes_ in self.all_spans if codes & codes_)
        all_lines = sorted({r.line for r in recs if r.code in codes})
        if len(mine) == len(all_lines) and site.line in mine:
            want = all_lines[mine.index(site.line)]
            if want in lines:
                return [r for r in cands if r.line == want]
        exact = [r for r in cands if r.line in span]
        if exact:
            return exact
        best = min(abs(r.line - site.line) for r in cands)
        return [r for r in cands if abs(r.line - site.line) == best]

    def _covered(self, site: _Site, dotted: list[str], exprs: list[str]):
        codes = {c for c, _ in site.enclosing_entries}
        qn: set[str] = set()
        for _, q in site.enclosing_entries:
            qn |= q

        def covered(d: str, e: str) -> bool:
            return e in codes or d in qn or d.split(".")[-1] in codes and self.imports.is_local(d)

        return covered

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
                    site.no_wrap = (f"in a {what} header (default, decorator, annotation or base) "
                                    f"or one-line {what} body")
                if isinstance(node, cst.FunctionDef) and site.func is None:
                    site.func = node.name.value
                if isinstance(node, cst.ClassDef) and site.cls is None and site.func is not None:
                    site.cls = node.name.value
            if isinstance(node, cst.With) and child is node.body:
                self._record_enclosing(node, site)
            if (stmt is None and isinstance(parent, (cst.IndentedBlock, cst.Module))
                    and isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))):
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

    # ------------------------------------------------------------------ keyword edits
    def _set_kw(self, call, value: str):
        """Plan the text edit that sets ``weights_only=value`` on `call`.  Raises
        ValueError when the call's text is not laid out as expected."""
        import libcst as cst

        T = self.T
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "weights_only":
                vp = self.pos(a.value)
                self.kw_edits.append((T.off(vp.start.line, vp.start.column),
                                      T.off(vp.end.line, vp.end.column), value))
                return
        kw = f"weights_only={value}"
        text = self.text
        fp = self.pos(call.func)
        # the call's own "(": after the callee and the callee's closing parens
        lpar = _skip_to(text, _skip_rpar(text, T.off(fp.end.line, fp.end.column), call.func), "(")
        if not call.args:
            self.kw_edits.append((lpar + 1, lpar + 1, kw))
            return
        last = call.args[-1]
        # the whole last argument, with the parentheses around its value
        # (pos(last.value) stops inside them: `map_location=(lambda s, l: s)`)
        lp = self.pos(last)
        vend = T.off(lp.end.line, lp.end.column)
        trailing = isinstance(last.comma, cst.Comma)
        after = vend
        if trailing:
            after = _skip_to(text, vend, ",") + 1
        paren = _skip_to(text, after, ")")
        if len(call.args) >= 2:
            prev_line = self.pos(call.args[-2]).start.line
        else:
            prev_line = T.line_of(lpar)
        one_per_line = lp.start.line != prev_line and T.line_of(paren) != T.line_of(vend)
        if not one_per_line:
            if trailing:
                self.kw_edits.append((after, after, f" {kw},"))
            else:
                self.kw_edits.append((vend, vend, f", {kw}"))
            return
        arg_line = T.line(lp.start.line)
        prefix = arg_line[: lp.start.column]
        indent = prefix if not prefix.strip(" \t") else "".join(c if c == "\t" else " " for c in prefix)
        if trailing:
            comma_line = T.line_of(after - 1)
            ins = T.starts[comma_line] if comma_line < len(T.starts) else len(text)
            self.kw_edits.append((ins, ins, f"{indent}{kw},{self.newline}"))
            return
        # The comma goes right after the argument; the new keyword on its own line
        # after any comment that belongs to the argument (`x  # why` keeps its comment).
        line_no = T.line_of(vend)
        eol = T.off(line_no, len(T.line_body(line_no)))
        rest = text[vend:eol]
        if not rest.lstrip(" \t").startswith("#"):
            self.kw_edits.append((vend, vend, f",{self.newline}{indent}{kw}"))
            return
        self.kw_edits.append((vend, vend, ","))
        self.kw_edits.append((eol, eol, f"{self.newline}{indent}{kw}"))

    # ------------------------------------------------------------------ applying
    def _apply(self) -> str:
        text = self.text
        T = self.T
        # phase 1: in-line keyword edits (may add lines); track the line shift
        added_before: list[tuple[int, int]] = []  # (offset, newlines added)
        for start, end, rep in sorted(self.kw_edits, key=lambda e: (e[0], e[1]), reverse=True):
            text = text[:start] + rep + text[end:]
            added_before.append((start, len(_NL_RE.findall(rep)) - len(_NL_RE.findall(self.text[start:end]))))

        def new_line(old: int) -> int:
            off = T.starts[old - 1] if old - 1 < len(T.starts) else len(self.text)
            return old + sum(n for o, n in added_before if o < off)

        def new_last(old_last: int) -> int:
            end = T.starts[old_last] if old_last < len(T.starts) else len(self.text) + 1
            return old_last + sum(n for o, n in added_before if o < end)

        lines = _NL_RE.split(text)
        seps = _NL_RE.findall(text)
        # keep separators: rebuild as list of (content, sep)
        L = [[c, s] for c, s in zip(lines, seps + [""])]
        interior = _string_interior_lines(text)
        nl = self.newline

        inserts: dict[int, list[str]] = {}   # new line number -> lines to insert before it
        indent_ranges: list[tuple[int, int, str]] = []

        # merge consecutive wraps of the same block with identical entries
        wraps = sorted(self.wraps, key=lambda w: (w.block_id, w.index))
        merged: list[_Wrap] = []
        for w in wraps:
            if merged and merged[-1].block_id == w.block_id and merged[-1].entries == w.entries \
                    and w.index in (merged[-1].index, merged[-1].index + 1):
                merged[-1].last = max(merged[-1].last, w.last)
                merged[-1].index = w.index
                continue
            if merged and merged[-1].block_id == w.block_id and w.index == merged[-1].index:
                # two calls in one statement with different entries: union
                for e in w.entries:
                    if e not in merged[-1].entries:
                        merged[-1].entries.append(e)
                merged[-1].last = max(merged[-1].last, w.last)
                continue
            merged.append(_Wrap(w.block_id, w.index, w.first, w.last, list(w.entries), w.reason, w.comment))

        torch_name = self.imports.torch_name()
        spans = []
        for w in merged:
            a, b = new_line(w.first), new_last(w.last)
            spans.append((w, a, b, self._unit(_indent_of(L[a - 1][0]))))
        indent_ranges = [(a, b, unit) for _, a, b, unit in spans]

        def outer(a: int) -> str:
            """Indentation the wraps around line `a` add (their lines are re-indented
            below, lines inserted here are not): nested wraps need it on their head."""
            return "".join(u for s, e, u in reversed(indent_ranges) if s < a <= e)

        for w, a, b, unit in spans:
            ind = outer(a) + _indent_of(L[a - 1][0])
            head = f"{ind}with {torch_name}.serialization.safe_globals([{', '.join(w.entries)}]):"
            block = []
            if w.comment:
                block.append(f"{ind}# {w.comment}")
            if len(head) > WRAP_LINE_LIMIT:
                block.append(f"{ind}with {torch_name}.serialization.safe_globals([")
                block += [f"{ind}{unit}{e}," for e in w.entries]
                block.append(f"{ind}]):")
            else:
                block.append(head)
            inserts.setdefault(a, []).extend(block)
        comment_at = []
        for old, comment in self.comments.items():
            a = new_line(old)
            comment_at.append((a, outer(a) + _indent_of(L[a - 1][0]) + "# " + comment))
        for a, c in sorted(comment_at, reverse=True):
            inserts.setdefault(a, []).insert(0, c)

        for a, b, unit in indent_ranges:
            for n in range(a, b + 1):
                if n in interior or not L[n - 1][0].strip():
                    continue
                L[n - 1][0] = unit + L[n - 1][0]

        import_lines, import_edits, import_at = self.imports.render()
        for (ln, col_text_old, col_text_new) in import_edits:
            n = new_line(ln)
            L[n - 1][0] = L[n - 1][0].replace(col_text_old, col_text_new, 1)
        if import_lines:
            n = new_line(import_at) if import_at <= len(T.starts) else len(L) + 1
            inserts.setdefault(n, [])
            inserts[n] = import_lines + inserts[n]

        out: list[str] = []
        for i, (content, sep) in enumerate(L, start=1):
            for extra in inserts.get(i, []):
                out.append(extra + nl)
            out.append(content + sep)
        tail = inserts.get(len(L) + 1, [])
        if tail:
            if out and not out[-1].endswith(("\n", "\r")):
                out[-1] += nl
            out += [x + nl for x in tail]
        return "".join(out)

    def _unit(self, ind: str) -> str:
        """One indentation level in the style of the statement being wrapped."""
        u = self.indent_unit
        if ind.startswith("\t"):
            return "\t"
        if ind:
            return u if u and u.strip(" ") == "" else "    "
        return u if u and u.strip(" \t") == "" else "    "


def _dotted(node) -> Optional[str]:
    import libcst as cst

    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


# --------------------------------------------------------------------------- explain texts


def _short(names: Sequence[str], n: int = 3) -> str:
    short = [x.rsplit(".", 1)[-1] for x in names]
    return ", ".join(short[:n]) + (", ..." if len(short) > n else "")


def _explain_false(reason: str, ev: Optional[Evidence]) -> str:
    if ev is not None and ev.unfixable:
        return f"{ev.unfixable.split(' (')[0].split(':')[0]}: weights_only=False"
    if ev is not None and ev.globals:
        danger = [g for g in ev.globals if tier(g).level == DANGEROUS]
        if danger:
            return f"the checkpoint needs {_short(danger)} (unsafe to allowlist): weights_only=False"
        return f"the test saves whole objects ({_short(ev.globals, 2)}): weights_only=False"
    return "trusted test checkpoint: weights_only=False"


def _explain_wrap(names: Sequence[str]) -> str:
    return f"the test saves whole objects ({_short(names, 2)}): allowlisted for weights_only"


# --------------------------------------------------------------------------- imports


class _ImportMap:
    """How the file can name a dotted global, and which imports must be added."""

    def __init__(self, runner: _Runner, module):
        import libcst as cst

        self.r = runner
        self.module = module
        self.bindings: dict[str, str] = {}   # dotted target -> local expression
        self.module_aliases: dict[str, str] = {}  # imported module path -> expression
        self.torch_alias: Optional[str] = None
        self.top_level_defs: set[str] = set()
        self.from_stmts: dict[str, tuple] = {}  # module -> (line, stmt) first single-line from-import
        self.last_import_line = 0
        self.first_def_line: Optional[int] = None
        self.docstring_end = 0
        self.future_end = 0
        self.added: list[tuple[str, str, Optional[str]]] = []  # (module, name, alias)
        self.add_torch = False
        self.add_builtins = False
        self.taken: set[str] = set()     # every name used or bound anywhere in the file
        self.assigned: set[str] = set()  # every name bound anywhere in the file
        self._dotted_expr: dict[str, str] = {}
        self.reserved: dict[str, tuple[str, str]] = {}  # new-import name -> (module, name)

        tree = ast.parse(runner.text)
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

        for i, stmt in enumerate(module.body):
            sp = runner.pos(stmt)
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                self.top_level_defs.add(stmt.name.value)
                if self.first_def_line is None:
                    self.first_def_line = (self.r.pos(stmt.decorators[0]).start.line
                                           if stmt.decorators else sp.start.line)
                continue
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if i == 0 and isinstance(small, cst.Expr) and isinstance(
                            small.value, (cst.SimpleString, cst.ConcatenatedString)):
                        self.docstring_end = sp.end.line - (1 if sp.end.column == 0 else 0)
                    if isinstance(small, cst.Assign):
                        for t in small.targets:
                            if isinstance(t.target, cst.Name):
                                self.top_level_defs.add(t.target.value)
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        end = sp.end.line - (1 if sp.end.column == 0 and sp.end.line > sp.start.line else 0)
                        if self.first_def_line is None:
                            self.last_import_line = end
                        self._learn(small, sp.start.line, end, stmt)
                        if isinstance(small, cst.ImportFrom) and _dotted(small.module or cst.Name("x")) == "__future__":
                            self.future_end = end
        if self.torch_alias is None:
            self._learn_guarded_torch(tree.body)

    # -- learning existing imports
    def _learn_guarded_torch(self, body, guarded: bool = False):
        """`import torch` inside a module-level try/if/with (an optional dependency:
        `try: import torch / except ImportError: torch = None`) binds torch too; adding an
        unconditional `import torch` would defeat the guard."""
        for stmt in body:
            if isinstance(stmt, ast.Import) and guarded:
                for a in stmt.names:
                    if a.name == "torch" or a.name.startswith("torch."):
                        bound = a.asname if a.asname and a.name == "torch" else (
                            None if a.asname else "torch")
                        if bound and self.torch_alias is None:
                            self.torch_alias = bound
            elif isinstance(stmt, (ast.If, ast.With, ast.Try, getattr(ast, "TryStar", ast.Try))):
                self._learn_guarded_torch(stmt.body, True)
                self._learn_guarded_torch(getattr(stmt, "orelse", []), True)
                self._learn_guarded_torch(getattr(stmt, "finalbody", []), True)
                for h in getattr(stmt, "handlers", []):
                    self._learn_guarded_torch(h.body, True)

    def _learn(self, small, start: int, end: int, stmt):
        import libcst as cst

        if isinstance(small, cst.Import):
            for a in small.names:
                path = _dotted(a.name)
                if not path:
                    continue
                if a.asname is not None:
                    alias = a.asname.name.value
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
            name = _dotted(a.name)
            bound = a.asname.name.value if a.asname is not None else name
            self.bindings[f"{mod}.{name}"] = bound
            self.module_aliases.setdefault(f"{mod}.{name}", bound)
        if mod not in self.from_stmts and start == end and small.lpar is None \
                and len(stmt.body) == 1:
            self.from_stmts[mod] = (start, stmt)

    # -- queries
    def torch_name(self) -> str:
        return self.torch_alias or "torch"

    def need_torch(self):
        if self.torch_alias is None:
            self.add_torch = True

    def _split(self, dotted: str) -> tuple[str, str]:
        d = self.r.o.discovery
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
        path = self.r.path
        if path:
            parts = _norm_path(path)
            if parts:
                parts[-1] = parts[-1].rsplit(".", 1)[0]
                mparts = mod.split(".")
                return parts[-len(mparts):] == mparts
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
        d = self.r.o.discovery
        for a in (d.aliases.get(dotted, []) if d is not None else []):
            am = a[: len(a) - len(qual) - 1] if a.endswith("." + qual) else a.rpartition(".")[0]
            if am and (am, qual) not in out:
                out.append((am, qual))
        return out

    def _existing(self, mod: str, qual: str) -> Optional[str]:
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
        used = {a or n for _, n, a in self.added} | {
            k for k, v in self.reserved.items() if v != (mod, head)}
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

    def need(self, dotted: str):
        mod, qual = self._split(dotted)
        expr = self.expr_for(dotted)
        if mod == "builtins":
            if expr.startswith("builtins.") and "builtins" not in self.module_aliases:
                self.add_builtins = True
            return
        if self.is_local(dotted) or any(self._existing(m, q) is not None
                                        for m, q in self._spellings(dotted)):
            return
        mod, qual = self._import_source(dotted)
        head = qual.split(".")[0]
        bound = expr.split(".")[0]
        alias = bound if bound != head else None
        if (mod, head, alias) not in self.added:
            self.added.append((mod, head, alias))
            self.bindings[f"{mod}.{head}"] = bound

    def render(self):
        """(new lines, in-line edits (line, old, new), line number to insert before)."""
        lines: list[str] = []
        edits = []
        if self.add_torch:
            lines.append("import torch")
        if self.add_builtins:
            lines.append("import builtins")
        by_mod: dict[str, list[str]] = {}
        for mod, name, alias in self.added:
            by_mod.setdefault(mod, []).append(f"{name} as {alias}" if alias else name)
        for mod, names in by_mod.items():
            if mod in self.from_stmts:
                line, stmt = self.from_stmts[mod]
                body = self.r.T.line_body(line)
                code = body.split("#", 1)[0].rstrip()
                if not code.rstrip().endswith((",", "\\")) and "(" not in code:
                    edits.append((line, code, code + ", " + ", ".join(names)))
                    continue
            lines.append(f"from {mod} import {', '.join(names)}")
        at = max(self.last_import_line, self.docstring_end, self.future_end) + 1
        return lines, edits, at

