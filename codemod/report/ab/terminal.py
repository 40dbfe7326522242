"""Terminal summary of an ABResult (plain text, optional ANSI colour; English)."""

from __future__ import annotations

import re
import shlex

from codemod.ab.result.model import CATEGORIES, REGRESSING, ABResult, Category, Outcome, TestComparison, Verdict
from codemod.report.ab.coverage import census_lines, filter_lines, runtime_lines, totals_rows
from codemod.report.ab.facts import QUIET, compact_signature, failure_groups, middle_truncate, visible_controls
from codemod.report.ab.fmt import Fmt


class PlainFmt(Fmt):
    """Plain text: the terminal shows text and code as they are."""

    def text(self, s: str) -> str:
        return s

    def code(self, s: str) -> str:
        return s

    def strong(self, s: str) -> str:
        return s


def one_line(text: str) -> str:
    """A value from the result on one terminal line: its control characters (NUL, BEL, ESC,
    newlines) shown as escapes, as the other views show them; no escape sequence of a test's
    message or a file name reaches the terminal."""
    return visible_controls(text, strip_ansi=False).replace("\n", "\\n").replace("\r", "\\r")


def lead_lines(result: ABResult) -> list[str]:
    """The counts of A and B side by side, the census, its findings, the label filter."""
    f = PlainFmt("en")
    rows = totals_rows(result)
    widths = [max(len(f.say("tot." + name)), 4) for name, *_ in rows]
    out = ["Tests   " + "  ".join(f.say("tot." + name).rjust(w) for (name, *_), w in zip(rows, widths, strict=True))]
    for label, index in (("A", 1), ("B", 2), ("B-A", 3)):
        cells = ["" if row[index] is None else str(row[index]) for row in rows]
        out.append(f"  {label:6}" + "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)))
    census = census_lines(result, f)
    if census:
        out.append("Census (hw_classification at run time): " + "; ".join(census))
    out += [one_line(line) for line in runtime_lines(result, f)]
    filtered = [one_line(line) for line in filter_lines(result, f)]
    out += filtered[:1] + ["  " + line for line in filtered[1:]]
    return out


_VERDICT_COLOUR = {Verdict.SAFE: "32", Verdict.REGRESSION: "31", Verdict.INCONCLUSIVE: "33"}


def _c(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def _short(text: str | None, n: int) -> str:
    text = one_line((text or "").replace("\n", " "))
    return text if len(text) <= n else text[: n - 1] + "…"


def _cell(o: Outcome | None) -> str:
    if o is None:
        return "-"
    s: str = o.outcome
    if o.signal:
        s += f" ({o.signal})"
    if o.reruns:
        s += " [" + ",".join(o.reruns) + "]"
    return s


def environment_line(result: ABResult) -> str:
    e = result.environment
    bits = [f"Python {e.python or '?'}"]
    if e.pytest_version:
        bits.append(f"pytest {e.pytest_version}")
    if e.torch_version:
        t = f"torch {e.torch_version}"
        if e.torch_git_version:
            t += f" ({e.torch_git_version[:8]})"
        bits.append(t)
        dev = []
        if e.cuda:
            dev.append(f"CUDA {e.cuda}")
        if e.rocm:
            dev.append(f"ROCm {e.rocm}")
        if e.xpu:
            dev.append("XPU")
        if e.mps:
            dev.append("MPS")
        dev.extend(f"{k} {v}" for k, v in e.backends.items())
        bits.append(", ".join(dev) if dev else "CPU only")
        if e.quantized_engine:
            q = f"quantized {e.quantized_engine}"
            bad = [k for k, v in e.prepack.items() if v != "ok"]
            if bad:
                q += f" (prepack fails: {', '.join(bad)})"
            bits.append(q)
        if e.has_hw_classification is not None:
            bits.append(f"HardwareClassification: {'yes' if e.has_hw_classification else 'no'}")
    else:
        bits.append("no torch")
    bits.append(f"{e.platform or '?'}")
    if e.cpu_model or e.cpu_count:
        cpu = e.cpu_model or "CPU"
        if e.cpu_count:
            cpu += f", {e.cpu_count} cores"
        if e.cpu_flags:
            cpu += " (" + " ".join(e.cpu_flags) + ")"
        bits.append(cpu)
    line = "; ".join(bits)
    if e.probe_error:
        line += f"  [probe: {_short(e.probe_error, 120)}]"
    return line


# Member lines shown under a group of identical failures.
GROUP_MEMBERS = 10


def _rows(rows: list[TestComparison], color: bool, max_rows: int, width: int) -> list[str]:
    """One line per test or per group of identical failures (its members listed below it);
    node ids cut in the middle so that the distinguishing tail (the test name) stays."""
    groups = failure_groups(rows)
    labels = [one_line(r[0].nodeid) if len(r) == 1 else f"{len(r)} tests:" for r in groups]
    wcat = max(len(g[0].category) for g in groups)
    wid = min(70, max(len(x) for x in labels))
    wa = min(24, max(len(_cell(g[0].a)) for g in groups))
    wb = min(24, max(len(_cell(g[0].b)) for g in groups))
    out: list[str] = []
    shown = 0
    for group, label in zip(groups, labels, strict=False):
        if shown >= max_rows:
            break
        r = group[0]
        sig = compact_signature(r.b) or compact_signature(r.a) or r.note
        cat = r.category.ljust(wcat)
        if r.category in REGRESSING:
            cat = _c(cat, "31", color)
        elif r.category == Category.FLAKY:
            cat = _c(cat, "33", color)
        line = (
            f"  {cat}  {middle_truncate(label, wid).ljust(wid)}  {_short(_cell(r.a), wa).ljust(wa)}  "
            f"{_short(_cell(r.b), wb).ljust(wb)}"
        )
        room = max(20, width - len(line) - 2)
        out.append(line + "  " + _short(sig, room))
        shown += 1
        if len(group) > 1:
            indent = " " * (4 + wcat)
            for member in group[:GROUP_MEMBERS]:
                out.append(indent + middle_truncate(one_line(member.nodeid), max(20, width - len(indent))))
            if len(group) > GROUP_MEMBERS:
                out.append(indent + f"... and {len(group) - GROUP_MEMBERS} more")
    hidden = sum(len(g) for g in groups[shown:])
    if hidden:
        out.append(f"  ... {hidden} more (see --json)")
    return out


def render(
    result: ABResult, color: bool = False, max_rows: int = 60, width: int = 160, repro: str | None = None
) -> str:
    """The summary; `repro`: the repro.sh written for this run (shown instead of the commands)."""
    out: list[str] = []
    v = result.verdict
    out.append(
        _c(f"decouple ab: {v}", "1;" + _VERDICT_COLOUR[v], color)
        + (f" - {one_line(result.verdict_reason)}" if result.verdict_reason else "")
    )
    arms = "   ".join(f"{a.name}: {a.label}" + ("" if a.ran else f" (DID NOT RUN: {a.error})") for a in result.arms)
    out.append(one_line(arms))
    meta = [f"normaliser {result.normaliser_version}", f"{result.duration:.1f}s"]
    if result.shard:
        meta.append(f"shard {result.shard}")
    out.append("  ".join(meta))
    out += lead_lines(result)
    counts = ", ".join(f"{c} {result.counts[c]}" for c in CATEGORIES if result.counts.get(c))
    out.append("Counts: " + (counts or "no tests"))
    rows = [t for t in result.tests if t.category not in QUIET]
    if rows:
        out.append("")
        out.append("Tests that differ or fail in both:")
        out.extend(_rows(rows, color, max_rows, width))
    if result.diagnostics:
        out.append("")
        out.append("Diagnostics:")
        for d in result.diagnostics:
            vars_ = " ".join(f"{k}={v}" for k, v in d.variables.items())
            out.append(one_line(f"  {d.name} (on {d.based_on}: {vars_}): {d.statement}"))
    out.append("")
    out.append(one_line("Environment: " + environment_line(result)))
    if result.env_unset or result.env_set:
        out.append(
            one_line(
                "Arm environment: unset "
                + " ".join(result.env_unset)
                + "; set "
                + " ".join(f"{k}={v}" for k, v in result.env_set.items())
            )
        )
    if result.warnings:
        # the terminal summary is English throughout (the reports have --lang)
        out.append("Warnings:")
        out.extend(f"  - {one_line(w.text('en'))}" for w in result.warnings)
    ran = [a for a in result.arms if a.ran]
    if repro:
        names = " ".join(a.name for a in ran)
        out.append(
            one_line(f"Reproduce: bash {shlex.quote(repro)} [ARM...]   (arms: {names}; one pytest process per file)")
        )
    elif ran:
        out.append("Reproduce:")
        for a in ran:
            where = f" ({a.source})" if a.source else ""
            # an arm that ran no file has no command: a pytest without paths would run every test
            out.append(one_line(f"  {a.name}{where}: {a.command or 'no test file ran in this arm'}"))
    return printable("\n".join(out) + "\n")


_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """Lone surrogates (undecodable file names in messages) as `\\udcXX`: any stdout can encode it."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
