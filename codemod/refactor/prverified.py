"""The PR body's "How this was verified": the branch's verdict (never better than any of its
files', `verdicts`), the one `decouple ab` command that repeats the run, the counts of A and B,
the census and the labelled classes that never ran, the tests that differ or fail, each cause
with its remedy said once, and the environment collapsed.

The sentences are the A/B report modules' where they exist (verdict, census, causes,
environment): one wording for the reports and the PR."""

from __future__ import annotations

import shlex
from dataclasses import replace

from codemod.ab.comparison import causes
from codemod.ab.result.model import ABResult, Category, CauseFinding
from codemod.refactor.plan import CommitFacts
from codemod.refactor.prtext import say
from codemod.refactor.verdicts import BranchVerdict, judge
from codemod.report.ab import markdown as md
from codemod.report.ab.analysis import finding_item
from codemod.report.ab.coverage import census_lines, runtime_lines, totals_rows
from codemod.report.ab.environment import environment_facts
from codemod.report.ab.facts import compact_signature, interesting_tests, outcome_of
from codemod.report.ab.verdict import verdict_line, verdict_reason
from codemod.report.shared.markdown import md_cell

# The tests table of the PR is compact: the full list and signatures live in the attached report.
MAX_ROWS = 10
# Environment facts per line of the collapsed block (a list of 15 lines would double a short body).
ENV_PER_LINE = 3
# The base of a branch `decouple refactor` made (one commit), with the branch checked out.
BASE = "HEAD~1"
# Set by the A/B runner itself in every arm (one thread per process): not an option to repeat.
RUNNER_SET = ("OMP_NUM_THREADS",)
# What the analysis says of these categories in a sentence each (the verdict says the rest).
SAID = (
    (Category.COVERAGE_LOST, "an.coverage_lost"),
    (Category.DIFFERENT_FAILURE, "an.different"),
    (Category.SIMILAR_FAILURE, "an.similar"),
    (Category.FLAKY, "an.flaky"),
    (Category.FIXED, "an.fixed"),
)


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]


def ab_command(facts: CommitFacts, result: ABResult | None, files: list[str]) -> str:
    """The `decouple ab` invocation that repeats the run, with the branch checked out: its base
    is `HEAD~1` (the branch is one commit), the interpreter the reviewer's own."""
    args = ["decouple", "ab", *files, "--base", BASE]
    a = result.arm("A") if result is not None else None
    for k, v in sorted((a.env_added if a else {}).items()):
        if k not in RUNNER_SET:
            args += ["--env", f"{k}={v}"]
    for d in result.diagnostics if result is not None else []:
        name = d.name if d.based_on == "A" else f"{d.name}@{d.based_on}"
        args += ["--diag", f"{name}:" + ",".join(f"{k}={v}" for k, v in d.variables.items())]
    return " ".join(x if x == BASE else shlex.quote(x) for x in [*args, "--test-plan"])


def _command(facts: CommitFacts, result: ABResult | None, f: md.MarkdownFmt) -> list[str]:
    """The command, or why there is none (a file it needs is not in the branch)."""
    if any(m.changes for p in facts.files for m in p.moves):
        return [say(f.lang, "verified.no_command")]
    files = [p.path for p in facts.files if not p.no_test_class]
    command = f.code(ab_command(facts, result, files))
    return [say(f.lang, "verified.command", base=f.code(facts.base[:12]), command=command)]


def _verdict(result: ABResult, judged: BranchVerdict, f: md.MarkdownFmt) -> str:
    if not judged.weaker:
        return verdict_line(result, f)
    files = "; ".join(f"{f.code(w.path)}: {f.text(w.reason)}" for w in judged.weaker)
    reason = verdict_reason(result, f).rstrip(".。")
    reason = reason[:1].lower() + reason[1:] if f.lang == "en" else reason
    return say(
        f.lang,
        "verified.weaker",
        verdict=f.verdict(judged.verdict),
        files=files,
        run=f.verdict(result.verdict),
        reason=reason,
    )


def _counts(result: ABResult, f: md.MarkdownFmt) -> list[str]:
    """A and B side by side: the rows where either arm counts something."""
    rows = [
        [f.say(f"tot.{name}"), "" if a is None else str(a), "" if b is None else str(b)]
        for name, a, b, _ in totals_rows(result)
        if a or b
    ]
    return md_table([f.say("col.totals"), f.say("col.a"), f.say("col.b")], rows) if rows else []


def _tests(result: ABResult, f: md.MarkdownFmt) -> list[str]:
    tests = interesting_tests(result)
    if not tests:
        return [say(f.lang, "none")]
    rows = [
        [
            f.code(c.nodeid),
            f.outcome(outcome_of(c.a)),
            f.outcome(outcome_of(c.b)),
            f.category(c.category),
            f.code(compact_signature(c.b if c.b and c.b.signature else c.a)),
        ]
        for c in tests[:MAX_ROWS]
    ]
    header = [f.say("col.test"), f.say("col.a"), f.say("col.b"), f.say("col.category"), f.say("col.signature")]
    more = [say(f.lang, "more", n=len(tests) - MAX_ROWS)] if len(tests) > MAX_ROWS else []
    return md_table(header, rows) + ([""] + more if more else [])


def merged_findings(findings: list[CauseFinding]) -> list[CauseFinding]:
    """The cause groups with one known cause, status and scope merged into one (their tests
    together, each piece of evidence once): its explanation and remedy are then said once with
    the list of tests, however many failure signatures it covers."""
    merged: dict[tuple, CauseFinding] = {}
    out: list[CauseFinding] = []
    for x in findings:
        if x.cause is None:
            out.append(x)
            continue
        key = (x.cause, x.status, x.scope)
        if key not in merged:
            merged[key] = replace(x, nodeids=list(x.nodeids), evidence=dict(x.evidence))
            out.append(merged[key])
            continue
        into = merged[key]
        into.nodeids += [n for n in x.nodeids if n not in into.nodeids]
        for k, v in x.evidence.items():
            seen = into.evidence.get(k, "")
            if v and v not in seen.split(" " if k == "file" else ", "):
                into.evidence[k] = f"{seen}{' ' if k == 'file' else ', '}{v}" if seen else v
    return out


def _analysis(result: ABResult, f: md.MarkdownFmt) -> list[str]:
    """A sentence per category the verdict does not spell out, then each cause once."""
    by_cat: dict[Category, list[str]] = {}
    for c in result.tests:
        by_cat.setdefault(c.category, []).append(c.nodeid)
    lines = [f.say(key, n=len(by_cat[cat]), tests=f.tests(by_cat[cat])) for cat, key in SAID if by_cat.get(cat)]
    items = [finding_item(result, x, f) for x in merged_findings(causes.findings_of(result))]
    return ([""] + lines if lines else []) + ([""] + [f"- {item}" for item in items] if items else [])


def _environment(result: ABResult, f: md.MarkdownFmt) -> list[str]:
    """Collapsed: the facts, those an arm lacks (no CUDA, ...) in one line."""
    facts = environment_facts(result.environment, f)
    absent = [label for label, value in facts if value in (f.say("none"), f.say("env.not_available"))]
    shown = [f"{f.strong(label)}: {value}" for label, value in facts if label not in absent]
    lines = ["- " + " · ".join(shown[i : i + ENV_PER_LINE]) for i in range(0, len(shown), ENV_PER_LINE)]
    if absent:
        lines.append(f"- {f.strong(say(f.lang, 'not_available'))}: {f.sep().join(absent)}")
    summary = say(f.lang, "environment")
    return ["", f"<details><summary>{summary}</summary>", "", *lines, "", "</details>"]


def section(facts: CommitFacts, result: ABResult | None, f: md.MarkdownFmt) -> list[str]:
    lang = f.lang
    lines = ["", f"## {say(lang, 'verified')}", ""]
    if result is None:
        if facts.files and all(p.no_test_class for p in facts.files):
            return lines + [say(lang, "verified.nothing", files=f.codes(p.path for p in facts.files))]
        return lines + [say(lang, "verified.pending"), ""] + _command(facts, None, f)[-1:]
    judged = judge(result, facts.files)
    lines += [say(lang, "verified.intro") + " " + _verdict(result, judged, f), ""] + _command(facts, result, f)
    counts = _counts(result, f)
    lines += [""] + counts if counts else []
    census = census_lines(result, f)
    if census:  # one paragraph: the arms' lines are short
        lines += ["", f.say("census.intro", attr=f.code("hw_classification")) + " " + "; ".join(census)]
    for x in runtime_lines(result, f):
        lines += ["", x]
    if judged.not_exercised:
        lines += ["", say(lang, "not_exercised"), ""]
        lines += [f"- {_unexercised(n.path, n.classes, n.why, f)}" for n in judged.not_exercised]
    lines += [""] + _tests(result, f) + _analysis(result, f)
    return lines + _environment(result, f)


def _unexercised(path: str, classes: tuple[str, ...], why: str, f: md.MarkdownFmt) -> str:
    where = f.sep().join(f"{f.code(c)}" for c in classes)
    where = f"{where} ({f.code(path)})" if classes else f.code(path)
    return f.say("kv", k=where, v=f.text(why))
