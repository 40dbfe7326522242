"""`decouple ab merge`: the results of the shards of one run combined into the result of that run.

A merge takes exactly one run: every shard carries the run's identity (`identify`: both
arms' code, the tool, the shard count, what the run was asked), and `merge` refuses
(`MergeError`, exit 2) results of different runs or repositories, a shard given twice, a
result without an identity (written before schema 5) among several, and an incomplete set
unless asked to take one (`allow_missing`: then the verdict is never SAFE and names the
missing shards).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from codemod.ab.comparison.compare import count, diagnostic_summary, sort_rows, verdict
from codemod.ab.comparison.coverage import count_arm
from codemod.ab.result.model import ABResult, ArmResult, RunIdentity, Verdict
from codemod.ab.result.notices import Notice

# The files that configure pytest for a test file below them (read into an arm's digest).
CONFIG_FILES = ("conftest.py", "pytest.ini", "setup.cfg", "tox.ini", "pyproject.toml", "__init__.py")


class MergeError(ValueError):
    """The results are not the shards of one run (the message names the files and what differs)."""


# ---------------------------------------------------------------------------
# a run's identity


def tree_digest(root: Path, files: Iterable[str]) -> str:
    """A digest of `files` below `root` (paths and bytes) and of the pytest configuration
    on their way (`CONFIG_FILES` in every folder from `root` down to each)."""
    wanted = set(files)
    for f in list(wanted):
        for folder in Path(f).parents:
            wanted.update(str(folder / name) if str(folder) != "." else name for name in CONFIG_FILES)
    h = hashlib.sha256()
    for name in sorted(wanted):
        try:
            data = (root / name).read_bytes()
        except OSError:
            continue
        h.update(name.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(data).digest())
    return "files:" + h.hexdigest()


def identify(
    code: dict[str, tuple[str, str]], shards: int, tool_version: str, request: dict[str, object]
) -> RunIdentity:
    """The identity of a run: `code` is arm -> (commit, tree id or `tree_digest`) for A and B."""
    asked = hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()
    identity = RunIdentity(
        run_id="",
        base_commit=code["A"][0],
        a_tree=code["A"][1],
        b_tree=code["B"][1],
        tool_version=tool_version,
        shards=shards,
        request=asked,
    )
    parts = (identity.base_commit, identity.a_tree, identity.b_tree, tool_version, str(shards), asked)
    identity.run_id = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    return identity


# The options that are part of what a run was asked (its shards are run with the same ones).
REQUEST_FIELDS = (
    "paths",
    "mapping",
    "env",
    "diags",
    "hw_classification",
    "timeout",
    "file_timeout",
    "label_filter",
    "test_plan",
)


def request_of(options: object) -> dict[str, object]:
    """What a run was asked (`codemod.ab.arms.options.RunOptions`): `REQUEST_FIELDS`."""
    return {name: getattr(options, name, None) for name in REQUEST_FIELDS}


# What differs between two identities, in words.
_DIFFERENCES = (
    ("base_commit", "base commit"),
    ("a_tree", "arm A's files"),
    ("b_tree", "arm B's files"),
    ("tool_version", "decouple version"),
    ("shards", "shard count"),
    ("request", "paths or options"),
)


def check_one_run(results: Sequence[ABResult], names: Sequence[str], allow_missing: bool) -> list[str]:
    """Raise MergeError unless `results` are shards of one run; the missing shards ("2/4"),
    which only `allow_missing` lets through."""
    if len(results) > 1:
        unnamed = [n for n, r in zip(names, results, strict=True) if r.identity is None]
        if unnamed:
            raise MergeError(
                f"{', '.join(unnamed)}: no run identity (a result of decouple before schema 5): "
                "cannot tell whether it belongs to the same run; rerun its shards"
            )
        runs: dict[str, list[str]] = {}  # run id -> its files, in the order given
        identities: dict[str, RunIdentity] = {}
        for name, r in zip(names, results, strict=True):
            assert r.identity is not None
            runs.setdefault(r.identity.run_id, []).append(name)
            identities.setdefault(r.identity.run_id, r.identity)
        if len(runs) > 1:
            first, second = list(identities.values())[:2]
            differ = [
                f"{label} ({getattr(first, key) or '-'} vs {getattr(second, key) or '-'})"
                for key, label in _DIFFERENCES
                if getattr(first, key) != getattr(second, key)
            ] or ["run id"]
            groups = "; ".join(", ".join(files) for files in runs.values())
            raise MergeError(
                f"these results are not the shards of one run but of {len(runs)} runs ({groups}): "
                f"they differ in {'; '.join(differ)}"
            )
    return _shard_set(results, names, allow_missing)


def _shard_set(results: Sequence[ABResult], names: Sequence[str], allow_missing: bool) -> list[str]:
    whole = [n for n, r in zip(names, results, strict=True) if not r.shard]
    if whole and len(results) > 1:
        raise MergeError(f"{', '.join(whole)}: a whole run (not a shard) cannot be merged with other results")
    if whole:
        return []
    seen: dict[str, str] = {}
    for name, r in zip(names, results, strict=True):
        assert r.shard is not None
        if r.shard in seen:
            raise MergeError(f"shard {r.shard} given twice: {seen[r.shard]} and {name}")
        seen[r.shard] = name
    total = {int(s.split("/")[1]) for s in seen}
    n = total.pop() if len(total) == 1 else 0
    missing = [f"{i}/{n}" for i in range(1, n + 1) if f"{i}/{n}" not in seen]
    if missing and not allow_missing:
        raise MergeError(f"shards missing: {', '.join(missing)} (--allow-missing merges the others, never SAFE)")
    return missing


# ---------------------------------------------------------------------------
# the merge


def merge(results: Sequence[ABResult], names: Sequence[str] = (), allow_missing: bool = False) -> ABResult:
    """Combine the shard results of one run into one result (verdict recomputed); `names`:
    where each came from, for the errors."""
    if not results:
        raise ValueError("nothing to merge")
    names = list(names) or [f"result {i + 1}" for i in range(len(results))]
    missing = check_one_run(results, names, allow_missing)
    out = copy.deepcopy(results[0])
    warnings = list(out.warnings)
    for r in results[1:]:
        r = copy.deepcopy(r)
        warnings += _disagreements(out, r)
        _merge_result(out, r)
        for w in r.warnings:
            if w not in warnings:
                warnings.append(w)
    sort_rows(out.tests)
    out.counts = count(out.tests)
    for arm in out.arms:
        count_arm(arm)
    # recompute diagnostic statements from the merged arms
    for d in out.diagnostics:
        base, diag = out.arm(d.based_on), out.arm(d.name)
        if base is not None and diag is not None:
            fresh = diagnostic_summary(d.name, d.based_on, d.variables, base, diag)
            d.changed, d.statement = fresh.changed, fresh.statement
    shards = [r.shard for r in results if r.shard]
    out.shard = None
    if shards:
        warnings.append(Notice("merge.merged-shards", {"shards": ", ".join(shards)}))
    if missing:
        warnings.append(Notice("merge.missing-shards", {"shards": ", ".join(missing)}))
    out.warnings = warnings
    out.verdict, out.verdict_reason = verdict(out)
    if missing:
        # what the missing shards ran is unknown: never SAFE (a regression found stays one)
        if out.verdict == Verdict.SAFE:
            out.verdict, out.verdict_reason = Verdict.INCONCLUSIVE, ""
        out.verdict_reason = "; ".join(x for x in (f"shards missing: {', '.join(missing)}", out.verdict_reason) if x)
    return out


def _disagreements(out: ABResult, r: ABResult) -> list[Notice]:
    """What shard `r` ran differently from the first shard: normaliser, environment."""
    notices = []
    if r.normaliser_version != out.normaliser_version:
        versions = {"version": out.normaliser_version, "other_version": r.normaliser_version}
        notices.append(Notice("merge.normaliser-versions-differ", versions))
    if r.environment.torch_version != out.environment.torch_version or r.environment.python != out.environment.python:
        environments = {
            "python": out.environment.python,
            "other_python": r.environment.python,
            "torch": str(out.environment.torch_version),
            "other_torch": str(r.environment.torch_version),
        }
        notices.append(Notice("merge.environments-differ", environments))
    return notices


def _merge_result(out: ABResult, r: ABResult) -> None:
    """Shard `r`'s paths, arms, tests, environment and diagnostics into `out`."""
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
    out.env_unset.extend(k for k in r.env_unset if k not in out.env_unset)
    for k, v in r.env_set.items():
        out.env_set.setdefault(k, v)
    out.mapping.update(r.mapping)
    out.runtime += r.runtime
    out.label_filter += r.label_filter
    out.test_plan += r.test_plan
    out.not_exercised += [d for d in r.not_exercised if d not in out.not_exercised]
    for d in r.diagnostics:
        known_diag = next((x for x in out.diagnostics if x.name == d.name), None)
        if known_diag is None:
            out.diagnostics.append(d)
        else:
            known_diag.changed.update(d.changed)


def _merge_arm(into: ArmResult, other: ArmResult) -> None:
    into.outcomes.update(other.outcomes)
    into.collection_errors.update(other.collection_errors)
    into.collection_skips.update(other.collection_skips)
    into.crashes.extend(c for c in other.crashes if c not in into.crashes)
    into.accounting.extend(other.accounting)
    into.ran = into.ran and other.ran
    if other.error:
        into.error = "; ".join(x for x in (into.error, other.error) if x)
    into.duration += other.duration
    if (other.commit, other.tree) != (into.commit, into.tree):  # shards of different code: not one commit
        into.commit = into.tree = ""
    if other.command and other.command not in into.command.split("\n"):
        into.command = "\n".join(x for x in (into.command, other.command) if x)
