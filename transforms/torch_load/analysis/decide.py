"""Deciding one call: what discovery knows about it (`evidence_for`: its call-site records,
else its tests' records) and what the mode makes of that (`decide`: a `Verdict`, the action
and why), plus the short texts `--explain` writes above an edited statement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from transforms.core.base import Finding, Severity
from transforms.core.strenum import StrEnum
from transforms.torch_load.analysis.calls import Site
from transforms.torch_load.analysis.discovery import CallRecord, Discovery, Evidence, EvidenceSource, runs_function
from transforms.torch_load.analysis.modes import DOTTED_RE, LoadRule, Mode
from transforms.torch_load.analysis.source import LoadSource
from transforms.torch_load.analysis.unsafe_globals import Level, normalise, tier

__all__ = [
    "NOT_DISCOVERED",
    "Action",
    "LoadOptions",
    "Verdict",
    "decide",
    "evidence_for",
    "explain_false",
    "explain_wrap",
    "finding",
]

NOT_DISCOVERED = "the --globals file has no record of this call"


@dataclass(frozen=True, kw_only=True)
class LoadOptions:
    """What the transform was asked for."""

    mode: Mode
    discovery: Discovery | None = None  # the --globals file, indexed
    torch_version: tuple[int, ...] | None = None  # the target's torch (major, minor)
    explain: bool = False  # --explain: a comment above each edited statement


class Action(StrEnum):
    """What to do with a call."""

    FALSE = "false"  # weights_only=False
    WRAP = "wrap"  # a safe_globals block with the globals discovery found
    FALLBACK = "fallback"  # weights_only=False where a safe_globals block was wanted
    LEAVE = "leave"  # nothing: the load needs no global
    COVERED = "covered"  # nothing: an existing safe_globals block covers it
    INVALID = "invalid"  # nothing: the discovery data is wrong (manual)
    REFUSE = "refuse"  # nothing: safe-globals without discovery data (manual)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    action: Action
    reason: str
    entries: tuple[str, ...] = ()  # WRAP: the dotted globals the block lists
    findings: tuple[Finding, ...] = ()  # what deciding noticed on the way (dangerous globals, no record)


def finding(
    rule: LoadRule, message: str, line: int, severity: Severity = Severity.INFO, fix: str | None = None, **data: Any
) -> Finding:
    return Finding(rule=rule.finding_rule, message=message, line=line, severity=severity, fix=fix, data=data)


# --------------------------------------------------------------------------- evidence


def evidence_for(
    src: LoadSource, discovery: Discovery | None, spans: Sequence[tuple[int, set[str]]], site: Site
) -> Evidence | None:
    """What discovery knows about the call at `site` (`spans`: every load call of the file,
    its first line and its lines' texts), or None."""
    if discovery is None:
        return None
    chosen = _match_records(src, spans, site, discovery.calls_for(src.path))
    if chosen:
        ev = Evidence(source=EvidenceSource.CALL, ok=all(r.ok for r in chosen))
        for r in chosen:
            ev.globals += [g for g in r.globals if g not in ev.globals]
            ev.unfixable = ev.unfixable or r.unfixable
        ev.where = ", ".join(f"{r.file}:{r.line}" for r in chosen)
        return ev
    tests = [(n, t) for n, t in discovery.tests_for(src.path) if runs_function(n, site.func, site.cls)]
    # Per-test data only helps when the test's calls were not attributed.
    tests = [(n, t) for n, t in tests if not t.get("calls")]
    if tests:
        ev = Evidence(source=EvidenceSource.TEST, ok=all(t.get("outcome") == "passed" for _, t in tests))
        for _, t in tests:
            ev.globals += [normalise(g) for g in t.get("globals") or [] if normalise(g) not in ev.globals]
            ev.unfixable = ev.unfixable or t.get("unfixable")
        ev.where = ", ".join(n for n, _ in tests)
        return ev
    return None


def _match_records(
    src: LoadSource, spans: Sequence[tuple[int, set[str]]], site: Site, recs: list[CallRecord]
) -> list[CallRecord]:
    """The discovery records of this call site.  Recorded lines refer to the file as
    discovery ran it and move when anything is inserted above (a second run over
    the rewritten file, another transform), so: the source text first, then the
    enclosing test function/class, then the position among the calls with the same
    text, and the line only as the last tie-breaker."""
    span = range(site.line, site.end_line + 1)
    span_codes = {src.lines.line_body(n).strip() for n in span}
    cands = [r for r in recs if (r.code in span_codes) if r.code] + [r for r in recs if not r.code and r.line in span]
    if not cands:
        return []
    by_func = [r for r in cands if any(runs_function(n, site.func, site.cls) for n in r.nodeids)]
    if by_func:
        cands = by_func
    lines = sorted({r.line for r in cands})
    if len(lines) == 1:
        return cands
    # Same text at several recorded lines: pair the k-th such call in this file
    # with the k-th recorded line (stable when lines shift).
    codes = {r.code for r in cands if r.code}
    mine = sorted(ln for ln, codes_ in spans if codes & codes_)
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


# --------------------------------------------------------------------------- the decision


def decide(src: LoadSource, options: LoadOptions, site: Site, ev: Evidence | None) -> Verdict:
    mode = options.mode
    if mode == Mode.WEIGHTS_ONLY_FALSE:
        if ev and ev.globals:
            return Verdict(action=Action.FALSE, reason="the checkpoint pickles " + ", ".join(ev.globals))
        return Verdict(
            action=Action.FALSE, reason="explicit weights_only=False requested (--torch-load weights-only-false)"
        )
    if ev is None:
        return _undiscovered(src, options, site)
    # Where a safe_globals block cannot be written: a fallback in safe-globals mode, else the default.
    instead = Action.FALLBACK if mode == Mode.SAFE_GLOBALS else Action.FALSE
    if ev.unfixable:
        return Verdict(action=instead, reason=f"no allowlist can fix it: {ev.unfixable}")
    local = [g for g in ev.globals if ".<locals>." in g]
    if local:
        return Verdict(
            action=instead,
            reason=f"{', '.join(local)} is defined inside a function and cannot be imported for a safe_globals list",
        )
    bad = [g for g in ev.globals if not DOTTED_RE.fullmatch(g)]
    if bad:
        return Verdict(
            action=Action.INVALID,
            reason="the discovery data names globals that are not dotted Python "
            f"names ({', '.join(repr(b) for b in bad[:3])}): check the --globals file",
        )
    if not ev.globals:
        if ev.ok:
            return Verdict(
                action=Action.LEAVE, reason="discovery saw it load with weights_only=True (no globals needed)"
            )
        return Verdict(action=instead, reason="the load failed under weights_only=True without naming a global")
    danger = {g: tier(g).reason for g in ev.globals if tier(g).level == Level.DANGEROUS}
    found = tuple(_dangerous(g, why, mode, site.line) for g, why in danger.items())
    if danger and mode == Mode.AUTO:
        return Verdict(
            action=Action.FALSE,
            reason="the checkpoint needs " + ", ".join(danger) + " (unsafe to allowlist)",
            findings=found,
        )
    v = options.torch_version
    if v is not None and tuple(v) < (2, 5):
        return Verdict(
            action=instead, reason=f"torch {v[0]}.{v[1]} has no safe_globals context manager", findings=found
        )
    return Verdict(
        action=Action.WRAP,
        reason="the checkpoint needs " + ", ".join(ev.globals),
        entries=tuple(ev.globals),
        findings=found,
    )


def _undiscovered(src: LoadSource, options: LoadOptions, site: Site) -> Verdict:
    """A call discovery has no record of (or no discovery data at all)."""
    if site.enclosing_entries:
        return Verdict(
            action=Action.COVERED, reason="already inside a safe_globals block; discovery has no record of it"
        )
    if options.mode == Mode.SAFE_GLOBALS:
        if options.discovery is None:
            return Verdict(
                action=Action.REFUSE,
                reason="no discovery data: run `decouple discover-globals` and pass "
                "--globals FILE (or use --torch-load weights-only-false/auto)",
            )
        return Verdict(action=Action.FALLBACK, reason="discovery has no record of this call")
    if options.discovery is None:
        return Verdict(action=Action.FALSE, reason="no discovery data for this call")
    code = src.lines.line_body(site.line).strip()
    missing = finding(
        LoadRule.NOT_DISCOVERED,
        f"`{code}`: the --globals file has no record of this call (discovery did not "
        "see it run), so auto cannot choose: weights_only=False; run `decouple "
        "discover-globals` on the test that reaches it for a safe_globals block",
        site.line,
        Severity.WARNING,
        call=code,
    )
    return Verdict(action=Action.FALSE, reason=NOT_DISCOVERED, findings=(missing,))


def _dangerous(name: str, why: str, mode: Mode, line: int) -> Finding:
    if mode == Mode.AUTO:
        return finding(
            LoadRule.DANGEROUS_GLOBAL,
            f"{name} is dangerous to allowlist ({why}); using weights_only=False",
            line,
            Severity.INFO,
            name=name,
        )
    return finding(
        LoadRule.DANGEROUS_GLOBAL,
        f"{name} is dangerous to allowlist ({why}); allowlisted as requested by "
        "--torch-load safe-globals: consider weights_only=False",
        line,
        Severity.WARNING,
        name=name,
    )


# --------------------------------------------------------------------------- explain texts


def _short(names: Sequence[str], n: int = 3) -> str:
    short = [x.rsplit(".", 1)[-1] for x in names]
    return ", ".join(short[:n]) + (", ..." if len(short) > n else "")


def explain_false(reason: str, ev: Evidence | None) -> str:
    if reason == NOT_DISCOVERED:
        return "no discovery record for this call: weights_only=False"
    if ev is not None and ev.unfixable:
        why = ev.unfixable.split(" (")[0].split(":")[0]
        # short names, as in the other texts: a comment line stays within 120 columns
        return f"{DOTTED_RE.sub(lambda m: m.group(0).rsplit('.', 1)[-1], why)}: weights_only=False"
    if ev is not None and ev.globals:
        danger = [g for g in ev.globals if tier(g).level == Level.DANGEROUS]
        if danger:
            return f"the checkpoint needs {_short(danger)} (unsafe to allowlist): weights_only=False"
        return f"the test saves whole objects ({_short(ev.globals, 2)}): weights_only=False"
    return "trusted test checkpoint: weights_only=False"


def explain_wrap(names: Sequence[str]) -> str:
    return f"the test saves whole objects ({_short(names, 2)}): allowlisted for weights_only"
