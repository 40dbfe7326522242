"""`decouple refactor` and `decouple pr-body`."""

from __future__ import annotations

import json
import os
import sys

import click

from codemod.cli_options import exclude_options
from codemod.cli_transforms import SetupError, build_transforms
from codemod.discovery import exclude_patterns
from codemod.refactor import pipeline, prbody
from codemod.refactor import plan as _plan
from codemod.refactor.gitrepo import GitError, open_repo

_VERDICT_EXIT = {"SAFE": 0, "REGRESSION": 1, "INCONCLUSIVE": 3}


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"decouple: error: {message}", err=True)
    sys.exit(code)


def _print_plan(outcome: pipeline.Outcome, plans: dict) -> None:
    click.echo(f"dry run: nothing is written (base {outcome.base[:12]})")
    for rec in outcome.branches:
        if rec.status != "would-create":
            click.echo(f"\nbranch {rec.branch}: {rec.status}" + (f" ({rec.note})" if rec.note else ""))
            continue
        click.echo(f"\nwould create branch {rec.branch} from {rec.base[:12]} with this commit:\n")
        file_plans = [plans[f] for f in rec.files]
        click.echo("    " + _plan.commit_message(file_plans, rec.base).rstrip("\n").replace("\n", "\n    "))
        for p in file_plans:
            if p.diff:
                click.echo("\n" + p.diff, nl=not p.diff.endswith("\n"))
    for s in outcome.skipped:
        click.echo(f"skip {s['path']}: {s['reason']}")
    for e in outcome.excluded:
        click.echo(f"exclude {e['path']}: {e['reason']}")


def _report(outcome: pipeline.Outcome, current: str) -> None:
    for rec in outcome.branches:
        verdict = rec.verdict or "A/B not run"
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
        click.echo(f"{len(outcome.skipped)} file(s) skipped (reasons in the batch summary)")
    if outcome.excluded:
        click.echo(f"{len(outcome.excluded)} file(s) excluded by a pattern (listed in the batch summary)")
    if outcome.out_dir and os.path.isdir(outcome.out_dir):
        click.echo(f"batch summary: {os.path.join(outcome.out_dir, 'batch.md')}")
    click.echo(f"you are still on {current}; nothing was pushed")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, type=click.Path())
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
@click.option("-j", "--jobs", type=click.IntRange(1), help="Worker processes for the edits and the A/B run.")
@click.option("--classification", metavar="VALUE", help="Use VALUE for every unlabelled test class.")
@click.option("--set", "per_class", multiple=True, metavar="CLASS=VALUE", help="Use VALUE for CLASS (repeatable).")
@click.option("--force", is_flag=True, help="Apply an override even when it breaks a linter rule.")
@click.option(
    "--torch-load",
    "torch_load",
    type=click.Choice(["weights-only-false", "safe-globals", "auto"]),
    help="Also make torch.load calls explicit (as `apply --torch-load`).",
)
@click.option("--globals", "globals_file", type=click.Path(dir_okay=False), help="discover-globals JSON.")
@click.option("--explain", is_flag=True, help="With --torch-load: add a short comment saying why.")
@click.option(
    "--restructure",
    "restructure_names",
    metavar="auto|NAME[,NAME]",
    help="Restructure classes no label fits first (as `apply --restructure`); such files count "
    "as doable in a batch, and the A/B compares moved tests with their old selves.",
)
@click.option("--python", metavar="PATH", help="Target interpreter for the A/B run and torch probes.")
@click.option("--env", multiple=True, metavar="K=V", help="A/B: set a variable in every arm (repeatable).")
@click.option("--diag", multiple=True, metavar="NAME[@B]:K=V[,K=V]", help="A/B: a diagnostic arm (repeatable).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=600.0,
    show_default=True,
    help="A/B: per-test limit in seconds; 0 = none.",
)
@click.option(
    "--confirm",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="A/B: reruns of each discordant test per arm.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr: the plan or the report only.")
@click.option(
    "--linter",
    metavar="auto|PATH|off",
    default=None,
    help="Gate: the base commit's own tools/linter/adapters/test_linter.py (auto), or PATH, judges "
    "every would-be output under --python; a file it rejects is not committed nor graduated. "
    "Default: [tool.decouple] linter, else auto.",
)
def refactor(
    paths,
    allowlist,
    exclude,
    no_default_excludes,
    branch,
    base,
    allow_dirty,
    dry_run,
    no_ab,
    out,
    lang,
    limit,
    group_size,
    jobs,
    classification,
    per_class,
    force,
    torch_load,
    globals_file,
    explain,
    restructure_names,
    python,
    env,
    diag,
    timeout,
    confirm,
    quiet,
    linter,
):
    """From test files (or the allowlist) to reviewable branches: label, graduate, commit on a
    new branch from --base, verify with an A/B run, write the reports and PR_BODY.md.

    Your checkout is never touched (the work happens in a temporary linked work tree); nothing
    is pushed. Exit: 0 SAFE; 1 REGRESSION, manual work left or a branch whose base moved;
    2 usage/input error; 3 INCONCLUSIVE.
    """
    from codemod import cli
    from codemod.ab import options as _options
    from codemod.ab import processes as _procs

    cfg = cli._config()
    try:
        ab = dict(
            python=python or cfg.python or sys.executable,
            env=_options.parse_env(env),
            diags=[_options.parse_diag(d) for d in diag],
            timeout=timeout,
            confirm=confirm,
        )
    except (_options.UsageError, ValueError) as e:
        raise click.UsageError(str(e)) from e
    if jobs:
        ab["jobs"] = jobs
    say = (lambda m: None) if quiet else (lambda m: click.echo(m, err=True))
    try:
        setup = build_transforms(
            label=True,
            classification=classification,
            per_class=per_class,
            force=force,
            restructure_names=restructure_names,
            torch_load=torch_load,
            globals_file=globals_file,
            explain=explain,
            python=python or cfg.python,
        )
    except SetupError as e:
        _fail(str(e))
    for warning in setup.warnings:
        say(f"warning: {warning}")
    opts = pipeline.Options(
        paths=list(paths),
        transforms=setup.transforms,
        base=base,
        allowlist=allowlist or cfg.allowlist,
        branch=branch,
        allow_dirty=allow_dirty,
        dry_run=dry_run,
        no_ab=no_ab,
        out=out,
        lang=lang,
        limit=limit,
        group_size=group_size,
        jobs=jobs or cfg.jobs,
        ab=ab,
        linter=linter or cfg.linter or "auto",
        exclude=exclude_patterns(cfg.exclude, exclude, no_default_excludes),
        say=say,
    )
    try:
        repo = open_repo(".")
        current = repo.repo.head.ref.name if not repo.repo.head.is_detached else "a detached HEAD"
        outcome = pipeline.run(repo, opts)
    except (pipeline.RefactorError, GitError) as e:
        _fail(str(e))
    except _procs.Interrupted as e:
        click.echo(
            f"decouple refactor: interrupted ({e.signame}); the temporary work tree was removed, "
            "branches already committed are kept",
            err=True,
        )
        sys.exit(143 if e.signame == "SIGTERM" else 130)
    if dry_run:
        _print_plan(outcome, outcome.plans)
        sys.exit(1 if outcome.manual_left else 0)
    if not outcome.branches:
        reasons = [f"{s['path']}: {s['reason']}" for s in outcome.skipped + outcome.excluded]
        click.echo("nothing to refactor: " + "; ".join(reasons))
        sys.exit(outcome.exit_code() or (1 if outcome.skipped else 0))
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
@click.option("-q", "--quiet", is_flag=True, help="For uniformity: pr-body prints only the body (and errors) anyway.")
def pr_body(ab_json, branch, lang, output, quiet):
    """Compose PR_BODY.md from a refactor commit and an A/B result (the split-machine path:
    `refactor --no-ab` here, `ab --json` on the target machine, then this). Exit: the verdict's
    code (0 SAFE, 1 REGRESSION, 3 INCONCLUSIVE), 0 without --ab, 2 on bad input."""
    from codemod.ab.model import ABResult

    try:
        repo = open_repo(".")
        _, message, _ = repo.commit_info(branch)
    except GitError as e:
        _fail(str(e))
    facts = _plan.parse_commit_message(message)
    if facts is None:
        _fail(f"{branch} is not a commit made by `decouple refactor`")
    result = None
    if ab_json:
        try:
            with open(ab_json, encoding="utf-8") as f:
                result = ABResult.from_json(json.load(f))
        except (ValueError, KeyError, TypeError) as e:
            _fail(f"{ab_json}: not an A/B result ({e})")
    text = prbody.compose(facts, result, lang)
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        click.echo(text, nl=False)
    sys.exit(_VERDICT_EXIT.get(result.verdict, 3) if result is not None else 0)
