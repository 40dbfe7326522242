"""The `decouple` command line.

Exit codes (every command):
    0  done, or nothing to do
    1  changes needed (--diff / --check), classes needing manual work (apply, classify;
       with --check / --diff only under --strict), or (ab) a REGRESSION verdict
    2  usage error, bad input (missing path, unreadable / undecodable / syntax-error
       file, broken interpreter) or an internal error
    3  (ab) INCONCLUSIVE verdict
"""

from __future__ import annotations

import json
import os
import sys
from typing import NoReturn

import click

from codemod.cli.ab import ab
from codemod.cli.options import STDIN, gate_options, linter_option, selection_options, stdin_quiet_options
from codemod.cli.transform_setup import SetupError, build_transforms, label_transform
from codemod.engine import linter_gate
from codemod.engine import process as engine
from codemod.engine.discover_globals import discover_globals
from codemod.engine.discovery import (
    DiscoveryError,
    diff_name,
    discover,
    exclude_patterns,
    graduate,
    read_allowlist,
    read_paths_file,
)
from codemod.engine.result import FAILED, FileResult, RunResult
from codemod.report import github, lintrunner, sarif
from codemod.report import text as text_report
from codemod.util.config import Config, ConfigError, load_config
from codemod.util.files import MAX_SOURCE_BYTES, SourceError, decode_source
from transforms import restructure
from transforms.torch_load import MODES


def fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"decouple: error: {message}", err=True)
    sys.exit(code)


def _progress(enabled: bool):
    if not enabled:
        return None

    def wrap(results, total):
        with click.progressbar(results, length=total, label="decouple", file=sys.stderr) as bar:
            yield from bar

    return wrap


def _select(cfg: Config, paths, allowlist_path, exclude, no_default_excludes, missing_ok=False):
    allowlist = None
    paths = list(paths)
    allowlist_path = allowlist_path or (cfg.allowlist if not paths else None)
    if allowlist_path:
        allowlist = read_allowlist(allowlist_path)
        paths += allowlist.files()
    if not paths:
        raise click.UsageError("name at least one file or folder, or --from-allowlist PATH")
    missing = [p for p in paths if not os.path.exists(p)]
    if allowlist is not None:
        # An allowlist entry whose file is gone is stale, not a usage error.
        stale = [p for p in missing if p in set(allowlist.files())]
        missing = [p for p in missing if p not in set(stale)]
        paths = [p for p in paths if p not in set(stale)]
    else:
        stale = []
    if missing and not missing_ok:
        raise DiscoveryError(f"no such file or folder: {', '.join(missing)}")
    paths = [p for p in paths if p not in set(missing)]
    return discover(paths, exclude_patterns(cfg.exclude, exclude, no_default_excludes)), allowlist, stale, missing


def _config() -> Config:
    """[tool.decouple] of the nearest pyproject.toml, read once per command."""
    try:
        return load_config()
    except ConfigError as e:
        fail(str(e))


def _set_names(transforms) -> tuple[str, ...]:
    """The classes --set names (the label transform's overrides)."""
    return tuple(name for name, _ in next((t.per_class for t in transforms if hasattr(t, "per_class")), ()))


def _unknown_classes(transforms, results) -> None:
    """--set naming a class no selected file defines (after any restructuring) is a usage
    error (exit 2)."""
    seen = {x.cls for f in results for x in f.findings if x.cls}
    unknown = [name for name in _set_names(transforms) if name not in seen]
    if unknown:
        fail(f"--set {', '.join(unknown)}: no test class of that name in the selected files; nothing written")


def _stdin_run(mode: str, transforms, name: str | None, gate: str, python: str) -> RunResult:
    """`-`: one file read from standard input, named `name` in messages (never written). The
    gate judges its would-be output as it judges a file's, at `name`'s place in the mirror."""
    name = name or "<stdin>"
    data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)  # bounded, as for files
    try:
        if len(data) > MAX_SOURCE_BYTES:
            raise SourceError(f"too large: more than {MAX_SOURCE_BYTES:,} bytes on standard input; not processed")
        src = decode_source(data)
    except SourceError as e:
        return RunResult(mode, [FileResult(name, FAILED, reason=str(e))])
    linters, ungated = _resolve_gate(gate, [name])
    run = RunResult(mode, [engine.process_file(name, transforms, mode, src=src, staged=bool(linters))])
    if gate != "off":
        # A file of that name on disk is not what was read: the gate encodes as standard input was.
        _gate(run, gate, linters, ungated, python, encodings={name: src.encoding})
    return run


def _resolve_gate(gate: str, files: list[str]):
    try:
        return linter_gate.resolve(gate, files)
    except linter_gate.GateError as e:
        fail(f"linter gate: {e}")


def _run(
    cfg,
    mode,
    paths,
    allowlist_path,
    exclude,
    no_default_excludes,
    jobs,
    transforms,
    graduate_flag=False,
    strict=False,
    stdin_filename=None,
    quiet=False,
    linter=None,
    python=None,
):
    gate = (linter or cfg.linter or "auto") if transforms else "off"
    gate_python = python or cfg.python or sys.executable
    if STDIN in paths:
        if len(paths) > 1 or allowlist_path:
            raise click.UsageError("`-` (standard input) must be the only path")
        return _stdin_run(mode, transforms, stdin_filename, gate, gate_python)
    if stdin_filename:
        raise click.UsageError("--stdin-filename goes with `-` as the path")
    try:
        found, allowlist, stale, missing = _select(
            cfg, paths, allowlist_path, exclude, no_default_excludes, missing_ok=mode == "lint"
        )
    except DiscoveryError as e:
        fail(str(e))
    jobs = jobs or cfg.jobs
    if mode == "write" and _set_names(transforms):
        # Check the --set names on a look-only pass (up to the labels), before any file is written.
        upto = next(i for i, t in enumerate(transforms) if hasattr(t, "per_class")) + 1
        _unknown_classes(transforms, engine.run_files(found.files, transforms[:upto], "classify", jobs))
    show_progress = not quiet and sys.stderr.isatty() and len(found.files) > 50
    root = allowlist.root if allowlist is not None else None
    linters, ungated = _resolve_gate(gate, found.files)
    results = engine.run_files(
        found.files,
        transforms,
        mode,
        jobs,
        _progress(show_progress),
        display=lambda p: diff_name(p, root),
        staged=bool(linters),
    )
    _unknown_classes(transforms, results)
    results += [FileResult(p, FAILED, reason="no such file or folder") for p in missing]
    run = RunResult(mode, results, strict=strict)
    if gate != "off":
        _gate(run, gate, linters, ungated, gate_python)
    if stale:
        run.warnings.append(f"{len(stale)} allowlist entries name files that do not exist: {', '.join(stale)}")
    if found.excluded:
        run.warnings.append(f"{len(found.excluded)} file(s) excluded by glob")
    if graduate_flag:
        done = {f.path for f in results if f.fully_classified and f.status != "failed"}
        run.graduated = graduate(allowlist, done)
    return run


def _gate(run: RunResult, setting: str, linters, ungated, python: str, encodings=None) -> None:
    """Judge the staged outputs with the checkout's linter, then write what it accepts."""
    try:
        linter_gate.gate_run(run, setting, linters, ungated, python, encodings)
    except linter_gate.GateError as e:
        fail(f"linter gate: {e} (nothing was written)")
    if not linters:
        return  # nothing was staged: the engine wrote as usual
    for f in run.files:
        if run.mode == "write":
            engine.write_staged(f)
        if run.mode != "lint" or f.replacement == f.original:
            f.original = f.replacement = None  # lint keeps the texts of files it would change


def _emit(run: RunResult, fmt: str, table: bool, quiet: bool = False) -> None:
    if fmt == "json":
        click.echo(json.dumps(run.to_json(), indent=2))
        return
    if fmt == "github":
        click.echo(github.render(lintrunner.messages(run)), nl=False)
        return
    if fmt == "sarif":
        click.echo(json.dumps(sarif.render(lintrunner.messages(run)), indent=2))
        return
    if table:
        click.echo(text_report.classification_table(run), nl=False)
    click.echo(text_report.problems(run), nl=False, err=True)
    if not quiet:
        click.echo(text_report.summary(run), nl=False, err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="test-decouple")
def main() -> None:
    """Label PyTorch test classes with HardwareClassification, make torch.load explicit,
    and prove the change with an A/B run.

    Exit codes: 0 done / nothing to do; 1 changes needed (--diff/--check), manual work
    left (under --check/--diff only with --strict), or an A/B REGRESSION; 2 usage, input or
    internal error; 3 A/B INCONCLUSIVE.
    """


@main.command()
@selection_options
@gate_options
@stdin_quiet_options
def classify(
    paths,
    allowlist,
    exclude,
    no_default_excludes,
    jobs,
    fmt,
    classification,
    per_class,
    force,
    stdin_filename,
    quiet,
    linter,
    python,
):
    """Show the classification of every test class, with its evidence. Writes nothing.
    PATH `-` reads one file from standard input."""
    transform = label_transform(classification, per_class, force)
    run = _run(
        _config(),
        "classify",
        paths,
        allowlist,
        exclude,
        no_default_excludes,
        jobs,
        [transform],
        stdin_filename=stdin_filename,
        quiet=quiet,
        linter=linter,
        python=python,
    )
    _emit(run, fmt, table=True, quiet=quiet)
    sys.exit(run.exit_code())


@main.command()
@selection_options(formats=("lintrunner", "text", "github", "sarif"), default="lintrunner")
@stdin_quiet_options
@click.option(
    "--paths-file",
    type=click.Path(dir_okay=False),
    help="Read more paths from this file, one per line (lintrunner's {{PATHSFILE}}).",
)
@gate_options
def lint(
    paths,
    allowlist,
    exclude,
    no_default_excludes,
    jobs,
    fmt,
    classification,
    per_class,
    force,
    stdin_filename,
    quiet,
    paths_file,
    linter,
    python,
):
    """Lint messages in the upstream test linter's severities: lintrunner LintMessage JSON
    lines (the label edits as an autofix `replacement`), or `text` lines, GitHub annotations,
    SARIF. Writes nothing. Exit 0 with --format lintrunner unless the invocation itself is
    wrong (as lintrunner expects); with the other formats, 1 when any message is an error.
    PATH `-` reads one file from standard input."""
    if paths_file is not None:
        try:
            paths = list(paths) + read_paths_file(paths_file)
        except DiscoveryError as e:
            fail(str(e))
    transform = label_transform(classification, per_class, force)
    run = _run(
        _config(),
        "lint",
        paths,
        allowlist,
        exclude,
        no_default_excludes,
        jobs,
        [transform],
        stdin_filename=stdin_filename,
        quiet=quiet,
        linter=linter,
        python=python,
    )
    messages = list(lintrunner.messages(run))
    if fmt == "lintrunner":
        click.echo(lintrunner.render(messages), nl=False)
        sys.exit(0)
    if fmt == "github":
        click.echo(github.render(messages), nl=False)
    elif fmt == "sarif":
        click.echo(json.dumps(sarif.render(messages), indent=2))
    else:
        click.echo(lintrunner.render_text(messages), nl=False)
    sys.exit(1 if any(m["severity"] == "error" for m in messages) else 0)


@main.command()
@selection_options
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
    help="With --from-allowlist: remove the entries of files that end up fully classified.",
)
@click.option("--stats", is_flag=True, help="Print a per-rule statistics table.")
@click.option(
    "--torch-load",
    "torch_load",
    type=click.Choice(MODES),
    default=None,
    help="Also make torch.load calls explicit (default: leave them alone).",
)
@click.option(
    "--globals",
    "globals_file",
    type=click.Path(dir_okay=False),
    help="JSON written by `decouple discover-globals` (for safe-globals / auto).",
)
@click.option("--explain", is_flag=True, help="With --torch-load: add a short comment saying why.")
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Target interpreter (default: [tool.decouple] python, else this one). It is probed "
    "for its torch version (torch-load) and for HardwareClassification.",
)
@click.option("--no-label", is_flag=True, help="Do not add hw_classification labels (torch.load edits only).")
@click.option(
    "--restructure",
    "restructure_names",
    metavar="auto|NAME[,NAME]",
    default=None,
    help=f"Restructure classes no label fits, before labelling: auto, or any of "
    f"{', '.join(restructure.REGISTRY)} (opt-in; see README).",
)
@click.option(
    "--map-out",
    "map_out",
    type=click.Path(dir_okay=False),
    default=None,
    help="With --restructure: write the old -> new test-id map as JSON (for `decouple ab --map-file`).",
)
@linter_option
def apply(
    paths,
    allowlist,
    exclude,
    no_default_excludes,
    jobs,
    fmt,
    classification,
    per_class,
    force,
    stdin_filename,
    quiet,
    show_diff,
    check,
    strict,
    graduate_flag,
    stats,
    torch_load,
    globals_file,
    explain,
    python,
    no_label,
    restructure_names,
    map_out,
    linter,
):
    """Insert hw_classification labels (and the import) where the rules allow it; with
    --torch-load, make torch.load calls explicit too. PATH `-` reads one file from standard
    input (with --diff or --check: nothing is written)."""
    if show_diff and check:
        raise click.UsageError("--diff and --check exclude each other")
    mode = "diff" if show_diff else "check" if check else "write"
    if STDIN in paths and mode == "write":
        raise click.UsageError("`-` (standard input) needs --diff or --check: there is no file to write")
    if fmt in ("github", "sarif") and mode != "check":
        raise click.UsageError(f"--format {fmt} goes with --check")
    if graduate_flag and mode != "write":
        raise click.UsageError("--graduate only makes sense when writing (drop --diff/--check)")
    cfg = _config()
    if graduate_flag and not (allowlist or (not paths and cfg.allowlist)):
        raise click.UsageError("--graduate needs --from-allowlist (or [tool.decouple] allowlist)")
    if no_label and not torch_load and not restructure_names:
        raise click.UsageError("--no-label leaves nothing to do without --torch-load or --restructure")
    if map_out and not restructure_names:
        raise click.UsageError("--map-out goes with --restructure")
    explicit_python = python or cfg.python
    try:
        setup = build_transforms(
            label=not no_label,
            classification=classification,
            per_class=per_class,
            force=force,
            restructure_names=restructure_names,
            torch_load=torch_load,
            globals_file=globals_file,
            explain=explain,
            python=explicit_python,
        )
    except SetupError as e:
        fail(str(e))
    run = _run(
        cfg,
        mode,
        paths,
        allowlist,
        exclude,
        no_default_excludes,
        jobs,
        setup.transforms,
        graduate_flag,
        strict,
        stdin_filename=stdin_filename,
        quiet=quiet,
        linter=linter,
        python=explicit_python,
    )
    run.warnings += setup.warnings
    if map_out:
        _write_map(map_out, run)
    if mode == "diff" and fmt == "text":
        for f in run.files:
            if f.diff:
                click.echo(f.diff, nl=not f.diff.endswith("\n"))
    _emit(run, fmt, table=False, quiet=quiet)
    if stats and fmt == "text":
        click.echo(text_report.rule_statistics(run), nl=False, err=True)
    sys.exit(run.exit_code())


def _write_map(path: str, run: RunResult) -> None:
    moves = {f.path: restructure.moves_from_findings(f.findings) for f in run.files}
    document = restructure.map_document({p: m for p, m in moves.items() if m})
    try:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2)
            out.write("\n")
    except OSError as e:
        fail(f"cannot write --map-out {path}: {e.strerror or e}")


main.add_command(ab)
main.add_command(discover_globals)

from codemod.cli.refactor import pr_body, refactor  # noqa: E402  (they reuse this module's helpers)

main.add_command(refactor)
main.add_command(pr_body)
