"""The TorchLoad transform and its per-file run (composition of the parts)."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from transforms.core.base import Finding, Severity, TransformResult
from transforms.torch_load.calls import CallFinder
from transforms.torch_load.discovery import Discovery
from transforms.torch_load.edits import TextEditor
from transforms.torch_load.imports import _ImportMap
from transforms.torch_load.modes import MODES, RULE, check_mode_supported
from transforms.torch_load.plan import Planner, _Wrap, merge_wraps
from transforms.torch_load.text import _Text
from transforms.torch_load.verify import PlannedEdits, check_planned_edits, strip_tree


class TorchLoad:
    name = "torch-load"

    def __init__(
        self,
        mode: str,
        discovered: Mapping | None = None,
        torch_version: tuple[int, int] | None = None,
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
    def run(self, text: str, tree: ast.Module, path: str | None = None) -> TransformResult:
        if not self.triage(text) or not self._ast_candidates(tree):
            return TransformResult(text=text)
        return _Runner(self, text, path).run()

    # ------------------------------------------------------------------ strip
    def strip(self, tree: ast.Module) -> ast.Module:
        """In place (the engine's contract): see verify.strip_tree."""
        return strip_tree(tree)


class _Runner(CallFinder, Planner, TextEditor):
    """One file's run: find the calls (CallFinder), plan each (Planner), write the text
    (TextEditor), then check the text against the plan (verify).  The parts share this
    object's state: the text and its LibCST metadata, the import map, and the plan
    (keyword edits and values, wraps, comments)."""

    def __init__(self, owner: TorchLoad, text: str, path: str | None):
        self.o = owner
        self.text = text
        self.path = path
        self.findings: list[Finding] = []
        self.manual = 0

    # ------------------------------------------------------------------ helpers
    def find(self, rule, message, line, severity=Severity.INFO, fix=None, **data):
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
            ExpressionContextProvider,
            MetadataWrapper,
            ParentNodeProvider,
            PositionProvider,
            QualifiedNameProvider,
            ScopeProvider,
        )

        try:
            module = cst.parse_module(self.text)
        except Exception as exc:  # libcst parser disagrees with ast
            self.find("parse-error", f"LibCST cannot parse the file: {exc}", 1, Severity.ERROR)
            return TransformResult(self.text, self.findings, manual=1)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.wrapper_meta = wrapper.resolve_many(
            [PositionProvider, QualifiedNameProvider, ParentNodeProvider, ScopeProvider, ExpressionContextProvider]
        )
        self.parents = self.wrapper_meta[ParentNodeProvider]
        self.scopes = self.wrapper_meta[ScopeProvider]
        self.module = module
        self.T = _Text(self.text)
        self.indent_unit = module.default_indent
        self.newline = module.default_newline

        calls, refs = self._collect(module)
        for node, message in refs:
            self.find("unresolved", message, self.pos(node).start.line, Severity.WARNING)
            self.manual += 1

        self.imports = _ImportMap(self, module)
        self.kw_edits: list[tuple[int, int, str]] = []
        self.kw_values: dict[tuple[int, int], str] = {}
        self.wraps: list[_Wrap] = []
        self.comments: dict[int, str] = {}
        # Every load call in the file with its span (for call-site matching).
        self.all_spans = []
        for call in calls:
            cp = self.pos(call)
            self.all_spans.append(
                (cp.start.line, {self.T.line_body(n).strip() for n in range(cp.start.line, cp.end.line + 1)})
            )
        # Outer statements first: a wrap planned for a compound statement (a load in
        # its header) covers the loads in its body, which then add only what is missing.
        order = sorted(range(len(calls)), key=lambda i: (self._depth(calls[i]), i))
        for i in order:
            self._handle(calls[i])
        self.findings.sort(key=lambda f: f.line)  # calls were handled outer-first
        if not self.kw_edits and not self.wraps:
            return TransformResult(self.text, self.findings, manual=self.manual)
        wraps = merge_wraps(self.wraps)
        imports = self.imports.render()
        new_text = self._apply(wraps, imports)
        check_planned_edits(self.text, new_text, self._planned(wraps, imports))
        return TransformResult(new_text, self.findings, manual=self.manual)

    def _planned(self, wraps: list[_Wrap], imports: tuple) -> PlannedEdits:
        import_lines, import_edits = imports
        return PlannedEdits(
            torch_name=self.imports.torch_name(),
            keywords=dict(self.kw_values),
            wraps=[(w.first, w.last, list(w.entries), w.comment) for w in wraps],
            imports=list(import_lines),
            import_edits=[
                (line, self.T.line_body(line).replace(old, new, 1).strip()) for line, old, new in import_edits
            ],
            comments=list(self.comments.values()) + [w.comment for w in wraps if w.comment],
        )
