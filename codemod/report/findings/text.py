"""Terminal views of a codemod RunResult: the classification table and the summary."""

from __future__ import annotations

import os

from codemod.engine.result import ALREADY, CHANGED, FAILED, NEEDS_MANUAL, SKIPPED, UNCHANGED, Mode, RunResult
from transforms.core.base import Severity
from transforms.core.words import plural

# Finding rules that describe one class's decision, with the word the table shows.
_DECISIONS = {
    "hw/label": "label",
    "hw/already": "already",
    "hw/already-disagrees": "already*",
    "hw/invalid-label": "INVALID",
    "hw/needs-manual": "MANUAL",
    "hw/forced": "forced",
    "hw/refused": "refused",
}


def _rel(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def classification_table(result: RunResult) -> str:
    """One row per test class: file, class, line, value, then the evidence or the reason."""
    rows = []
    for f in result.files:
        for x in f.findings:
            if x.rule not in _DECISIONS:
                continue
            value = x.data.get("value") or "-"
            detail = "; ".join(e["text"] for e in x.data.get("evidence", [])) or x.message
            if x.rule in ("hw/needs-manual", "hw/refused", "hw/invalid-label", "hw/already-disagrees", "hw/forced"):
                detail = x.message
            rows.append((_rel(f.path), x.cls or "", str(x.line), value, _DECISIONS[x.rule], detail))
    if not rows:
        return "no test classes found\n"
    head = ("FILE", "CLASS", "LINE", "VALUE", "DECISION", "EVIDENCE / REASON")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    out = []
    for r in [head] + rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=False)) + "  " + r[5])
    return "\n".join(out) + "\n"


def problems(result: RunResult) -> str:
    """Failed files and findings that are not plain information, one line each."""
    out = []
    for f in result.files:
        if f.status == FAILED:
            out.append(f"{_rel(f.path)}: error: {f.reason}")
        for x in f.findings:
            if x.severity != Severity.INFO:
                where = f"{_rel(f.path)}:{x.line}"
                out.append(f"{where}: {x.severity}: [{x.rule}] {x.message}")
                if x.data.get("patterns") and x.fix:
                    out.append(f"    suggested restructuring: {x.fix}")
    return "\n".join(out) + ("\n" if out else "")


def summary(result: RunResult) -> str:
    counts = result.count()
    verb = {
        Mode.WRITE: "changed",
        Mode.DIFF: "would change",
        Mode.CHECK: "would change",
        Mode.CLASSIFY: "to label",
    }[result.mode]
    parts = [
        f"{counts[CHANGED]} {verb}",
        f"{counts[ALREADY]} already classified",
        f"{counts[NEEDS_MANUAL]} need manual work",
    ]
    if counts[UNCHANGED]:
        parts.append(f"{counts[UNCHANGED]} unchanged")
    skipped = [f for f in result.files if f.status == SKIPPED]
    if skipped:
        reasons: dict[str, int] = {}
        for f in skipped:
            reasons[f.reason] = reasons.get(f.reason, 0) + 1
        parts.append(f"{len(skipped)} skipped (" + ", ".join(f"{r}: {n}" for r, n in sorted(reasons.items())) + ")")
    parts.append(f"{counts[FAILED]} failed")
    line = f"{plural(len(result.files), 'file')}: " + ", ".join(parts)
    if result.manual:  # counted per class or call, where the line above counts files
        with_manual = [f for f in result.files if f.manual]
        line += (
            f"\nmanual work: {plural(result.manual, 'item')} (test classes, torch.load calls or duplicates "
            f"no edit settles) in {plural(len(with_manual), 'file')}"
        )
        partial = sum(1 for f in with_manual if f.status == CHANGED)
        if partial:
            line += f"; {partial} of those {_ALSO[result.mode]} for the rest"
    if result.graduated:
        done = "graduated" if result.mode == Mode.WRITE else "would graduate"
        line += f"\n{done} from the allowlist: {plural(len(result.graduated), 'file')}"
    else:
        line += _graduable(result)
    line += rules_summary(result)
    line += gate_summary(result)
    for w in result.warnings:
        line += f"\nwarning: {w}"
    return line + "\n"


# What a file with manual work left that the run changes does, by mode.
_ALSO = {
    Mode.WRITE: "were changed",
    Mode.DIFF: "would change",
    Mode.CHECK: "would change",
    Mode.LINT: "would change",
    Mode.CLASSIFY: "get labels",
}


def _graduable(result: RunResult) -> str:
    """The allowlisted files that can leave the allowlist after this run, when none did."""
    graduable = set(result.graduable())
    if not graduable:
        return ""
    as_they_are = sum(1 for f in result.files if f.path in graduable and f.status != CHANGED)
    how = f" ({as_they_are} as they are: graduate only)" if as_they_are else ""
    return (
        f"\n{plural(len(graduable), 'allowlisted file')} pass the linter after this run{how}: "
        "`decouple apply --from-allowlist --graduate` or `decouple refactor` removes their entries"
    )


def rules_summary(result: RunResult) -> str:
    """The line naming the generation of the linter's rules the run applied, and why."""
    choice = result.generation
    if choice is None:
        return ""
    linters = ", ".join(_rel(p) for p in choice.linters)
    if choice.setting != "auto":
        why = f"as asked (--rules {choice.setting})"
    elif not choice.linters:
        why = "the newest: no tools/linter/adapters/test_linter.py above the files"
    elif choice.exact:
        why = f"the generation of {linters}"
    else:
        why = f"the nearest to {linters}, an unknown linter"
    line = f"\nrules: {choice.name} ({why})"
    if choice.differences:
        line += f"; differs: {'; '.join(choice.differences)}"
    return line


def gate_summary(result: RunResult) -> str:
    """The linter gate's lines: what judged the outputs, how many it rejected and why."""
    gate = result.linter_gate
    if gate is None:
        return ""
    out = ""
    if gate.checked:
        linters = ", ".join(_rel(p) for p in gate.linters)
        rejected = gate.rejected
        out += (
            f"\nlinter gate ({linters}): {plural(gate.checked, 'file')} checked, {gate.agree} agree with "
            f"the tool, {gate.disagree} disagree"
        )
        if rejected:
            verb = "not written nor graduated" if result.mode == Mode.WRITE else "not to be written"
            out += f"; {len(rejected)} rejected by the linter ({verb}): " + ", ".join(_rel(p) for p in rejected)
    if gate.not_judged:
        verb = "not written nor graduated" if result.mode == Mode.WRITE else "not to be written"
        out += f"\nlinter gate: {plural(len(gate.not_judged), 'file')} not judged by the linter ({verb}): " + ", ".join(
            _rel(p) for p in gate.not_judged
        )
    if gate.unjudged:
        out += (
            f"\nlinter gate: no tools/linter/adapters/test_linter.py above {plural(gate.unjudged, 'file')}: not gated"
        )
    return out


def rule_statistics(result: RunResult) -> str:
    counts = result.rule_counts()
    if not counts:
        return ""
    width = max(len(r) for r in counts)
    return "".join(f"{rule.ljust(width)}  {n}\n" for rule, n in sorted(counts.items()))
