"""`decouple ab`: run the ORIGINAL and the MODIFIED tests, compare, give a verdict.

`ab` is a click Group whose default action is the run: any first argument
that is not a subcommand name (``merge``) is handed to ``ab run``, so both
``decouple ab tests/ --base HEAD~1`` and ``decouple ab merge a.json b.json``
work.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from codemod.ab.arms.options import PACK_FROM
from codemod.ab.result.model import ABResult
from codemod.cli.options import (
    ArmChoice,
    build,
    confirm_option,
    diag_option,
    env_option,
    interpreter_path,
    load_config,
    stack,
    timeout_option,
)
from codemod.util.config import Config
from codemod.util.jsonfile import read_json

if TYPE_CHECKING:
    from codemod.ab.arms.options import RunOptions

_EPILOG = """\b
Diagnostic arms (--diag, repeatable):
  NAME:K=V[,K=V...]      rerun arm A's code with the extra variables
  NAME@B:K=V[,K=V...]    the same on arm B's code
  e.g. --diag weights:TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1
--diagnose adds such arms by itself, for the failing tests only, from the
cause table (codemod/ab/comparison/causes.py), and reports each cause as confirmed or not.
\b
Verdict and exit code: SAFE 0, REGRESSION 1, INCONCLUSIVE 3; 2 = usage or
internal error, or a report that could not be written (the verdict is still
printed); 130/143 = interrupted (temp roots removed).
"""


class DefaultRunGroup(click.Group):
    """A group that runs `default_cmd` when the first argument is not a subcommand."""

    default_cmd = "run"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # `decouple ab --help` is the group's help (listing run and merge), not run's
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            args = [self.default_cmd, *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx, formatter):  # pragma: no cover - cosmetic
        formatter.write_usage(
            ctx.command_path, "[run] PATHS... (--base REF | --a-root DIR --b-root DIR) [OPTIONS] | merge RESULT.json..."
        )


# Exit code when the verdict was reached but a report file could not be written:
# never 1 (REGRESSION) or 3 (INCONCLUSIVE), so a script cannot mistake it for a verdict.
REPORT_WRITE_ERROR = 2


class _ReportError(click.ClickException):
    exit_code = REPORT_WRITE_ERROR


@dataclass(frozen=True, kw_only=True)
class ReportChoice:
    """The reports an A/B command writes (`ab run`, `ab merge`) and how it prints its summary."""

    json_path: str | None
    markdown: str | None
    html: str | None
    junit: str | None
    lang: str
    color: bool | None  # None: if standard output is a terminal (and NO_COLOR is unset)
    quiet: bool


def _render_reports(result: ABResult, reports: ReportChoice) -> list[tuple[str, str]]:
    """(path, text) for every report asked for."""
    out = []
    if reports.json_path:
        out.append((reports.json_path, result_json(result)))
    for path, module, with_lang in (
        (reports.markdown, "codemod.report.ab.markdown", True),
        (reports.html, "codemod.report.ab.html", True),
        (reports.junit, "codemod.report.ab.junit", False),
    ):
        if not path:
            continue
        try:
            mod = importlib.import_module(module)
        except ImportError as err:
            raise _ReportError(f"cannot write {path}: report module {module} is not available ({err})") from err
        out.append((path, mod.render(result, reports.lang) if with_lang else mod.render(result)))
    return out


def result_json(result: ABResult) -> str:
    """The result as JSON text that always encodes: a lone surrogate (an undecodable
    file name in a test message) is written as its JSON escape and reads back the same."""
    return json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n"


def check_report_paths(reports: ReportChoice, **others: str | None) -> None:
    """Refuse, before any work, a report path whose folder does not exist (no folder is
    created), and two outputs on one file (the later would replace the earlier): the reports,
    the repro.sh next to the Markdown/HTML reports, `others` (option name -> path)."""
    named = {"--json": reports.json_path, "--markdown": reports.markdown, "--html": reports.html}
    named |= {"--junit": reports.junit, **{"--" + k.replace("_", "-"): v for k, v in others.items()}}
    seen: dict[tuple, str] = {}
    for path in named.values():
        if not path:
            continue
        parent = Path(path).parent
        if not parent.is_dir():
            raise _ReportError(f"cannot write {path}: folder {parent} does not exist")
    for target in repro_paths(reports.markdown, reports.html):
        named[f"{target.name} (written next to the Markdown/HTML report)"] = str(target)
    for flag, path in named.items():
        if not path or (os.path.exists(path) and not os.path.isfile(path)):  # /dev/stdout: written, not replaced
            continue
        key = _file_key(path)
        if key in seen:
            raise _ReportError(f"{seen[key]} and {flag.split(' ')[0]} name one file, {path}: give each its own")
        seen[key] = flag


def _file_key(path: str) -> tuple:
    """What identifies a file: its device and inode when it exists (a hard link is the same
    file), else its resolved path."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except OSError:
        return (os.path.realpath(path),)


def _write(path: str, text: str) -> None:
    """Write `text` as UTF-8 (surrogates as backslash escapes). A regular file is replaced
    atomically (never half-written); a device or pipe (e.g. /dev/stdout) is written directly."""
    data = text.encode("utf-8", "backslashreplace")
    p = Path(path)
    if not p.parent.is_dir():
        raise OSError(f"folder {p.parent} does not exist")
    if p.exists() and not p.is_file():
        with open(p, "wb") as f:
            f.write(data)
        return
    from codemod.util.files import signals_held

    target = p.resolve() if p.is_symlink() else p
    tmp = target.with_name(f".{target.name}.decouple-tmp-{os.getpid()}")
    with signals_held():
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def repro_paths(markdown: str | None, html: str | None) -> list[Path]:
    """Where repro.sh goes: next to each Markdown/HTML report (they refer to it), unless
    the report is not a regular file in a folder (a device such as /dev/stdout)."""
    from codemod.report.ab.repro import REPRO_SCRIPT

    out: list[Path] = []
    for path in (markdown, html):
        if not path:
            continue
        p = Path(path)
        if (p.exists() and not p.is_file()) or not p.parent.is_dir():
            continue
        target = p.parent / REPRO_SCRIPT
        if target not in out:
            out.append(target)
    return out


def _write_reports(
    result: ABResult, reports: ReportChoice, extra: list[tuple[str, str]]
) -> tuple[list[str], list[Path]]:
    """Write every report, repro.sh and the `extra` (path, text) outputs; return the error
    messages (one per file that could not be written) and the repro.sh files written."""
    errors: list[str] = []
    written: list[Path] = []
    for path, text in [*_render_reports(result, reports), *extra]:
        try:
            _write(path, text)
        except OSError as err:
            errors.append(f"cannot write {path}: {err.strerror or err}")
    from codemod.report.ab import repro as ab_repro

    for target in repro_paths(reports.markdown, reports.html):
        try:
            _write(str(target), ab_repro.render(result))
            target.chmod(0o755)
            written.append(target)
        except OSError as err:
            errors.append(f"cannot write {target}: {err.strerror or err}")
    return errors, written


_report_options = stack(
    click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the result as JSON."),
    click.option("--markdown", type=click.Path(dir_okay=False), help="Write a Markdown report."),
    click.option("--html", type=click.Path(dir_okay=False), help="Write an HTML report."),
    click.option("--junit", type=click.Path(dir_okay=False), help="Write a JUnit XML report."),
    click.option(
        "--lang",
        type=click.Choice(["en", "zh"]),
        default="en",
        show_default=True,
        help="Language of the Markdown/HTML reports.",
    ),
    click.option("--color/--no-color", default=None, help="Colour the terminal summary (default: if a tty)."),
    click.option("-q", "--quiet", is_flag=True, help="No progress lines; summary only."),
)


def _finish(result: ABResult, reports: ReportChoice, extra: list[tuple[str, str]] | None = None) -> None:
    from codemod.ab.comparison.compare import exit_code
    from codemod.report.ab import terminal

    color = reports.color
    if color is None:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    errors, repro = _write_reports(result, reports, extra or [])
    click.echo(terminal.render(result, color=color, repro=str(repro[0]) if repro else None), nl=False)
    for err in errors:
        click.echo(f"decouple ab: error: {err} (verdict {result.verdict} above; exit {REPORT_WRITE_ERROR})", err=True)
    sys.exit(REPORT_WRITE_ERROR if errors else exit_code(result.verdict))


_GROUP_HELP = f"""Run the ORIGINAL (A) and MODIFIED (B) versions of test files and compare them.

`decouple ab PATHS... --base REF [OPTIONS]` is `decouple ab run`: its options (--python, -j,
--map, --diagnose, --test-plan, the reports, ...) are listed by `decouple ab run -h`.

Both arms run under the chosen interpreter, in parallel, each in a temporary copy (your tree
is never written): a pytest process per file, or, from {PACK_FROM} files on (and wherever forking
is unsafe), several files to a pytest session (--pack/--no-pack).

Exit: SAFE 0, REGRESSION 1, INCONCLUSIVE 3; 2 usage or internal error.
"""


@click.group(
    cls=DefaultRunGroup,
    name="ab",
    help=_GROUP_HELP,
    epilog="Run options: decouple ab run -h. Combining shards: decouple ab merge -h.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
def ab() -> None:
    pass


@dataclass(frozen=True, kw_only=True)
class AbRunOptions:
    paths: tuple[str, ...]
    base: str | None
    a_root: str | None
    b_root: str | None
    python: str | None
    arms: ArmChoice
    hw: tuple[str, ...]
    file_timeout: float
    jobs: int | None
    mapping: tuple[str, ...]
    map_file: str | None
    shard: str | None
    durations: tuple[str, ...]
    durations_out: str | None
    fsync: str
    fork: bool
    pack: bool | None
    diagnose: bool
    diagnose_budget: float
    test_plan: bool
    label_filter: bool
    keep_temp: bool
    reports: ReportChoice

    def run_options(self, cfg: Config) -> RunOptions:
        """The A/B runner's RunOptions, with [tool.decouple]'s python and jobs as the defaults of
        --python and -j; a malformed value is a usage error."""
        from codemod.ab.arms import options as _options
        from codemod.ab.arms import shard as _shard
        from codemod.ab.comparison import compare as _compare

        arms = self.arms.run_fields()
        try:
            mapping = {
                **_compare.parse_mapping(self.mapping),
                **(_compare.read_map_file(self.map_file) if self.map_file else {}),
            }
            opts = _options.RunOptions(
                paths=list(self.paths),
                base=self.base,
                a_root=self.a_root,
                b_root=self.b_root,
                shard=self.shard,
                durations=_shard.load_durations(self.durations) if self.durations else None,
                progress=None if self.reports.quiet else (lambda m: click.echo(m, err=True)),
                python=self.python or cfg.python or sys.executable,
                hw_classification=[x for item in self.hw for x in item.replace(",", " ").split()],
                file_timeout=self.file_timeout,
                jobs=self.jobs or cfg.jobs or (os.cpu_count() or 1),
                mapping=mapping,
                keep_temp=self.keep_temp,
                fsync=_options.FsyncPolicy(self.fsync),
                fork=self.fork,
                test_plan=self.test_plan,
                label_filter=self.label_filter,
                pack=self.pack,
                **arms,
            )
            _options.parse_shard(self.shard)
        except (_options.UsageError, ValueError) as err:  # DurationsError is a ValueError
            raise click.UsageError(str(err)) from err
        return opts


@ab.command("run", epilog=_EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--base", metavar="REF", help="Arm A = PATHS as at git REF; arm B = the work tree (with uncommitted changes)."
)
@click.option("--a-root", type=click.Path(file_okay=False), help="Arm A = this directory (PATHS relative to it).")
@click.option("--b-root", type=click.Path(file_okay=False), help="Arm B = this directory (PATHS relative to it).")
@click.option(
    "--python",
    "python",
    metavar="PATH",
    callback=interpreter_path,
    default=None,
    help="Target interpreter (default: [tool.decouple] python, else the one running decouple). Must import pytest.",
)
@env_option
@diag_option
@click.option(
    "--hw-classification",
    "hw",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Pass --hw-classification NAME... to arm B (and diagnostic arms on B), when the target "
    "torch has HardwareClassification and a conftest.py in the tree defines the option.",
)
@timeout_option
@click.option(
    "--file-timeout",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Per-file limit in seconds (all processes of one file); 0 = none.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Parallel test processes, all arms together (default: [tool.decouple] jobs, else number of cores).",
)
@confirm_option
@click.option(
    "--map",
    "mapping",
    multiple=True,
    metavar="OLD=NEW",
    help="Compare a moved/renamed test with its old self: node-id prefix "
    "(test_x.py::TestOld=test_x.py::TestNew) or class/function name (TestOld=TestNew).",
)
@click.option(
    "--map-file",
    "map_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Read more --map entries (re:REGEX=TEMPLATE too) from a test map, e.g. the JSON "
    "`decouple apply --restructure ... --map-out FILE` writes.",
)
@click.option(
    "--shard",
    metavar="I/N",
    help="Run only shard I of N: files balanced by --durations (else by size), a dominating "
    "file split by node id. Every shard computes the same plan.",
)
@click.option(
    "--durations",
    "durations",
    multiple=True,
    type=click.Path(exists=True),
    metavar="PATH",
    help="Recorded times for --shard: a --durations-out file, an earlier --json result, or a "
    "folder of them (repeatable).",
)
@click.option(
    "--durations-out",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Write this run's per-file and per-test times (input for a later --durations).",
)
@click.option(
    "--fsync",
    type=click.Choice(["none", "start", "all"]),
    default="none",
    show_default=True,
    help="fsync the capture file: never (each event is still one write(2), kept when a test "
    "process dies), at test starts, or at every event (~1 ms each on a disk).",
)
@click.option(
    "--fork/--no-fork",
    "fork",
    default=True,
    show_default=True,
    help="Warm interpreters that import pytest and torch once (shared by the arms where no import "
    "can tell them apart) and fork a process per file; --no-fork starts a fresh interpreter for every file.",
)
@click.option(
    "--pack/--no-pack",
    default=None,
    help="Run each arm's files several to a pytest session (N/2 sessions per arm with -j N), as plain pytest "
    "runs a directory: a file then costs only its tests, but the tests of a session share its process. "
    f"Default: packed from {PACK_FROM} files on, and wherever forking is unsafe; --no-pack runs a process per file.",
)
@click.option(
    "--diagnose",
    is_flag=True,
    help="After the comparison, confirm the cause of each group of failures by experiment "
    "(reruns only the failing tests with the cause table's diagnostic variables; bounded).",
)
@click.option(
    "--diagnose-budget",
    type=click.FloatRange(min=1),
    default=600.0,
    show_default=True,
    help="With --diagnose: seconds allowed per test file in the diagnosis run.",
)
@click.option(
    "--test-plan",
    is_flag=True,
    help="Also run, in B, each file's Test Plan command as a PR prints it (the form its tree runs it in: "
    "pytest with the conftest's --hw-classification, run_tests(), unittest.main(), the runner it names) and "
    "record what it printed.",
)
@click.option(
    "--label-filter/--no-label-filter",
    "label_filter",
    default=True,
    show_default=True,
    help="Where the tree's conftest.py offers --hw-classification, run B's labelled files once more under "
    "that filter and report how many tests it keeps of how many.",
)
@click.option("--keep-temp", is_flag=True, hidden=True, help="Debugging: keep the temporary roots.")
@_report_options
def run_cmd(**params: Any) -> None:
    """Run PATHS in arm A and arm B and compare every test.

    PATHS are test files, directories or node ids (file.py::Class::test).
    The word `run` may be left out: `decouple ab PATHS... --base REF`.
    """
    from codemod.ab.arms import options as _options
    from codemod.ab.arms import shard as _shard
    from codemod.ab.execution import processes as _processes
    from codemod.ab.execution import run as _run

    args = build(AbRunOptions, params)
    reports = args.reports
    if not args.base and not (args.a_root and args.b_root):
        raise click.UsageError("give --base REF, or both --a-root DIR and --b-root DIR")
    check_report_paths(reports, durations_out=args.durations_out)
    if args.base and (args.a_root or args.b_root):
        raise click.UsageError("--base and --a-root/--b-root exclude each other")
    opts = args.run_options(load_config())
    try:
        result = _run.run_ab(opts)
        if args.diagnose:
            from codemod.ab.execution import diagnose as _diagnose

            result = _diagnose.diagnose(
                result,
                opts,
                _run.run_ab,
                budget=args.diagnose_budget,
                say=opts.progress or (lambda _m: None),
            )
        else:
            from codemod.ab.comparison import causes

            result.causes = causes.analyse(result)
    except _options.UsageError as err:
        click.echo(f"decouple ab: error: {err}", err=True)
        sys.exit(2)
    except _processes.Interrupted as err:
        click.echo(f"decouple ab: interrupted ({err.signame}); temporary roots removed", err=True)
        sys.exit(143 if err.signame == "SIGTERM" else 130)
    except Exception:  # an internal error is exit 2, never a verdict
        import traceback

        traceback.print_exc()
        click.echo("decouple ab: internal error (temporary roots removed)", err=True)
        sys.exit(2)
    extra = []
    if args.durations_out:
        tests = _shard.from_result(result).tests
        extra.append((args.durations_out, _shard.durations_json(result.file_durations, tests)))
    _finish(result, reports, extra)


@dataclass(frozen=True, kw_only=True)
class AbMergeOptions:
    results: tuple[str, ...]
    allow_missing: bool
    reports: ReportChoice


@ab.command("merge", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--allow-missing",
    is_flag=True,
    help="Merge an incomplete set of shards (the verdict is then never SAFE and names the missing ones).",
)
@_report_options
def merge_cmd(**params: Any) -> None:
    """Combine the shard results of one run (RESULT.json files from --json) into one report.

    The shards must be those of one run (same code in both arms, decouple version, shard count
    and options), each given once, all of them (or --allow-missing); anything else is exit 2."""
    from codemod.ab.comparison import merge as _merge

    args = build(AbMergeOptions, params)
    reports = args.reports
    check_report_paths(reports)
    loaded = []
    for path in args.results:
        try:
            loaded.append(ABResult.from_json(read_json(path, "the file")))
        except ValueError as err:  # JSONInputError (unreadable, not JSON, too deep), wrong shape
            raise click.UsageError(f"{path}: not an A/B result ({err})") from err
    try:
        merged = _merge.merge(loaded, args.results, allow_missing=args.allow_missing)
    except (ValueError, TypeError, AttributeError, KeyError) as err:
        raise click.UsageError(f"cannot merge these results: {err}") from err
    from codemod.ab.comparison import causes

    merged.causes = causes.analyse(merged)  # the groups span all shards now
    _finish(merged, reports)


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - python -m codemod.cli.ab
    ab.main(args=argv, prog_name="decouple ab")


if __name__ == "__main__":  # pragma: no cover
    main()
