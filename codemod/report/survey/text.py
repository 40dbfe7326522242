"""The survey's terminal summary: the totals, the folders with the most work, the first
suggested batches, and how the run went (the rules generation, cache, linter gate)."""

from __future__ import annotations

from codemod.engine.discovery import stale_entries
from codemod.engine.result import GateSummary, Mode, RunResult
from codemod.report.findings.text import rules_summary
from codemod.survey.model import STATUSES, BatchPlan, FileSurvey, Survey, SurveyStatus
from transforms.core.words import plural

MEANING = {
    SurveyStatus.READY: "labels alone make the linter pass (or it passes already): one `decouple refactor` away",
    SurveyStatus.RESTRUCTURE: "pass after `--restructure auto`",
    SurveyStatus.MANUAL: "something stays manual (see the reasons)",
    SurveyStatus.ERROR: "unreadable or unparseable",
}
TOP_FOLDERS = 8
FIRST_BATCHES = 5


def percent(n: int, total: int) -> str:
    return f"{100 * n / total:.0f}%" if total else "-"


def what(survey: Survey) -> str:
    """What was surveyed, in a few words: the commit, or the work tree and why."""
    where = f"the allowlist {survey.allowlist}" if survey.allowlist else "the files named"
    if survey.commit is None:
        return f"{where} in the work tree (no git commit to compare it with)"
    head = survey.commit[:12]
    if survey.uncommitted is None:
        return f"{where} in the work tree at {head} (git could not tell its uncommitted changes)"
    if survey.uncommitted:
        return (
            f"{where} in the work tree ({head} with uncommitted changes in {plural(len(survey.uncommitted), 'file')})"
        )
    return f"{where} at {head}"


def widening_note(f: FileSurvey) -> str:
    """The widenings proposed apart from the file's plan ("" when none)."""
    if not f.could_widen:
        return ""
    steps = "; ".join(f"{w.cls} by {w.step} (adds {', '.join(w.adds)})" for w in f.could_widen)
    return f"could be widened, apart from its plan (name the step to run it): {steps}"


def batch_plan(plan: BatchPlan) -> str:
    return "with --restructure auto" if plan == BatchPlan.RESTRUCTURE else "labels"


def rules_line(survey: Survey) -> str:
    """The generation of the linter's rules the survey applied, and why, worded as `apply`'s
    summary words it (the survey's runs are classify runs of the engine); "" when none."""
    if survey.generation is None:
        return ""
    return rules_summary(RunResult(mode=Mode.CLASSIFY, generation=survey.generation)).strip()


def summary(survey: Survey, cached: int = 0, gates: dict[str, GateSummary] | None = None) -> str:
    totals = survey.totals()
    total = totals["files"]
    lines = [f"survey of {what(survey)}: {plural(total, 'file')}"]
    for s in STATUSES:
        lines.append(f"  {s.value:<12} {totals[s]:>5}  {percent(totals[s], total):>4}  {MEANING[s]}")
    extra = []
    if totals["excluded"]:
        extra.append(f"{totals['excluded']} excluded by a pattern")
    if totals["stale"]:
        extra.append(stale_entries(totals["stale"]))
    if totals["torch_load_files"]:
        extra.append(
            f"{plural(totals['torch_load_files'], 'file calls', 'files call')} torch.load "
            f"({totals['needs_discovery']} need "
            "`decouple discover-globals` for --torch-load auto to choose)"
        )
    if totals["graduate_only"]:
        extra.insert(
            0, f"{totals['graduate_only']} of the ready are graduate only: the linter accepts them as they are"
        )
    if totals["could_widen"]:
        steps = sorted({w.step for f in survey.files for w in f.could_widen})
        extra.append(
            f"{plural(totals['could_widen'], 'file')} could be widened by a step --restructure auto never runs "
            f"({', '.join(steps)}): proposed apart, not counted in their plan"
        )
    lines += [f"  {e}" for e in extra]
    folders = sorted(survey.by_directory().items(), key=lambda kv: (-kv[1]["files"], kv[0]))[:TOP_FOLDERS]
    if folders:
        lines.append("folders with the most files:")
        for folder, counts in folders:
            parts = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
            lines.append(f"  {folder}: {counts['files']} ({parts})")
    if survey.batches:
        shown = "" if len(survey.batches) <= FIRST_BATCHES else f"; the first {FIRST_BATCHES}"
        batches = plural(len(survey.batches), "suggested batch", "suggested batches")
        restructure = sum(1 for b in survey.batches if b.plan == BatchPlan.RESTRUCTURE)
        plans = f" ({restructure} with --restructure auto)" if restructure else ""
        lines.append(f"{batches} of up to {survey.group_size} files{plans}{shown}:")
        for b in survey.batches[:FIRST_BATCHES]:
            owners = ", ".join(b.owners) or "no owner header"
            plan = f", {batch_plan(b.plan)}" if b.plan == BatchPlan.RESTRUCTURE else ""
            lines.append(f"  {b.number}. {b.directory} ({owners}{plan}): {', '.join(b.files)}")
    if survey.history:
        first, last = survey.history[0], survey.history[-1]
        lines.append(
            f"allowlist history: {first.entries} entries on {first.date[:10]}, {last.entries} on "
            f"{last.date[:10]} ({plural(len(survey.history), 'commit')})"
        )
    if survey.generation is not None:
        lines.append(rules_line(survey))
    for survey_pass, g in (gates or {}).items():
        if g.checked:
            checked = plural(g.checked, "file")
            agreement = f"{g.agree} agree with the tool, {g.disagree} disagree"
            line = f"linter gate ({survey_pass}): {checked} checked, {agreement}"
            lines.append(line + (f"; {len(g.rejected)} rejected by the linter" if g.rejected else ""))
    if cached:
        lines.append(f"cache: {cached} of {plural(total, 'file')} unchanged since an earlier survey")
    lines += [f"warning: {w}" for w in survey.warnings]
    return "\n".join(lines) + "\n"
