"""Planning: per call, a `CallPlan` (what was decided and why, as findings, and the edits
that takes: the weights_only keyword, a with-block, an --explain comment), and per file
the plans combined into a `FilePlan`.

Calls are planned outer statements first: a with-block planned for a compound statement
(a load in its header) covers the loads in its body, which then add only what it lacks;
a second load in the same statement extends the same block.  `ImportMap` is the one
piece of state planning shares across calls: it reserves the names of the imports it
will add, in the order the calls are planned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import libcst as cst
from libcst.metadata import ClassScope, GlobalScope

from transforms.core.base import Finding, Severity
from transforms.torch_load.analysis.calls import Site, dotted, site_of
from transforms.torch_load.analysis.decide import (
    Action,
    LoadOptions,
    Verdict,
    decide,
    evidence_for,
    explain_false,
    explain_wrap,
    finding,
)
from transforms.torch_load.analysis.discovery import Evidence
from transforms.torch_load.analysis.modes import LoadRule, Mode
from transforms.torch_load.analysis.source import LoadSource
from transforms.torch_load.analysis.text import TextEdit
from transforms.torch_load.imports import ImportMap
from transforms.torch_load.keyword import call_end, weights_only_edits

__all__ = ["CallPlan", "FilePlan", "KeywordChange", "Wrap", "merge_wraps", "plan_file"]


@dataclass(kw_only=True)
class Wrap:
    """A `with torch.serialization.safe_globals([...]):` block around statements of one block
    (mutable: a second load in the same statement adds its entries)."""

    block_id: int  # id() of the block (module or indented block) holding the statements
    index: int  # the (last) statement's index in it
    first: int  # the first and last line wrapped
    last: int
    entries: list[str]  # the expressions the block lists
    reason: str
    comment: str | None  # the --explain comment above the block
    dotted: list[str] = field(default_factory=list)  # the dotted names of `entries`
    stmt: cst.CSTNode | None = None  # the wrapped statement


@dataclass(frozen=True, kw_only=True)
class KeywordChange:
    """`weights_only=<value>` set on one call."""

    value: str  # "True" or "False"
    edits: tuple[TextEdit, ...]
    end: tuple[int, int]  # the call's end as `ast` records it: how the output check finds it


@dataclass(frozen=True, kw_only=True)
class CallPlan:
    """What becomes of one call, and why (its findings)."""

    line: int
    findings: tuple[Finding, ...]
    manual: int = 0  # left for a human
    keyword: KeywordChange | None = None
    wrap: Wrap | None = None
    needs: tuple[str, ...] = ()  # the dotted globals the block names, imported where the file lacks them
    comment: tuple[int, str] | None = None  # an --explain comment: (the line it goes above, its text)


@dataclass(kw_only=True)
class FilePlan:
    findings: list[Finding] = field(default_factory=list)
    manual: int = 0
    keywords: list[KeywordChange] = field(default_factory=list)
    wraps: list[Wrap] = field(default_factory=list)  # as planned (one per statement), before merge_wraps
    comments: dict[int, str] = field(default_factory=dict)  # line -> --explain comment above it

    @property
    def edits(self) -> bool:
        return bool(self.keywords or self.wraps)

    def add(self, plan: CallPlan, imports: ImportMap) -> None:
        self.findings.extend(plan.findings)
        self.manual += plan.manual
        if plan.keyword is not None:
            self.keywords.append(plan.keyword)
        if plan.wrap is not None:
            for d in plan.needs:
                imports.need(d)
            imports.need_torch()
            self._add_wrap(plan.wrap)
        if plan.comment is not None:
            self.comments.setdefault(*plan.comment)

    def _add_wrap(self, w: Wrap) -> None:
        """A second load in the same statement extends the same block."""
        for old in self.wraps:
            if old.block_id == w.block_id and old.index == w.index:
                for e, d in zip(w.entries, w.dotted, strict=False):
                    if e not in old.entries:
                        old.entries.append(e)
                        old.dotted.append(d)
                old.last = max(old.last, w.last)
                return
        self.wraps.append(w)


def merge_wraps(wraps: list[Wrap]) -> list[Wrap]:
    """The with-blocks to write: consecutive wraps of one block with identical entries
    share one block; two calls in one statement get the union of their entries."""
    merged: list[Wrap] = []
    for w in sorted(wraps, key=lambda w: (w.block_id, w.index)):
        if (
            merged
            and merged[-1].block_id == w.block_id
            and merged[-1].entries == w.entries
            and w.index in (merged[-1].index, merged[-1].index + 1)
        ):
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
        merged.append(
            Wrap(
                block_id=w.block_id,
                index=w.index,
                first=w.first,
                last=w.last,
                entries=list(w.entries),
                reason=w.reason,
                comment=w.comment,
            )
        )
    return merged


# --------------------------------------------------------------------------- the file


def plan_file(src: LoadSource, options: LoadOptions, imports: ImportMap, calls: Sequence[cst.Call]) -> FilePlan:
    """Every call planned, outer statements first (findings in that order)."""
    # Every load call in the file with its span (for call-site matching).
    spans = [_span(src, call) for call in calls]
    plan = FilePlan()
    for i in sorted(range(len(calls)), key=lambda i: (src.depth(calls[i]), i)):
        plan.add(_plan_call(_Context(src, options, imports, spans, plan.wraps), calls[i]), imports)
    return plan


def _span(src: LoadSource, call: cst.Call) -> tuple[int, set[str]]:
    p = src.pos(call)
    return p.start.line, {src.lines.line_body(n).strip() for n in range(p.start.line, p.end.line + 1)}


class _Context(NamedTuple):
    src: LoadSource
    options: LoadOptions
    imports: ImportMap
    spans: list[tuple[int, set[str]]]
    wraps: list[Wrap]  # planned so far


# --------------------------------------------------------------------------- one call


def _plan_call(ctx: _Context, call: cst.Call) -> CallPlan:
    line = ctx.src.pos(call).start.line
    code = ctx.src.lines.line_body(line).strip()
    kws = {a.keyword.value: a for a in call.args if a.keyword is not None}
    wo = kws.get("weights_only")
    wo_none = wo is not None and isinstance(wo.value, cst.Name) and wo.value.value == "None"
    skipped = _skipped(call, "pickle_module" in kws, wo is not None and not wo_none, line, code)
    if skipped is not None:
        return skipped
    site = site_of(ctx.src, call)
    evidence = evidence_for(ctx.src, ctx.options.discovery, ctx.spans, site)
    verdict = decide(ctx.src, ctx.options, site, evidence)
    data: dict[str, Any] = {"call": code, "reason": verdict.reason}
    if evidence is not None:
        data["globals"] = list(evidence.globals)
        data["evidence"] = evidence.where
    left = _left_alone(verdict, line, data)
    if left is not None:
        return left
    if verdict.action == Action.WRAP:
        wrapped = _plan_wrap(ctx, call, site, verdict, data, wo_none)
        if isinstance(wrapped, CallPlan):
            return wrapped
        verdict = wrapped
    return _plan_false(ctx, call, site, verdict, evidence, data)


def _skipped(call: cst.Call, pickle_module: bool, explicit: bool, line: int, code: str) -> CallPlan | None:
    """Calls left alone whatever the mode: weights_only given, pickle_module, *args/**kwargs."""
    stars = [a for a in call.args if a.star in ("*", "**")]
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if explicit:
        found = finding(LoadRule.SKIP_EXPLICIT, "torch.load already passes weights_only: left alone", line, call=code)
        return CallPlan(line=line, findings=(found,))
    if pickle_module or len(positional) >= 3:
        found = finding(
            LoadRule.SKIP_PICKLE_MODULE,
            "torch.load passes pickle_module (the default is then weights_only=False and "
            "weights_only=True would raise): left alone",
            line,
            call=code,
        )
        return CallPlan(line=line, findings=(found,))
    if stars:
        kind = "**kwargs" if any(a.star == "**" for a in stars) else "*args"
        found = finding(
            LoadRule.SKIP_KWARGS,
            f"torch.load passes {kind}, which may already carry weights_only (adding it can raise "
            "'got multiple values'): left alone, review by hand",
            line,
            Severity.WARNING,
            call=code,
        )
        return CallPlan(line=line, findings=(found,), manual=1)
    return None


def _left_alone(verdict: Verdict, line: int, data: dict[str, Any]) -> CallPlan | None:
    """The plan of a verdict that edits nothing (bad discovery data and a refusal are left
    for a human); None for the others."""
    manual = 0
    if verdict.action == Action.LEAVE:
        done = finding(LoadRule.SKIP_STATE_DICT, f"left alone: {verdict.reason}", line, **data)
    elif verdict.action == Action.COVERED:
        done = finding(LoadRule.SKIP_COVERED, f"left alone: {verdict.reason}", line, **data)
    elif verdict.action == Action.INVALID:
        done = finding(LoadRule.INVALID_GLOBAL, f"not rewritten: {verdict.reason}", line, Severity.ERROR, **data)
        manual = 1
    elif verdict.action == Action.REFUSE:
        done = finding(LoadRule.NO_DISCOVERY, f"not rewritten: {verdict.reason}", line, Severity.ERROR, **data)
        manual = 1
    else:
        return None
    return CallPlan(line=line, findings=(*verdict.findings, done), manual=manual)


def _keyword(ctx: _Context, call: cst.Call, value: str, line: int, code: str) -> KeywordChange | Finding:
    """The weights_only change, or the finding that says why the call's text cannot take it."""
    try:
        edits = weights_only_edits(ctx.src, call, value)
        return KeywordChange(value=value, edits=tuple(edits), end=call_end(ctx.src, call))
    except ValueError as exc:
        return finding(
            LoadRule.UNRESOLVED,
            f"cannot place weights_only={value} in this call's text ({exc}): not rewritten, make it explicit by hand",
            line,
            Severity.WARNING,
            call=code,
        )


def _plan_false(
    ctx: _Context, call: cst.Call, site: Site, verdict: Verdict, evidence: Evidence | None, data: dict[str, Any]
) -> CallPlan:
    """weights_only=False: as decided, or as the fallback for a block that cannot be written."""
    line = site.line
    keyword = _keyword(ctx, call, "False", line, data["call"])
    if isinstance(keyword, Finding):
        return CallPlan(line=line, findings=(*verdict.findings, keyword), manual=1)
    comment = (site.comment_line, explain_false(verdict.reason, evidence)) if ctx.options.explain else None
    if verdict.action == Action.FALLBACK:
        severity = Severity.WARNING if ctx.options.mode == Mode.SAFE_GLOBALS else Severity.INFO
        message = f"weights_only=False instead of safe_globals: {verdict.reason}"
        done = finding(LoadRule.FALLBACK, message, line, severity, fix="weights_only=False", **data)
    else:
        message = f"added weights_only=False: {verdict.reason}"
        done = finding(LoadRule.WEIGHTS_ONLY_FALSE, message, line, fix="weights_only=False", **data)
    return CallPlan(line=line, findings=(*verdict.findings, done), keyword=keyword, comment=comment)


def _plan_wrap(
    ctx: _Context, call: cst.Call, site: Site, verdict: Verdict, data: dict[str, Any], wo_none: bool
) -> CallPlan | Verdict:
    """A safe_globals block with what the enclosing blocks (existing or planned) lack; or, where
    no block can be written, the verdict to fall back with."""
    entries = list(verdict.entries)
    exprs = [ctx.imports.expr_for(d) for d in entries]
    covered = _covered(ctx, site)
    missing = [(d, e) for d, e in zip(entries, exprs, strict=False) if not covered(d, e)]
    v = ctx.options.torch_version
    needs_true = v is not None and tuple(v) < (2, 6)  # before 2.6, the default is weights_only=False
    set_true = needs_true or wo_none
    planned = _planned_cover(ctx.src, ctx.wraps, site) if site.no_wrap is None else None
    if missing and planned is not None:
        # a wrap planned for an enclosing statement (a load in its header)
        missing = [(d, e) for d, e in missing if d not in planned.dotted]
        if not missing:
            return _in_planned_block(ctx, call, site, verdict, data, planned.first, set_true)
    if not missing:
        msg = "already inside a safe_globals block that lists the needed globals"
        return CallPlan(
            line=site.line, findings=(*verdict.findings, finding(LoadRule.SKIP_COVERED, msg, site.line, **data))
        )
    if site.no_wrap:
        reason = f"cannot wrap in a with block ({site.no_wrap}); {verdict.reason}"
        return Verdict(action=Action.FALLBACK, reason=reason, findings=verdict.findings)
    shadowed = _shadowed(ctx.src, site.stmt, [e.split(".")[0] for _, e in missing], ctx.imports.torch_name())
    if shadowed:
        reason = (
            f"{', '.join(f'`{n}`' for n in shadowed)} is rebound in the enclosing "
            f"function, so the with block cannot name the global; {verdict.reason}"
        )
        return Verdict(action=Action.FALLBACK, reason=reason, findings=verdict.findings)
    return _new_block(ctx, call, site, verdict, data, missing, needs_true, set_true)


def _in_planned_block(
    ctx: _Context, call: cst.Call, site: Site, verdict: Verdict, data: dict[str, Any], first: int, set_true: bool
) -> CallPlan:
    """A load whose every global a block planned around an enclosing statement lists."""
    line, found = site.line, verdict.findings
    msg = f"covered by the safe_globals block added around the enclosing statement (line {first})"
    if not set_true:
        return CallPlan(line=line, findings=(*found, finding(LoadRule.SKIP_COVERED, msg, line, **data)))
    keyword = _keyword(ctx, call, "True", line, data["call"])
    if isinstance(keyword, Finding):
        return CallPlan(line=line, findings=(*found, keyword), manual=1)
    msg += "; added weights_only=True"
    done = finding(LoadRule.SAFE_GLOBALS, msg, line, fix="safe_globals", **data)
    return CallPlan(line=line, findings=(*found, done), keyword=keyword)


def _new_block(
    ctx: _Context,
    call: cst.Call,
    site: Site,
    verdict: Verdict,
    data: dict[str, Any],
    missing: Sequence[tuple[str, str]],
    needs_true: bool,
    set_true: bool,
) -> CallPlan:
    """A block of its own around the load's statement, listing the (dotted, expression)
    globals `missing` from the blocks around it."""
    line, found = site.line, verdict.findings
    keyword: KeywordChange | None = None
    if set_true:
        change = _keyword(ctx, call, "True", line, data["call"])
        if isinstance(change, Finding):
            return CallPlan(line=line, findings=(*found, change), manual=1)
        keyword = change
    names = [d for d, _ in missing]
    # One list for the block and the finding: a later load of the same statement extends both.
    listed = [e for _, e in missing]
    wrap = Wrap(
        block_id=id(site.block),
        index=site.index,
        first=site.stmt_lines[0],
        last=site.stmt_lines[1],
        entries=listed,
        reason=verdict.reason,
        comment=explain_wrap(names) if ctx.options.explain else None,
        dotted=list(names),
        stmt=site.stmt,
    )
    msg = f"wrapped in safe_globals([{', '.join(listed)}])"
    if needs_true:
        msg += " and added weights_only=True (the default is False before torch 2.6)"
    done = finding(LoadRule.SAFE_GLOBALS, msg, line, fix="safe_globals", **data, entries=listed)
    return CallPlan(line=line, findings=(*found, done), keyword=keyword, wrap=wrap, needs=tuple(names))


def _covered(ctx: _Context, site: Site) -> Callable[[str, str], bool]:
    """Is a global (dotted name, expression) listed by a safe_globals block around the call?"""
    codes = {c for c, _ in site.enclosing_entries}
    qn: set[str] = set()
    for _, q in site.enclosing_entries:
        qn |= q

    def covered(d: str, e: str) -> bool:
        return e in codes or d in qn or d.split(".")[-1] in codes and ctx.imports.is_local(d)

    return covered


class _Cover(NamedTuple):
    first: int  # the first line of the outermost planned block
    dotted: list[str]  # what the planned blocks list


def _planned_cover(src: LoadSource, wraps: Sequence[Wrap], site: Site) -> _Cover | None:
    """The planned wraps around statements strictly enclosing `site`'s statement (their
    entries merged), or None.  Loads of the same statement share its wrap instead.
    Like an existing block, it counts as covering a def nested in it too: a second
    block with the same entry inside it would remove the entry from it on exit."""
    ancestors = set()
    node = src.parents.get(site.stmt) if site.stmt is not None else None
    while node is not None:
        if src.is_stmt(node):
            ancestors.add(id(node))
        node = src.parents.get(node)
    found = [w for w in wraps if w.stmt is not None and id(w.stmt) in ancestors]
    if not found:
        return None
    merged: list[str] = []
    for w in found:
        merged += [d for d in w.dotted if d not in merged]
    return _Cover(min(w.first for w in found), merged)


def _binds_torch(assignment: object, torch_name: str) -> bool:
    """A local `import torch` (or `import torch.x`, `import torch as <torch_name>`)."""
    node = getattr(assignment, "node", None)
    if not isinstance(node, cst.Import):
        return False
    for al in node.names:
        path = dotted(al.name) or ""
        if al.asname is not None:
            if path == "torch" and getattr(al.asname.name, "value", None) == torch_name:
                return True
        elif path.split(".")[0] == "torch" and torch_name == "torch":
            return True
    return False


def _shadowed(src: LoadSource, stmt: cst.CSTNode | None, names: Sequence[str], torch_name: str) -> list[str]:
    """Names among `names` + [torch_name] that a function (or class body) around
    `stmt` rebinds, so the module-level binding the with block relies on is not the
    one seen there.  A local `import torch` still binds torch: not shadowing."""
    out: list[str] = []
    scope = src.scopes.get(stmt) if stmt is not None else None
    first = True
    while scope is not None and not isinstance(scope, GlobalScope):
        if first or not isinstance(scope, ClassScope):
            for n in list(names) + [torch_name]:
                if not n or n in out:
                    continue
                assigned = scope.assignments[n]
                if n == torch_name and assigned and all(_binds_torch(a, torch_name) for a in assigned):
                    continue
                if assigned:
                    out.append(n)
        first = False
        scope = getattr(scope, "parent", None)
    return out
