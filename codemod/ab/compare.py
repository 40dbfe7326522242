"""Error signatures, per-test categories, verdicts and shard merging.

Pure functions over the result model: no subprocesses, no files.
"""

from __future__ import annotations

import copy
import os
import re
import tempfile
from collections.abc import Iterable, Sequence

from codemod.ab.model import (
    CATEGORIES,
    EXIT_CODES,
    INCONCLUSIVE_CATEGORY,
    REGRESSING,
    ABResult,
    ArmResult,
    DiagnosticSummary,
    Outcome,
    TestComparison,
)
from codemod.ab.notices import Notice

# Bump whenever the normalisation below changes what compares equal.
NORMALISER_VERSION = "ab-sig-2"  # 2: per-arm TMPDIR paths masked as <tmp>

SIGNATURE_CAP = 1024
_MESSAGE_LINES = 3

# ---------------------------------------------------------------------------
# normaliser

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_REPRO = re.compile(r"To execute this test, run the following from the base repo dir:.*", re.S)
_REPRO_SUPPRESS = re.compile(r"This message can be suppressed by setting PYTORCH_PRINT_REPRO_ON_FAILURE=0\.?")
_SITE = re.compile(r"""(?:/[^\s'"():,\[\]<>]*)?/(?:site|dist)-packages/""")
# the per-arm TMPDIR (<work>/arms/<arm>/tmp): masked whole, before the roots
_ARM_TMP = re.compile(r"""(?:/[^\s'"():,\[\]<>]*)?/decouple-ab-[^/\s'"]*/arms/[^/\s'"]+/tmp(?:/[^\s'"():,\[\]<>]*)?""")
_TMP_GENERIC = re.compile(r"""(?:/private)?(?:/tmp|/var/tmp|/var/folders)/[^\s'"():,\[\]<>]*""")
_LINE_WORD = re.compile(r"\bline \d+")
_PY_LINE = re.compile(r"(\.py[cw]?)(?::\d+)+")
_PY_PAREN = re.compile(r"(\.py)\(\d+\)")
_COLON_NUM = re.compile(r":\d+:")
_HEX_ADDR = re.compile(r"0x[0-9a-fA-F]+")
_LONG_HEX = re.compile(r"\b[0-9a-fA-F]{16,}\b")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_PID = re.compile(r"\b(pid|PID|Pid|process|Process|PROCESS)(\s*[=:#]?\s*)\d+")
_PORT = re.compile(r"\b(localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\])\s*:\s*\d+")
_PORT_WORD = re.compile(r"\b(port)(\s*[=:]?\s*)\d+", re.I)
_ISO_TIME = re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?")
_CLOCK = re.compile(r"\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|us|µs|ns|secs?|seconds?|minutes?)\b|\b\d+\.\d+\s?s\b")
_ALLOC = re.compile(r"Tried to allocate \d+(?:\.\d+)?\s?[KMGTP]?i?B")
_MEM_SIZE = re.compile(r"\b\d+(?:\.\d+)?\s?[KMGTP]iB\b")
_SPACES = re.compile(r"[ \t\f\v]+")
# loose strength: every number and every quoted string
_QUOTED = re.compile(r"""'[^'\n]*'|"[^"\n]*"|`[^`\n]*`""")
_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# lines worth keeping even past the first few (the missing global of a
# weights_only failure is on the 4th line of torch's message)
_KEY_LINE = re.compile(r"GLOBAL [A-Za-z_][\w.]*|Unsupported (?:global|class|operand)|WeightsUnpickler error")


def _root_variants(roots: Iterable[str]) -> list[str]:
    out = set()
    for root in roots:
        if not root:
            continue
        root = root.rstrip("/") or "/"
        if root == "/":
            continue
        out.add(root)
        try:
            out.add(os.path.realpath(root))
        except OSError:
            pass
    return sorted(out, key=len, reverse=True)


def normalise_text(text: str, roots: Sequence[str] = ()) -> str:
    """Normalise a message for the exact signature (see NORMALISER_VERSION)."""
    text = _ANSI.sub("", text or "")
    text = _REPRO.sub("", text)
    text = _REPRO_SUPPRESS.sub("", text)
    text = _ARM_TMP.sub("<tmp>", text)
    for root in _root_variants(roots):
        text = text.replace(root, "<root>")
    text = _SITE.sub("<site>/", text)
    tmp = tempfile.gettempdir().rstrip("/")
    if tmp and tmp != "/":
        text = re.sub(re.escape(tmp) + r"""/[^\s'"():,\[\]<>]*""", "<tmp>", text)
    text = _TMP_GENERIC.sub("<tmp>", text)
    text = _LINE_WORD.sub("line N", text)
    text = _PY_LINE.sub(r"\1:N", text)
    text = _PY_PAREN.sub(r"\1(N)", text)
    text = _COLON_NUM.sub(":N:", text)
    text = _UUID.sub("<uuid>", text)
    text = _HEX_ADDR.sub("0x?", text)
    text = _LONG_HEX.sub("<hex>", text)
    text = _PID.sub(r"\1\2<pid>", text)
    text = _PORT.sub(r"\1:<port>", text)
    text = _PORT_WORD.sub(r"\1\2<port>", text)
    text = _ISO_TIME.sub("<time>", text)
    text = _CLOCK.sub("<time>", text)
    text = _ALLOC.sub("Tried to allocate <N>", text)
    text = _DURATION.sub("<dur>", text)
    text = _MEM_SIZE.sub("<size>", text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def loosen(text: str) -> str:
    """The loose strength: also masks quoted strings and numbers."""
    text = _QUOTED.sub("'?'", text)
    return _NUMBER.sub("N", text)


def message_key(text: str, roots: Sequence[str] = ()) -> str:
    """First lines of a normalised message, plus key lines, capped."""
    lines = normalise_text(text, roots).splitlines()
    keep = lines[:_MESSAGE_LINES]
    for line in lines[_MESSAGE_LINES:]:
        m = _KEY_LINE.search(line)
        if m:
            keep.append(line)
    return " | ".join(keep)[:SIGNATURE_CAP]


def _cap(text: str) -> str:
    return text if len(text) <= SIGNATURE_CAP else text[:SIGNATURE_CAP]


def _exc_part(o: Outcome) -> str:
    if not o.exc_type:
        return ""
    if o.exc_chain:
        return o.exc_type + " <- " + " <- ".join(o.exc_chain)
    return o.exc_type


def _first_text_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def signatures(o: Outcome, roots: Sequence[str] = ()) -> tuple[str | None, str | None]:
    """(exact, loose) signature of one outcome; (None, None) when it passed."""
    if o.outcome in ("passed", "skipped", "not-run", "xpassed"):
        return None, None
    if o.outcome == "crashed":
        sig = f"{o.phase} crashed {o.signal or '?'}"
        return sig, sig
    if o.outcome == "timeout":
        sig = f"{o.phase} timeout"
        return sig, sig
    failing_subs = [s for s in o.subtests if s.outcome in ("failed", "error")]
    if failing_subs and not o.exc_type:
        parts = []
        for s in failing_subs:
            exact, _ = signatures(s, roots)
            desc = s.nodeid.split(" ", 1)[1] if " " in s.nodeid else "<subtest>"
            parts.append(f"{desc}: {exact}")
        body = "subtests[" + "; ".join(sorted(parts)) + "]"
        head = f"{o.phase} {o.outcome} "
        exact = _cap(head + body)
        loose = _cap(head + loosen(body))
        return exact, loose
    if o.exc_type:
        msg = message_key(o.message, roots)
    else:
        msg = message_key(_first_text_line(o.traceback) or o.message, roots)
    head = f"{o.phase} {o.outcome} {_exc_part(o)}".rstrip()
    exact = _cap(f"{head}: {msg}" if msg else head)
    loose = _cap(f"{head}: {loosen(msg)}" if msg else head)
    return exact, loose


def assign_signatures(arm: ArmResult, roots: Sequence[str]) -> None:
    """Fill Outcome.signature / loose_signature for every outcome of an arm."""
    for o in list(arm.outcomes.values()) + list(arm.collection_errors.values()):
        for s in o.subtests:
            s.signature, s.loose_signature = signatures(s, roots)
        o.signature, o.loose_signature = signatures(o, roots)


# ---------------------------------------------------------------------------
# categories

PASS, FAIL, SKIP, XFAIL, XPASS, CRASH, TIMEOUT, NOTRUN = (
    "pass",
    "fail",
    "skip",
    "xfail",
    "xpass",
    "crash",
    "timeout",
    "notrun",
)
_KIND = {
    "passed": PASS,
    "failed": FAIL,
    "error": FAIL,
    "skipped": SKIP,
    "xfailed": XFAIL,
    "xpassed": XPASS,
    "crashed": CRASH,
    "timeout": TIMEOUT,
    "not-run": NOTRUN,
}


def kind(o: Outcome | None) -> str | None:
    return None if o is None else _KIND.get(o.outcome, FAIL)


def _failure_match(a: Outcome, b: Outcome) -> str:
    if a.signature is not None and a.signature == b.signature:
        return "pre-existing"
    if a.loose_signature is not None and a.loose_signature == b.loose_signature:
        return "similar-failure"
    return "different-failure"


def categorize(a: Outcome | None, b: Outcome | None) -> tuple[str, str]:
    """Category of one test and an optional note."""
    cat, note = _categorize(a, b)
    for side, o in (("A", a), ("B", b)):
        if o is not None and o.phase == "collect" and o.outcome == "skipped" and not note:
            note = f"module skipped in {side}: {o.message}" if o.message else f"module skipped in {side}"
    return cat, note


def _categorize(a: Outcome | None, b: Outcome | None) -> tuple[str, str]:
    ka, kb = kind(a), kind(b)
    if a is None and b is None:
        return "same-skip", "absent from both arms"
    if a is None:
        note = "fails in B" if kb in (FAIL, CRASH, TIMEOUT) else ""
        return "added-in-b", note
    if b is None:
        return "missing-in-b", ""
    if kb == CRASH:
        return (
            ("pre-existing", "crashes in both")
            if ka == CRASH and a.signal == b.signal
            else (
                ("different-failure", f"crashes in both ({a.signal} vs {b.signal})") if ka == CRASH else ("crash", "")
            )
        )
    if kb == TIMEOUT:
        return ("pre-existing", "times out in both") if ka == TIMEOUT else ("timeout", "")
    if ka == PASS:
        if kb == PASS:
            return "same-pass", ""
        if kb == FAIL:
            return "new-failure", ""
        if kb == XFAIL:
            return "new-failure", "marked as an expected failure in B"
        if kb == XPASS:
            return "same-pass", "passes in both (marked xfail in B)"
        return "no-longer-run", ""
    if ka == FAIL:
        if kb == PASS:
            return "fixed", ""
        if kb == FAIL:
            return _failure_match(a, b), ""
        if kb == XFAIL:
            return "different-failure", "still fails, now marked as an expected failure in B"
        if kb == XPASS:
            return "fixed", "passes in B (marked xfail)"
        return "no-longer-run", ""
    if ka == SKIP:
        if kb == SKIP:
            return "same-skip", ""
        if kb == NOTRUN:
            return INCONCLUSIVE_CATEGORY, "skipped in A, never run in B (the file was stopped before it)"
        if kb == FAIL:
            return "new-failure", "skipped in A"
        return "newly-run", ""
    if ka == XFAIL:
        if kb == XFAIL:
            return "same-pass", "expected failure in both"
        if kb == XPASS:
            return "xfail-to-xpass", ""
        if kb == PASS:
            return "fixed", "expected failure in A, passes in B"
        if kb == FAIL:
            # the expected-failure marking is gone: the suite now fails
            # (consistent with passed -> xfailed and xpassed -> failed)
            return "new-failure", "expected failure in A (xfail), fails in B"
        return "no-longer-run", ""
    if ka == XPASS:
        if kb == XFAIL:
            return "xpass-to-xfail", ""
        if kb in (XPASS, PASS):
            return "same-pass", ""
        if kb == FAIL:
            return "new-failure", ""
        return "no-longer-run", ""
    if ka in (CRASH, TIMEOUT):
        if kb in (PASS, XPASS, XFAIL):
            return "fixed", f"{a.outcome} in A"
        if kb == FAIL:
            return "different-failure", f"{a.outcome} in A"
        return "no-longer-run", f"{a.outcome} in A"
    # ka == NOTRUN
    if kb == NOTRUN:
        return INCONCLUSIVE_CATEGORY, "run in neither arm (the file was stopped before it)"
    if kb == FAIL:
        return "new-failure", "not run in A"
    if kb == SKIP:
        return "same-skip", "not run in A"
    return "newly-run", "not run in A"


# categories whose tests get confirmed by alternating reruns
DISCORDANT = frozenset(
    {
        "new-failure",
        "fixed",
        "crash",
        "timeout",
        "no-longer-run",
        "newly-run",
        "xfail-to-xpass",
        "xpass-to-xfail",
        "different-failure",
    }
)


# ---------------------------------------------------------------------------
# --map

_DEVICE_SUFFIXES = ("CPU", "CUDA", "MPS", "XPU", "META", "LAZY", "HPU", "NPU", "MTIA", "PRIVATEUSE1")


def parse_mapping(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--map expects OLD=NEW, got {item!r}")
        old, new = item.split("=", 1)
        old, new = old.strip(), new.strip()
        if not old or not new:
            raise ValueError(f"--map expects OLD=NEW, got {item!r}")
        out[old] = new
    return out


def read_map_file(path: str) -> dict[str, str]:
    """The `map` entries of a test-map JSON (`decouple apply --restructure ... --map-out`)."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise ValueError(f"cannot read --map-file {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"--map-file {path} is not JSON: {e}") from None
    if not isinstance(data, dict) or data.get("schema_version") != 1 or not isinstance(data.get("map"), list):
        raise ValueError(f"--map-file {path} is not a test map (schema_version 1 with a `map` list)")
    out = {}
    for entry in data["map"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("old"), str) and isinstance(entry.get("new"), str)):
            raise ValueError(f"--map-file {path}: every `map` entry needs string `old` and `new`")
        if entry["old"].startswith("re:"):
            try:
                re.compile(entry["old"][3:])
            except re.error as e:
                raise ValueError(f"--map-file {path}: bad regex {entry['old']!r}: {e}") from None
        out[entry["old"]] = entry["new"]
    return out


def map_nodeid(nodeid: str, mapping: dict[str, str]) -> str | None:
    """The B-side node id of an A-side node id under --map, or None. An OLD of the form
    `re:REGEX` must match the whole node id and NEW is its expansion template (generated
    names such as TestFooCPU::test_x_float32_cpu); an empty expansion means "not generated
    in B" (see compare_arms)."""
    for old, new in mapping.items():
        if old.startswith("re:"):
            match = re.fullmatch(old[3:], nodeid)
            if match:
                return match.expand(new)
            continue
        if "::" in old or old.endswith(".py"):
            if nodeid == old:
                return new
            for sep in ("::", "["):
                if nodeid.startswith(old + sep):
                    return new + nodeid[len(old) :]
            continue
        parts = nodeid.split("::")
        changed = False
        for i, part in enumerate(parts[1:], start=1):
            name, bracket, rest = part.partition("[")
            if name == old:
                parts[i] = new + bracket + rest
                changed = True
            elif name.startswith(old) and name[len(old) :].upper() in _DEVICE_SUFFIXES:
                parts[i] = new + name[len(old) :] + bracket + rest
                changed = True
        if changed:
            return "::".join(parts)
    return None


# ---------------------------------------------------------------------------
# collection errors -> per-test outcomes


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def effective_outcomes(arm: ArmResult, other: ArmResult) -> dict[str, Outcome]:
    """Outcomes of `arm`, where a file that failed to collect gives each test
    the other arm knows in that file the collection error as its outcome; a
    file-level entry (node id = the collector) is kept when no test of the
    other arm stands for it."""
    out = dict(arm.outcomes)
    for key, err in list(arm.collection_errors.items()) + list(getattr(arm, "collection_skips", {}).items()):
        f = _file_of(key)
        covered = False
        for nodeid in other.outcomes:
            if (
                nodeid == key or nodeid.startswith(key + "::") or (key == f and _file_of(nodeid) == f)
            ) and nodeid not in out:
                o = copy.deepcopy(err)
                o.nodeid = nodeid
                out[nodeid] = o
                covered = True
        if not covered or key in other.collection_errors or key in getattr(other, "collection_skips", {}):
            out.setdefault(key, err)
    return out


def compare_arms(a: ArmResult, b: ArmResult, mapping: dict[str, str] | None = None) -> list[TestComparison]:
    mapping = mapping or {}
    oa = effective_outcomes(a, b)
    ob = effective_outcomes(b, a)
    # A node id -> B node id
    pairs: dict[str, str] = {}
    mapped_b: dict[str, str] = {}
    if mapping:
        for nodeid in oa:
            new = map_nodeid(nodeid, mapping)
            if new is not None and new != nodeid:
                pairs[nodeid] = new
                mapped_b[new] = nodeid
    rows: list[TestComparison] = []
    seen_b = set()
    for nodeid in sorted(oa):
        if pairs.get(nodeid) == "" and kind(oa[nodeid]) == SKIP:
            # A restructuring map retired it: its guard skipped it in A, B no longer generates it.
            rows.append(
                TestComparison(
                    nodeid=nodeid,
                    category="same-skip",
                    a=oa[nodeid],
                    b=None,
                    note="skipped in A; not generated in B (its class moved, see --map)",
                )
            )
            continue
        bid = pairs.get(nodeid, nodeid) or nodeid
        bo = ob.get(bid)
        seen_b.add(bid)
        cat, note = categorize(oa[nodeid], bo)
        row = TestComparison(nodeid=bid, category=cat, a=oa[nodeid], b=bo, note=note)
        if bid != nodeid:
            row.mapped_from = nodeid
            row.note = f"renamed from {nodeid} via --map" + (f"; {note}" if note else "")
        rows.append(row)
    for nodeid in sorted(ob):
        if nodeid in seen_b:
            continue
        cat, note = categorize(None, ob[nodeid])
        rows.append(TestComparison(nodeid=nodeid, category=cat, a=None, b=ob[nodeid], note=note))
    order = {c: i for i, c in enumerate(CATEGORIES)}
    rows.sort(key=lambda r: (order.get(r.category, 99), r.nodeid))
    return rows


def count(rows: Iterable[TestComparison]) -> dict[str, int]:
    counts = {c: 0 for c in CATEGORIES}
    for r in rows:
        counts[r.category] = counts.get(r.category, 0) + 1
    return {c: n for c, n in counts.items() if n}


# ---------------------------------------------------------------------------
# flaky confirmation


_NO_EVIDENCE = ("not-run",)


def _kinds(seq: Iterable[str]) -> list[str]:
    return [_KIND.get(x, x) for x in seq if x not in _NO_EVIDENCE]


def rerun_state(row: TestComparison) -> str:
    """What the alone reruns of a discordant row say:

    ``none``          no reruns asked for
    ``unconfirmed``   an arm has no usable rerun (every rerun was not run)
    ``flaky``         the reruns of one arm disagree with each other, or each
                      arm alone gives the other arm's in-file result (alternates)
    ``confirmed``     each arm alone repeats its in-file result (or the arms
                      still differ alone)
    ``order-suspect`` alone the arms agree, in the file they differed: an
                      order-dependent difference, or a flaky one (a rerun of
                      the file tells them apart)
    """
    if row.a is None or row.b is None or (not row.a.reruns and not row.b.reruns):
        return "none"
    ra, rb = _kinds(row.a.reruns), _kinds(row.b.reruns)
    if not ra or not rb:
        return "unconfirmed"
    if len(set(ra)) > 1 or len(set(rb)) > 1:
        return "flaky"
    ka0, kb0 = kind(row.a), kind(row.b)
    xa, xb = ra[0], rb[0]
    if xa == ka0 and xb == kb0:
        return "confirmed"
    if xa == xb:
        return "order-suspect"
    if (xa, xb) == (kb0, ka0):
        return "flaky"
    return "confirmed"


def _add_note(row: TestComparison, text: str) -> None:
    row.note = f"{row.note}; {text}" if row.note else text


def settle_flaky(row: TestComparison) -> None:
    """Settle a discordant row after its confirmation reruns.

    Flaky = the reruns of the same arm disagree (or alternate with the
    in-file results).  Reruns that did not run are no evidence: they are
    ignored, and a row left without evidence keeps its category, noted as
    unconfirmed.  When each arm is self-consistent alone but the in-file
    results differ, the difference is order-dependent (it needs the rest of
    the file) and keeps its category, unless a rerun of the file does not
    reproduce it (then it is flaky).
    """
    if row.a is None or row.b is None:
        return
    dropped = sum(1 for x in row.a.reruns + row.b.reruns if x in _NO_EVIDENCE)
    state = rerun_state(row)
    seq_a = [row.a.outcome] + list(row.a.reruns)
    seq_b = [row.b.outcome] + list(row.b.reruns)
    if dropped:
        _add_note(row, f"{dropped} confirmation rerun(s) did not run (ignored)")
    if state == "unconfirmed":
        _add_note(row, "unconfirmed: the test could not be rerun alone")
        return
    if state == "order-suspect":
        sa, sb = _kinds(row.a.suite_reruns), _kinds(row.b.suite_reruns)
        if sa and sb and (set(sa) != {kind(row.a)} or set(sb) != {kind(row.b)}):
            state = "flaky"
            seq_a += [f"{x} (in file)" for x in row.a.suite_reruns]
            seq_b += [f"{x} (in file)" for x in row.b.suite_reruns]
        else:
            alone = next(x for x in reversed(row.a.reruns) if x not in _NO_EVIDENCE)
            failing_b = kind(row.b) in (FAIL, CRASH, TIMEOUT)
            head = (
                "order-dependent: fails only when run with the rest of the file in B"
                if failing_b
                else f"order-dependent: {row.a.outcome} in A and {row.b.outcome} in B only when run with "
                "the rest of the file"
            )
            _add_note(
                row,
                f"{head} (alone: {alone} in both arms" + ("; reproduced by a rerun of the file)" if sa and sb else ")"),
            )
            return
    if state == "flaky":
        row.note = f"was {row.category}; A: {', '.join(seq_a)}; B: {', '.join(seq_b)}" + (
            f"; {row.note}" if row.note else ""
        )
        row.category = "flaky"


# ---------------------------------------------------------------------------
# verdict


def verdict(result: ABResult) -> tuple[str, str]:
    a, b = result.arm("A"), result.arm("B")
    if a is None or not a.ran:
        return "INCONCLUSIVE", "arm A could not run" + (f": {a.error}" if a is not None and a.error else "")
    if b is None or not b.ran:
        return "INCONCLUSIVE", "arm B could not run" + (f": {b.error}" if b is not None and b.error else "")
    if not a.outcomes and not b.outcomes and not a.collection_errors and not b.collection_errors:
        return "INCONCLUSIVE", "no test was collected in either arm"
    if not a.outcomes and not b.outcomes:
        return "INCONCLUSIVE", "no test was collected in either arm (collection errors only)"
    bad = {c: n for c, n in result.counts.items() if c in REGRESSING and n}
    flaky = [t.nodeid for t in result.tests if t.category == "flaky"]
    flaky_text = (
        f"; {len(flaky) or result.counts.get('flaky', 0)} flaky (inconsistent on reruns, not counted "
        f"as a regression): " + ", ".join(flaky[:3]) + (", ..." if len(flaky) > 3 else "")
        if (flaky or result.counts.get("flaky"))
        else ""
    )
    if bad:
        parts = [f"{n} {c}" for c, n in sorted(bad.items(), key=lambda kv: CATEGORIES.index(kv[0]))]
        return "REGRESSION", ", ".join(parts)
    unknown = [t.nodeid for t in result.tests if t.category == INCONCLUSIVE_CATEGORY]
    if unknown or result.counts.get(INCONCLUSIVE_CATEGORY):
        n = len(unknown) or result.counts.get(INCONCLUSIVE_CATEGORY, 0)
        return "INCONCLUSIVE", (
            f"{n} test{'s' if n != 1 else ''} ran in neither arm (the file was stopped "
            f"before {'them' if n != 1 else 'it'}: -x/--maxfail, a crash or --file-timeout): "
            + ", ".join(unknown[:3])
            + (", ..." if len(unknown) > 3 else "")
            + flaky_text
        )
    fails = sum(result.counts.get(c, 0) for c in ("pre-existing", "similar-failure", "different-failure"))
    reason = "no test regressed"
    if fails:
        reason += f" ({fails} failing in both arms)"
    reason += flaky_text
    return "SAFE", reason


def exit_code(v: str) -> int:
    return EXIT_CODES.get(v, 2)


# ---------------------------------------------------------------------------
# diagnostics


def _fmt_vars(variables: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in variables.items())


def diagnose(
    name: str, based_on: str, variables: dict[str, str], base: ArmResult, diag: ArmResult
) -> DiagnosticSummary:
    ob = effective_outcomes(base, diag)
    od = effective_outcomes(diag, base)
    changed: dict[str, list[str]] = {}
    for nodeid in sorted(set(ob) | set(od)):
        x = ob.get(nodeid)
        y = od.get(nodeid)
        xo = x.outcome if x else "not-run"
        yo = y.outcome if y else "not-run"
        differs = (kind(x) != kind(y)) if (x is not None and y is not None) else (xo != yo)
        if differs:
            changed[nodeid] = [xo, yo]
    fail_to_pass = sum(
        1 for v in changed.values() if _KIND.get(v[0]) in (FAIL, CRASH, TIMEOUT) and _KIND.get(v[1]) == PASS
    )
    pass_to_fail = sum(
        1 for v in changed.values() if _KIND.get(v[0]) == PASS and _KIND.get(v[1]) in (FAIL, CRASH, TIMEOUT)
    )
    other = len(changed) - fail_to_pass - pass_to_fail
    vtext = _fmt_vars(variables) or "no extra variables"
    parts = []
    if fail_to_pass:
        parts.append(
            f"{fail_to_pass} test{'s' if fail_to_pass != 1 else ''} failing in {based_on} "
            f"pass{'es' if fail_to_pass == 1 else ''} with {vtext}"
        )
    if pass_to_fail:
        parts.append(
            f"{pass_to_fail} test{'s' if pass_to_fail != 1 else ''} passing in {based_on} "
            f"fail{'s' if pass_to_fail == 1 else ''} with {vtext}"
        )
    if other:
        parts.append(f"{other} other test{'s' if other != 1 else ''} change outcome")
    if not diag.ran:
        statement = f"diagnostic arm {name} could not run: {diag.error}"
    elif parts:
        statement = "; ".join(parts) + "."
    else:
        statement = f"No test changes outcome with {vtext} (relative to {based_on})."
    return DiagnosticSummary(
        name=name, based_on=based_on, variables=dict(variables), changed=changed, statement=statement
    )


# ---------------------------------------------------------------------------
# merge shards


def _merge_arm(into: ArmResult, other: ArmResult) -> None:
    into.outcomes.update(other.outcomes)
    into.collection_errors.update(other.collection_errors)
    into.collection_skips.update(other.collection_skips)
    into.crashes.extend(c for c in other.crashes if c not in into.crashes)
    into.ran = into.ran and other.ran
    if other.error:
        into.error = "; ".join(x for x in (into.error, other.error) if x)
    into.duration += other.duration
    if other.command and other.command not in into.command.split("\n"):
        into.command = "\n".join(x for x in (into.command, other.command) if x)


def merge(results: Sequence[ABResult]) -> ABResult:
    """Combine shard results into one result (verdict recomputed)."""
    if not results:
        raise ValueError("nothing to merge")
    out = copy.deepcopy(results[0])
    warnings = list(out.warnings)
    shards = [r.shard for r in results if r.shard]
    for r in results[1:]:
        r = copy.deepcopy(r)
        if r.normaliser_version != out.normaliser_version:
            versions = {"version": out.normaliser_version, "other_version": r.normaliser_version}
            warnings.append(Notice("merge.normaliser-versions-differ", versions))
        if (
            r.environment.torch_version != out.environment.torch_version
            or r.environment.python != out.environment.python
        ):
            environments = {
                "python": out.environment.python,
                "other_python": r.environment.python,
                "torch": str(out.environment.torch_version),
                "other_torch": str(r.environment.torch_version),
            }
            warnings.append(Notice("merge.environments-differ", environments))
        if r.base_ref != out.base_ref:
            warnings.append(Notice("merge.bases-differ", {"base": str(out.base_ref), "other_base": str(r.base_ref)}))
        out.paths.extend(p for p in r.paths if p not in out.paths)
        out.duration = max(out.duration, r.duration)
        out.started = min(x for x in (out.started, r.started) if x) if (out.started or r.started) else ""
        for arm in r.arms:
            mine = out.arm(arm.name)
            if mine is None:
                out.arms.append(arm)
            else:
                _merge_arm(mine, arm)
        known = {t.nodeid for t in out.tests}
        out.tests.extend(t for t in r.tests if t.nodeid not in known)
        for k in r.env_unset:
            if k not in out.env_unset:
                out.env_unset.append(k)
        for k, v in r.env_set.items():
            out.env_set.setdefault(k, v)
        out.mapping.update(r.mapping)
        for d in r.diagnostics:
            known_diag = next((x for x in out.diagnostics if x.name == d.name), None)
            if known_diag is None:
                out.diagnostics.append(d)
            else:
                known_diag.changed.update(d.changed)
        for w in r.warnings:
            if w not in warnings:
                warnings.append(w)
    order = {c: i for i, c in enumerate(CATEGORIES)}
    out.tests.sort(key=lambda t: (order.get(t.category, 99), t.nodeid))
    out.counts = count(out.tests)
    # recompute diagnostic statements from the merged arms
    for d in out.diagnostics:
        base, diag = out.arm(d.based_on), out.arm(d.name)
        if base is not None and diag is not None:
            fresh = diagnose(d.name, d.based_on, d.variables, base, diag)
            d.changed, d.statement = fresh.changed, fresh.statement
    out.shard = None
    if shards:
        warnings.append(Notice("merge.merged-shards", {"shards": ", ".join(shards)}))
        n = {s.split("/")[1] for s in shards if "/" in s}
        if len(n) == 1:
            total = int(next(iter(n)))
            have = {int(s.split("/")[0]) for s in shards}
            missing = sorted(set(range(1, total + 1)) - have)
            if missing:
                missing_shards = ", ".join(f"{i}/{total}" for i in missing)
                warnings.append(Notice("merge.missing-shards", {"shards": missing_shards}))
    out.warnings = warnings
    out.verdict, out.verdict_reason = verdict(out)
    if any(w.code == "merge.missing-shards" for w in warnings) and out.verdict == "SAFE":
        out.verdict_reason += " (incomplete: some shards are missing)"
    return out
