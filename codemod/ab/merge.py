"""`decouple ab merge`: shard results combined into the result of one run of the whole suite."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from codemod.ab.compare import count
from codemod.ab.diag_summary import diagnose
from codemod.ab.model import CATEGORIES, ABResult, ArmResult
from codemod.ab.notices import Notice
from codemod.ab.verdict import verdict


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
