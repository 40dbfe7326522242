"""Markdown view of an A/B result, ready to paste into a pull request.

`render(result, lang)` is the entry point.  The first half of this module is
the analysis shared with the HTML view (`ab_html`): it turns an `ABResult`
into sentences through a small formatter interface (`Fmt`), so both views say
exactly the same thing, each with its own escaping.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from typing import Iterable, Optional, Sequence, Union

from codemod.ab.model import CATEGORIES, REGRESSING, ABResult, Environment, Outcome, TestComparison

from .i18n import category_label, check_lang, outcome_label, t, template, verdict_label

__all__ = ["render"]

# Outcomes that count as "failing" when comparing the two arms.
FAILING = frozenset({"failed", "error", "crashed", "timeout"})
# Categories the per-test table leaves out (nothing to say about them).
QUIET = frozenset({"same-pass", "same-skip"})
# Longest traceback pasted into Markdown (GitHub caps a PR body at 65,536 characters).
MAX_TRACEBACK = 12_000
# How many node ids a sentence lists before "and N more".
MAX_LISTED = 5


# ---------------------------------------------------------------------------
# Formatters: the same sentences, escaped for Markdown or for HTML.
# ---------------------------------------------------------------------------

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

    def outcome(self, outcome: Optional[str]) -> str:
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


class MarkdownFmt(Fmt):
    _SPECIAL = re.compile(r"([\\`*_\[\]<>&])")

    def text(self, s: str) -> str:
        s = _one_line(s)
        return self._SPECIAL.sub(lambda m: "&amp;" if m.group(1) == "&" else
                                 "&lt;" if m.group(1) == "<" else
                                 "&gt;" if m.group(1) == ">" else "\\" + m.group(1), s)

    def code(self, s: str) -> str:
        return md_code(s)

    def strong(self, s: str) -> str:
        return f"**{s}**"


class HtmlFmt(Fmt):
    def text(self, s: str) -> str:
        return html.escape(s)

    def code(self, s: str) -> str:
        return f"<code>{html.escape(s)}</code>"

    def strong(self, s: str) -> str:
        return f"<strong>{s}</strong>"


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def visible_controls(s: str, strip_ansi: bool = True) -> str:
    """Drop ANSI colour codes (optionally) and show other control characters
    (and code points XML forbids) as `\\xNN` / `\\uNNNN` text."""
    if strip_ansi:
        s = _ANSI.sub("", s)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", s)


def _one_line(s: str, joiner: str = " ") -> str:
    return re.sub(r"\r\n|\r|\n", joiner, s)


def md_code(s: str) -> str:
    """A Markdown code span that survives backticks and newlines."""
    s = _one_line(s, " ↵ ")
    if not s:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if (s[0] == "`" or s[-1] == "`" or (s[0] == " " and s[-1] == " " and s.strip())) else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def md_cell(s: str) -> str:
    """Make already-formatted Markdown safe inside a table cell."""
    return _one_line(s, "<br>").replace("|", "\\|")


def md_fence(body: str, info: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run inside."""
    body = body.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


# ---------------------------------------------------------------------------
# Facts derived from the result (format independent).
# ---------------------------------------------------------------------------

def category_counts(result: ABResult) -> dict[str, int]:
    """Counts per category in report order: the runner's counts when it gave
    them, else counted from the tests."""
    raw = dict(result.counts) if result.counts else dict(Counter(c.category for c in result.tests))
    ordered = {c: raw[c] for c in CATEGORIES if raw.get(c)}
    ordered.update({c: n for c, n in sorted(raw.items()) if c not in ordered and n})
    return ordered


def _rank(category: str) -> int:
    return CATEGORIES.index(category) if category in CATEGORIES else len(CATEGORIES)


def ordered_tests(result: ABResult) -> list[TestComparison]:
    return sorted(result.tests, key=lambda c: (_rank(c.category), c.nodeid))


def interesting_tests(result: ABResult) -> list[TestComparison]:
    """Tests whose outcome differs between the arms or that fail in both."""
    return [c for c in ordered_tests(result) if c.category not in QUIET]


def outcome_of(o: Optional[Outcome]) -> Optional[str]:
    return o.outcome if o is not None else None


def is_failing(o: Optional[Outcome]) -> bool:
    return o is not None and o.outcome in FAILING


def headline(o: Outcome) -> str:
    """A short human form of a failure: `ExcType: most telling message line`."""
    lines = [ln.strip() for ln in o.message.splitlines() if ln.strip()]
    line = ""
    for ln in lines:
        m = re.search(r"Unsupported (global|class)\b.*?(\.(?=\s|$)|$)", ln)
        if m:
            line = m.group(0)
            break
    if not line and lines:
        line = lines[0]
    if o.exc_type:
        if line.startswith(o.exc_type):
            text = line
        else:
            text = f"{o.exc_type}: {line}" if line else o.exc_type
    elif line:
        text = line
    elif o.signal:
        text = o.signal
    else:
        text = o.signature or o.outcome
    return text if len(text) <= 160 else text[:157] + "..."


def shown_signature(o: Optional[Outcome]) -> str:
    if o is None:
        return ""
    return o.signature or (headline(o) if o.outcome in FAILING else "")


def preexisting_groups(result: ABResult) -> list[tuple[str, list[TestComparison]]]:
    """Pre-existing failures grouped by their (identical) signature, biggest first."""
    groups: dict[str, list[TestComparison]] = {}
    for c in ordered_tests(result):
        if c.category != "pre-existing":
            continue
        ref = c.b or c.a
        key = (ref.signature or headline(ref)) if ref else ""
        groups.setdefault(key, []).append(c)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def broken_engines(env: Environment) -> list[tuple[str, str, bool]]:
    """(engine, error, listed in supported_engines) for engines that cannot prepack."""
    out = []
    for engine, status in env.prepack.items():
        if status and status.strip().lower() != "ok":
            out.append((engine, status, engine in env.supported_engines))
    return out


def _core(text: str) -> str:
    """The message part of 'ExcType: message', lower-cased."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = re.match(r"^[\w.]+(Error|Exception|Warning)?:\s*(.*)$", first)
    return (m.group(2) if m else first).strip().lower()


def prepack_match(env: Environment, o: Outcome) -> Optional[str]:
    """The broken engine whose prepack error this failure repeats, if any."""
    haystack = " ".join(filter(None, [o.signature, o.message, o.loose_signature])).lower()
    for engine, error, _listed in broken_engines(env):
        core = _core(error)
        if core and core in haystack:
            return engine
    return None


def _is_weights_only(o: Outcome) -> bool:
    text = " ".join(filter(None, [o.exc_type, o.signature, o.message]))
    return "UnpicklingError" in text and bool(
        re.search(r"Unsupported (global|class)|Weights only load failed|weights_only", text))


def _is_unknown_arch(o: Outcome) -> bool:
    text = " ".join(filter(None, [o.signature, o.message])).lower()
    return "unknown architecure" in text or "unknown architecture" in text


def failing_sets(result: ABResult) -> tuple[set[str], set[str]]:
    a = {c.nodeid for c in result.tests if is_failing(c.a)}
    b = {c.nodeid for c in result.tests if is_failing(c.b)}
    return a, b


# ---------------------------------------------------------------------------
# Sentences (shared by Markdown and HTML).
# ---------------------------------------------------------------------------

def _count_parts(f: Fmt, counts: dict[str, int], cats: Iterable[str]) -> str:
    return f.sep().join(
        f.say("count.part", label=f.text(category_label(c, f.lang)), n=counts[c]) for c in cats if counts.get(c))


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
        why.append(f.say("reason.runner", reason=f.code(result.verdict_reason)) if result.verdict_reason
                   else f.say("reason.unknown"))
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
        return f.say("reason.regression", n=n, parts=_count_parts(f, counts, [c for c in CATEGORIES if c in REGRESSING]))
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
    parts = [f.say("diag.pair", n=n, a=f.outcome(a), d=f.outcome(b), base=f.code(d.based_on), vars=variables)
             for (a, b), n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))]
    return f.text(t("list.sep", f.lang)).join(parts) + f.say("period")


def _group_sentence(result: ABResult, sig: str, members: list[TestComparison], f: Fmt) -> str:
    env = result.environment
    ref = members[0].b or members[0].a
    outcome = ref.outcome if ref else "failed"
    verb_key = f"verb.{outcome}" if f"verb.{outcome}" in _VERBS else "verb.failed"
    n = len(members)
    parts = [f.say("an.group", n=n, verb=f.say(verb_key, n=n), sig=f.code(headline(ref) if ref else sig))]

    engine = prepack_match(env, ref) if ref else None
    machine = f.code(env.machine or "?")
    if engine:
        cause = f.say("an.cause.prepack", machine=f.text(env.machine or "?"))
    elif ref and _is_weights_only(ref):
        cause = f.say("an.cause.weights_only")
    elif ref and _is_unknown_arch(ref):
        cause = f.say("an.cause.arch", machine=machine)
    else:
        cause = ""
    parts.append(f.say("an.preexisting_cause", cause=cause) if cause else f.say("an.preexisting"))

    ids = {c.nodeid for c in members}
    for d in result.diagnostics:
        passed = [nid for nid in ids if len(d.changed.get(nid, [])) >= 2 and d.changed[nid][1] == "passed"]
        if not passed:
            continue
        variables = f.pairs(d.variables) if d.variables else f.say("diag.no_vars")
        if len(passed) == n:
            parts.append(f.say("an.diag_all", n=n, vars=variables))
        else:
            parts.append(f.say("an.diag_some", k=len(passed), n=n, vars=variables))
    if engine:
        parts.append(f.say("an.prepack_link", engine=f.code(engine), machine=machine))
    return f.text(t("list.sep", f.lang)).join(parts) + f.say("period")


_VERBS = {"verb.failed", "verb.error", "verb.crashed", "verb.timeout"}


def analysis(result: ABResult, f: Fmt) -> list[tuple[str, Union[str, list[str]]]]:
    """The "what this proves" blocks: ("h", text) sub-headings, ("p", text)
    paragraphs and ("ul", [items]) lists, already formatted with `f`."""
    counts = category_counts(result)
    by_cat: dict[str, list[str]] = {}
    for c in ordered_tests(result):
        by_cat.setdefault(c.category, []).append(c.nodeid)
    total = len(result.tests) or sum(counts.values())
    blocks: list[tuple[str, Union[str, list[str]]]] = [("h", f.say("h.change_safe"))]

    if result.verdict == "REGRESSION":
        regressing = [n for c in CATEGORIES if c in REGRESSING for n in by_cat.get(c, [])]
        n = sum(counts.get(c, 0) for c in REGRESSING)
        blocks.append(("p", f.say("an.regression", n=n, tests=f.tests(regressing),
                                  parts=_count_parts(f, counts, [c for c in CATEGORIES if c in REGRESSING]))))
    elif result.verdict == "SAFE":
        blocks.append(("p", f.say("an.safe", n=total, total=total)))
    else:
        blocks.append(("p", f.say("an.inconclusive",
                                  why=f.text(t("list.sep", f.lang)).join(_inconclusive_why(result, f)))))
    for cat, key in (("different-failure", "an.different"), ("similar-failure", "an.similar"),
                     ("no-longer-run", "an.no_longer_run"), ("flaky", "an.flaky"), ("fixed", "an.fixed")):
        if by_cat.get(cat):
            blocks.append(("p", f.say(key, n=len(by_cat[cat]), tests=f.tests(by_cat[cat]))))

    blocks.append(("h", f.say("h.env_broken")))
    groups = preexisting_groups(result)
    fail_a, fail_b = failing_sets(result)
    env = result.environment
    if groups:
        blocks.append(("p", f.say("an.env_broken")))
        blocks.append(("ul", [_group_sentence(result, sig, members, f) for sig, members in groups]))
    else:
        blocks.append(("p", f.say("an.env_clean")))
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
    items = [f.say("bg.intro",
                   a=f.text(a.label) + " " + f.code(a.source) if a else f.say("unknown"),
                   b=f.text(b.label) + " " + f.code(b.source) if b else f.say("unknown"))]
    if result.paths:
        items.append(f.say("bg.paths", paths=f.codes(result.paths)))
    if result.base_ref:
        items.append(f.say("bg.base_ref", ref=f.code(result.base_ref)))
    if result.started or result.duration:
        items.append(f.say("bg.started", started=f.code(result.started or "?"),
                           duration=f.say("seconds", s=f"{result.duration:.1f}")))
    if result.python:
        items.append(f.say("bg.python", python=f.code(result.python)))
    if result.shard:
        items.append(f.say("bg.shard", shard=f.code(result.shard)))
    items.append(f.say("bg.tool", tool=f.code(result.tool_version or "?"),
                       norm=f.code(result.normaliser_version or "?")))
    if result.mapping:
        items.append(f.say("bg.mapping", pairs=f.sep().join(
            f"{f.code(old)} → {f.code(new)}" for old, new in result.mapping.items())))
    return items


def runner_warnings(result: ABResult) -> list[str]:
    """Non-fatal problems the runner recorded (a newer model field; absent means none)."""
    return [w for w in (getattr(result, "warnings", None) or []) if w]


def runner_env_items(result: ABResult, f: Fmt) -> list[str]:
    items = []
    if result.env_unset:
        items.append(f.say("bg.unset", names=f.codes(result.env_unset)))
    if result.env_set:
        items.append(f.say("bg.set", pairs=f.pairs(result.env_set)))
    if not items:
        items.append(f.say("bg.env_unchanged"))
    return items


def environment_facts(env: Environment, f: Fmt) -> list[tuple[str, str]]:
    """(label, value) rows; values already formatted."""
    unknown = f.say("unknown")

    def val(v: Optional[str]) -> str:
        return f.code(v) if v else unknown

    def version(v: Optional[str]) -> str:
        return f.code(v) if v else f.say("env.not_available")

    def flag(v: Optional[bool]) -> str:
        if v is None:
            return unknown
        return f.say("env.available") if v else f.say("env.not_available")

    rows = [
        (f.say("env.python"), f.say("env.value_with_exe", version=val(env.python), exe=f.code(env.executable))
         if env.executable else val(env.python)),
        (f.say("env.platform"), val(env.platform)),
        (f.say("env.machine"), val(env.machine)),
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


def test_note(c: TestComparison, f: Fmt) -> str:
    notes = []
    if c.note:
        notes.append(f.text(c.note))
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
    sa, sb = shown_signature(c.a), shown_signature(c.b)
    if sa and sb and sa != sb:
        return f.say("sig.a", sig=f.code(sa)) + "\n" + f.say("sig.b", sig=f.code(sb))
    return f.code(sb or sa)


def tracebacks_of(c: TestComparison) -> list[tuple[str, Outcome]]:
    """(arm name, outcome) pairs that carry something to show."""
    out = []
    for name, o in (("A", c.a), ("B", c.b)):
        if o is not None and (o.traceback or o.outcome in FAILING):
            out.append((name, o))
    return out


def clip_traceback(tb: str, lang: str, limit: int = MAX_TRACEBACK) -> str:
    if len(tb) <= limit:
        return tb
    head = limit // 5
    tail = limit - head
    omitted = len(tb) - head - tail
    return tb[:head] + "\n" + t("tb.truncated", lang, n=omitted) + "\n" + tb[-tail:]


# ---------------------------------------------------------------------------
# Markdown rendering.
# ---------------------------------------------------------------------------

def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(md_cell(cell) for cell in row) + " |" for row in rows]
    return lines


def _section_background(result: ABResult, f: Fmt) -> list[str]:
    lines = [f"### {f.say('h.background')}", ""]
    lines += [f"- {item}" for item in background_items(result, f)]
    lines += ["", f"**{f.say('h.runner_env')}**", ""]
    lines += [f"- {item}" for item in runner_env_items(result, f)]
    return lines


def _section_environment(result: ABResult, f: Fmt) -> list[str]:
    env = result.environment
    lines = [f"### {f.say('h.environment')}", ""]
    lines += ["- " + f.say("kv", k=f.strong(label), v=value) for label, value in environment_facts(env, f)]
    rows = prepack_rows(env, f)
    if rows:
        lines += ["", f"**{f.say('env.prepack')}**", ""]
        for engine, _listed, _shown, warn in rows:
            if warn:
                lines += [f"> ⚠️ **{f.say('env.prepack_warn', engine=engine)}**", ""]
        lines += _table([f.say("col.engine"), f.say("col.listed"), f.say("col.prepack")],
                        [(("⚠️ " if warn else "") + engine, listed, shown) for engine, listed, shown, warn in rows])
    lines += ["", f"**{f.say('env.variables')}**", ""]
    if env.variables:
        lines += _table([f.say("col.variable"), f.say("col.value")],
                        [(f.code(k), f.code(v) if v else "") for k, v in sorted(env.variables.items())])
    else:
        lines.append(f"- {f.say('env.none_set')}")
    return lines


def reproduction_parts(result: ABResult, f: Fmt):
    """Per arm: the arm, its heading, the sentences that describe it and a warning when it
    did not run, in `f`'s markup. Shared by the Markdown and HTML views."""
    diag_base = {d.name: d.based_on for d in result.diagnostics}
    for arm in result.arms:
        label = f.text(arm.label)
        if arm.name in diag_base:
            label = f.say("paren", a=label, b=f.say("repro.diag", base=f.code(diag_base[arm.name])))
        notes = [f.say("repro.source", source=f.code(arm.source), root=f.code(arm.root or "?"))]
        if arm.env_added:
            notes.append(f.say("repro.env", pairs=f.pairs(arm.env_added)))
        if arm.extra_args:
            notes.append(f.say("repro.args", args=f.code(" ".join(arm.extra_args))))
        warning = None if arm.ran else f.say("repro.not_run", error=f.code(arm.error or "?"))
        yield arm, f.say("repro.arm", arm=f.text(arm.name), label=label), notes, warning


def _section_reproduction(result: ABResult, f: Fmt) -> list[str]:
    lines = [f"### {f.say('h.reproduction')}"]
    for arm, heading, notes, warning in reproduction_parts(result, f):
        lines += ["", f"#### {heading}", "", notes[0]]
        for note in notes[1:]:
            lines += ["", note]
        if warning:
            lines += ["", f"**{warning}**"]
        lines.append("")
        lines.append(md_fence(arm.command, "sh") if arm.command else f.say("repro.no_command"))
    return lines


def _traceback_details(c: TestComparison, f: Fmt, h: HtmlFmt) -> list[str]:
    shown = tracebacks_of(c)
    subtests = [s for s in (c.b.subtests if c.b else []) if s.outcome in FAILING]
    if not shown and not subtests:
        return []
    summary = h.say("tb.summary", nodeid=h.code(c.nodeid), a=h.outcome(outcome_of(c.a)), b=h.outcome(outcome_of(c.b)))
    lines = [f"<details><summary>{summary}</summary>", ""]
    for name, o in shown:
        lines += [f.say("tb.arm", arm=f.text(name), outcome=f.outcome(o.outcome)), ""]
        body = clip_traceback(o.traceback, f.lang) if o.traceback else t("tb.none", f.lang)
        lines += [md_fence(body, "text"), ""]
    for s in subtests:
        lines += [f.say("tb.subtest", nodeid=f.code(s.nodeid), outcome=f.outcome(s.outcome)), ""]
        body = clip_traceback(s.traceback, f.lang) if s.traceback else (s.signature or t("tb.none", f.lang))
        lines += [md_fence(body, "text"), ""]
    lines.append("</details>")
    return lines


def _group_details(members: list[TestComparison], f: Fmt, h: HtmlFmt) -> list[str]:
    """One collapsible block per pre-existing signature: the tests, one traceback."""
    first = members[0]
    ref = first.b or first.a
    if ref is None:
        return []
    arm = "B" if first.b is not None else "A"
    summary = h.say("tb.group", n=len(members), sig=h.code(headline(ref)))
    lines = [f"<details><summary>{summary}</summary>", ""]
    lines += [f"- {f.code(c.nodeid)}" for c in members]
    lines += ["", f.say("tb.first", n=len(members), nodeid=f.code(first.nodeid), arm=f.text(arm)), ""]
    body = clip_traceback(ref.traceback, f.lang) if ref.traceback else (ref.signature or t("tb.none", f.lang))
    lines += [md_fence(body, "text"), "", "</details>"]
    return lines


def _section_results(result: ABResult, f: Fmt) -> list[str]:
    h = HtmlFmt(f.lang)
    counts = category_counts(result)
    lines = [f"### {f.say('h.results')}", ""]
    if f.lang != "en":  # the Chinese layout puts 结果 after 背景/环境信息/复现步骤
        lines += [verdict_line(result, f), ""]
    lines += [f"#### {f.say('h.counts')}", ""]
    rows = [(f.category(c), str(n)) for c, n in counts.items()]
    rows.append((f.strong(f.say("total")), f.strong(str(sum(counts.values())))))
    lines += _table([f.say("col.category"), f.say("col.count")], rows)

    lines += ["", f"#### {f.say('h.tests')}", ""]
    tests = interesting_tests(result)
    if tests:
        lines += _table(
            [f.say("col.test"), f.say("col.a"), f.say("col.b"), f.say("col.category"),
             f.say("col.signature"), f.say("col.note")],
            [(f.code(c.nodeid), f.outcome(outcome_of(c.a)), f.outcome(outcome_of(c.b)), f.category(c.category),
              signature_cell(c, f), test_note(c, f)) for c in tests])
        blocks = [_traceback_details(c, f, h) for c in tests if c.category != "pre-existing"]
        blocks += [_group_details(members, f, h) for _sig, members in preexisting_groups(result)]
        blocks = [b for b in blocks if b]
        if blocks:
            lines += ["", f"**{f.say('h.tracebacks')}**"]
            for block in blocks:
                lines += [""] + block
    else:
        lines.append(f.say("no_differences"))

    warnings = runner_warnings(result)
    if warnings:
        lines += ["", f"#### {f.say('h.warnings')}", ""]
        lines += [f"- ⚠️ {f.text(w)}" for w in warnings]

    coll = [(arm, path, o) for arm in result.arms for path, o in sorted(arm.collection_errors.items())]
    crashes = [arm for arm in result.arms if arm.crashes]
    if coll or crashes:
        lines += ["", f"#### {f.say('h.collection_errors')}", ""]
        for arm, path, o in coll:
            lines.append("- " + f.say("collection.error", arm=f.text(arm.name), file=f.code(path),
                                      sig=f.code(shown_signature(o) or headline(o))))
        for arm in crashes:
            lines.append("- " + f.say("crashes", arm=f.text(arm.name), tests=f.tests(arm.crashes)))
        for arm, path, o in coll:
            if o.traceback:
                summary = h.say("collection.error", arm=h.text(arm.name), file=h.code(path),
                                sig=h.code(shown_signature(o) or headline(o)))
                lines += ["", f"<details><summary>{summary}</summary>", "",
                          md_fence(clip_traceback(o.traceback, f.lang), "text"), "", "</details>"]

    if result.diagnostics:
        lines += ["", f"#### {f.say('h.diagnostics')}", ""]
        for d in result.diagnostics:
            variables = f.pairs(d.variables) if d.variables else f.say("diag.no_vars")
            lines.append("- " + f.say("diag.intro", name=f.strong(f.text(d.name)), base=f.code(d.based_on),
                                      vars=variables) + f.say("sentence.sep") + diagnostic_statement(result, d, f))
        changed = [(d, nid, v) for d in result.diagnostics for nid, v in sorted(d.changed.items())]
        if changed:
            lines.append("")
            lines += _table(
                [f.say("col.diag_name"), f.say("col.test"), f.say("col.base"), f.say("col.diag")],
                [(f.text(d.name), f.code(nid), f.outcome(v[0] if v else None), f.outcome(v[1] if len(v) > 1 else None))
                 for d, nid, v in changed])
    return lines


def _section_analysis(result: ABResult, f: Fmt) -> list[str]:
    lines = [f"### {f.say('h.analysis')}"]
    for kind, content in analysis(result, f):
        lines.append("")
        if kind == "h":
            lines.append(f"**{content}**")
        elif kind == "p":
            lines.append(content)  # type: ignore[arg-type]
        else:
            lines += [f"- {item}" for item in content]
    return lines


SECTION_ORDER = {
    # English: what a PR reviewer reads first; Chinese: the community report layout
    # 背景 / 环境信息 / 复现步骤 / 结果 / 原因分析.
    "en": ("background", "results", "analysis", "environment", "reproduction"),
    "zh": ("background", "environment", "reproduction", "results", "analysis"),
}

_SECTIONS = {
    "background": _section_background,
    "environment": _section_environment,
    "reproduction": _section_reproduction,
    "results": _section_results,
    "analysis": _section_analysis,
}


def render(result: ABResult, lang: str = "en") -> str:
    """The A/B report as GitHub-flavoured Markdown in `lang` ("en" or "zh")."""
    f = MarkdownFmt(lang)
    lines = [f"## {f.say('title', verdict=f.verdict(result.verdict))}", "", verdict_line(result, f)]
    for name in SECTION_ORDER[lang]:
        lines += [""] + _SECTIONS[name](result, f)
    return visible_controls("\n".join(lines)).rstrip() + "\n"
