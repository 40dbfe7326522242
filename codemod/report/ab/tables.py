"""The cells of the A/B reports' tables: per test (its node ids, signature and notes, the
runner's English notes translated) and per diagnostic arm (its statement, the tests it changes)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from codemod.ab.result.model import ABResult, DiagnosticSummary, OutcomeValue, TestComparison
from codemod.report.ab.facts import FAILING, SIGNATURE_CELL, common_prefix_ids, compact_signature, shown_signature
from codemod.report.ab.fmt import Fmt
from codemod.report.shared.i18n import category_label, t


def diagnostic_statement(result: ABResult, d: DiagnosticSummary, f: Fmt) -> str:
    variables = f.pairs(d.variables) if d.variables else f.say("diag.no_vars")
    if f.lang == "en" and d.statement.strip():
        statement = d.statement.strip()
        return f.text(statement if statement.endswith((".", "!", "?")) else statement + ".")
    pairs = Counter((v[0], v[1]) for v in d.changed.values() if len(v) >= 2)
    if not pairs:
        return f.say("diag.none", vars=variables)
    parts = [
        f.say("diag.pair", n=n, a=f.outcome(a), d=f.outcome(b), base=f.code(d.based_on), vars=variables)
        for (a, b), n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return f.text(t("list.sep", f.lang)).join(parts) + f.say("period")


# The runner's notes (codemod.ab.comparison.compare, codemod.ab.execution.confirm) are English
# sentences joined by "; ": the common shapes get translated; any other part is shown as code in a
# language that is not English.
_NOTE_SHAPES = (
    (re.compile(r"^(crashes|times out) in both$"), "note.in_both"),
    (re.compile(r"^expected failure in both$"), "note.xfail_both"),
    (re.compile(r"^absent from both arms$"), "note.absent_both"),
    (re.compile(r"^fails in B$"), "note.fails_in_b"),
    (re.compile(r"^module skipped in (?P<arm>[AB])(?:: (?P<why>.*))?$"), "note.module_skipped"),
    (re.compile(r"^was (?P<cat>[\w-]+)$"), "note.was"),
    (re.compile(r"^(?P<arm>[AB]): (?P<seq>.*)$"), "note.sequence"),
    (re.compile(r"^renamed from (?P<old>\S+) via --map$"), "note.renamed"),
)


def runner_note(note: str, f: Fmt) -> str:
    if f.lang == "en":
        return f.text(note)
    parts = []
    for part in note.split("; "):
        for pattern, key in _NOTE_SHAPES:
            m = pattern.match(part)
            if m is None:
                continue
            g = m.groupdict()
            if key == "note.in_both":
                what = OutcomeValue.CRASHED if m.group(1) == "crashes" else OutcomeValue.TIMEOUT
                parts.append(f.say(key, what=f.outcome(what)))
            elif key == "note.module_skipped":
                parts.append(f.say(key, arm=f.text(g["arm"])) + (f" {f.code(g['why'])}" if g.get("why") else ""))
            elif key == "note.was":
                parts.append(f.say(key, cat=f.text(category_label(g["cat"], f.lang))))
            elif key == "note.sequence":
                runs = [re.match(r"^([\w-]+)( \(in file\))?$", x.strip()) for x in g["seq"].split(",")]
                if not all(runs):
                    parts.append(f.code(part))
                    break
                shown = [f.outcome(r.group(1)) + (f.say("note.in_file") if r.group(2) else "") for r in runs if r]
                parts.append(f.say(key, arm=f.text(g["arm"]), runs=f.sep().join(shown)))
            elif key == "note.renamed":
                parts.append(f.say(key, old=f.code(g["old"])))
            else:
                parts.append(f.say(key))
            break
        else:
            parts.append(f.code(part))
    return f.text(t("list.sep", f.lang)).join(parts)


def test_note(c: TestComparison, f: Fmt) -> str:
    notes = []
    if c.note:
        notes.append(runner_note(c.note, f))
    if c.mapped_from and not c.note:
        notes.append(f.say("note.mapped", old=f.code(c.mapped_from)))
    for o in (c.a, c.b):
        if o is not None and o.signal:
            notes.append(f.say("note.signal", signal=f.code(o.signal)))
            break
    reruns = (c.b.reruns if c.b and c.b.reruns else None) or (c.a.reruns if c.a else None)
    if reruns:
        notes.append(f.say("note.reruns", runs=f.sep().join(f.outcome(r) for r in reruns)))
    failing_subtests = [s for o in (c.b,) if o for s in o.subtests if s.outcome in FAILING]
    if failing_subtests:
        notes.append(f.say("note.subtests", n=len(failing_subtests)))
    return f.text(t("list.sep", f.lang)).join(notes)


def signature_cell(c: TestComparison, f: Fmt) -> str:
    """The failure in at most SIGNATURE_CELL characters (per arm when the arms differ);
    the full signature is in the details."""
    sa, sb = shown_signature(c.a), shown_signature(c.b)
    if sa and sb and sa != sb:
        half = SIGNATURE_CELL // 2
        return (
            f.say("sig.a", sig=f.code(compact_signature(c.a, half)))
            + "\n"
            + f.say("sig.b", sig=f.code(compact_signature(c.b, half)))
        )
    o = c.b if sb else c.a
    return f.code(compact_signature(o)) if (sb or sa) else ""


def tests_cell(nodeids: Sequence[str], f: Fmt) -> str:
    """One node id, or a group written once: `file.py::Class::` then the differing names."""
    if len(nodeids) == 1:
        return f.code(nodeids[0])
    prefix, rest = common_prefix_ids(list(nodeids))
    listed = f.tests(rest)
    head = f.say("tests.n", n=len(nodeids))
    return (
        f.say("tests.group", head=head, prefix=f.code(prefix), tests=listed)
        if prefix
        else f.say("kv", k=head, v=f.tests(list(nodeids)))
    )


def diagnostic_changes(
    result: ABResult,
) -> list[tuple[DiagnosticSummary, OutcomeValue | None, OutcomeValue | None, list[str]]]:
    """(diagnostic, outcome in its base arm, outcome in it, node ids), grouped."""
    out: dict[tuple[str, OutcomeValue | None, OutcomeValue | None], tuple[DiagnosticSummary, list[str]]] = {}
    for d in result.diagnostics:
        for nid, v in sorted(d.changed.items()):
            before = v[0] if v else None
            after = v[1] if len(v) > 1 else None
            out.setdefault((d.name, before, after), (d, []))[1].append(nid)
    return [(d, before, after, nids) for (_n, before, after), (d, nids) in out.items()]
