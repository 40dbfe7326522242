"""`decouple ab merge`: the results of the shards of one run combined into the result of that run."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from codemod.ab.comparison.compare import count, diagnostic_summary, sort_rows, verdict
from codemod.ab.comparison.coverage import count_arm
from codemod.ab.result.model import ABResult, ArmResult, Verdict
from codemod.ab.result.notices import Notice


def merge(results: Sequence[ABResult]) -> ABResult:
    """Combine shard results into one result (verdict recomputed)."""
    if not results:
        raise ValueError("nothing to merge")
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
    out.shard = None
    warnings += _shard_notices([r.shard for r in results if r.shard])
    out.warnings = warnings
    out.verdict, out.verdict_reason = verdict(out)
    if any(w.code == "merge.missing-shards" for w in warnings) and out.verdict == Verdict.SAFE:
        out.verdict_reason += " (incomplete: some shards are missing)"
    return out


def _disagreements(out: ABResult, r: ABResult) -> list[Notice]:
    """What shard `r` ran differently from the first shard: normaliser, environment, base."""
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
    if r.base_ref != out.base_ref:
        notices.append(Notice("merge.bases-differ", {"base": str(out.base_ref), "other_base": str(r.base_ref)}))
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
    into.ran = into.ran and other.ran
    if other.error:
        into.error = "; ".join(x for x in (into.error, other.error) if x)
    into.duration += other.duration
    if (other.commit, other.tree) != (into.commit, into.tree):  # shards of different code: not one commit
        into.commit = into.tree = ""
    if other.command and other.command not in into.command.split("\n"):
        into.command = "\n".join(x for x in (into.command, other.command) if x)


def _shard_notices(shards: list[str]) -> list[Notice]:
    """Which shards were merged, and which of the N are missing."""
    if not shards:
        return []
    notices = [Notice("merge.merged-shards", {"shards": ", ".join(shards)})]
    n = {s.split("/")[1] for s in shards if "/" in s}
    if len(n) == 1:
        total = int(next(iter(n)))
        have = {int(s.split("/")[0]) for s in shards}
        missing = sorted(set(range(1, total + 1)) - have)
        if missing:
            notices.append(Notice("merge.missing-shards", {"shards": ", ".join(f"{i}/{total}" for i in missing)}))
    return notices
