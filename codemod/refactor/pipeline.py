"""`decouple refactor`: plan at the base, one branch + commit per group, A/B, reports, PR body.

Orchestration only: the edits are the engine's (`engine.run_files`), graduation is
`discovery.graduate`, the verification is the A/B runner's `run_ab` and the reports are the
report modules'. Everything that writes git objects happens in a temporary linked work tree
(`gitrepo.Repo.scratch_worktree`), so the user's checkout is never touched.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from codemod.ab.result.model import ABResult
from codemod.engine import rules_choice
from codemod.engine.discovery import graduate, read_allowlist
from codemod.engine.process import run_files
from codemod.engine.result import FAILED, UNCHANGED, Mode
from codemod.refactor import plan as _plan
from codemod.refactor import verdicts
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
from codemod.refactor.selection import (
    AbSettings,
    ExcludedFile,
    Options,
    Plan,
    RefactorError,
    SkippedFile,
    held_by,
    left_for_manual,
    plan_groups,
)
from transforms.core.strenum import StrEnum


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
    verdict: str | None = None  # the branch's: never better than any of its files' own (`verdicts`)
    # the verdict as the console and batch.md say it: "SAFE; 2 failing in both arms, unchanged"
    verdict_summary: str = ""
    note: str = ""
    pr_body: str = ""
    reports: dict[str, str] = field(default_factory=dict)
    # files the commit graduated whose tests the A/B run saw run unclassified (the census):
    # "path: Class, Class"; manual work, said in the PR body
    unclassified: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class Outcome:
    base: str
    branches: list[BranchRecord] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    excluded: list[ExcludedFile] = field(default_factory=list)
    manual_left: int = 0
    out_dir: str = ""
    plans: dict[str, _plan.FilePlan] = field(default_factory=dict, repr=False)  # by path (printed by a dry run)
    # The branches state.json records that this run did not look at (an earlier run's), as recorded.
    earlier: list[dict[str, Any]] = field(default_factory=list)

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
            "earlier": self.earlier,
        }


# --- one group ---------------------------------------------------------------------------------


def _planned_rules(plans: dict[str, _plan.FilePlan], files: list[str]) -> str:
    """The generation of the linter's rules the plan (and its gate) applied to `files`: the
    edits committed must be the ones planned and gated, not the newest generation's."""
    names = {plans[f].rules if f in plans else "" for f in files}
    if len(names) != 1 or "" in names:
        raise RefactorError(f"{', '.join(files)}: the plan names no single generation of the linter's rules")
    return names.pop()


def _edit_group(
    wt: Worktree, files: list[str], allowlist_rel: str | None, opts: Options, rules: str
) -> tuple[list[_plan.FilePlan], list[str]]:
    """Write the edits, under the generation `rules` the plan applied, and graduate the
    allowlist in the scratch tree: (plans, changed paths)."""
    full = {os.path.join(wt.root, *f.split("/")): f for f in files}
    transforms = rules_choice.with_rules(opts.transforms, rules)
    results = run_files(list(full), transforms, Mode.WRITE, opts.jobs)
    for r in results:
        _plan.accept_as_is(r)  # as the plan did: a file with no test class is graduated as it is
    plans = {full[r.path]: _plan.from_result(full[r.path], r) for r in results}
    for p in plans.values():
        p.rules = rules  # the commit's Decouple-Rules trailer
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
    runnable = [p.path for p in facts.files if not p.no_test_class]  # a file with no test class has none to run
    if not runnable:
        rec.note = "no test class in its files: no test to run"
    elif not opts.no_ab:
        opts.say(f"A/B: {rec.branch} against {rec.base[:12]}")
        result = _run_ab(wt, runnable, rec.base, opts, _plan.test_map(facts.files))
        judged = verdicts.judge(result, facts.files)
        rec.verdict, rec.verdict_summary = judged.verdict, judged.summary()
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
        rec.verdict_summary = saved.get("verdict_summary", "")
        rec.pr_body, rec.reports = saved.get("pr_body", ""), saved.get("reports", {})
        return False
    rec.status = BranchStatus.AB_RERUN
    return True


# --- the whole run -------------------------------------------------------------------------------


def _branch_names(opts: Options, plan: Plan, used: set[str]) -> list[str]:
    """A branch name per group: an earlier run's branch keeps its name; a new group gets
    `--branch` (NAME-1, NAME-2, ... when there are several, past the names earlier branches
    use), else its default name."""
    new = [i for i in range(len(plan.groups)) if i not in plan.earlier]
    names = dict(plan.earlier)
    if not opts.branch:
        return [names.get(i) or _plan.default_branch(g) for i, g in enumerate(plan.groups)]
    if len(new) == 1 and not plan.earlier and opts.branch not in used:
        return [opts.branch]
    numbered = (f"{opts.branch}-{k}" for k in range(1, len(used) + len(new) + 2))
    free = (name for name in numbered if name not in used)
    return [names.get(i) or next(free) for i in range(len(plan.groups))]


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
    out = os.path.abspath(opts.out or os.path.join(repo.root, ".decouple-out"))
    state = load_state(out)
    held = held_by(repo, state)
    plan = plan_groups(repo, opts, base, held)
    groups, plans = plan.groups, plan.plans
    outcome = Outcome(base=base, skipped=plan.skipped, excluded=plan.excluded, out_dir=out, plans=plans)
    if not (opts.paths or opts.batches is not None or groups or plan.skipped or plan.excluded):
        return outcome  # an empty allowlist: nothing to do, and no summary is written
    records = []
    for group, name in zip(groups, _branch_names(opts, plan, set(held)), strict=True):
        repo.check_branch_name(name)
        records.append(BranchRecord(branch=name, files=group, base=base, status=BranchStatus.WOULD_CREATE))
    if len({r.branch for r in records}) != len(records):
        raise RefactorError("two groups would get the same branch name: pass distinct --branch names")
    for rec in records:
        if rec.branch in SUMMARY_FILES:
            raise RefactorError(
                f"branch {rec.branch}: its output folder would be the batch's {rec.branch}: pick --branch"
            )
    # manual work left: in the files picked, and the files named (not an allowlist's or a survey's
    # candidates, which a batch skips by design) that were skipped for it, whatever --group-size
    # or --limit; a dry run counts it the same way
    outcome.manual_left = sum(len(plans[f].manual) for g in groups for f in g if f in plans)
    if opts.paths:
        outcome.manual_left += sum(1 for s in plan.skipped if left_for_manual(plans.get(s.path)))
    if opts.dry_run:
        for rec in records:
            head = repo.branch_head(rec.branch)
            if head is not None:
                _existing(repo, rec, head, state)
        outcome.branches = records
        outcome.earlier = _earlier(repo, load_state(out), records)
        return outcome

    with repo.scratch_worktree(base) as wt:
        for rec in records:
            head = repo.branch_head(rec.branch)
            if head is not None:
                if not _existing(repo, rec, head, state):
                    outcome.branches.append(rec)
                    continue
                wt.switch(rec.head)  # detached: the branch may be checked out in your own tree
            else:
                file_plans, changed = _edit_group(
                    wt, rec.files, plan.allowlist_rel, opts, _planned_rules(plans, rec.files)
                )
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
    outcome.earlier = _earlier(repo, load_state(out), outcome.branches)
    write_summary(out, outcome)
    return outcome


def _earlier(repo: Repo, state: dict[str, dict[str, Any]], records: list[BranchRecord]) -> list[dict[str, Any]]:
    """The branches state.json records that this run did not look at, as recorded (the ones
    deleted since say so): batch.md lists every branch the output folder holds."""
    this_run = {r.branch for r in records}
    earlier = []
    for name in sorted(set(state) - this_run):
        record = dict(state[name])
        if repo.branch_head(name) is None:
            record["note"] = "the branch no longer exists" + (f"; {record['note']}" if record.get("note") else "")
        earlier.append(record)
    return earlier


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
        lines.append(_summary_row(asdict(b), outcome.out_dir))
    if outcome.earlier:
        lines += ["", f"## Branches of earlier runs ({len(outcome.earlier)}, from state.json)", ""]
        lines += ["| Branch | Files | Status | Verdict | PR body |", "|---|---|---|---|---|"]
        lines += [_summary_row(record, outcome.out_dir) for record in outcome.earlier]
    lines += ["", f"## Skipped files ({len(outcome.skipped)})", ""]
    lines += [f"- `{s.path}`: {s.reason}" for s in outcome.skipped] or ["None."]
    if outcome.excluded:
        lines += ["", f"## Excluded files ({len(outcome.excluded)})", ""]
        lines += [f"- `{e.path}`: {e.reason}" for e in outcome.excluded]
    return "\n".join(lines) + "\n"


def _summary_row(b: dict[str, Any], out_dir: str) -> str:
    files = "<br>".join(f"`{f}`" for f in b.get("files", []))
    status = str(b.get("status", "")) + (f": {b['note']}" if b.get("note") else "")
    body = os.path.relpath(b["pr_body"], out_dir) if b.get("pr_body") else ""
    verdict = b.get("verdict_summary") or b.get("verdict") or "not run"
    return f"| `{b.get('branch', '')}` | {files} | {status} | {verdict} | {body} |"


def write_summary(out: str, outcome: Outcome) -> None:
    write_text(os.path.join(out, "batch.json"), json.dumps(outcome.to_json(), indent=2) + "\n")
    write_text(os.path.join(out, "batch.md"), summary_markdown(outcome))


__all__ = ["AbSettings", "ExcludedFile", "Options", "Outcome", "RefactorError", "GitError", "run", "plan_groups"]
