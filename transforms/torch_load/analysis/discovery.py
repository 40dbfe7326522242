"""Index over the discover-globals JSON: which records belong to which call site."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from transforms.core.strenum import StrEnum
from transforms.torch_load.analysis.unsafe_globals import normalise


class EvidenceSource(StrEnum):
    CALL = "call"  # records of the call site itself
    TEST = "test"  # the records of the tests that run it (their calls were not attributed)


@dataclass(kw_only=True)
class Evidence:
    """What discovery knows about one call site."""

    globals: list[str] = field(default_factory=list)
    unfixable: str | None = None
    ok: bool = False  # the load succeeded in the final discovery run
    source: EvidenceSource = EvidenceSource.CALL
    where: str = ""  # file:line or test id, for messages


def norm_path(p: str) -> list[str]:
    p = p.replace("\\", "/")
    parts = [x for x in p.split("/") if x not in ("", ".")]
    return parts


def same_file(a: str, b: str) -> bool:
    pa, pb = norm_path(a), norm_path(b)
    if not pa or not pb:
        return False
    n = min(len(pa), len(pb))
    return pa[-n:] == pb[-n:]


@dataclass(kw_only=True)
class CallRecord:
    """One call site as discovery recorded it (the records of every test that ran it merged)."""

    file: str
    line: int
    code: str
    globals: list[str]
    unfixable: str | None
    ok: bool
    nodeids: list[str] = field(default_factory=list)  # tests that ran this call


class Discovery:
    """Index over the discover-globals JSON (schema_version 1)."""

    def __init__(self, data: Mapping[str, Any]):
        self.data = data
        self.resolved: dict[str, tuple[str, str]] = {}
        self.aliases: dict[str, list[str]] = {}  # dotted -> re-exports (longest first)
        for name, r in (data.get("resolved") or {}).items():
            if isinstance(r, Mapping) and r.get("module") and r.get("qualname"):
                self.resolved[normalise(name)] = (r["module"], r["qualname"])
                self.aliases[normalise(name)] = [a for a in r.get("aliases") or [] if isinstance(a, str) and "." in a]
        merged: dict[tuple[str, int, str], CallRecord] = {}
        self.tests: list[tuple[str, dict[str, Any]]] = []
        for nodeid, t in (data.get("tests") or {}).items():
            t = dict(t or {})
            self.tests.append((nodeid, t))
            for c in t.get("calls") or []:
                key = (c.get("file", ""), int(c.get("line", 0)), (c.get("code") or "").strip())
                names = [normalise(g) for g in (c.get("globals") or [])]
                for g in c.get("scan") or []:
                    if normalise(g) not in names:
                        names.append(normalise(g))
                ok = c.get("status", "ok" if not c.get("unfixable") else "failed") == "ok"
                rec = merged.get(key)
                if rec is None:
                    merged[key] = CallRecord(
                        file=key[0],
                        line=key[1],
                        code=key[2],
                        globals=names,
                        unfixable=c.get("unfixable"),
                        ok=ok,
                        nodeids=[nodeid],
                    )
                else:
                    if nodeid not in rec.nodeids:
                        rec.nodeids.append(nodeid)
                    rec.globals += [g for g in names if g not in rec.globals]
                    rec.unfixable = rec.unfixable or c.get("unfixable")
                    rec.ok = rec.ok and ok
        self.calls = list(merged.values())

    # -- lookups
    def calls_for(self, path: str | None) -> list[CallRecord]:
        if path is None:
            return list(self.calls)
        return [c for c in self.calls if same_file(c.file, path)]

    def tests_for(self, path: str | None) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for nodeid, t in self.tests:
            f = nodeid.split("::", 1)[0]
            if path is None or same_file(f, path):
                out.append((nodeid, t))
        return out


def runs_function(nodeid: str, func: str | None, cls: str | None) -> bool:
    """Does pytest id `nodeid` run function `func` (of class `cls`)?  Prefix match so
    PyTorch's instantiated device tests (TestFooCPU::test_bar_cpu) still match."""
    if not func:
        return False
    parts = nodeid.split("::")[1:]
    if not parts:
        return False
    name = parts[-1].split("[", 1)[0]
    if not (name == func or name.startswith(func + "_")):
        return False
    if cls is None:
        return True
    return any(p == cls or p.startswith(cls) for p in parts[:-1])
