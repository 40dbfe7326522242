"""Which files a refactor takes, in which groups, planned at the base: the files named, the
allowlist's (`--limit`, `--group-size`) or a survey's batches (`--batches`); the files a branch of an
earlier run already holds go back to that branch (state.json), never into a new one."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codemod.engine.discovery import DEFAULT_EXCLUDES, excluded_by, is_test_file
from codemod.engine.result import ALREADY, CHANGED, NEEDS_MANUAL, FileStatus
from codemod.refactor import plan as _plan
from codemod.refactor.gitrepo import Repo
from codemod.refactor.plan import PlanStatus
from codemod.util.jsonfile import JSONInputError, loads
from transforms.core.base import Transform

DEFAULT_ALLOWLIST = "tools/linter/adapters/test_linter_allowlist.json"


class RefactorError(Exception):
    """Bad input or a refused operation (exit 2)."""


@dataclass(frozen=True, kw_only=True)
class AbSettings:
    """What the A/B run of every branch takes from the command line (fields of the runner's
    RunOptions; -j is the run's own `jobs`)."""

    python: str  # the target interpreter
    env: dict[str, str] = field(default_factory=dict)
    diags: list[Any] = field(default_factory=list)  # the runner's DiagSpec
    timeout: float = 600.0
    confirm: int = 2


@dataclass(kw_only=True)
class Options:
    paths: list[str]
    transforms: list[Transform]
    ab: AbSettings
    base: str = "HEAD"
    allowlist: str | None = None  # --from-allowlist (a path in the user's tree)
    branch: str | None = None
    allow_dirty: bool = False
    dry_run: bool = False
    no_ab: bool = False
    out: str | None = None
    lang: str = "en"
    limit: int | None = None
    group_size: int | None = None
    jobs: int | None = None  # the edits' workers and the A/B run's processes (None: all cores)
    linter: str = "auto"  # the gate: auto (the base commit's linter) | PATH | off
    rules: str = "auto"  # the generation of the linter's rules: auto (the gate's linter's) | a name
    # The groups of `decouple survey`'s batches (repo-relative files), in order: one branch each.
    batches: list[list[str]] | None = None
    # Files the survey finds doable but put in no batch (an older survey's restructure files):
    # path -> why, listed among the skipped files.
    left_out: dict[str, str] = field(default_factory=dict)
    # Gitignore patterns relative to the repository root (discovery.exclude_patterns builds them
    # from the defaults, [tool.decouple] exclude and --exclude, as for `apply`).
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDES))
    say: Callable[[str], None] = lambda _m: None


@dataclass(frozen=True, kw_only=True)
class SkippedFile:
    path: str
    reason: str
    status: PlanStatus


@dataclass(frozen=True, kw_only=True)
class ExcludedFile:
    """A file an exclude pattern keeps out: never edited nor graduated."""

    path: str
    pattern: str
    reason: str


def _rel(repo: Repo, path: str) -> str:
    full = os.path.realpath(os.path.abspath(path))
    rel = os.path.relpath(full, repo.root)
    if rel == ".." or rel.startswith(".." + os.sep):
        raise RefactorError(f"{path} is outside the repository {repo.root}")
    return "" if rel == "." else rel.replace(os.sep, "/")


def _allowlist_rel(repo: Repo, opts: Options, base: str) -> str | None:
    if opts.allowlist:
        return _rel(repo, opts.allowlist)
    return DEFAULT_ALLOWLIST if repo.blob(base, DEFAULT_ALLOWLIST) is not None else None


def _allowlist_entries(repo: Repo, base: str, rel: str) -> list[str]:
    data = repo.blob(base, rel)
    if data is None:
        raise RefactorError(f"the allowlist {rel} is not a file at {base[:12]}")
    try:
        entries = loads(data, f"the allowlist {rel} at {base[:12]}")
    except JSONInputError as e:
        raise RefactorError(str(e)) from None
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise RefactorError(f"the allowlist {rel} must be a JSON list of paths")
    return entries


def _explicit_files(repo: Repo, base: str, paths: list[str]) -> list[str]:
    files: list[str] = []
    for p in paths:
        rel = _rel(repo, p)
        found = repo.list_at(base, rel)
        if found is None:
            raise RefactorError(f"{p} does not exist at {base[:12]}")
        if found != [rel]:
            found = [f for f in found if is_test_file(f)]
        files += [f for f in found if f not in files]
    if not files:
        raise RefactorError("no test files in " + ", ".join(paths))
    return files


def _groups(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _drop_excluded(candidates: list[str], patterns: list[str]) -> tuple[list[str], list[ExcludedFile]]:
    """(the candidates no exclude pattern matches, the others)."""
    kept: list[str] = []
    excluded: list[ExcludedFile] = []
    for rel in candidates:
        pattern = excluded_by(rel, patterns)
        if pattern is None:
            kept.append(rel)
        else:
            excluded.append(ExcludedFile(path=rel, pattern=pattern, reason=f"excluded by the pattern `{pattern}`"))
    return kept, excluded


@dataclass(frozen=True, kw_only=True)
class Plan:
    groups: list[list[str]]  # repo-relative files, one group per branch
    earlier: dict[int, str]  # the groups an earlier run's branch holds (by index): that branch, resumed
    plans: dict[str, _plan.FilePlan]  # by path
    skipped: list[SkippedFile]
    excluded: list[ExcludedFile]  # not even planned: nothing edits or graduates them
    allowlist_rel: str | None


def _plan_at(repo: Repo, opts: Options, base: str, files: list[str]) -> dict[str, _plan.FilePlan]:
    try:
        return _plan.plan_at(repo, base, files, opts.transforms, opts.jobs, opts.linter, opts.ab.python, opts.rules)
    except _plan.GateFailed as e:
        raise RefactorError(f"linter gate: {e} (no branch made)") from None


def _mark_graduation(repo: Repo, base: str, allowlist_rel: str | None, plans: dict, picked: list[str]) -> None:
    """What the commit will record (the dry run prints it)."""
    if allowlist_rel:
        listed = set(_allowlist_entries(repo, base, allowlist_rel))
        for rel in picked:
            if rel in listed and plans[rel].fully_classified:
                plans[rel].graduated_from = allowlist_rel


def held_by(repo: Repo, state: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The branches state.json records that still exist, each with its files: what a new run
    never plans again (it resumes them instead)."""
    held: dict[str, list[str]] = {}
    for branch, record in state.items():
        files = record.get("files")
        if isinstance(files, list) and files and repo.branch_head(branch) is not None:
            held[branch] = [f for f in files if isinstance(f, str)]
    return held


def _holder(held: dict[str, list[str]]) -> dict[str, str]:
    """File -> the earlier branch holding it."""
    return {f: branch for branch, files in held.items() for f in files}


def _plan_batches(repo: Repo, opts: Options, base: str, allowlist_rel: str | None, held: dict[str, list[str]]) -> Plan:
    """The survey's batches as groups, in its order: each keeps its files that are still doable
    at `base` (and on its allowlist); a file an earlier branch holds goes back to that branch;
    --limit N takes the first N groups left non-empty. The batches are planned a few at a
    time, so a limit plans little more than it takes."""
    assert opts.batches is not None
    listed = set(_allowlist_entries(repo, base, allowlist_rel)) if allowlist_rel else None
    holder = _holder(held)
    plans: dict[str, _plan.FilePlan] = {}
    skipped: list[SkippedFile] = []
    excluded: list[ExcludedFile] = []
    groups: list[list[str]] = []
    earlier: dict[int, str] = {}
    seen: set[str] = set()
    limit = opts.limit if opts.limit is not None else len(opts.batches)
    step = 8  # batches planned per engine run
    for i in range(0, len(opts.batches), step):
        if len(groups) >= limit:
            break
        chunk = [[f for f in dict.fromkeys(b) if f not in seen] for b in opts.batches[i : i + step]]
        files = [f for b in chunk for f in b]
        seen.update(files)
        kept, dropped = _drop_excluded(files, opts.exclude)
        excluded += dropped
        unlisted = [f for f in kept if listed is not None and f not in listed and f not in holder]
        skipped += [
            SkippedFile(path=f, reason=f"not on the allowlist {allowlist_rel} at {base[:12]}", status=_plan.MISSING)
            for f in unlisted
        ]
        todo = [f for f in kept if f not in set(unlisted) and f not in holder]
        plans.update(_plan_at(repo, opts, base, todo) if todo else {})
        for batch in chunk:
            for branch in dict.fromkeys(holder[f] for f in batch if f in holder):
                if branch not in earlier.values() and len(groups) < limit:
                    earlier[len(groups)] = branch
                    groups.append(held[branch])
            doable = [f for f in batch if f in plans and plans[f].doable]
            if doable and len(groups) < limit:
                groups.append(doable)
            for f in batch:
                p = plans.get(f)
                if p is not None and not p.doable:
                    assert p.status is not None  # plan_at gives every file a status
                    skipped.append(SkippedFile(path=f, reason=p.skip_reason, status=p.status))
    skipped += [SkippedFile(path=f, reason=why, status=_plan.NOT_BATCHED) for f, why in opts.left_out.items()]
    picked = [f for i, g in enumerate(groups) if i not in earlier for f in g]
    _mark_graduation(repo, base, allowlist_rel, plans, picked)
    return Plan(
        groups=groups,
        earlier=earlier,
        plans=plans,
        skipped=skipped,
        excluded=excluded,
        allowlist_rel=allowlist_rel,
    )


def plan_groups(repo: Repo, opts: Options, base: str, held: dict[str, list[str]]) -> Plan:
    """What a run will do, worked out at `base`; `held`: the branches of earlier runs (`held_by`),
    which take back their files."""
    allowlist_rel = _allowlist_rel(repo, opts, base)
    if opts.batches is not None:
        return _plan_batches(repo, opts, base, allowlist_rel, held)
    batch = not opts.paths or opts.limit is not None or opts.group_size is not None
    size = opts.group_size or (1 if batch else 10**9)
    if opts.paths:
        candidates = _explicit_files(repo, base, opts.paths)
    elif allowlist_rel:
        candidates = _allowlist_entries(repo, base, allowlist_rel)
    else:
        raise RefactorError("name at least one file or folder, or --from-allowlist PATH")
    candidates, excluded = _drop_excluded(candidates, opts.exclude)
    holder = _holder(held)
    limit = opts.limit if opts.limit is not None else len(candidates)
    plans: dict[str, _plan.FilePlan] = {}
    picked: list[str] = []
    resumed: list[str] = []  # earlier branches, in the order their first file comes
    taken = 0  # files picked or held, what --limit counts
    skipped: list[SkippedFile] = []
    chunk = max(16, 2 * limit)
    for i in range(0, len(candidates), chunk):
        if taken >= limit:
            break
        part = candidates[i : i + chunk]
        plans.update(_plan_at(repo, opts, base, [f for f in part if f not in holder]))
        for rel in part:
            if taken >= limit:
                break
            if rel in holder:
                resumed += [holder[rel]] if holder[rel] not in resumed else []
                taken += 1
                continue
            p = plans[rel]
            # Explicit files with some labels to add go in even with manual work left (the PR says so).
            if p.doable or (not batch and p.status == FileStatus.CHANGED):
                picked.append(rel)
                taken += 1
            else:
                assert p.status is not None  # plan_at gives every file a status
                skipped.append(SkippedFile(path=rel, reason=p.skip_reason, status=p.status))
    _mark_graduation(repo, base, allowlist_rel, plans, picked)
    return Plan(
        groups=[held[b] for b in resumed] + _groups(picked, size),
        earlier=dict(enumerate(resumed)),
        plans=plans,
        skipped=skipped,
        excluded=excluded,
        allowlist_rel=allowlist_rel,
    )


def left_for_manual(p: _plan.FilePlan | None) -> bool:
    """A skipped file that needs a human (not one with nothing to do, nor one that failed)."""
    return p is not None and not p.doable and (bool(p.manual) or p.status in (CHANGED, ALREADY, NEEDS_MANUAL))
