"""The codemod commands: `classify`, `lint` and `apply`.

Each builds its options (one dataclass per command, from the shared option groups) once from
click's parameters, turns them into a `CodemodRun` with the configuration's defaults, and
prints the RunResult in the format asked for.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

import click

from codemod.cli.options import (
    EditChoice,
    GateChoice,
    InputChoice,
    LabelChoice,
    OutputFormat,
    Selection,
    build,
    explain_option,
    fail,
    format_option,
    gate_options,
    globals_option,
    interpreter_path,
    label_options,
    linter_option,
    load_config,
    nothing_to_do,
    restructure_option,
    rules_option,
    selection_options,
    stdin_quiet_options,
    torch_load_option,
    verbose_option,
)
from codemod.cli.transform_setup import SetupError, build_transforms, label_transform
from codemod.engine import pipeline
from codemod.engine.discovery import DiscoveryError, EmptyAllowlist, read_paths_file
from codemod.engine.pipeline import STDIN, CodemodRun
from codemod.engine.result import FileResult, Mode, RunResult
from codemod.report.findings import github, lintrunner, sarif
from codemod.report.findings import text as text_report
from codemod.util.config import Config
from codemod.util.files import signals_held
from codemod.util.lintmessage import LintSeverity
from transforms.core.base import Transform


@dataclass(frozen=True, kw_only=True)
class ClassifyOptions:
    selection: Selection
    fmt: OutputFormat
    labels: LabelChoice
    gate: GateChoice
    input: InputChoice
    verbose: bool


@dataclass(frozen=True, kw_only=True)
class LintOptions:
    selection: Selection
    fmt: OutputFormat
    labels: LabelChoice
    input: InputChoice
    paths_file: str | None
    include_allowlisted: bool  # the allowlisted files' work too (upstream's linter skips them)
    gate: GateChoice


@dataclass(frozen=True, kw_only=True)
class ApplyOptions:
    selection: Selection
    fmt: OutputFormat
    labels: LabelChoice
    input: InputChoice
    show_diff: bool
    check: bool
    strict: bool
    graduate_flag: bool
    stats: bool
    edits: EditChoice
    gate: GateChoice  # --python: the target interpreter, which runs the gate too
    no_label: bool
    map_out: str | None
    verbose: bool

    @property
    def mode(self) -> Mode:
        return Mode.DIFF if self.show_diff else Mode.CHECK if self.check else Mode.WRITE


def _progress(results: Iterable[FileResult], total: int) -> Iterator[FileResult]:
    with click.progressbar(results, length=total, label="decouple", file=sys.stderr) as bar:
        yield from bar


def _run(
    cfg: Config,
    mode: Mode,
    fmt: OutputFormat,
    selection: Selection,
    gate: GateChoice,
    given: InputChoice,
    transforms: list[Transform],
    *,
    paths: tuple[str, ...] | list[str] | None = None,
    graduate: bool = False,
    strict: bool = False,
) -> RunResult:
    """The run the options ask for, with [tool.decouple]'s defaults. `paths`: the paths named
    (default: the selection's). An empty allowlist ends the command here (exit 0)."""
    paths = list(selection.paths if paths is None else paths)
    request = CodemodRun(
        mode=mode,
        transforms=transforms,
        paths=paths,
        allowlist=selection.allowlist_or_configured(cfg, paths),
        excludes=selection.excludes.patterns(cfg),
        jobs=selection.jobs or cfg.jobs,
        gate=gate.setting(cfg) if transforms else "off",
        rules=gate.rules_setting(cfg),
        gate_python=gate.interpreter(cfg),
        graduate=graduate,
        strict=strict,
        stdin_name=given.stdin_filename,
        progress=None if given.quiet or not sys.stderr.isatty() else _progress,
        cache=not given.no_cache,
    )
    try:
        return pipeline.run(request)
    except pipeline.UsageError as e:
        raise click.UsageError(str(e)) from None
    except pipeline.RunError as e:
        fail(str(e))
    except EmptyAllowlist as e:
        _nothing_to_do(str(e), mode, fmt)


def _nothing_to_do(message: str, mode: Mode, fmt: OutputFormat) -> NoReturn:
    """Say so, and print the empty document a machine format promises (exit 0)."""
    if fmt == OutputFormat.JSON:
        click.echo(json.dumps(RunResult(mode=mode).to_json(), indent=2))
    elif fmt == OutputFormat.SARIF:
        click.echo(json.dumps(sarif.render([]), indent=2))
    nothing_to_do(message)


def _emit(run: RunResult, fmt: OutputFormat, table: bool, quiet: bool = False, verbose: bool = False) -> None:
    if fmt == OutputFormat.JSON:
        click.echo(json.dumps(run.to_json(), indent=2))
        return
    if fmt == OutputFormat.GITHUB:
        click.echo(github.render(lintrunner.messages(run)), nl=False)
        return
    if fmt == OutputFormat.SARIF:
        click.echo(json.dumps(sarif.render(lintrunner.messages(run)), indent=2))
        return
    if table:
        click.echo(text_report.classification_table(run), nl=False)
    click.echo(text_report.problems(run), nl=False, err=True)
    if not quiet:
        click.echo(text_report.summary(run), nl=False, err=True)
    if verbose and run.stale:
        click.echo(
            "allowlist entries whose file is gone:\n" + "".join(f"  {p}\n" for p in run.stale), nl=False, err=True
        )


@click.command()
@selection_options
@format_option()
@label_options
@gate_options
@stdin_quiet_options
@verbose_option
def classify(**params: Any) -> None:
    """Show the classification of every test class, with its evidence. Writes nothing.
    PATH `-` reads one file from standard input."""
    opts = build(ClassifyOptions, params)
    transform = label_transform(opts.labels)
    run = _run(load_config(), Mode.CLASSIFY, opts.fmt, opts.selection, opts.gate, opts.input, [transform])
    _emit(run, opts.fmt, table=True, quiet=opts.input.quiet, verbose=opts.verbose)
    sys.exit(run.exit_code())


@click.command()
@selection_options
@format_option(
    formats=(OutputFormat.LINTRUNNER, OutputFormat.TEXT, OutputFormat.GITHUB, OutputFormat.SARIF),
    default=OutputFormat.LINTRUNNER,
)
@label_options
@stdin_quiet_options
@click.option(
    "--paths-file",
    type=click.Path(dir_okay=False),
    help="Read more paths from this file, one per line (lintrunner's {{PATHSFILE}}).",
)
@click.option(
    "--include-allowlisted",
    is_flag=True,
    help="Also the work in the files the checkout's allowlist names (by default each gets one advice, "
    "as upstream's linter skips them); --from-allowlist implies it.",
)
@gate_options
def lint(**params: Any) -> None:
    """Lint messages in the upstream test linter's severities: lintrunner LintMessage JSON
    lines (the label edits as an autofix `replacement`), or `text` lines, GitHub annotations,
    SARIF. A file the checkout's allowlist names gets one advice (what `decouple refactor`
    would do), as upstream's linter skips it, unless --include-allowlisted or --from-allowlist.
    Writes nothing. Exit 0 with --format lintrunner unless the invocation itself is
    wrong (as lintrunner expects); with the other formats, 1 when any message is an error.
    PATH `-` reads one file from standard input."""
    opts = build(LintOptions, params)
    paths = list(opts.selection.paths)
    if opts.paths_file is not None:
        try:
            paths += read_paths_file(opts.paths_file)
        except DiscoveryError as e:
            fail(str(e))
    transform = label_transform(opts.labels)
    cfg = load_config()
    run = _run(cfg, Mode.LINT, opts.fmt, opts.selection, opts.gate, opts.input, [transform], paths=paths)
    # Naming the allowlist asks for its files' work; otherwise they are judged as upstream judges them.
    include = opts.include_allowlisted or bool(opts.selection.allowlist_or_configured(cfg, paths))
    messages = list(lintrunner.messages(run, allowlisted_as_upstream=not include))
    if opts.fmt == OutputFormat.LINTRUNNER:
        click.echo(lintrunner.render(messages), nl=False)
        sys.exit(0)
    if opts.fmt == OutputFormat.GITHUB:
        click.echo(github.render(messages), nl=False)
    elif opts.fmt == OutputFormat.SARIF:
        click.echo(json.dumps(sarif.render(messages), indent=2))
    else:
        click.echo(lintrunner.render_text(messages), nl=False)
    sys.exit(1 if any(m["severity"] == LintSeverity.ERROR for m in messages) else 0)


@click.command()
@selection_options
@format_option()
@label_options
@stdin_quiet_options
@click.option("--diff", "show_diff", is_flag=True, help="Print unified diffs, write nothing; exit 1 if any.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if a change is needed.")
@click.option(
    "--strict", is_flag=True, help="With --check/--diff: also exit 1 when classes (or calls) are left for manual work."
)
@click.option(
    "--graduate",
    "graduate_flag",
    is_flag=True,
    help="With --from-allowlist: remove the entries of files that end up fully classified (with --check: "
    "say which would go, exit 1 if any).",
)
@click.option("--stats", is_flag=True, help="Print a per-rule statistics table.")
@torch_load_option
@globals_option
@explain_option
@click.option(
    "--python",
    "python",
    metavar="PATH",
    callback=interpreter_path,
    help="Target interpreter (default: [tool.decouple] python, else this one). It is probed "
    "for its torch version (torch-load) and for HardwareClassification.",
)
@click.option("--no-label", is_flag=True, help="Do not add hw_classification labels (torch.load edits only).")
@restructure_option
@click.option(
    "--map-out",
    "map_out",
    type=click.Path(dir_okay=False),
    default=None,
    help="With --restructure: write the old -> new test-id map as JSON (for `decouple ab --map-file`).",
)
@linter_option
@rules_option
@verbose_option
def apply(**params: Any) -> None:
    """Insert hw_classification labels (and the import) where the rules allow it; with
    --torch-load, make torch.load calls explicit too. PATH `-` reads one file from standard
    input (with --diff or --check: nothing is written)."""
    opts = build(ApplyOptions, params)
    sel, edits, mode = opts.selection, opts.edits, opts.mode
    if opts.show_diff and opts.check:
        raise click.UsageError("--diff and --check exclude each other")
    if STDIN in sel.paths and mode == Mode.WRITE:
        raise click.UsageError("`-` (standard input) needs --diff or --check: there is no file to write")
    if opts.fmt in (OutputFormat.GITHUB, OutputFormat.SARIF) and mode != Mode.CHECK:
        raise click.UsageError(f"--format {opts.fmt} goes with --check")
    if opts.graduate_flag and mode == Mode.DIFF:
        raise click.UsageError("--graduate goes with writing, or with --check (which entries would go); not --diff")
    cfg = load_config()
    if opts.graduate_flag and not (sel.allowlist or (not sel.paths and cfg.allowlist)):
        raise click.UsageError("--graduate needs --from-allowlist (or [tool.decouple] allowlist)")
    if opts.no_label and not edits.torch_load and not edits.restructure_names:
        raise click.UsageError("--no-label leaves nothing to do without --torch-load or --restructure")
    if opts.map_out and not edits.restructure_names:
        raise click.UsageError("--map-out goes with --restructure")
    try:
        setup = build_transforms(
            opts.labels, opts.edits, label=not opts.no_label, python=opts.gate.python or cfg.python
        )
    except SetupError as e:
        fail(str(e))
    run = _run(
        cfg,
        mode,
        opts.fmt,
        sel,
        opts.gate,
        opts.input,
        setup.transforms,
        graduate=opts.graduate_flag,
        strict=opts.strict,
    )
    run.warnings += setup.warnings
    if opts.map_out:
        _write_map(opts.map_out, run)
    if mode == Mode.DIFF and opts.fmt == OutputFormat.TEXT:
        for f in run.files:
            if f.diff:
                click.echo(f.diff, nl=not f.diff.endswith("\n"))
    _emit(run, opts.fmt, table=False, quiet=opts.input.quiet, verbose=opts.verbose)
    if opts.stats and opts.fmt == OutputFormat.TEXT:
        click.echo(text_report.rule_statistics(run), nl=False, err=True)
    sys.exit(run.exit_code())


def _write_map(path: str, run: RunResult) -> None:
    from transforms import restructure  # late: only --restructure runs need the package

    moves = {f.path: restructure.moves_from_findings(f.findings) for f in run.files}
    document = restructure.map_document({p: m for p, m in moves.items() if m})
    try:
        with signals_held(), open(path, "w", encoding="utf-8") as out:  # Ctrl-C: after the write
            json.dump(document, out, indent=2)
            out.write("\n")
    except OSError as e:
        fail(f"cannot write --map-out {path}: {e.strerror or e}")
