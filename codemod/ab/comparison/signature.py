"""Error signatures: the versioned message normaliser and the exact/loose signature of an outcome.

Pure functions over the result model: no subprocesses, no files.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Sequence

from codemod.ab.result.model import ArmResult, Outcome

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
