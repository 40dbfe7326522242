"""Markdown view of a survey: totals, folders, owners, the suggested batches, the allowlist's
history and every file with its reason (a page for an issue or a wiki)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from codemod.engine.discovery import stale_entries
from codemod.report.shared.markdown import md_cell, md_code
from codemod.report.survey.text import MEANING, batch_plan, percent, rules_line, what, widening_note
from codemod.survey.model import STATUSES, FileSurvey, Survey, SurveyStatus
from transforms.core.words import plural


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if h.isdigit() else "---" for h in header) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _counts_table(first: str, groups: dict[str, dict[str, int]]) -> list[str]:
    rows = [[md_code(name), str(c["files"]), *(str(c[s]) for s in STATUSES)] for name, c in groups.items()]
    return _table([first, "files", *STATUSES], rows)


def _owners(f: FileSurvey) -> str:
    return ", ".join(f.owners) or "-"


def _values(f: FileSurvey) -> str:
    return ", ".join(f"{n} {v}" for v, n in f.values().items()) or "-"


def _torch(f: FileSurvey) -> str:
    t = f.torch_load
    if not t.calls:
        return "-"
    return f"{t.calls}" + (" (needs discovery)" if t.needs_discovery else "")


def _batches(survey: Survey) -> list[str]:
    lines = [f"## Suggested batches ({len(survey.batches)}, up to {survey.group_size} files each)", ""]
    if not survey.batches:
        return lines + ["No ready or restructure file needs a PR.", ""]
    allowlist = f" --from-allowlist {survey.allowlist}" if survey.allowlist else ""
    lines += [
        "The ready files' batches (labels) first, then the restructure files' (with `--restructure auto`); "
        "largest first; one owner per batch, files of one folder together. To make the first N as branches:",
        "",
        md_code(f"decouple refactor{allowlist} --batches survey.json --limit N"),
        "",
    ]
    rows = [
        [
            str(b.number),
            batch_plan(b.plan),
            "<br>".join(md_code(p) for p in b.files),
            ", ".join(b.owners) or "-",
            md_code(b.directory),
        ]
        for b in survey.batches
    ]
    return lines + _table(["#", "plan", "files", "owners", "folder"], rows)


def _history(survey: Survey) -> list[str]:
    if survey.history is None:
        return []
    rows = [
        [h.date[:10], md_code(h.commit[:12]), "-" if h.entries is None else str(h.entries), f"+{h.added} -{h.removed}"]
        for h in survey.history
    ]
    return ["## Allowlist history", ""] + _table(["date", "commit", "entries", "change"], rows)


def _files(survey: Survey) -> list[str]:
    lines = ["## Files", ""]
    by_status = {s: [f for f in survey.files if f.status == s] for s in STATUSES}
    for status in (SurveyStatus.RESTRUCTURE, SurveyStatus.MANUAL, SurveyStatus.ERROR, SurveyStatus.READY):
        files = by_status[status]
        if not files:
            continue
        lines += [f"### {status} ({len(files)})", ""]
        if status == SurveyStatus.MANUAL:
            for f in files:
                lines.append(f"- {md_code(f.path)} ({_owners(f)})")
                for m in f.manual:
                    fits = f"; fits: {m.fits}" if m.fits else ""
                    where = "" if m.cls in ("(file)", "torch.load") else f"{md_code(m.cls)} (line {m.line}): "
                    lines.append(f"  - {where}{md_cell(m.reason)}{md_cell(fits)}")
                if f.could_widen:
                    lines.append(f"  - {md_cell(widening_note(f))}")
            lines.append("")
            continue
        rows = [
            [md_code(f.path), _owners(f), _values(f), _torch(f), "; ".join(filter(None, [f.reason, widening_note(f)]))]
            for f in files
        ]
        lines += _table(["file", "owners", "values", "torch.load", "reason"], rows)
    return lines


def _left_out(survey: Survey) -> list[str]:
    lines = []
    if survey.excluded:
        lines += [f"## Excluded by a pattern ({len(survey.excluded)})", ""]
        lines += [f"- {md_code(e.path)} ({md_code(e.pattern)})" for e in survey.excluded] + [""]
    if survey.stale:
        lines += [f"## Allowlist entries whose file is gone ({len(survey.stale)})", ""]
        lines += [f"- {md_code(p)}" for p in survey.stale] + [""]
    return lines


def render(survey: Survey) -> str:
    totals = survey.totals()
    total = totals["files"]
    lines = ["# decouple survey", "", f"Surveyed {what(survey)}: **{total}** {'file' if total == 1 else 'files'}.", ""]
    settings = ", ".join(f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in survey.settings.items())
    lines += [f"Analysis: {md_cell(settings)}.", ""]
    if survey.generation is not None:
        lines += [md_cell("Rules: " + rules_line(survey).removeprefix("rules: ")) + ".", ""]
    rows = [[f"**{s}**", str(totals[s]), percent(totals[s], total), MEANING[s]] for s in STATUSES]
    lines += ["## Totals", ""] + _table(["status", "files", "share", "meaning"], rows)
    notes = []
    if totals["graduate_only"]:
        notes.append(
            f"{totals['graduate_only']} of the ready files are graduate only: the linter accepts them as they are."
        )
    if totals["could_widen"]:
        notes.append(
            f"{plural(totals['could_widen'], 'file')} could be widened by a step `--restructure auto` never runs: "
            "proposed apart, not counted in their plan."
        )
    if totals["excluded"]:
        notes.append(f"{plural(totals['excluded'], 'allowlisted file')} excluded by a pattern (not surveyed).")
    if totals["stale"]:
        notes.append(stale_entries(totals["stale"]) + ".")
    if totals["torch_load_files"]:
        notes.append(
            f"{plural(totals['torch_load_files'], 'file calls', 'files call')} torch.load; "
            f"{totals['needs_discovery']} need "
            "`decouple discover-globals` before `--torch-load auto` can choose."
        )
    lines += [f"- {n}" for n in notes] + ([""] if notes else [])
    lines += ["## By folder", ""] + _counts_table("folder", survey.by_directory())
    lines += ["## By owner", ""] + _counts_table("owner", survey.by_owner())
    lines += _batches(survey) + _history(survey) + _files(survey) + _left_out(survey)
    if survey.warnings:
        lines += ["## Warnings", ""] + [f"- {md_cell(w)}" for w in survey.warnings] + [""]
    return "\n".join(lines).rstrip("\n") + "\n"
