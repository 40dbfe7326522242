"""What the rounds of `discover-globals` found, per test and per call site, and the result JSON's
`tests` and `allowlist` built from it.

A round's plugin output (`discover_plugin.py`: per test its outcome, every torch.load call with
its status, message and checkpoint scan, every torch.save) is read into typed records; the failure
messages of torch's weights-only unpickler say which global each call still needs, or why no
allowlist can help.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from transforms.core.strenum import StrEnum
from transforms.torch_load.analysis.unsafe_globals import dangerous as dangerous_names
from transforms.torch_load.analysis.unsafe_globals import normalise

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = rf"{_IDENT}(?:\.{_IDENT})*"
GLOBAL_RE = re.compile(rf"GLOBAL ({_DOTTED}) was not an allowed global")
OLD_CLASS_RE = re.compile(rf"Unsupported class ({_IDENT}(?:\.{_IDENT})+)")
BLOCKED_RE = re.compile(rf"GLOBAL ({_DOTTED}) whose module ({_DOTTED}) is blocked")
OPERAND_RE = re.compile(r"Unsupported operand (\d+)")
WEIGHTS_ONLY_MARKERS = ("Weights only load failed", "WeightsUnpickler error", "weights_only")
MAX_MESSAGE = 1000  # characters of a failing load's message kept in the result


class Outcome(StrEnum):
    """A test's outcome in one round, as the plugin reports it."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # failed outside its call phase (setup, teardown)
    SKIPPED = "skipped"
    NOT_RUN = "not-run"


class LoadStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"


# --------------------------------------------------------------------------- the messages


def parse_globals(message: str) -> list[str]:
    """Dotted globals named by a weights-only failure message (normally exactly one).

    Matches a dotted identifier after ``GLOBAL `` (never torch's own source line
    ``GLOBAL (\\S+) was not ...`` that a traceback may print), the pre-2.4
    ``Unsupported class x.y`` form, and bare builtins (``GLOBAL slice``)."""
    out: list[str] = []
    for rx in (GLOBAL_RE, OLD_CLASS_RE):
        for m in rx.finditer(message or ""):
            name = normalise(m.group(1))
            if name not in out:
                out.append(name)
    return out


def unfixable_reason(message: str) -> str | None:
    """Why no allowlist can make this failure pass, or None."""
    msg = message or ""
    if "TorchScript archive" in msg:
        return "TorchScript archive (torch.jit.save output) cannot be loaded with weights_only=True"
    m = BLOCKED_RE.search(msg)
    if m:
        return f"{normalise(m.group(1))} comes from module {m.group(2)}, which weights_only blocks"
    if "Can only SETITEM for dict" in msg:
        return "a dict subclass (e.g. collections.defaultdict) the weights-only unpickler cannot rebuild"
    m = OPERAND_RE.search(msg)
    if m:
        op = m.group(1)
        if op == "149":
            return (
                "pickled with protocol >= 4 (Unsupported operand 149, FRAME): the weights-only unpickler cannot read it"
            )
        return f"unsupported pickle opcode {op} for the weights-only unpickler"
    return None


def is_weights_only_failure(message: str) -> bool:
    return any(k in (message or "") for k in WEIGHTS_ONLY_MARKERS)


# --------------------------------------------------------------------------- the records

Site = tuple[str, int]  # (absolute file, line) of a torch.load / torch.save call


@dataclass(kw_only=True)
class CallRecord:
    """One torch.load call site of one test, over every round it ran in."""

    code: str  # the source line
    explicit_weights_only: bool | None  # the call passes weights_only= itself
    globals: list[str] = field(default_factory=list)  # the names its failures named (then its scan's)
    scan: list[str] | None = None  # what the checkpoint scan listed (torch >= 2.6), all rounds
    scan_error: str | None = None  # why the scan failed (only while no scan succeeded)
    status: LoadStatus = LoadStatus.OK  # in the last round
    unfixable: str | None = None  # why no allowlist makes it load
    message: str | None = None  # the failure message of the last round (None: it loaded)


@dataclass(kw_only=True)
class NodeRecord:
    """One test (a pytest node id), over every round it ran in."""

    initial_outcome: Outcome  # in the first round (torch's plain default)
    outcome: Outcome = Outcome.NOT_RUN  # in the last round
    rounds: int = 1  # the last round it ran in
    unfixable: str | None = None  # a failure outside any recorded call that no allowlist fixes
    unattributed: list[str] = field(default_factory=list)  # names its failures gave outside a recorded call
    calls: dict[Site, CallRecord] = field(default_factory=dict)
    saves: dict[Site, dict[str, Any]] = field(default_factory=dict)  # the plugin's last record per call site


@dataclass
class Findings:
    """Everything the rounds found, and the allowlists the next round runs with."""

    sites: dict[str, list[str]] = field(default_factory=dict)  # "abs file:line" -> names allowed there
    glob: list[str] = field(default_factory=list)  # names allowed process-wide (failures outside a call)
    tests: dict[str, NodeRecord] = field(default_factory=dict)  # by node id, in the order first seen
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)  # dotted -> {module, qualname} | {error}
    errors: list[str] = field(default_factory=list)

    def allowlists(self) -> dict[str, Any]:
        """What the plugin reads (DECOUPLE_SAFE_GLOBALS)."""
        return {"sites": self.sites, "global": self.glob}


@dataclass(frozen=True)
class _InForce:
    """The allowlists a round ran with: a name another test allowlisted for the same call site
    during this round was not in force when this test failed on it."""

    sites: dict[str, set[str]]
    glob: set[str]

    def at(self, site: str) -> set[str]:
        return self.sites.get(site, set()) | self.glob


def read_round(found: Findings, data: dict[str, Any], round_no: int) -> set[str]:
    """Fold one round's plugin output into `found`; the node ids to rerun (a new name allowed)."""
    for e in data.get("errors") or []:
        if e not in found.errors:
            found.errors.append(e)
    for name, r in (data.get("resolved") or {}).items():
        if "module" in r or name not in found.resolved:
            found.resolved[normalise(name)] = r
    rerun: set[str] = set()
    in_force = _InForce({site: set(names) for site, names in found.sites.items()}, set(found.glob))
    for nodeid, rec in (data.get("tests") or {}).items():
        if _read_test(found, nodeid, rec, round_no, in_force):
            rerun.add(nodeid)
    return rerun


def _read_test(found: Findings, nodeid: str, rec: dict[str, Any], round_no: int, in_force: _InForce) -> bool:
    """One test's record of one round; True when it should run again."""
    t = found.tests.get(nodeid)
    if t is None:
        t = found.tests[nodeid] = NodeRecord(initial_outcome=Outcome(rec.get("outcome", "not-run")))
    t.outcome = Outcome(rec.get("outcome", "not-run"))
    t.rounds = round_no
    rerun = False
    loads = rec.get("loads") or []
    for ld in loads:
        site = (ld.get("file") or "", int(ld.get("line") or 0))
        c = t.calls.get(site)
        if c is None:
            c = t.calls[site] = CallRecord(
                code=ld.get("code") or "", explicit_weights_only=ld.get("explicit_weights_only")
            )
        rerun = _read_load(found, c, site, ld, in_force) or rerun
    for sv in rec.get("saves") or []:
        t.saves[(sv.get("file") or "", int(sv.get("line") or 0))] = sv
    if t.outcome in (Outcome.FAILED, Outcome.ERROR) and not any(ld.get("status") == LoadStatus.FAILED for ld in loads):
        # a failure the wrapper did not see (load bound before the plugin, subprocess)
        text = rec.get("longrepr") or ""
        why = unfixable_reason(text) if is_weights_only_failure(text) else None
        if why:
            t.unfixable = why
        for n in parse_globals(text):
            if n not in t.unattributed:
                t.unattributed.append(n)
            if n not in found.glob:
                found.glob.append(n)
                rerun = True
    return rerun


def _read_load(found: Findings, c: CallRecord, site: Site, ld: dict[str, Any], in_force: _InForce) -> bool:
    """One torch.load call of one round; True when a name was allowed for it (rerun the test)."""
    c.status = LoadStatus(ld.get("status") or "ok")
    scan = ld.get("scan")
    if isinstance(scan, list):
        c.scan = sorted(set(c.scan or []) | {normalise(s) for s in scan})
    elif isinstance(scan, dict) and "error" in scan and c.scan is None:
        c.scan_error = scan["error"]
    msg = ld.get("message") or ""
    if c.status != LoadStatus.FAILED:
        c.message = None
        return False
    c.message = msg[:MAX_MESSAGE]
    if not is_weights_only_failure(msg):
        return False
    why = unfixable_reason(msg)
    if why:
        c.unfixable = why
        return False
    names = parse_globals(msg)
    key = f"{site[0]}:{site[1]}"
    allowed = found.sites.setdefault(key, [])
    already = in_force.at(key)
    rerun = False
    for n in names:
        if n not in c.globals:
            c.globals.append(n)
        if n in already:
            r = found.resolved.get(n) or {}
            c.unfixable = r.get("error") or (f"{n} is allowlisted but the load still fails on it")
            continue
        if n not in allowed:
            allowed.append(n)
        rerun = True
    if names and not c.unfixable and isinstance(scan, list):
        # The failure names only the first missing global; the checkpoint scan lists them
        # all: allow those too, so the rerun is the last.
        for n in sorted({normalise(x) for x in scan}):
            if n not in c.globals:
                c.globals.append(n)
            if n not in allowed and n not in already:
                allowed.append(n)
    if not names:
        c.unfixable = (
            "fails under weights_only=True without naming a global: " + msg.strip().splitlines()[-1][:200]
            if msg.strip()
            else ""
        )
    return rerun


# --------------------------------------------------------------------------- the result JSON


def rel(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def tests_json(found: Findings, cwd: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The result's `tests` (by node id) and `dangerous` (name -> reason)."""
    tests: dict[str, Any] = {}
    dangerous: dict[str, str] = {}
    for nodeid, t in found.tests.items():
        tests[nodeid] = _test_json(t, cwd)
        dangerous.update(dangerous_names(tests[nodeid]["globals"]))
    return tests, dangerous


def _test_json(t: NodeRecord, cwd: str) -> dict[str, Any]:
    calls = []
    union: list[str] = []  # every name the test needed, in discovery order
    unfixable = t.unfixable
    discrepancies: list[str] = []
    for (f, line), c in t.calls.items():
        names = list(c.globals)
        if c.scan is not None:
            extra = [s for s in c.scan if s not in names]
            missing = [n for n in names if n not in c.scan]
            if extra:
                discrepancies.append(
                    f"{rel(f, cwd)}:{line}: checkpoint scan lists {', '.join(extra)} that no failure named"
                )
            if missing:
                discrepancies.append(
                    f"{rel(f, cwd)}:{line}: failures named {', '.join(missing)} that the checkpoint scan does not list"
                )
        for n in names + [s for s in (c.scan or []) if s not in names]:
            if n not in union:
                union.append(n)
        unfixable = unfixable or c.unfixable
        calls.append(_call_json(c, rel(f, cwd), line, names))
    for n in t.unattributed:
        if n not in union:
            union.append(n)
    saves = []
    saved: set[str] = set()
    for (f, line), sv in t.saves.items():
        g = sv.get("globals")
        saves.append(
            {
                "file": rel(f, cwd),
                "line": line,
                "code": sv.get("code") or "",
                "globals": [normalise(x) for x in g] if isinstance(g, list) else None,
            }
        )
        if isinstance(g, list):
            saved |= {normalise(x) for x in g}
    loaded_scan = {s for c in t.calls.values() for s in c.scan or []}
    not_loaded = sorted(saved - set(union) - loaded_scan)
    if not_loaded and calls:
        discrepancies.append(
            f"checkpoints written by the test need {', '.join(not_loaded)}, which no load "
            "reported (saved but not loaded back, or loaded through another path)"
        )
    return {
        "outcome": t.outcome,
        "initial_outcome": t.initial_outcome,
        "rounds": t.rounds,
        "globals": union,
        "unfixable": unfixable,
        "calls": calls,
        "saves": saves,
        "discrepancies": discrepancies,
    }


def _call_json(c: CallRecord, file: str, line: int, names: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "file": file,
        "line": line,
        "code": c.code,
        "globals": names,
        "scan": c.scan,
        "status": c.status,
        "unfixable": c.unfixable,
        "explicit_weights_only": c.explicit_weights_only,
    }
    if c.scan_error:
        entry["scan_error"] = c.scan_error
    if c.status == LoadStatus.FAILED and c.message and not c.unfixable:
        entry["message"] = c.message
    return entry


def allowlist_json(found: Findings, cwd: str) -> dict[str, list[str]]:
    """Per call site ("file:line", relative to `cwd`) the names that made it load, and "*" for
    the process-wide ones. A call that still fails for a reason no allowlist fixes: the names
    found on the way are not enough, so they are not offered as its allowlist (the call entry
    keeps them, with `unfixable`)."""
    unfixable_sites = {f"{f}:{line}" for t in found.tests.values() for (f, line), c in t.calls.items() if c.unfixable}
    out = {
        f"{rel(k.rsplit(':', 1)[0], cwd)}:{k.rsplit(':', 1)[1]}": v
        for k, v in found.sites.items()
        if v and k not in unfixable_sites
    }
    if found.glob:
        out["*"] = list(found.glob)
    return out
