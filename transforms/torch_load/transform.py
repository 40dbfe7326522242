"""The TorchLoad transform and its per-file run: find the calls, plan each, apply the plan,
check the output against the plan."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

# By module: the tests swap in a faulty editor to see its output refused.
import transforms.torch_load.edits as edits
from transforms.core.base import Finding, Severity, TransformResult
from transforms.torch_load.analysis.calls import find_calls
from transforms.torch_load.analysis.decide import LoadOptions, finding
from transforms.torch_load.analysis.discovery import Discovery
from transforms.torch_load.analysis.modes import MODES, LoadRule, Mode, check_mode_supported
from transforms.torch_load.analysis.source import LoadSource
from transforms.torch_load.analysis.triage import find_candidates
from transforms.torch_load.imports import ImportMap, RenderedImports
from transforms.torch_load.plan import FilePlan, Wrap, merge_wraps, plan_file
from transforms.torch_load.verify import PlannedEdits, check_planned_edits, strip_tree


class TorchLoad:
    name = "torch-load"
    reads_path = True  # discovered call sites and tests are matched to the file by its path

    def __init__(
        self,
        mode: str,
        discovered: Mapping[str, Any] | None = None,
        torch_version: tuple[int, int] | None = None,
        explain: bool = False,
    ):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        self.options = LoadOptions(
            mode=Mode(mode),
            discovery=Discovery(discovered) if discovered is not None else None,
            torch_version=tuple(torch_version) if torch_version else None,
            explain=explain,
        )

    check_mode_supported = staticmethod(check_mode_supported)

    # ------------------------------------------------------------------ triage
    def triage(self, text: str) -> bool:
        return "load" in text and "torch" in text

    # ------------------------------------------------------------------ run
    def run(self, text: str, tree: ast.Module, path: str | None = None) -> TransformResult:
        # The ast's candidates first: LibCST and its metadata only for a file that has some.
        if not self.triage(text) or not find_candidates(tree):
            return TransformResult(text=text)
        return run_file(self.options, text, path)

    # ------------------------------------------------------------------ strip
    def strip(self, tree: ast.Module) -> ast.Module:
        """In place (the engine's contract): see verify.strip_tree."""
        return strip_tree(tree)


def run_file(options: LoadOptions, text: str, path: str | None) -> TransformResult:
    """One file: find the calls, plan each, write the plan into the text (edits), then check
    the text against the plan (verify)."""
    try:
        src = LoadSource.parse(text, path)
    except Exception as exc:  # libcst parser disagrees with ast
        found = finding(LoadRule.PARSE_ERROR, f"LibCST cannot parse the file: {exc}", 1, Severity.ERROR)
        return TransformResult(text, [found], manual=1)
    calls, refs = find_calls(src)
    unresolved = [
        finding(LoadRule.UNRESOLVED, message, src.pos(node).start.line, Severity.WARNING) for node, message in refs
    ]
    imports = ImportMap(src, options.discovery)
    plan = plan_file(src, options, imports, calls)
    findings: list[Finding] = unresolved + plan.findings
    findings.sort(key=lambda f: f.line)  # calls were planned outer-first
    manual = len(unresolved) + plan.manual
    if not plan.edits:
        return TransformResult(text, findings, manual=manual)
    wraps = merge_wraps(plan.wraps)
    rendered = imports.render()
    new_text = edits.apply_plan(src, plan, wraps, rendered, imports.torch_name())
    check_planned_edits(text, new_text, planned_edits(src, plan, wraps, rendered, imports.torch_name()))
    return TransformResult(new_text, findings, manual=manual)


def planned_edits(
    src: LoadSource, plan: FilePlan, wraps: list[Wrap], imports: RenderedImports, torch_name: str
) -> PlannedEdits:
    """The plan in the terms the output check compares with: lines and columns of the input."""
    return PlannedEdits(
        torch_name=torch_name,
        keywords={k.end: k.value for k in plan.keywords},
        wraps=[(w.first, w.last, list(w.entries), w.comment) for w in wraps],
        imports=list(imports.lines),
        import_edits=[
            (line, src.lines.line_body(line).replace(old, new, 1).strip()) for line, old, new in imports.edits
        ],
        comments=list(plan.comments.values()) + [w.comment for w in wraps if w.comment],
    )
