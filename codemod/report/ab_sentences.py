"""The sentences of the A/B reports, shared by the Markdown and HTML views.

Every sentence is built from an `ABResult` through a small formatter interface
(`Fmt`: escaping rules of one output format), so both views say exactly the same
thing, each with its own escaping. Format-independent facts live in `ab_facts`.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from codemod.ab import causes
from codemod.ab.model import CATEGORIES, REGRESSING, ABResult, CauseFinding, Environment, TestComparison

from .ab_facts import (
    FAILING,
    SIGNATURE_CELL,
    broken_engines,
    category_counts,
    common_prefix_ids,
    compact_signature,
    failing_sets,
    ordered_tests,
    shown_signature,
)
from .i18n import category_label, check_lang, outcome_label, t, template, verdict_label

# How many node ids a sentence lists before "and N more".
MAX_LISTED = 5


class Fmt:
    """Escaping rules of one output format.  `say` formats a translated
    template whose own text gets escaped; its arguments must already be
    formatted (ints are fine)."""

    def __init__(self, lang: str) -> None:
        self.lang = check_lang(lang)

    def text(self, s: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def code(self, s: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def strong(self, s: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def say(self, key: str, **args: object) -> str:
        return self.text(template(key, self.lang, args.get("n"))).format(**args)

    # Convenience built on the primitives -----------------------------------
    def sep(self) -> str:
        return self.text(t("list.comma", self.lang))

    def codes(self, items: Iterable[str]) -> str:
        return self.sep().join(self.code(i) for i in items)

    def pairs(self, mapping: dict[str, str]) -> str:
        return self.sep().join(self.code(f"{k}={v}") for k, v in mapping.items())

    def tests(self, nodeids: Sequence[str]) -> str:
        shown = [self.code(n) for n in nodeids[:MAX_LISTED]]
        if len(nodeids) > MAX_LISTED:
            shown.append(self.say("an.more", n=len(nodeids) - MAX_LISTED))
        return self.sep().join(shown)

    def outcome(self, outcome: str | None) -> str:
        if outcome is None:
            return self.say("absent")
        return self.text(outcome_label(outcome, self.lang))

    def category(self, category: str) -> str:
        if self.lang == "en":
            shown = self.text(category)
        else:
            shown = self.say("paren", a=self.text(category_label(category, self.lang)), b=self.code(category))
        return self.strong(shown) if category in REGRESSING else shown

    def verdict(self, verdict: str) -> str:
        label = verdict_label(verdict, self.lang)
        if label == verdict:
            return self.text(verdict)
        return self.text(f"{label}（{verdict}）")


class HtmlFmt(Fmt):
    def text(self, s: str) -> str:
        return html.escape(s)

    def code(self, s: str) -> str:
        return f"<code>{html.escape(s)}</code>"

    def strong(self, s: str) -> str:
        return f"<strong>{s}</strong>"


def _count_parts(f: Fmt, counts: dict[str, int], cats: Iterable[str]) -> str:
    return f.sep().join(
        f.say("count.part", label=f.text(category_label(c, f.lang)), n=counts[c]) for c in cats if counts.get(c)
    )


def _inconclusive_why(result: ABResult, f: Fmt) -> list[str]:
    why = []
    for arm in result.arms:
        if not arm.ran:
            why.append(f.say("reason.arm_not_run", arm=f.code(arm.name), error=f.code(arm.error or "?")))
    counts = category_counts(result)
    if counts.get("flaky"):
        why.append(f.say("reason.flaky", n=counts["flaky"]))
    if not result.tests:
        why.append(f.say("reason.no_tests"))
    if not why:
        why.append(
            f.say("reason.runner", reason=f.code(result.verdict_reason))
            if result.verdict_reason
            else f.say("reason.unknown")
        )
    return why


def verdict_reason(result: ABResult, f: Fmt) -> str:
    """One sentence.  English keeps the runner's own words when it gave some."""
    if f.lang == "en" and result.verdict_reason:
        raw = result.verdict_reason.strip()
        reason = f.text(raw[:1].upper() + raw[1:])
        return reason if reason.endswith((".", "!", "?")) else reason + "."
    counts = category_counts(result)
    total = len(result.tests) or sum(counts.values())
    if result.verdict == "REGRESSION":
        n = sum(counts.get(c, 0) for c in REGRESSING)
        return f.say(
            "reason.regression", n=n, parts=_count_parts(f, counts, [c for c in CATEGORIES if c in REGRESSING])
        )
    if result.verdict == "SAFE":
        pre = counts.get("pre-existing", 0)
        return f.say("reason.safe_pre", n=pre) if pre else f.say("reason.safe", n=total, total=total)
    return f.say("reason.inconclusive", why=f.text(t("list.sep", f.lang)).join(_inconclusive_why(result, f)))


def verdict_line(result: ABResult, f: Fmt) -> str:
    return f.say("verdict.line", verdict=f.strong(f.verdict(result.verdict)), reason=verdict_reason(result, f))


def diagnostic_statement(result: ABResult, d, f: Fmt) -> str:
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


def rich(f: Fmt, template: str, evidence: dict) -> str:
    """A cause-table template (`code` in backticks) filled with `evidence`, each part escaped
    by `f`: text as text, backtick spans as code."""
    parts = re.split(r"`([^`]*)`", template)
    out = []
    for i, part in enumerate(parts):
        filled = part.format_map(_Missing(evidence))
        out.append(f.code(filled) if i % 2 else f.text(filled))
    return "".join(out)


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "?"


_VERBS = {"verb.failed", "verb.error", "verb.crashed", "verb.timeout"}


def _evidence_sentence(finding: CauseFinding, f: Fmt) -> str:
    ev = finding.evidence
    status = finding.status
    if finding.experiment == "diag":
        variables = f.pairs(finding.variables)
        if status == "suspected":
            return f.say("cause.ev.diag_pending", vars=variables, cmd=f.code("decouple ab --diagnose"))
        return f.say(
            "cause.ev.diag",
            vars=variables,
            base=f.code(finding.based_on),
            k=ev.get("passed", "?"),
            n=int(ev.get("total", "0") or 0),
            arm=f.code(ev.get("diag", "?")),
        )
    if finding.cause == "quantized-engine":
        if status == "confirmed":
            return f.say(
                "cause.ev.prepack_fails", engine=f.code(ev.get("engine", "?")), error=f.code(ev.get("error", "?"))
            )
        if status == "not-confirmed":
            return f.say("cause.ev.prepack_ok")
        return f.say("cause.ev.prepack_unknown")
    if finding.cause == "hw-classification-missing":
        key = {"confirmed": "cause.ev.hwc_missing", "not-confirmed": "cause.ev.hwc_present"}.get(
            status, "cause.ev.hwc_unknown"
        )
        return f.say(key, torch=f.code(ev.get("torch", "?")))
    if finding.experiment == "import":
        key = {"confirmed": "cause.ev.import_missing", "not-confirmed": "cause.ev.import_present"}.get(
            status, "cause.ev.import_pending"
        )
        return f.say(key, module=f.code(ev.get("module", "?")), cmd=f.code("decouple ab --diagnose"))
    return ""


def finding_item(result: ABResult, finding: CauseFinding, f: Fmt) -> str:
    """One failure group: what fails, the cause and its status, the evidence, the remedy."""
    members = [c for c in result.tests if c.nodeid in set(finding.nodeids)]
    ref = (members[0].b or members[0].a) if members else None
    outcome = ref.outcome if ref else "failed"
    verb_key = f"verb.{outcome}" if f"verb.{outcome}" in _VERBS else "verb.failed"
    n = len(finding.nodeids)
    sig = f.code(compact_signature(ref)) if ref else f.code(finding.signature)
    where = {"both": "cause.group.both", "b-changed": "cause.group.b_changed"}.get(finding.scope, "cause.group.b_only")
    parts = [f.say(where, n=n, verb=f.say(verb_key, n=n), sig=sig, tests=tests_cell(finding.nodeids, f))]
    cause = causes.BY_ID.get(finding.cause or "")
    status = f.strong(f.say(f"cause.status.{finding.status}"))
    if cause is None:
        parts.append(f.say("cause.unknown", status=status))
    else:
        parts.append(f.say("cause.is", status=status, why=rich(f, cause.explanation[f.lang], finding.evidence)))
        evidence = _evidence_sentence(finding, f)
        if evidence:
            parts.append(f.say("cause.evidence", text=evidence))
        if finding.status != "not-confirmed":
            parts.append(f.say("cause.remedy", text=rich(f, cause.remedy[f.lang], finding.evidence)))
    return f.say("sentence.sep").join(parts)


def analysis(result: ABResult, f: Fmt) -> list[tuple[str, str | list[str]]]:
    """The "what this proves" blocks: ("h", text) sub-headings, ("p", text)
    paragraphs and ("ul", [items]) lists, already formatted with `f`."""
    counts = category_counts(result)
    by_cat: dict[str, list[str]] = {}
    for c in ordered_tests(result):
        by_cat.setdefault(c.category, []).append(c.nodeid)
    total = len(result.tests) or sum(counts.values())
    blocks: list[tuple[str, str | list[str]]] = [("h", f.say("h.change_safe"))]

    if result.verdict == "REGRESSION":
        regressing = [n for c in CATEGORIES if c in REGRESSING for n in by_cat.get(c, [])]
        n = sum(counts.get(c, 0) for c in REGRESSING)
        blocks.append(
            (
                "p",
                f.say(
                    "an.regression",
                    n=n,
                    tests=f.tests(regressing),
                    parts=_count_parts(f, counts, [c for c in CATEGORIES if c in REGRESSING]),
                ),
            )
        )
    elif result.verdict == "SAFE":
        blocks.append(("p", f.say("an.safe", n=total, total=total)))
    else:
        blocks.append(
            ("p", f.say("an.inconclusive", why=f.text(t("list.sep", f.lang)).join(_inconclusive_why(result, f))))
        )
    for cat, key in (
        ("different-failure", "an.different"),
        ("similar-failure", "an.similar"),
        ("no-longer-run", "an.no_longer_run"),
        ("flaky", "an.flaky"),
        ("fixed", "an.fixed"),
    ):
        if by_cat.get(cat):
            blocks.append(("p", f.say(key, n=len(by_cat[cat]), tests=f.tests(by_cat[cat]))))

    findings = causes.findings_of(result)
    both = [x for x in findings if x.scope == "both"]
    b_only = [x for x in findings if x.scope != "both"]
    fail_a, fail_b = failing_sets(result)
    env = result.environment
    blocks.append(("h", f.say("h.not_the_change")))
    if both:
        blocks.append(("p", f.say("an.not_the_change")))
        blocks.append(("ul", [finding_item(result, x, f) for x in both]))
    else:
        blocks.append(("p", f.say("an.env_clean")))
    if b_only:
        blocks.append(("h", f.say("h.b_only")))
        blocks.append(("ul", [finding_item(result, x, f) for x in b_only]))
    if fail_a or fail_b:
        if fail_a == fail_b:
            blocks.append(("p", f.say("an.identical_sets", n=len(fail_a))))
        else:
            blocks.append(("p", f.say("an.different_sets", a=len(fail_a), b=len(fail_b))))
    for engine, error, listed in broken_engines(env):
        if listed:
            blocks.append(("p", f.say("an.broken_engine", engine=f.code(engine), error=f.code(error))))
    if env.has_hw_classification is False:
        blocks.append(("p", f.say("an.no_hwc")))
    return blocks


def background_items(result: ABResult, f: Fmt) -> list[str]:
    a, b = result.arm("A"), result.arm("B")
    items = [
        f.say(
            "bg.intro",
            a=arm_description(a, result, f) if a else f.say("unknown"),
            b=arm_description(b, result, f) if b else f.say("unknown"),
        )
    ]
    if result.paths:
        items.append(f.say("bg.paths", paths=f.codes(result.paths)))
    if result.base_ref:
        items.append(f.say("bg.base_ref", ref=f.code(result.base_ref)))
    if result.started or result.duration:
        items.append(
            f.say(
                "bg.started",
                started=f.code(result.started or "?"),
                duration=f.say("seconds", s=f"{result.duration:.1f}"),
            )
        )
    if result.python:
        items.append(f.say("bg.python", python=f.code(result.python)))
    if result.shard:
        items.append(f.say("bg.shard", shard=f.code(result.shard)))
    items.append(
        f.say("bg.tool", tool=f.code(result.tool_version or "?"), norm=f.code(result.normaliser_version or "?"))
    )
    if result.mapping:
        items.append(
            f.say(
                "bg.mapping",
                pairs=f.sep().join(f"{f.code(old)} → {f.code(new)}" for old, new in result.mapping.items()),
            )
        )
    return items


def change_rows(result: ABResult, f: Fmt) -> list[tuple[str, str, str, str]]:
    """(file, class, labels written, torch.load edits) per class the diff touches, and one
    row per file for torch.load edits outside classes; formatted with `f`."""
    changes = result.changes
    rows = []
    for fc in changes.files if changes else []:
        for cc in fc.classes:
            labels = f.codes(cc.labels)
            if cc.removed_labels and not cc.labels:
                labels = f.say("changes.label_removed", labels=f.codes(cc.removed_labels))
            elif cc.removed_labels:
                labels = f.say("changes.label_replaced", old=f.codes(cc.removed_labels), new=f.codes(cc.labels))
            rows.append((f.code(fc.path), f.code(cc.name), labels, f.codes(cc.torch_load)))
        if fc.torch_load:
            rows.append((f.code(fc.path), f.say("changes.module_level"), "", f.codes(fc.torch_load)))
    return rows


def change_notes(result: ABResult, f: Fmt) -> list[str]:
    """Sentences under the table: imports added, files with no recognised edit, errors."""
    changes = result.changes
    if changes is None:
        return []
    if changes.error:
        return [f.say("changes.error", error=f.code(changes.error))]
    notes = []
    imports = sorted({i for fc in changes.files for i in fc.imports})
    if imports:
        notes.append(f.say("changes.imports", imports=f.codes(imports)))
    plain = [fc.path for fc in changes.files if not fc.classes and not fc.torch_load]
    if plain:
        notes.append(f.say("changes.other", files=f.codes(plain)))
    if not changes.files:
        notes.append(f.say("changes.none", ref=f.code(changes.ref)))
    return notes


def arm_description(arm, result: ABResult, f: Fmt) -> str:
    """Where an arm's files come from, in `f`'s language (never the runner's English label)."""
    diag = next((d for d in result.diagnostics if d.name == arm.name), None)
    if diag is not None:
        return f.say(
            "arm.diag",
            base=f.text(diag.based_on),
            vars=f.pairs(diag.variables) if diag.variables else f.say("diag.no_vars"),
        )
    source = arm.source or ""
    if source.startswith("git:"):
        return f.say("arm.git", ref=f.code(source[4:]))
    if source == "worktree":
        return f.say("arm.worktree")
    if source.startswith("dir:"):
        return f.say("arm.dir", path=f.code(source[4:]))
    return f.text(arm.label)


def runner_warnings(result: ABResult, f: Fmt) -> list[str]:
    """Non-fatal problems the runner recorded, in the report's language (a blank legacy
    warning says nothing: it is left out)."""
    return [shown for shown in (w.render(f.lang, f.text, f.code) for w in result.warnings) if shown]


def runner_env_items(result: ABResult, f: Fmt) -> list[str]:
    items = []
    if result.env_unset:
        items.append(f.say("bg.unset", names=f.codes(result.env_unset)))
    if result.env_set:
        # the runner's "<per-arm ...>" placeholders: a value of its own in every arm
        fixed = {k: v for k, v in result.env_set.items() if not v.startswith("<")}
        per_arm = [k for k, v in result.env_set.items() if v.startswith("<")]
        if fixed:
            items.append(f.say("bg.set", pairs=f.pairs(fixed)))
        if per_arm:
            items.append(f.say("bg.per_arm", names=f.codes(per_arm)))
    if not items:
        items.append(f.say("bg.env_unchanged"))
    return items


def environment_facts(env: Environment, f: Fmt) -> list[tuple[str, str]]:
    """(label, value) rows; values already formatted."""
    unknown = f.say("unknown")

    def val(v: str | None) -> str:
        return f.code(v) if v else unknown

    def version(v: str | None) -> str:
        return f.code(v) if v else f.say("env.not_available")

    def flag(v: bool | None) -> str:
        if v is None:
            return unknown
        return f.say("env.available") if v else f.say("env.not_available")

    rows = [
        (
            f.say("env.python"),
            f.say("env.value_with_exe", version=val(env.python), exe=f.code(env.executable))
            if env.executable
            else val(env.python),
        ),
        (f.say("env.platform"), val(env.platform)),
        (f.say("env.machine"), val(env.machine)),
        (f.say("env.cpu_model"), val(getattr(env, "cpu_model", None))),
        (
            f.say("env.cpu_flags"),
            f.codes(env.cpu_flags)
            if getattr(env, "cpu_flags", None)
            else (f.say("none") if getattr(env, "cpu_count", None) else unknown),
        ),
        (
            f.say("env.cores"),
            f.say("env.cores_value", n=env.cpu_count, usable=env.cpu_usable)
            if getattr(env, "cpu_usable", None) and env.cpu_usable != env.cpu_count
            else val(str(env.cpu_count) if getattr(env, "cpu_count", None) else None),
        ),
        (f.say("env.torch"), val(env.torch_version)),
        (f.say("env.torch_git"), val(env.torch_git_version)),
        (f.say("env.pytest"), val(getattr(env, "pytest_version", None))),
        (f.say("env.cuda"), version(env.cuda)),
        (f.say("env.rocm"), version(env.rocm)),
        (f.say("env.xpu"), flag(env.xpu)),
        (f.say("env.mps"), flag(env.mps)),
        (f.say("env.accelerator"), f.code(env.accelerator) if env.accelerator else f.say("none")),
        (f.say("env.backends"), f.pairs(env.backends) if env.backends else f.say("none")),
        (f.say("env.quantized_engine"), val(env.quantized_engine)),
        (f.say("env.supported_engines"), f.codes(env.supported_engines) if env.supported_engines else unknown),
    ]
    if env.has_hw_classification is None:
        hwc = unknown
    elif env.has_hw_classification:
        hwc = f.say("env.available")
    else:
        hwc = f.strong(f.say("env.hwc_missing"))
    rows.append((f.say("env.hwc"), hwc))
    if env.probe_error:
        rows.append((f.say("env.probe_error"), f.code(env.probe_error)))
    return rows


def prepack_rows(env: Environment, f: Fmt) -> list[tuple[str, str, str, bool]]:
    """(engine, listed, result, warn) per engine, supported engines first."""
    engines = list(env.supported_engines) + [e for e in env.prepack if e not in env.supported_engines]
    rows = []
    for engine in engines:
        if engine not in env.prepack:
            continue
        status = env.prepack[engine]
        listed = engine in env.supported_engines
        ok = status.strip().lower() == "ok"
        shown = f.say("env.prepack_ok") if ok else f.strong(f.say("env.prepack_failed", error=f.code(status)))
        rows.append((f.code(engine), f.say("yes") if listed else f.say("no"), shown, listed and not ok))
    return rows


# The runner's notes (codemod.ab.compare) are English sentences joined by "; ": the common
# shapes get translated; any other part is shown as code in a language that is not English.
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
                parts.append(f.say(key, what=f.outcome("crashed" if m.group(1) == "crashes" else "timeout")))
            elif key == "note.module_skipped":
                parts.append(f.say(key, arm=f.text(g["arm"])) + (f" {f.code(g['why'])}" if g.get("why") else ""))
            elif key == "note.was":
                parts.append(f.say(key, cat=f.text(category_label(g["cat"], f.lang))))
            elif key == "note.sequence":
                runs = [re.match(r"^([\w-]+)( \(in file\))?$", x.strip()) for x in g["seq"].split(",")]
                if not all(runs):
                    parts.append(f.code(part))
                    break
                shown = [f.outcome(r.group(1)) + (f.say("note.in_file") if r.group(2) else "") for r in runs]
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


def diagnostic_changes(result: ABResult) -> list[tuple[Any, str, str, list[str]]]:
    """(diagnostic, outcome in its base arm, outcome in it, node ids), grouped."""
    out: dict[tuple[str, str, str], tuple[Any, list[str]]] = {}
    for d in result.diagnostics:
        for nid, v in sorted(d.changed.items()):
            before = v[0] if v else None
            after = v[1] if len(v) > 1 else None
            out.setdefault((d.name, before, after), (d, []))[1].append(nid)
    return [(d, before, after, nids) for (_n, before, after), (d, nids) in out.items()]


# The script the reports refer to (codemod.report.ab_repro), written next to them.
REPRO_SCRIPT = "repro.sh"


def reproduction_intro(result: ABResult, f: Fmt) -> str:
    return f.say("repro.intro", script=f.code(REPRO_SCRIPT), python=f.code("PYTHON=/path/to/python"))


def reproduction_parts(result: ABResult, f: Fmt):
    """Per arm: the arm, its heading, the sentences that describe it, a warning when it did
    not run, and the command that reproduces it (`bash repro.sh NAME`), in `f`'s markup.
    Shared by the Markdown and HTML views."""
    diag_base = {d.name: d.based_on for d in result.diagnostics}
    for arm in result.arms:
        label = arm_description(arm, result, f)
        if arm.name in diag_base:
            label = f.say("paren", a=label, b=f.say("repro.diag", base=f.code(diag_base[arm.name])))
        notes = []
        if arm.env_added:
            notes.append(f.say("repro.env", pairs=f.pairs(arm.env_added)))
        if arm.extra_args:
            notes.append(f.say("repro.args", args=f.code(" ".join(arm.extra_args))))
        warning = None if arm.ran else f.say("repro.not_run", error=f.code(arm.error or "?"))
        command = f"bash {REPRO_SCRIPT} {arm.name}" if arm.ran else ""
        yield arm, f.say("repro.arm", arm=f.text(arm.name), label=label), notes, warning, command


SECTION_ORDER = {
    # English: what a PR reviewer reads first; Chinese: the community report layout
    # 背景 / 环境信息 / 复现步骤 / 结果 / 原因分析.
    "en": ("background", "results", "analysis", "environment", "reproduction"),
    "zh": ("background", "environment", "reproduction", "results", "analysis"),
}
