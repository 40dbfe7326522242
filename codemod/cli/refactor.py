"""`decouple refactor` and `decouple pr-body`."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import click

from codemod.cli.options import (
    ArmChoice,
    EditChoice,
    Excludes,
    LabelChoice,
    build,
    confirm_option,
    diag_option,
    env_option,
    exclude_options,
    explain_option,
    fail,
    globals_option,
    interpreter_path,
    label_options,
    load_config,
    nothing_to_do,
    paths_argument,
    restructure_option,
    rules_option,
    timeout_option,
    torch_load_option,
)
from codemod.cli.transform_setup import SetupError, build_transforms
from codemod.refactor import pipeline, prbody, provenance
from codemod.refactor import plan as _plan
from codemod.refactor.gitrepo import GitError, open_repo
from codemod.refactor.selection import DEFAULT_ALLOWLIST
from codemod.util.files import signals_held
from codemod.util.jsonfile import read_json, read_option_json
from transforms.core.words import plural


def _print_plan(outcome: pipeline.Outcome, plans: dict) -> None:
    click.echo(f"dry run: nothing is written (base {outcome.base[:12]})")
    for rec in outcome.branches:
        if rec.status != pipeline.BranchStatus.WOULD_CREATE:
            click.echo(f"\nbranch {rec.branch}: {rec.status}" + (f" ({rec.note})" if rec.note else ""))
            continue
        click.echo(f"\nwould create branch {rec.branch} from {rec.base[:12]} with this commit:\n")
        file_plans = [plans[f] for f in rec.files]
        click.echo("    " + _plan.commit_message(file_plans, rec.base).rstrip("\n").replace("\n", "\n    "))
        for p in file_plans:
            if p.diff:
                click.echo("\n" + p.diff, nl=not p.diff.endswith("\n"))
    for word, items in (("skip", outcome.skipped), ("exclude", outcome.excluded)):
        for line in _grouped(word, [(x.path, x.reason) for x in items]):
            click.echo(line)


SHOWN_PER_REASON = 5


def _grouped(word: str, items: list[tuple[str, str]]) -> list[str]:
    """One line per file, but at most SHOWN_PER_REASON for one reason, then their count: an
    allowlist of thousands of stale entries ('not a file at ...') says so in a few lines."""
    by_reason: dict[str, list[str]] = {}
    for path, reason in items:
        by_reason.setdefault(reason, []).append(path)
    lines = []
    for reason, paths in by_reason.items():
        lines += [f"{word} {path}: {reason}" for path in paths[:SHOWN_PER_REASON]]
        if len(paths) > SHOWN_PER_REASON:
            lines.append(f"{word} {len(paths) - SHOWN_PER_REASON:,} more files: {reason}")
    return lines


def _report(outcome: pipeline.Outcome, current: str) -> None:
    for rec in outcome.branches:
        verdict = rec.verdict_summary or rec.verdict or "A/B not run"
        click.echo(f"{rec.branch}: {rec.status}, {verdict}" + (f" - {rec.note}" if rec.note else ""))
        click.echo(f"    files: {', '.join(rec.files)}")
        if rec.pr_body:
            click.echo(f"    PR body: {rec.pr_body}")
        for kind in ("html", "md", "json"):
            if kind in rec.reports:
                click.echo(f"    A/B {kind}: {rec.reports[kind]}")
        if rec.verdict in ("REGRESSION", "INCONCLUSIVE"):
            click.echo(f"    {rec.verdict}: the branch is kept for inspection (git checkout {rec.branch})")
    if outcome.skipped:
        click.echo(f"{plural(len(outcome.skipped), 'file')} skipped (reasons in the batch summary)")
    if outcome.excluded:
        n = len(outcome.excluded)
        click.echo(f"{plural(n, 'file')} excluded by a pattern (listed in the batch summary)")
    if outcome.earlier:
        n = len(outcome.earlier)
        click.echo(f"{plural(n, 'branch', 'branches')} of earlier runs not looked at (listed in the batch summary)")
    if outcome.out_dir and os.path.isdir(outcome.out_dir):
        click.echo(f"batch summary: {os.path.join(outcome.out_dir, 'batch.md')}")
    click.echo(f"you are still on {current}; nothing was pushed")


@dataclass(frozen=True, kw_only=True)
class RefactorOptions:
    paths: tuple[str, ...]
    allowlist: str | None  # as at --base
    excludes: Excludes
    branch: str | None
    base: str
    allow_dirty: bool
    dry_run: bool
    no_ab: bool
    out: str | None
    lang: str
    limit: int | None
    group_size: int | None
    batches: str | None  # a survey's JSON
    jobs: int | None
    labels: LabelChoice
    edits: EditChoice
    python: str | None
    arms: ArmChoice
    quiet: bool
    linter: str | None
    rules: str | None


def _survey_batches(opts: RefactorOptions) -> tuple[list[list[str]] | None, dict[str, str]]:
    """The survey's batches a run takes, and the files it does not take (path -> why): the files
    it finds doable but put in no batch, and, without --restructure, the restructure batches'."""
    if opts.batches is None:
        return None, {}
    if opts.paths:
        raise click.UsageError("--batches takes the files from the survey: name no PATH")
    if opts.group_size is not None:
        raise click.UsageError("--batches and --group-size exclude each other: the survey made the groups")
    from codemod.survey.model import BatchPlan, SurveyFormatError, read_batch_plans

    try:
        data = read_option_json(opts.batches, "--batches")
        planned = read_batch_plans(data)
    except (ValueError, SurveyFormatError) as e:
        fail(f"--batches {opts.batches}: {e}" if isinstance(e, SurveyFormatError) else str(e))
    restructures = bool(opts.edits.restructure_names)
    taken = [list(b.files) for b in planned if b.plan == BatchPlan.LABELS or restructures]
    left_out = _left_out(data, [list(b.files) for b in planned])
    for b in planned:
        if b.plan == BatchPlan.RESTRUCTURE and not restructures:
            why = (
                f"in the survey's batch {b.number}, which needs --restructure auto: "
                f"`decouple refactor --batches {opts.batches} --restructure auto` takes it"
            )
            left_out.update(dict.fromkeys(b.files, why))
    return taken, left_out


# The survey's statuses of the files a refactor can commit (labels alone, or with --restructure).
DOABLE_STATUSES = ("ready", "restructure")


def _left_out(data: Any, batches: list[list[str]]) -> dict[str, str]:
    """The survey's files of a doable status that no batch holds (a survey that batched only its
    ready files): refactor names them among the skipped files, with why."""
    batched = {f for b in batches for f in b}
    files = data.get("files") if isinstance(data, dict) else None
    out: dict[str, str] = {}
    for entry in files if isinstance(files, list) else []:
        if not isinstance(entry, dict):
            continue
        path, status = entry.get("path"), entry.get("status")
        if isinstance(path, str) and status in DOABLE_STATUSES and path not in batched:
            hint = " --restructure auto" if status == "restructure" else ""
            out[path] = (
                f"the survey marks it {status} but put it in no batch: name it (`decouple refactor {path}{hint}`) "
                "or survey again"
            )
    return out


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@paths_argument
@click.option(
    "--from-allowlist",
    "allowlist",
    type=click.Path(dir_okay=False),
    help="Take the files from this allowlist (as at --base), in its order; graduate them there.",
)
@exclude_options
@click.option(
    "--branch",
    metavar="NAME",
    help="Branch name (default hw-classification/<path-slug>; in a batch of several groups, NAME-1, NAME-2, ...).",
)
@click.option("--base", default="HEAD", show_default=True, metavar="REF", help="Start the branch(es) from REF.")
@click.option("--allow-dirty", is_flag=True, help="Run despite uncommitted changes (they are never committed).")
@click.option("--dry-run", is_flag=True, help="Print the plan (branches, commits, diffs); change nothing.")
@click.option("--no-ab", is_flag=True, help="Prepare branch and commit only (verify elsewhere, then `pr-body`).")
@click.option("--out", type=click.Path(file_okay=False), help="Output folder (default: <repo>/.decouple-out).")
@click.option(
    "--lang",
    type=click.Choice(["en", "zh"]),
    default="en",
    show_default=True,
    help="Language of PR_BODY.md and the reports.",
)
@click.option("--limit", type=click.IntRange(1), help="Batch: take the next N files that need no manual work.")
@click.option("--group-size", type=click.IntRange(1), help="Batch: K files per branch (default 1).")
@click.option(
    "--batches",
    metavar="SURVEY.json",
    type=click.Path(dir_okay=False),
    help="Batch: one branch per suggested batch of `decouple survey --json` (in its order; "
    "--limit N takes the first N).",
)
@click.option("-j", "--jobs", type=click.IntRange(1), help="Worker processes for the edits and the A/B run.")
@label_options
@torch_load_option
@globals_option
@explain_option
@restructure_option
@click.option(
    "--python", metavar="PATH", callback=interpreter_path, help="Target interpreter for the A/B run and torch probes."
)
@env_option
@diag_option
@timeout_option
@confirm_option
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr: the plan or the report only.")
@click.option(
    "--linter",
    metavar="auto|PATH|off",
    default=None,
    help="Gate: the base commit's own tools/linter/adapters/test_linter.py (auto), or PATH, judges "
    "every would-be output under --python; a file it rejects is not committed nor graduated. "
    "Default: [tool.decouple] linter, else auto.",
)
@rules_option
def refactor(**params: Any) -> None:
    """From test files (or the allowlist) to reviewable branches: label, graduate, commit on a
    new branch from --base, verify with an A/B run, write the reports and PR_BODY.md.

    Your checkout is never touched (the work happens in a temporary linked work tree); nothing
    is pushed. Exit: 0 SAFE; 1 REGRESSION, manual work left (also a file named and skipped for it;
    or a graduated file whose tests run unclassified) or a branch whose base moved; 2 usage/input
    error; 3 INCONCLUSIVE; 0 with nothing to do (an empty allowlist). --dry-run exits as the real run
    would, but for the verdicts.
    """
    from codemod.ab.execution import processes as _procs

    opts = build(RefactorOptions, params)
    cfg = load_config()
    batches, left_out = _survey_batches(opts)
    ab = pipeline.AbSettings(python=opts.python or cfg.python or sys.executable, **opts.arms.run_fields())
    say = (lambda m: None) if opts.quiet else (lambda m: click.echo(m, err=True))
    try:
        setup = build_transforms(opts.labels, opts.edits, label=True, python=opts.python or cfg.python)
    except SetupError as e:
        fail(str(e))
    for warning in setup.warnings:
        say(f"warning: {warning}")
    run_opts = pipeline.Options(
        paths=list(opts.paths),
        transforms=setup.transforms,
        base=opts.base,
        allowlist=opts.allowlist or cfg.allowlist,
        branch=opts.branch,
        allow_dirty=opts.allow_dirty,
        dry_run=opts.dry_run,
        no_ab=opts.no_ab,
        out=opts.out,
        lang=opts.lang,
        limit=opts.limit,
        group_size=opts.group_size,
        batches=batches,
        left_out=left_out,
        jobs=opts.jobs or cfg.jobs,
        ab=ab,
        linter=opts.linter or cfg.linter or "auto",
        rules=opts.rules or cfg.rules or "auto",
        exclude=opts.excludes.patterns(cfg),
        say=say,
    )
    try:
        repo = open_repo(".")
        current = repo.repo.head.ref.name if not repo.repo.head.is_detached else "a detached HEAD"
        outcome = pipeline.run(repo, run_opts)
    except (pipeline.RefactorError, GitError) as e:
        fail(str(e))
    except _procs.Interrupted as e:
        click.echo(
            f"decouple refactor: interrupted ({e.signame}); the temporary work tree was removed, "
            "branches already committed are kept",
            err=True,
        )
        sys.exit(143 if e.signame == "SIGTERM" else 130)
    if not (opts.paths or batches is not None or outcome.branches or outcome.skipped or outcome.excluded):
        # The candidates were the allowlist's entries, and each would have been branched, skipped or excluded.
        allowlist = run_opts.allowlist or DEFAULT_ALLOWLIST
        nothing_to_do(f"nothing to do: the allowlist {allowlist} is empty at {opts.base}")
    if opts.dry_run:  # the code the real run would exit with (but for the A/B verdicts it cannot know)
        _print_plan(outcome, outcome.plans)
        sys.exit(outcome.exit_code())
    if not outcome.branches:
        reasons = [f"{s.path}: {s.reason}" for s in outcome.skipped + outcome.excluded]
        click.echo("nothing to refactor: " + "; ".join(reasons))
        sys.exit(outcome.exit_code())
    _report(outcome, current)
    sys.exit(outcome.exit_code())


@click.command("pr-body", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--ab",
    "ab_json",
    type=click.Path(exists=True, dir_okay=False),
    help="A/B result (`decouple ab ... --json ab.json`) of the branch against its base.",
)
@click.option(
    "--branch",
    default="HEAD",
    show_default=True,
    metavar="REF",
    help="The branch `decouple refactor` made (its commit records the changes).",
)
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here instead of stdout.")
@click.option(
    "--force",
    is_flag=True,
    help="Compose the body even when the --ab result is not of this branch (other files, another "
    "base, arm B not the branch's tree).",
)
@click.option("-q", "--quiet", is_flag=True, help="For uniformity: pr-body prints only the body (and errors) anyway.")
def pr_body(ab_json: str | None, branch: str, lang: str, output: str | None, force: bool, quiet: bool) -> None:
    """Compose PR_BODY.md from a refactor commit and an A/B result (the split-machine path:
    `refactor --no-ab` here, `ab --json` on the target machine, then this). The result must be
    the branch's: its files, arm A at the branch's base, arm B the branch's tree (else exit 2,
    unless --force). Exit: the verdict's code (0 SAFE, 1 REGRESSION, 3 INCONCLUSIVE), 0 without
    --ab, 2 on bad input."""
    from codemod.ab.result.model import EXIT_CODES, ABResult

    if output and not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        fail(f"cannot write {output}: folder {os.path.dirname(os.path.abspath(output))} does not exist")
    try:
        repo = open_repo(".")
        _, message, _ = repo.commit_info(branch)
        tree = repo.tree(branch)
    except GitError as e:
        fail(str(e))
    facts = _plan.parse_commit_message(message)
    if facts is None:
        fail(f"{branch} is not a commit made by `decouple refactor`")
    result = None
    if ab_json:
        try:
            result = ABResult.from_json(read_json(ab_json, "the file"))
        except ValueError as e:  # JSONInputError (unreadable, not JSON, too deep), SchemaError
            fail(f"{ab_json}: not an A/B result ({e})")
        problems = provenance.foreign(result, facts, tree)
        if problems and not force:
            fail(
                f"{ab_json} is not the A/B result of {branch}: {'; '.join(problems)} (--force composes the body anyway)"
            )
        for problem in problems:
            click.echo(f"decouple pr-body: warning: {ab_json}: {problem} (--force)", err=True)
    text = prbody.compose(facts, result, lang)
    if output:
        try:
            with signals_held(), open(output, "w", encoding="utf-8") as f:  # Ctrl-C: after the write
                f.write(text)
        except OSError as e:
            fail(f"cannot write {output}: {e.strerror or e}")
    else:
        click.echo(text, nl=False)
    if result is None:
        sys.exit(0)
    from codemod.refactor.verdicts import judge

    sys.exit(EXIT_CODES.get(judge(result, facts.files).verdict, 3))  # the branch's: never better than a file's
