"""Shards: which files (or parts of files) each shard of `decouple ab --shard I/N` runs
(`decouple ab merge` combines their results: `codemod/ab/comparison/merge.py`).

Pure functions, no I/O except reading/writing a durations file. The plan is a
deterministic greedy LPT bin packing (longest processing time first: the heaviest
piece goes to the lightest shard, ties by name and shard index), so every shard of
a CI matrix computes the same plan independently from the same inputs.

Weights: a file's recorded duration (``--durations``, written by an earlier run with
``--durations-out`` or read from an earlier result JSON); without one, its size in
bytes scaled by the recorded seconds-per-byte of the files that have durations (or
the plain size when nothing is recorded).

Where one file dominates (its weight exceeds an even share, total / N) and its tests'
durations are recorded, the file is split by node id: each part runs with an exact
``only`` list, and one part (the file's home) runs the file minus the tests placed
elsewhere, so tests the recording does not know still run exactly once.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codemod.ab.result.model import ABResult, file_of
from codemod.util.jsonfile import JSONInputError, read_option_json

DURATIONS_SCHEMA = "decouple-durations-1"


class DurationsError(ValueError):
    """A --durations file that cannot be read."""


@dataclass(frozen=True)
class Durations:
    files: Mapping[str, float] = field(default_factory=dict)  # file path -> seconds
    tests: Mapping[str, float] = field(default_factory=dict)  # node id -> seconds


@dataclass(frozen=True)
class Piece:
    """A file, or a part of a file, that one shard runs."""

    file: str
    weight: float
    only: tuple[str, ...] | None = None  # run just these node ids
    deselect: tuple[str, ...] = ()  # run the file without these node ids (the file's home part)


# ---------------------------------------------------------------------------
# durations files


def from_result(result: ABResult) -> Durations:
    """Per-test durations of an A/B result (the slower of arms A and B); a file's
    duration is the sum of its tests'."""
    tests: dict[str, float] = {}
    for arm in result.arms:
        if arm.name not in ("A", "B"):
            continue
        for nid, outcome in arm.outcomes.items():
            tests[nid] = max(tests.get(nid, 0.0), outcome.duration)
    files: dict[str, float] = {}
    for nid, seconds in tests.items():
        files[file_of(nid)] = files.get(file_of(nid), 0.0) + seconds
    return Durations(files, tests)


def _seconds(data: dict[str, Any], key: str) -> dict[str, float]:
    """`data[key]`, an object of path -> seconds (finite, not negative), else DurationsError
    naming the field."""
    table = data.get(key, {})
    if not isinstance(table, dict):
        raise DurationsError(f"field {key}: expected an object of path -> seconds")
    out = {}
    for k, v in table.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise DurationsError(f"field {key}[{json.dumps(k)}]: expected seconds (a number >= 0), got {v!r}")
        out[k] = float(v)
    return out


def _read_one(path: Path) -> Durations:
    """A durations file or an A/B result, validated: read from another machine (a CI
    shard), neither is trusted."""
    try:
        data = read_option_json(str(path), "--durations")
    except JSONInputError as err:
        raise DurationsError(str(err)) from None
    if isinstance(data, dict) and data.get("schema") == DURATIONS_SCHEMA:
        try:
            return Durations(_seconds(data, "files"), _seconds(data, "tests"))
        except DurationsError as err:
            raise DurationsError(f"--durations {path}: not a durations file ({err})") from None
    if isinstance(data, dict) and "arms" in data and "verdict" in data:
        try:
            return from_result(ABResult.from_json(data))
        except ValueError as err:
            raise DurationsError(f"--durations {path}: not an A/B result ({err})") from None
    raise DurationsError(f"--durations {path}: neither a durations file ({DURATIONS_SCHEMA}) nor an A/B result")


def combine(parts: Iterable[Durations]) -> Durations:
    """Several recordings (e.g. one per shard) as one; a path seen twice keeps its larger time."""
    files: dict[str, float] = {}
    tests: dict[str, float] = {}
    for d in parts:
        for k, v in d.files.items():
            files[k] = max(files.get(k, 0.0), v)
        for k, v in d.tests.items():
            tests[k] = max(tests.get(k, 0.0), v)
    return Durations(files, tests)


def load_durations(paths: Sequence[str]) -> Durations:
    """Read --durations PATHs: durations files or A/B result JSONs, or folders of them (*.json)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(p.glob("*.json"))
        elif p.exists():
            found.append(p)
        else:
            raise DurationsError(f"--durations {p}: no such file or folder")
    return combine(_read_one(p) for p in found)


def durations_json(files: Mapping[str, float], tests: Mapping[str, float]) -> str:
    return (
        json.dumps(
            {
                "schema": DURATIONS_SCHEMA,
                "files": {k: round(v, 3) for k, v in sorted(files.items())},
                "tests": {k: round(v, 3) for k, v in sorted(tests.items())},
            },
            indent=1,
        )
        + "\n"
    )


# ---------------------------------------------------------------------------
# planning


def weigh(files: Sequence[str], durations: Durations, size_of: Callable[[str], int]) -> dict[str, float]:
    """Seconds where recorded; else size x the recorded seconds per byte (bytes when nothing is recorded)."""
    known = {f: durations.files[f] for f in files if f in durations.files}
    unknown = [f for f in files if f not in known]
    sizes = {f: max(size_of(f), 1) for f in files}
    known_bytes = sum(sizes[f] for f in known)
    rate = (sum(known.values()) / known_bytes) if known and known_bytes else 1.0
    if known and rate <= 0:
        rate = 1e-9
    return {**known, **{f: sizes[f] * rate for f in unknown}}


def pieces(files: Sequence[str], n: int, durations: Durations, size_of: Callable[[str], int]) -> list[Piece]:
    """Files as pieces; a dominating file with recorded tests becomes one piece per test
    (the first in node-id order is its home)."""
    weights = weigh(files, durations, size_of)
    share = sum(weights.values()) / n if n else 0.0
    out: list[Piece] = []
    for f in sorted(files):
        tests = sorted(nid for nid in durations.tests if file_of(nid) == f)
        if n > 1 and weights[f] > share and len(tests) > 1:
            out += [Piece(f, durations.tests[nid], only=(nid,)) for nid in tests]
        else:
            out.append(Piece(f, weights[f]))
    return out


def pack(items: Sequence[Piece], n: int) -> list[list[Piece]]:
    """Greedy LPT: heaviest first, each onto the currently lightest shard (lowest index on ties)."""
    bins: list[list[Piece]] = [[] for _ in range(n)]
    load = [0.0] * n
    for item in sorted(items, key=lambda p: (-p.weight, p.file, p.only or ())):
        k = min(range(n), key=lambda i: (load[i], i))
        bins[k].append(item)
        load[k] += item.weight
    return bins


def _merge_parts(bins: list[list[Piece]]) -> list[list[Piece]]:
    """One piece per file and shard; a split file's lowest shard is its home (runs the file
    minus the tests other shards run), the others get exact `only` lists."""
    split: dict[str, dict[int, list[str]]] = {}
    out: list[list[Piece]] = [[] for _ in bins]
    for k, items in enumerate(bins):
        for p in items:
            if p.only is None:
                out[k].append(p)
            else:
                split.setdefault(p.file, {}).setdefault(k, []).extend(p.only)
    weight = {(p.file, k): 0.0 for k, items in enumerate(bins) for p in items}
    for k, items in enumerate(bins):
        for p in items:
            weight[(p.file, k)] += p.weight
    for f, by_shard in split.items():
        home = min(by_shard)
        elsewhere = tuple(sorted(nid for k, ids in by_shard.items() if k != home for nid in ids))
        for k, ids in by_shard.items():
            if len(by_shard) == 1:
                out[k].append(Piece(f, weight[(f, k)]))
            elif k == home:
                out[k].append(Piece(f, weight[(f, k)], deselect=elsewhere))
            else:
                out[k].append(Piece(f, weight[(f, k)], only=tuple(sorted(ids))))
    return [sorted(items, key=lambda p: p.file) for items in out]


def plan(
    files: Sequence[str], n: int, durations: Durations | None = None, size_of: Callable[[str], int] = lambda f: 1
) -> list[list[Piece]]:
    """All N shards (0-based list), each a path-sorted list of pieces."""
    return _merge_parts(pack(pieces(files, n, durations or Durations(), size_of), n))


def select(
    files: Sequence[str],
    i: int,
    n: int,
    durations: Durations | None = None,
    size_of: Callable[[str], int] = lambda f: 1,
) -> list[Piece]:
    """Shard I of N (1-based, as on the command line)."""
    return plan(files, n, durations, size_of)[i - 1]


def size_in(roots: Sequence[Path]) -> Callable[[str], int]:
    """File size in the first root that has the file (0 when none has it)."""

    def size_of(rel: str) -> int:
        for root in roots:
            try:
                return os.stat(root / rel).st_size
            except OSError:
                continue
        return 0

    return size_of
