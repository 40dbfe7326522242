"""PR_BODY.md: the pull-request description of one refactor branch, to paste as it is.

Composed from two inputs only: the facts recorded in the branch's commit (`plan.CommitFacts`)
and the A/B result (`ABResult`, possibly loaded from a saved ab.json). The one-command path
(`decouple refactor`) and the split-machine path (`decouple pr-body --ab ab.json`) call the
same function with the same inputs, so their bodies are identical. Upstream's shape: Summary,
Changes, Test Plan (the commands a reviewer runs in a PyTorch checkout, with what they printed),
then how the change was verified (`prverified`). No path of the machine that made it
(`redact`).
"""

from __future__ import annotations

from codemod.ab.result.model import ABResult
from codemod.refactor import prverified
from codemod.refactor.plan import TRACKING_ISSUE, CommitFacts, FilePlan
from codemod.refactor.prtext import say
from codemod.refactor.prverified import md_table as table
from codemod.refactor.redact import redact
from codemod.report.ab import markdown as md
from codemod.report.ab.facts import visible_controls
from codemod.report.shared.markdown import md_fence


def _summary(facts: CommitFacts, f: md.MarkdownFmt) -> list[str]:
    lang = f.lang
    graduated = [p for p in facts.files if p.graduated_from]
    labelled = [p for p in facts.files if not p.no_test_class]
    if facts.files and all(p.allowlist_only for p in facts.files):
        text = say(
            lang,
            "summary.allowlist",
            files=f.codes(p.path for p in facts.files),
            allowlist=f.code(graduated[0].graduated_from),
            them=say(lang, "which.one" if len(facts.files) == 1 else "which.all"),
        )
        if labelled:
            text += " " + say(lang, "summary.labelled", files=f.codes(p.path for p in labelled))
    else:
        loads = sum(len(p.loads) for p in facts.files)
        n = len(facts.files)
        which = "which.one" if n == 1 else "which.all" if len(graduated) == n else "which.some"
        text = say(
            lang,
            "summary.text",
            classes=say(lang, "classes", n=sum(len(p.labels) for p in facts.files)),
            files=say(lang, "files", n=n),
            loads=say(lang, "summary.loads", n=loads) if loads else "",
            grad=say(lang, "summary.grad", which=say(lang, which, n=len(graduated))) if graduated else "",
        )
    rules = say(lang, "rules", rules=facts.rules) if facts.rules else ""
    return [f"## {say(lang, 'summary')}", "", text + " " + say(lang, "tracking", issue=TRACKING_ISSUE) + rules]


def _label_rows(files: list[FilePlan], f: md.MarkdownFmt) -> list[str]:
    lang = f.lang
    several = len({p.path for p in files if p.labels}) > 1
    header = ([say(lang, "col.file")] if several else []) + [
        say(lang, "col.class"),
        say(lang, "col.value"),
        say(lang, "col.evidence"),
    ]
    rows = [
        ([f.code(p.path)] if several else []) + [f"{f.code(c.cls)} (L{c.line})", f.code(c.value), f.text(c.evidence)]
        for p in files
        for c in p.labels
    ]
    return table(header, rows) if rows else [say(lang, "no.labels")]


def _changes(facts: CommitFacts, f: md.MarkdownFmt) -> list[str]:
    """One table of the labels; a line per other edit; the moves that change something; the
    allowlist in one line."""
    lang = f.lang
    lines = ["", f"## {say(lang, 'changes')}", ""] + _label_rows(facts.files, f)
    items = [
        say(lang, "load", file=f.code(p.path), line=e.line, message=f.text(e.message))
        for p in facts.files
        for e in p.loads
    ]
    items += [
        say(lang, "restructured", file=f.code(p.path), what=f.text(r)) for p in facts.files for r in p.restructured
    ]
    no_class = [p.path for p in facts.files if p.no_test_class]
    if no_class:
        items.append(say(lang, "no_class", files=f.codes(no_class)))
    graduated = [p for p in facts.files if p.graduated_from]
    if graduated:
        files = f.codes(p.path for p in graduated)
        items.append(say(lang, "graduated", allowlist=f.code(graduated[0].graduated_from), files=files))
    if items:
        lines += [""] + [f"- {item}" for item in items]
    moves = [(p, m) for p in facts.files for m in p.moves if m.changes]
    if moves:
        rows = [
            [
                f.code(m.test),
                f"{f.code(m.old_class)}: {', '.join(m.before)}",
                f"{f.code(m.new_class)}: {', '.join(m.after)}",
            ]
            for _, m in moves
        ]
        lines += ["", say(lang, "moves"), ""]
        lines += table([say(lang, "col.test"), say(lang, "col.before"), say(lang, "col.after")], rows)
    return lines


def _manual(facts: CommitFacts, result: ABResult | None, f: md.MarkdownFmt) -> list[str]:
    """What a human still has to do (nothing shown when nothing is left): the classes no label
    fits, and (from the A/B run) the files whose tests run unclassified although labelled."""
    lang = f.lang
    manual = [(p, m) for p in facts.files for m in p.manual]
    runtime = result.runtime if result is not None else []
    if not manual and not runtime:
        return []
    lines = ["", f"## {say(lang, 'manual')}", ""]
    for p, m in manual:
        where = f.code(f"{p.path}::{m.cls}")
        lines.append("- " + say(lang, "manual.item", where=where, line=m.line, reason=f.text(m.reason)))
        if m.fits:
            lines.append("  " + say(lang, "manual.fits", fits=f.text(m.fits)))
    for r in runtime:
        item = say(
            lang, "manual.runtime", where=f.code(r.file), classes=f.codes(r.classes), labelled=f.codes(r.labelled)
        )
        lines.append(f"- {item}")
    return lines


def _test_plan(facts: CommitFacts, result: ABResult | None, f: md.MarkdownFmt) -> list[str]:
    """The commands that run each file as its tree runs it, as the A/B run ran them in B, each
    followed by what it printed (as comments: the block pastes into a shell as it is)."""
    lang = f.lang
    files = {p.path for p in facts.files}
    runs = [r for r in (result.test_plan if result is not None else []) if r.file in files]
    lines = ["", f"## {say(lang, 'plan')}", ""]
    if not runs:
        return lines + [say(lang, "plan.pending")]
    body: list[str] = []
    for r in runs:
        body.append(r.command)
        if r.returncode is None:
            body.append("# " + say(lang, "plan.not_run", note=" ".join(r.note.split())))
            continue
        body += [f"# {line}" for line in r.summary.splitlines() if line.strip()]
        body.append(f"# (exit {r.returncode})")
    return lines + [say(lang, "plan.text"), "", md_fence("\n".join(body), "sh")]


def compose(facts: CommitFacts, result: ABResult | None, lang: str = "en") -> str:
    """The PR body in `lang` ("en" or "zh"). Without an A/B result the verification section
    says how to produce one."""
    f = md.MarkdownFmt(lang)
    lines = _summary(facts, f) + _changes(facts, f) + _manual(facts, result, f) + _test_plan(facts, result, f)
    lines += prverified.section(facts, result, f)
    return redact(visible_controls("\n".join(lines)).rstrip() + "\n", result)
