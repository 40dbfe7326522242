"""What a restructuring step produces: the new text, the test moves, and the node-id map.

A `Move` records where one test function went (class before -> class after) and its
device set before and after.  From moves come the concrete node ids (`old_ids`,
`new_ids`: `file.py::TestFooCPU::test_x_cpu` for a device-instantiated class) and the
regex entries of the A/B map (`map_entries`), which also match the generated names of
parametrized and dtype tests (`test_x_float32_cpu`...) and devices this machine lacks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, asdict, dataclass, field
from typing import Any

from transforms.core.base import Finding
from transforms.diagnosis.devices import GENERIC, OTHER


@dataclass(frozen=True, kw_only=True)
class Move:
    transform: str
    test: str
    old_class: str
    new_class: str
    old_instantiated: bool
    new_instantiated: bool
    before: tuple[str, ...]
    after: tuple[str, ...]
    # Tests that stayed in `old_class` (instantiated) whose names are this one's and more
    # (`test_add` -> `test_add_scalar`): the map's pattern for this test must not take their ids.
    kept_longer: tuple[str, ...] = ()

    @property
    def noop(self) -> bool:
        """The test stays where it was, on the same devices: no move at all."""
        return (self.old_class, self.old_instantiated, self.before) == (
            self.new_class,
            self.new_instantiated,
            self.after,
        )

    @property
    def widened(self) -> tuple[str, ...]:
        return tuple(d for d in self.after if d not in self.before and d != GENERIC)

    @property
    def dropped(self) -> tuple[str, ...]:
        if self.after == (GENERIC,):
            return ()  # runs once, device-free: it never used the device
        return tuple(d for d in self.before if d not in self.after and d != GENERIC)

    def to_json(self, path: str) -> dict:
        data = asdict(self)
        data.update(
            before=list(self.before),
            after=list(self.after),
            kept_longer=list(self.kept_longer),
            widened=list(self.widened),
            old_ids=old_ids(path, self),
            new_ids=new_ids(path, self),
        )
        return data


@dataclass
class Step:
    """One transform's output on one module."""

    text: str
    _: KW_ONLY
    moves: list[Move] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    created: tuple[str, ...] = ()  # class names the step added (bases, parts)
    resolved: tuple[str, ...] = ()  # classes whose rules must all pass for one value now
    # Applies to an original test function what the text edit did to it (identity if None).
    normalise: Callable[[ast.AST], ast.AST] | None = None
    imports: tuple[str, ...] = ()  # names the step may add to / rename in common_device_type imports


def _ids(path: str, cls: str, test: str, instantiated: bool, devices: Iterable[str]) -> list[str]:
    if not instantiated:
        return [f"{path}::{cls}::{test}"]
    return [f"{path}::{cls}{d.upper()}::{test}_{d}" for d in devices if d not in (GENERIC, OTHER)]


def old_ids(path: str, move: Move) -> list[str]:
    return _ids(path, move.old_class, move.test, move.old_instantiated, move.before)


def new_ids(path: str, move: Move) -> list[str]:
    return _ids(path, move.new_class, move.test, move.new_instantiated, move.after)


def _file_part(path: str) -> str:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    return rf"(?P<f>(?:[^:]*/)?{re.escape(base)})"


def _suffixes(devices: tuple[str, ...]) -> str | None:
    """Alternation of the class suffixes of `devices`; None when any suffix may occur."""
    if OTHER in devices or GENERIC in devices:
        return None
    return "|".join(re.escape(d.upper()) for d in devices)


def _not_extended_to(m: Move) -> str:
    """A lookahead after `m.test` in a pattern that refuses the ids of `m.kept_longer`."""
    if not m.kept_longer:
        return ""
    rests = "|".join(re.escape(k[len(m.test) :]) for k in m.kept_longer)
    return rf"(?!(?:{rests})(?:_|$))"


def map_entries(path: str, moves: Iterable[Move]) -> list[dict[str, str]]:
    """`{"old": "re:<regex>", "new": "<template>"}` entries for `decouple ab --map-file`.

    Longest name first, so that a moved `test_add` never captures a moved `test_add_scalar_cpu`;
    the tests that stayed and whose names extend a moved one's (`Move.kept_longer`) are left out of
    its pattern.  A test that now lives in a single-device class (CPU, CUDA) maps only on that
    device; its other instances, which its guard skipped in A, map to "" ("not generated in B")."""
    out: list[tuple[int, dict[str, str]]] = []
    f = _file_part(path)
    for m in moves:
        if not m.old_instantiated:
            if m.old_class != m.new_class and not m.new_instantiated:
                old = rf"^{f}::{re.escape(m.old_class)}::{re.escape(m.test)}(?P<s>\[.*)?$"
                out.append((len(m.test), {"old": "re:" + old, "new": rf"\g<f>::{m.new_class}::{m.test}\g<s>"}))
            continue
        test = re.escape(m.test) + _not_extended_to(m)
        if not m.new_instantiated:  # a device-free test leaves the instantiated class: drop `_<device>`
            old = rf"^{f}::{re.escape(m.old_class)}[A-Z][A-Z0-9]*::{test}_[a-z][a-z0-9]*$"
            out.append((len(m.test), {"old": "re:" + old, "new": rf"\g<f>::{m.new_class}::{m.test}"}))
            continue
        kept = _suffixes(m.after)
        cls = rf"{re.escape(m.old_class)}(?P<d>{kept or '[A-Z][A-Z0-9]*'})"
        old = rf"^{f}::{cls}::{test}(?P<s>_[^:]*)$"
        out.append((len(m.test), {"old": "re:" + old, "new": rf"\g<f>::{m.new_class}\g<d>::{m.test}\g<s>"}))
        if kept is not None:
            gone = rf"^{f}::{re.escape(m.old_class)}(?!(?:{kept})::)[A-Z][A-Z0-9]*::{test}_[^:]*$"
            out.append((len(m.test), {"old": "re:" + gone, "new": ""}))
    out.sort(key=lambda item: -item[0])
    return [entry for _, entry in out]


def map_document(moves_by_path: dict[str, list[Move]]) -> dict:
    """The `--map-out` JSON: per file the moves (device sets, old/new ids), plus the map."""
    files = {}
    entries: list[dict[str, str]] = []
    for path in sorted(moves_by_path):
        moves = moves_by_path[path]
        files[path] = [m.to_json(path) for m in moves]
        entries += map_entries(path, moves)
    return {"schema_version": 1, "kind": "decouple-test-map", "files": files, "map": entries}


def moves_from_json(items: Iterable[Mapping[str, Any]]) -> list[Move]:
    """Moves back from their JSON (a finding's data): device sets as tuples again."""
    return [
        Move(
            transform=item["transform"],
            test=item["test"],
            old_class=item["old_class"],
            new_class=item["new_class"],
            old_instantiated=item["old_instantiated"],
            new_instantiated=item["new_instantiated"],
            before=tuple(item["before"]),
            after=tuple(item["after"]),
            kept_longer=tuple(item.get("kept_longer", ())),
        )
        for item in items
    ]
