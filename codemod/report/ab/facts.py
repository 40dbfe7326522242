"""Facts about an A/B result that every report view shares, independent of the format:
counts, ordering, short forms of failures (headline, compact signature, short
traceback), groups of identical failures, broken quantized engines.

The JUnit view uses this module only; the Markdown and HTML views also use the
sentences built on it (`ab_verdict`, `ab_tables`, `ab_analysis`, `ab_background`,
`ab_environment`, `ab_repro`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from codemod.ab.result.model import CATEGORY_RANK, FAILING, ABResult, Category, Environment, Outcome, TestComparison
from codemod.report.shared.i18n import t

# Categories the per-test table leaves out (nothing to say about them).
QUIET = frozenset({Category.SAME_PASS, Category.SAME_SKIP})
# Longest traceback pasted into Markdown (GitHub caps a PR body at 65,536 characters).
MAX_TRACEBACK = 12_000


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def visible_controls(s: str, strip_ansi: bool = True) -> str:
    """Drop ANSI colour codes (optionally) and show other control characters
    (and code points XML forbids) as `\\xNN` / `\\uNNNN` text."""
    if strip_ansi:
        s = _ANSI.sub("", s)
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", s
    )


def category_counts(result: ABResult) -> dict[Category, int]:
    """Counts per category in report order: the runner's counts when it gave
    them, else counted from the tests."""
    raw = dict(result.counts) if result.counts else dict(Counter(c.category for c in result.tests))
    return {c: n for c, n in sorted(raw.items(), key=lambda cn: CATEGORY_RANK[cn[0]]) if n}


def ordered_tests(result: ABResult) -> list[TestComparison]:
    return sorted(result.tests, key=lambda c: (CATEGORY_RANK[c.category], c.nodeid))


def interesting_tests(result: ABResult) -> list[TestComparison]:
    """Tests whose outcome differs between the arms or that fail in both."""
    return [c for c in ordered_tests(result) if c.category not in QUIET]


def outcome_of(o: Outcome | None) -> str | None:
    return o.outcome if o is not None else None


def is_failing(o: Outcome | None) -> bool:
    return o is not None and o.outcome in FAILING


def headline(o: Outcome, limit: int = 160) -> str:
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
    return clip_words(text, limit)


def shown_signature(o: Outcome | None) -> str:
    if o is None:
        return ""
    return o.signature or (headline(o) if o.outcome in FAILING else "")


def broken_engines(env: Environment) -> list[tuple[str, str, bool]]:
    """(engine, error, listed in supported_engines) for engines that cannot prepack."""
    out = []
    for engine, status in env.prepack.items():
        if status and status.strip().lower() != "ok":
            out.append((engine, status, engine in env.supported_engines))
    return out


def failing_sets(result: ABResult) -> tuple[set[str], set[str]]:
    a = {c.nodeid for c in result.tests if is_failing(c.a)}
    b = {c.nodeid for c in result.tests if is_failing(c.b)}
    return a, b


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
# Compact forms: what a reviewer reads first (the full forms stay in the details).
# ---------------------------------------------------------------------------

# Longest signature shown in a table cell or a terminal row.
SIGNATURE_CELL = 160


def clip_words(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at a word boundary, with "…"."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def compact_signature(o: Outcome | None, limit: int = SIGNATURE_CELL) -> str:
    """A failure in at most `limit` characters: the exception type and the most telling
    message line (e.g. the missing GLOBAL), cut at a word boundary."""
    if o is None:
        return ""
    if o.outcome not in FAILING and not o.signature:
        return ""
    return clip_words(headline(o, limit=10_000), limit)


def middle_truncate(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut in the middle so both the start and the
    distinguishing tail (the test name) stay readable."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    tail = (width - 1) * 2 // 3
    head = width - 1 - tail
    return text[:head] + "…" + text[len(text) - tail :]


_SECTION = re.compile(
    r"^(The above exception was the direct cause of the following exception:"
    r"|During handling of the above exception, another exception occurred:)\s*$",
    re.M,
)
_ENTRY_SEP = re.compile(r"^(?:_ )+_?[ \t]*$", re.M)
_LOCATION = re.compile(r"^(?P<path>\S.*?):(?P<line>\d+): ?(?P<rest>.*)$")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\(")


def _own_frame(path: str) -> bool:
    """A frame of the tests' own tree: pytest prints those paths relative to the rootdir."""
    return (
        not path.startswith(("/", "<"))
        and not re.match(r"^[A-Za-z]:[\\/]", path)
        and "site-packages" not in path
        and "dist-packages" not in path
    )


def _short_entry(entry: str) -> tuple[str, str, list[str]] | None:
    """(location, raising line, E lines) of one pytest traceback entry: long style (the
    frame's source, `>` at the raising line, `path:line:` last), or the short style pytest's
    default `--tb=auto` uses for the frames between the first and the last."""
    lines = entry.strip("\n").split("\n")
    if _SHORT_STYLE.match(lines[0]):
        raising = lines[1].strip() if len(lines) > 1 and not lines[1].startswith("E ") else ""
        errors = ["E   " + _ANSI.sub("", ln[1:].strip()) for ln in lines[1:] if ln.startswith("E ")]
        return lines[0].rstrip(), raising, errors
    located = next(((i, m) for i in range(len(lines) - 1, -1, -1) if (m := _LOCATION.match(lines[i]))), None)
    if located is None:
        return None
    loc_i, m = located
    # the frame's function is the first `def` shown (its own source starts there)
    func = next((d.group(1) for d in map(_DEF.match, lines[:loc_i]) if d), "")
    raising = next((ln[1:].strip() for ln in lines[:loc_i] if ln.startswith(">")), "")
    errors = ["E   " + _ANSI.sub("", ln[1:].strip()) for ln in lines[:loc_i] if ln.startswith("E ")]
    where = f"{m.group('path')}:{m.group('line')}: in {func}" if func else f"{m.group('path')}:{m.group('line')}:"
    return where, raising, errors


_SHORT_STYLE = re.compile(r"^\S.*:\d+: in \S+\s*$", re.M)


def _short_section(section: str) -> str:
    if _SHORT_STYLE.search(section) and not _ENTRY_SEP.search(section):
        return section.strip("\n")  # already short style (or native): nothing to trim
    entries = [e for e in _ENTRY_SEP.split(section) if e.strip()]
    maybe = [_short_entry(e) for e in entries]
    parsed = [p for p in maybe if p is not None]
    if not parsed or len(parsed) != len(maybe):
        return section.strip("\n")
    keep = [i for i, p in enumerate(parsed) if _own_frame(p[0])]
    last = len(parsed) - 1
    if last not in keep:
        keep.append(last)
    out: list[str] = []
    previous = -1
    for i in keep:
        if i > previous + 1:
            out.append(f"    ({i - previous - 1} frames hidden)")
        where, raising, _errors = parsed[i]
        out.append(where)
        if raising:
            out.append("    " + raising)
        previous = i
    out.extend(parsed[last][2])
    return "\n".join(out)


_SITE = re.compile(r"(?:[A-Za-z]:)?[^\s:\"']*[\\/](?:site|dist)-packages[\\/]")


_STDLIB = re.compile(r"(?:[A-Za-z]:)?[^\s:\"']*[\\/]lib[\\/]python3\.\d+[\\/]")
_NATIVE_LIBRARY_FRAME = re.compile(r'^\s*File "<(?:site-packages|stdlib)>/')


def _collapse_native_frames(text: str) -> str:
    """In a faulthandler dump (`File "...", line N in f` lines), runs of library frames
    become one line saying how many were hidden."""
    out: list[str] = []
    run = 0
    for line in text.split("\n") + [""]:
        if _NATIVE_LIBRARY_FRAME.match(line):
            run += 1
            continue
        if run:
            out.append(f"  ({run} library frames hidden)")
            run = 0
        out.append(line)
    return "\n".join(out[:-1])


def report_traceback(tb: str, lang: str, roots: Iterable[str] = ()) -> str:
    """The traceback a report shows: short style, the arms' temporary roots removed (paths
    become relative, as in the repository), installed-package paths as `<site-packages>/`,
    clipped to MAX_TRACEBACK characters."""
    text = short_traceback(tb)
    for root in sorted((r.rstrip("/") for r in roots if r and r.strip("/")), key=len, reverse=True):
        text = text.replace(root + "/", "")
    text = _STDLIB.sub("<stdlib>/", _SITE.sub("<site-packages>/", text))
    return clip_traceback(_collapse_native_frames(text), lang)


def arm_roots(result: ABResult) -> list[str]:
    return [a.root for a in result.arms if a.root]


def short_traceback(tb: str) -> str:
    """pytest's short style of a long-style traceback: the tests' own frames and the
    raising frame (location, the line that raised), then the `E` lines; library source
    (e.g. 200 lines of torch/serialization.py) left out. Text that is not a pytest
    traceback comes back unchanged."""
    if not tb:
        return tb
    parts = _SECTION.split(tb)
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 1:
            out.append(part.strip())
        else:
            out.append(_short_section(part))
    return "\n\n".join(p for p in out if p)


# ---------------------------------------------------------------------------
# Groups of identical failures (every view shows each group once).
# ---------------------------------------------------------------------------


def group_key(c: TestComparison) -> tuple:
    """Tests with equal keys fail identically: same category, outcomes and signatures."""
    a, b = c.a, c.b
    return (
        c.category,
        a.outcome if a else None,
        b.outcome if b else None,
        a.signature if a else None,
        b.signature if b else None,
    )


def failure_groups(tests: list[TestComparison]) -> list[list[TestComparison]]:
    """`tests` (in order) grouped by identical failure; a test without a failure
    signature in either arm is a group of its own. Groups keep the order of their first member."""
    groups: dict[tuple, list[TestComparison]] = {}
    out: list[list[TestComparison]] = []
    for c in tests:
        has_failure = any(o is not None and (o.signature or o.outcome in FAILING) for o in (c.a, c.b))
        if not has_failure:
            out.append([c])
            continue
        key = group_key(c)
        if key in groups:
            groups[key].append(c)
        else:
            groups[key] = [c]
            out.append(groups[key])
    return out


def common_prefix_ids(nodeids: list[str]) -> tuple[str, list[str]]:
    """("file.py::Class::", ["test_a", "test_b"]) — the shared node-id prefix (cut at "::")
    and what differs; ("", nodeids) when they share no file."""
    if len(nodeids) < 2:
        return "", list(nodeids)
    first = nodeids[0]
    cut = len(first)
    for n in nodeids[1:]:
        i = 0
        while i < min(cut, len(n)) and first[i] == n[i]:
            i += 1
        cut = i
    prefix = first[:cut]
    k = prefix.rfind("::")
    if k == -1:
        return "", list(nodeids)
    prefix = prefix[: k + 2]
    return prefix, [n[len(prefix) :] for n in nodeids]
