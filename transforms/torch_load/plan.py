"""Planning: per call, what to do (mode and auto decisions, discovery evidence) and
which keyword edits, with-blocks and comments that takes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from transforms.core.base import Severity
from transforms.torch_load.calls import _dotted, _Site
from transforms.torch_load.discovery import Evidence, _CallRec, _test_matches
from transforms.torch_load.modes import _DOTTED_RE
from transforms.torch_load.unsafe_globals import Level, normalise, tier


@dataclass
class _Wrap:
    block_id: int
    index: int
    first: int
    last: int
    entries: list[str]  # expressions
    reason: str
    comment: str | None
    dotted: list[str] = field(default_factory=list)  # the dotted names of `entries`
    stmt: Any = None  # the wrapped statement (libcst node)


def merge_wraps(wraps: list[_Wrap]) -> list[_Wrap]:
    """The with-blocks to write: consecutive wraps of one block with identical entries
    share one block; two calls in one statement get the union of their entries."""
    merged: list[_Wrap] = []
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
        merged.append(_Wrap(w.block_id, w.index, w.first, w.last, list(w.entries), w.reason, w.comment))
    return merged


class Planner:
    """Mixin of the per-file run: decide each call and record the planned edits."""

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
            self.find("skip-explicit", "torch.load already passes weights_only: left alone", line, call=code)
            return
        if "pickle_module" in kws or len(positional) >= 3:
            self.find(
                "skip-pickle-module",
                "torch.load passes pickle_module (the default is then weights_only=False and "
                "weights_only=True would raise): left alone",
                line,
                call=code,
            )
            return
        if stars:
            kind = "**kwargs" if any(a.star == "**" for a in stars) else "*args"
            self.find(
                "skip-kwargs",
                f"torch.load passes {kind}, which may already carry weights_only (adding it can raise "
                "'got multiple values'): left alone, review by hand",
                line,
                Severity.WARNING,
                call=code,
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
            self.find("invalid-global", f"not rewritten: {reason}", line, Severity.ERROR, **data)
            self.manual += 1
            return
        if action == "refuse":
            self.find("no-discovery", f"not rewritten: {reason}", line, Severity.ERROR, **data)
            self.manual += 1
            return
        if action == "wrap":
            exprs = [self.imports.expr_for(d) for d in entries_dotted]
            covered = self._covered(site, entries_dotted, exprs)
            missing = [(d, e) for d, e in zip(entries_dotted, exprs, strict=False) if not covered(d, e)]
            needs_true = self.o.torch_version is not None and tuple(self.o.torch_version) < (2, 6)
            planned = self._planned_cover(site) if site.no_wrap is None else None
            if missing and planned is not None:
                # a wrap planned for an enclosing statement (a load in its header)
                missing = [(d, e) for d, e in missing if d not in planned.dotted]
                if not missing:
                    msg = (
                        f"covered by the safe_globals block added around the enclosing statement (line {planned.first})"
                    )
                    if needs_true or wo_none:
                        if not self._try_set_kw(call, "True", line, code):
                            return
                        self.find("safe-globals", msg + "; added weights_only=True", line, fix="safe_globals", **data)
                        return
                    self.find("skip-covered", msg, line, **data)
                    return
            if not missing:
                self.find(
                    "skip-covered", "already inside a safe_globals block that lists the needed globals", line, **data
                )
                return
            shadowed = (
                []
                if site.no_wrap
                else self._shadowed(site.stmt, [e.split(".")[0] for _, e in missing], self.imports.torch_name())
            )
            if site.no_wrap:
                action = "fallback"
                reason = f"cannot wrap in a with block ({site.no_wrap}); {reason}"
            elif shadowed:
                action = "fallback"
                reason = (
                    f"{', '.join(f'`{n}`' for n in shadowed)} is rebound in the enclosing "
                    f"function, so the with block cannot name the global; {reason}"
                )
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
                self._plan_wrap(
                    _Wrap(
                        id(site.block),
                        site.index,
                        site.stmt_lines[0],
                        site.stmt_lines[1],
                        exprs_missing,
                        reason,
                        comment,
                        [d for d, _ in missing],
                        site.stmt,
                    )
                )
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
            self.find(
                "fallback",
                f"weights_only=False instead of safe_globals: {reason}",
                line,
                Severity.WARNING if self.o.mode == "safe-globals" else Severity.INFO,
                fix="weights_only=False",
                **data,
            )
        else:
            self.find(
                "weights-only-false", f"added weights_only=False: {reason}", line, fix="weights_only=False", **data
            )

    def _try_set_kw(self, call, value: str, line: int, code: str) -> bool:
        try:
            self._set_kw(call, value)
            end = self.pos(call).end
            # keyed as ast records the call's end: line, UTF-8 byte column
            self.kw_values[(end.line, len(self.T.line_body(end.line)[: end.column].encode("utf-8")))] = value
            return True
        except ValueError as exc:
            self.find(
                "unresolved",
                f"cannot place weights_only={value} in this call's text "
                f"({exc}): not rewritten, make it explicit by hand",
                line,
                Severity.WARNING,
                call=code,
            )
            self.manual += 1
            return False

    def _plan_wrap(self, w: _Wrap):
        """Record a wrap; a second load in the same statement extends the same block."""
        for old in self.wraps:
            if old.block_id == w.block_id and old.index == w.index:
                for e, d in zip(w.entries, w.dotted, strict=False):
                    if e not in old.entries:
                        old.entries.append(e)
                        old.dotted.append(d)
                old.last = max(old.last, w.last)
                return
        self.wraps.append(w)

    def _planned_cover(self, site: _Site) -> _Wrap | None:
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
    def _decide(self, site: _Site, ev: Evidence | None):
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
                    return (
                        "refuse",
                        "no discovery data: run `decouple discover-globals` and pass "
                        "--globals FILE (or use --torch-load weights-only-false/auto)",
                        [],
                    )
                return "fallback", "discovery has no record of this call", []
            if self.o.discovery is None:
                return "false", "no discovery data for this call", []
            code = self.T.line_body(site.line).strip()
            self.find(
                "not-discovered",
                f"`{code}`: the --globals file has no record of this call (discovery did not "
                "see it run), so auto cannot choose: weights_only=False; run `decouple "
                "discover-globals` on the test that reaches it for a safe_globals block",
                site.line,
                Severity.WARNING,
                call=code,
            )
            return "false", NOT_DISCOVERED, []
        if ev.unfixable:
            return ("fallback" if mode == "safe-globals" else "false", f"no allowlist can fix it: {ev.unfixable}", [])
        local = [g for g in ev.globals if ".<locals>." in g]
        if local:
            return (
                "fallback" if mode == "safe-globals" else "false",
                f"{', '.join(local)} is defined inside a function and cannot be imported for a safe_globals list",
                [],
            )
        bad = [g for g in ev.globals if not _DOTTED_RE.fullmatch(g)]
        if bad:
            return (
                "invalid",
                "the discovery data names globals that are not dotted Python "
                f"names ({', '.join(repr(b) for b in bad[:3])}): check the --globals file",
                [],
            )
        if not ev.globals:
            if ev.ok:
                return "leave", "discovery saw it load with weights_only=True (no globals needed)", []
            return (
                "fallback" if mode == "safe-globals" else "false",
                "the load failed under weights_only=True without naming a global",
                [],
            )
        danger = {g: tier(g).reason for g in ev.globals if tier(g).level == Level.DANGEROUS}
        for g, why in danger.items():
            if mode == "auto":
                self.find(
                    "dangerous-global",
                    f"{g} is dangerous to allowlist ({why}); using weights_only=False",
                    site.line,
                    Severity.INFO,
                    name=g,
                )
            else:
                self.find(
                    "dangerous-global",
                    f"{g} is dangerous to allowlist ({why}); allowlisted as requested by "
                    "--torch-load safe-globals: consider weights_only=False",
                    site.line,
                    Severity.WARNING,
                    name=g,
                )
        if danger and mode == "auto":
            return "false", "the checkpoint needs " + ", ".join(danger) + " (unsafe to allowlist)", []
        v = self.o.torch_version
        if v is not None and tuple(v) < (2, 5):
            return (
                "fallback" if mode == "safe-globals" else "false",
                f"torch {v[0]}.{v[1]} has no safe_globals context manager",
                [],
            )
        return "wrap", "the checkpoint needs " + ", ".join(ev.globals), list(ev.globals)

    def _evidence(self, site: _Site, call) -> Evidence | None:
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
        cands = [r for r in recs if (r.code in span_codes) if r.code] + [
            r for r in recs if not r.code and r.line in span
        ]
        if not cands:
            return []
        by_func = [r for r in cands if any(_test_matches(n, site.func, site.cls) for n in r.nodeids)]
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


# --------------------------------------------------------------------------- explain texts


def _short(names: Sequence[str], n: int = 3) -> str:
    short = [x.rsplit(".", 1)[-1] for x in names]
    return ", ".join(short[:n]) + (", ..." if len(short) > n else "")


NOT_DISCOVERED = "the --globals file has no record of this call"


def _explain_false(reason: str, ev: Evidence | None) -> str:
    if reason == NOT_DISCOVERED:
        return "no discovery record for this call: weights_only=False"
    if ev is not None and ev.unfixable:
        why = ev.unfixable.split(" (")[0].split(":")[0]
        # short names, as in the other texts: a comment line stays within 120 columns
        return f"{_DOTTED_RE.sub(lambda m: m.group(0).rsplit('.', 1)[-1], why)}: weights_only=False"
    if ev is not None and ev.globals:
        danger = [g for g in ev.globals if tier(g).level == Level.DANGEROUS]
        if danger:
            return f"the checkpoint needs {_short(danger)} (unsafe to allowlist): weights_only=False"
        return f"the test saves whole objects ({_short(ev.globals, 2)}): weights_only=False"
    return "trusted test checkpoint: weights_only=False"


def _explain_wrap(names: Sequence[str]) -> str:
    return f"the test saves whole objects ({_short(names, 2)}): allowlisted for weights_only"
