"""`decouple refactor`: plan at the base, one branch + commit per group, A/B, reports, PR body.

Orchestration only: the edits are the engine's (`engine.run_files`), graduation is
`discovery.graduate`, the verification is the A/B runner's `run_ab` and the reports are the
report modules'. Everything that writes git objects happens in a temporary linked work tree
(`gitrepo.Repo.scratch_worktree`), so the user's checkout is never touched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from codemod.ab.result.model import ABResult
from codemod.engine.discovery import DEFAULT_EXCLUDES, excluded_by, graduate, is_test_file, read_allowlist
from codemod.engine.process import run_files
from codemod.engine.result import ALREADY, CHANGED, FAILED, NEEDS_MANUAL, UNCHANGED, FileStatus, Mode
from codemod.refactor import plan as _plan
from codemod.refactor.gitrepo import GitError, Repo, Worktree
from codemod.refactor.outputs import (
    STATE_VERSION,
    SUMMARY_FILES,
    branch_folder,
    load_state,
    record_state,
    write_outputs,
    write_text,
)
from codemod.refactor.plan import PlanStatus
from codemod.util.jsonfile import JSONInputError, loads
from transforms.core.base import Transform
from transforms.core.strenum import StrEnum

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
    # Gitignore patterns relative to the repository root (discovery.exclude_patterns builds them
    # from the defaults, [tool.decouple] exclude and --exclude, as for `apply`).
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDES))
    say: Callable[[str], None] = lambda _m: None


class BranchStatus(StrEnum):
    WOULD_CREATE = "would-create"  # planned (a dry run stops here)
    CREATED = "created"  # branch and commit made, then verified
    VERIFIED_BEFORE = "verified-before"  # an earlier run made and verified this very commit
    AB_RERUN = "ab-rerun"  # the branch was there (made by decouple): verified again
    BASE_MOVED = "base-moved"  # the branch was made on another base: not rebuilt
    CONFLICT = "conflict"  # a branch of that name that decouple did not make, or with other files


@dataclass(kw_only=True)
class BranchRecord:
    branch: str
    files: list[str]
    base: str
    status: BranchStatus
    head: str = ""
    verdict: str | None = None
    note: str = ""
    pr_body: str = ""
    reports: dict[str, str] = field(default_factory=dict)
    # files the commit graduated whose tests the A/B run saw run unclassified (the census):
    # "path: Class, Class"; manual work, said in the PR body
    unclassified: list[str] = field(default_factory=list)


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


@dataclass(kw_only=True)
class Outcome:
    base: str
    branches: list[BranchRecord] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    excluded: list[ExcludedFile] = field(default_factory=list)
    manual_left: int = 0
    out_dir: str = ""
    plans: dict[str, _plan.FilePlan] = field(default_factory=dict, repr=False)  # by path (printed by a dry run)

    def exit_code(self) -> int:
        statuses = {b.status for b in self.branches}
        verdicts = {b.verdict for b in self.branches}
        if BranchStatus.CONFLICT in statuses or any(s.status == FAILED for s in self.skipped):
            return 2  # a branch in the way, or a file that cannot be read or parsed
        unclassified = any(b.unclassified for b in self.branches)
        if "REGRESSION" in verdicts or BranchStatus.BASE_MOVED in statuses or self.manual_left or unclassified:
            return 1
        return 3 if "INCONCLUSIVE" in verdicts else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": STATE_VERSION,
            "base": self.base,
            "branches": [asdict(b) for b in self.branches],
            "skipped": [asdict(s) for s in self.skipped],
            "excluded": [asdict(e) for e in self.excluded],
        }


# --- selection ------------------------------------------------------------------------------


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


# --- one group ---------------------------------------------------------------------------------


def _edit_group(
    wt: Worktree, files: list[str], allowlist_rel: str | None, opts: Options
) -> tuple[list[_plan.FilePlan], list[str]]:
    """Write the edits and graduate the allowlist in the scratch tree: (plans, changed paths)."""
    full = {os.path.join(wt.root, *f.split("/")): f for f in files}
    results = run_files(list(full), opts.transforms, Mode.WRITE, opts.jobs)
    plans = {full[r.path]: _plan.from_result(full[r.path], r) for r in results}
    failed = [f"{full[r.path]}: {r.reason}" for r in results if r.status == FAILED]
    if failed:
        raise RefactorError("cannot edit " + "; ".join(failed))
    changed = [full[r.path] for r in results if r.written]
    if allowlist_rel and os.path.isfile(os.path.join(wt.root, allowlist_rel)):
        allowlist = read_allowlist(os.path.join(wt.root, allowlist_rel))
        done = {r.path for r in results if r.fully_classified and r.status != FAILED}
        removed = graduate(allowlist, done)
        for entry in removed:
            if entry in plans:
                plans[entry].graduated_from = allowlist_rel
        if removed:
            changed.append(allowlist_rel)
    return [plans[f] for f in files], changed


def _run_ab(wt: Worktree, files: list[str], base: str, opts: Options, mapping: dict[str, str]) -> ABResult:
    from codemod.ab.arms.options import RunOptions, UsageError
    from codemod.ab.execution import run as _run

    ab = opts.ab
    ropts = RunOptions(
        paths=list(files),
        base=base,
        cwd=wt.root,
        progress=opts.say,
        python=ab.python,
        env=ab.env,
        diags=ab.diags,
        timeout=ab.timeout,
        confirm=ab.confirm,
        jobs=opts.jobs or os.cpu_count() or 1,
        mapping=mapping,  # restructured tests compared with their old selves
        test_plan=True,  # the PR body's Test Plan: each command, run in B
    )
    try:
        return _run.run_ab(ropts)
    except UsageError as e:
        raise RefactorError(f"A/B run: {e}") from None


def _verify(repo: Repo, wt: Worktree, rec: BranchRecord, opts: Options, out: str) -> None:
    _, message, _ = repo.commit_info(rec.head)
    facts = _plan.parse_commit_message(message)
    assert facts is not None, rec.head  # made by this run, or checked by `_existing`
    result = None
    if not opts.no_ab:
        opts.say(f"A/B: {rec.branch} against {rec.base[:12]}")
        result = _run_ab(wt, rec.files, rec.base, opts, _plan.test_map(facts.files))
        rec.verdict = result.verdict
        graduated = {p.path for p in facts.files if p.graduated_from}
        rec.unclassified = [f"{r.file}: {', '.join(r.classes)}" for r in result.runtime if r.file in graduated]
        if rec.unclassified:
            rec.note = "runs unclassified at run time, although graduated: " + "; ".join(rec.unclassified)
    rec.pr_body, rec.reports = write_outputs(branch_folder(out, rec.branch), result, facts, opts.lang)


def _existing(repo: Repo, rec: BranchRecord, head: str, state: dict[str, dict]) -> bool:
    """Classify an existing branch; True when it still needs an A/B run."""
    rec.head = head
    sha, message, parents = repo.commit_info(head)
    facts = _plan.parse_commit_message(message)
    if facts is None:
        rec.status = BranchStatus.CONFLICT
        rec.note = "the branch exists and was not made by decouple refactor: pick --branch"
        return False
    if not parents or parents[0] != rec.base:
        rec.status = BranchStatus.BASE_MOVED
        rec.note = (
            f"built on {facts.base[:12]}, the base is now {rec.base[:12]}: not rebuilt "
            f"(delete it with `git branch -D {rec.branch}` to rebuild)"
        )
        return False
    if [p.path for p in facts.files] != rec.files:
        rec.status = BranchStatus.CONFLICT
        rec.note = "the branch exists with other files: " + ", ".join(p.path for p in facts.files)
        return False
    saved = state.get(rec.branch, {})
    if saved.get("head") == sha and saved.get("verdict"):
        rec.status, rec.verdict = BranchStatus.VERIFIED_BEFORE, saved["verdict"]
        rec.pr_body, rec.reports = saved.get("pr_body", ""), saved.get("reports", {})
        return False
    rec.status = BranchStatus.AB_RERUN
    return True


# --- the whole run -------------------------------------------------------------------------------


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
    plans: dict[str, _plan.FilePlan]  # by path
    skipped: list[SkippedFile]
    excluded: list[ExcludedFile]  # not even planned: nothing edits or graduates them
    allowlist_rel: str | None
    batch: bool  # the files are candidates (the allowlist, --limit, --group-size), not the files named


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


def _plan_batches(repo: Repo, opts: Options, base: str, allowlist_rel: str | None) -> Plan:
    """The survey's batches as groups, in its order: each keeps its files that are still doable
    at `base` (and on its allowlist); --limit N takes the first N groups left non-empty. The
    batches are planned a few at a time, so a limit plans little more than it takes."""
    assert opts.batches is not None
    listed = set(_allowlist_entries(repo, base, allowlist_rel)) if allowlist_rel else None
    plans: dict[str, _plan.FilePlan] = {}
    skipped: list[SkippedFile] = []
    excluded: list[ExcludedFile] = []
    groups: list[list[str]] = []
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
        unlisted = [f for f in kept if listed is not None and f not in listed]
        skipped += [
            SkippedFile(path=f, reason=f"not on the allowlist {allowlist_rel} at {base[:12]}", status=_plan.MISSING)
            for f in unlisted
        ]
        todo = [f for f in kept if f not in set(unlisted)]
        plans.update(_plan_at(repo, opts, base, todo) if todo else {})
        for batch in chunk:
            doable = [f for f in batch if f in plans and plans[f].doable]
            if doable and len(groups) < limit:
                groups.append(doable)
            for f in batch:
                p = plans.get(f)
                if p is not None and not p.doable:
                    assert p.status is not None  # plan_at gives every file a status
                    skipped.append(SkippedFile(path=f, reason=p.skip_reason, status=p.status))
    picked = [f for g in groups for f in g]
    _mark_graduation(repo, base, allowlist_rel, plans, picked)
    return Plan(groups=groups, plans=plans, skipped=skipped, excluded=excluded, allowlist_rel=allowlist_rel, batch=True)


def plan_groups(repo: Repo, opts: Options, base: str) -> Plan:
    """What a run will do, worked out at `base`."""
    allowlist_rel = _allowlist_rel(repo, opts, base)
    if opts.batches is not None:
        return _plan_batches(repo, opts, base, allowlist_rel)
    batch = not opts.paths or opts.limit is not None or opts.group_size is not None
    size = opts.group_size or (1 if batch else 10**9)
    if opts.paths:
        candidates = _explicit_files(repo, base, opts.paths)
    elif allowlist_rel:
        candidates = _allowlist_entries(repo, base, allowlist_rel)
    else:
        raise RefactorError("name at least one file or folder, or --from-allowlist PATH")
    candidates, excluded = _drop_excluded(candidates, opts.exclude)
    limit = opts.limit if opts.limit is not None else len(candidates)
    plans: dict[str, _plan.FilePlan] = {}
    picked: list[str] = []
    skipped: list[SkippedFile] = []
    chunk = max(16, 2 * limit)
    for i in range(0, len(candidates), chunk):
        if len(picked) >= limit:
            break
        plans.update(_plan_at(repo, opts, base, candidates[i : i + chunk]))
        for rel in candidates[i : i + chunk]:
            p = plans[rel]
            if len(picked) >= limit:
                break
            # Explicit files with some labels to add go in even with manual work left (the PR says so).
            if p.doable or (not batch and p.status == FileStatus.CHANGED):
                picked.append(rel)
            else:
                assert p.status is not None  # plan_at gives every file a status
                skipped.append(SkippedFile(path=rel, reason=p.skip_reason, status=p.status))
    _mark_graduation(repo, base, allowlist_rel, plans, picked)
    return Plan(
        groups=_groups(picked, size),
        plans=plans,
        skipped=skipped,
        excluded=excluded,
        allowlist_rel=allowlist_rel,
        batch=batch,
    )


def _left_for_manual(p: _plan.FilePlan | None) -> bool:
    """A skipped file that needs a human (not one with nothing to do, nor one that failed)."""
    return p is not None and not p.doable and (bool(p.manual) or p.status in (CHANGED, ALREADY, NEEDS_MANUAL))


def _branch_name(opts: Options, group: list[str], index: int, count: int) -> str:
    if opts.branch:
        return opts.branch if count == 1 else f"{opts.branch}-{index + 1}"
    return _plan.default_branch(group)


def run(repo: Repo, opts: Options) -> Outcome:
    base = repo.resolve(opts.base)
    if not opts.allow_dirty:
        dirty = repo.dirty_paths()
        if dirty:
            raise RefactorError(
                "the work tree has uncommitted changes ("
                + ", ".join(dirty[:5])
                + (" ..." if len(dirty) > 5 else "")
                + "): commit or stash them, or pass --allow-dirty (they are never committed)"
            )
    plan = plan_groups(repo, opts, base)
    groups, plans = plan.groups, plan.plans
    out = os.path.abspath(opts.out or os.path.join(repo.root, ".decouple-out"))
    outcome = Outcome(base=base, skipped=plan.skipped, excluded=plan.excluded, out_dir=out, plans=plans)
    records = []
    for i, group in enumerate(groups):
        name = _branch_name(opts, group, i, len(groups))
        repo.check_branch_name(name)
        records.append(BranchRecord(branch=name, files=group, base=base, status=BranchStatus.WOULD_CREATE))
    if len({r.branch for r in records}) != len(records):
        raise RefactorError("two groups would get the same branch name: pass distinct --branch names")
    for rec in records:
        if rec.branch in SUMMARY_FILES:
            raise RefactorError(
                f"branch {rec.branch}: its output folder would be the batch's {rec.branch}: pick --branch"
            )
    # manual work left: in the files picked, and the files named (not a batch's candidates, which
    # a batch skips by design) that were skipped for it; a dry run counts it the same way
    outcome.manual_left = sum(len(plans[f].manual) for g in groups for f in g)
    if not plan.batch:
        outcome.manual_left += sum(1 for s in plan.skipped if _left_for_manual(plans.get(s.path)))
    if opts.dry_run:
        for rec in records:
            head = repo.branch_head(rec.branch)
            if head is not None:
                _existing(repo, rec, head, load_state(out))
        outcome.branches = records
        return outcome

    state = load_state(out)
    with repo.scratch_worktree(base) as wt:
        for rec in records:
            head = repo.branch_head(rec.branch)
            if head is not None:
                if not _existing(repo, rec, head, state):
                    outcome.branches.append(rec)
                    continue
                wt.switch(rec.head)  # detached: the branch may be checked out in your own tree
            else:
                file_plans, changed = _edit_group(wt, rec.files, plan.allowlist_rel, opts)
                if not changed:
                    outcome.skipped += [
                        SkippedFile(path=f, reason="nothing to change", status=UNCHANGED) for f in rec.files
                    ]
                    continue
                rec.head = wt.commit_branch(rec.branch, changed, _plan.commit_message(file_plans, base))
                rec.status = BranchStatus.CREATED
                opts.say(f"branch {rec.branch}: {rec.head[:12]} on {base[:12]}")
            _verify(repo, wt, rec, opts, out)
            record_state(out, rec.branch, asdict(rec))
            outcome.branches.append(rec)
            wt.switch(base)
    write_summary(out, outcome)
    return outcome


# --- the batch summary ---------------------------------------------------------------------------


def summary_markdown(outcome: Outcome) -> str:
    lines = [
        "# decouple refactor: batch summary",
        "",
        f"Base: `{outcome.base}`",
        "",
        "| Branch | Files | Status | Verdict | PR body |",
        "|---|---|---|---|---|",
    ]
    for b in outcome.branches:
        files = "<br>".join(f"`{f}`" for f in b.files)
        status = b.status + (f": {b.note}" if b.note else "")
        body = os.path.relpath(b.pr_body, outcome.out_dir) if b.pr_body else ""
        lines.append(f"| `{b.branch}` | {files} | {status} | {b.verdict or 'not run'} | {body} |")
    lines += ["", f"## Skipped files ({len(outcome.skipped)})", ""]
    lines += [f"- `{s.path}`: {s.reason}" for s in outcome.skipped] or ["None."]
    if outcome.excluded:
        lines += ["", f"## Excluded files ({len(outcome.excluded)})", ""]
        lines += [f"- `{e.path}`: {e.reason}" for e in outcome.excluded]
    return "\n".join(lines) + "\n"


def write_summary(out: str, outcome: Outcome) -> None:
    write_text(os.path.join(out, "batch.json"), json.dumps(outcome.to_json(), indent=2) + "\n")
    write_text(os.path.join(out, "batch.md"), summary_markdown(outcome))


__all__ = ["AbSettings", "Options", "Outcome", "RefactorError", "GitError", "run", "plan_groups"]
