"""What the `decouple` commands share: every option declared once (so that each command spells,
documents and defaults it the same way), the option groups as dataclasses built from click's
parameters, the configuration defaults and the error exit."""

from __future__ import annotations

import dataclasses
import enum
import os
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import click

from codemod.engine.discovery import DEFAULT_EXCLUDES, exclude_patterns
from codemod.util import target_python
from codemod.util.config import Config, ConfigError
from codemod.util.config import load_config as _load_config
from transforms.core.strenum import StrEnum
from transforms.core.words import noun
from transforms.rules.generations import GENERATIONS
from transforms.torch_load import MODES

T = TypeVar("T")
Decorator = Callable[[T], T]


def interpreter_path(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """`--python`'s value, a path made absolute where the command started (`target_python.absolute`)."""
    return (target_python.absolute(value, os.getcwd()) or value) if value else value


def fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"decouple: error: {message}", err=True)
    sys.exit(code)


def nothing_to_do(message: str) -> NoReturn:
    """The run has nothing to do (an empty allowlist: the campaign is over): one line, exit 0."""
    click.echo(f"decouple: {message}", err=True)
    sys.exit(0)


def load_config() -> Config:
    """[tool.decouple] of the nearest pyproject.toml (read once per command); exit 2 if broken."""
    try:
        return _load_config()
    except ConfigError as e:
        fail(str(e))


def stack(*options: Decorator) -> Decorator:
    """One decorator applying `options` so that --help lists them in the given order."""

    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def build(cls: type[T], params: Mapping[str, Any]) -> T:
    """The options dataclass `cls` from click's parameters: a field takes the parameter of its
    name (as a member, when the field is an enum); a field whose type is an options dataclass is
    built the same way from the same parameters. A parameter no field takes is a programming
    error (TypeError): each option lands in exactly one place."""
    used: set[str] = set()
    options = _build(cls, params, used)
    unused = sorted(set(params) - used)
    if unused:
        raise TypeError(f"{cls.__name__} has no field for the {noun(len(unused), 'parameter')} {', '.join(unused)}")
    return options


def _build(cls: type[T], params: Mapping[str, Any], used: set[str]) -> T:
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # cls is a dataclass
        kind = hints[f.name]
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            values[f.name] = _build(kind, params, used)
            continue
        value = params[f.name]
        values[f.name] = kind(value) if isinstance(kind, type) and issubclass(kind, enum.Enum) else value
        used.add(f.name)
    return cls(**values)


# --- which files ---------------------------------------------------------------------------------

paths_argument = click.argument("paths", nargs=-1, type=click.Path())

exclude_options = stack(
    click.option(
        "--exclude",
        multiple=True,
        metavar="GLOB",
        help="Skip files matching GLOB (repeatable; added to [tool.decouple] exclude).",
    ),
    click.option(
        "--no-default-excludes",
        is_flag=True,
        help=f"Also process the vendored folders excluded by default: {', '.join(DEFAULT_EXCLUDES)}.",
    ),
)

# classify, lint, apply
selection_options = stack(
    paths_argument,
    click.option(
        "--from-allowlist",
        "allowlist",
        type=click.Path(),
        help="Take the files listed in the upstream test_linter_allowlist.json.",
    ),
    exclude_options,
    click.option("-j", "--jobs", type=click.IntRange(1), default=None, help="Worker processes (default: all cores)."),
)


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"
    GITHUB = "github"  # workflow-command annotations
    SARIF = "sarif"  # SARIF 2.1.0
    LINTRUNNER = "lintrunner"  # LintMessage JSON lines (lint)


def format_option(
    formats: Sequence[OutputFormat] = (OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.GITHUB, OutputFormat.SARIF),
    default: OutputFormat = OutputFormat.TEXT,
) -> Decorator:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice([f.value for f in formats]),
        default=default.value,
        show_default=True,
        help="github: workflow-command annotations; sarif: SARIF 2.1.0 (for code scanning).",
    )


# --- what the edit does: classify, lint, apply, refactor ---------------------------------------------

label_options = stack(
    click.option(
        "--classification",
        metavar="VALUE",
        help="Use VALUE for every unlabelled test class instead of inferring it.",
    ),
    click.option(
        "--set",
        "per_class",
        multiple=True,
        metavar="CLASS=VALUE",
        help="Use VALUE for the test class CLASS (repeatable).",
    ),
    click.option(
        "--force",
        is_flag=True,
        help="Apply a --classification/--set value even when it breaks a linter rule (reported).",
    ),
)

torch_load_option = click.option(
    "--torch-load",
    "torch_load",
    type=click.Choice(MODES),
    default=None,
    help="Also make torch.load calls explicit (default: leave them alone).",
)
globals_option = click.option(
    "--globals",
    "globals_file",
    type=click.Path(dir_okay=False),
    help="JSON written by `decouple discover-globals` (for safe-globals / auto).",
)
explain_option = click.option("--explain", is_flag=True, help="With --torch-load: add a short comment saying why.")


class _RestructureOption(click.Option):
    """--restructure, whose help names the steps of the restructuring registry: the package is
    imported when the help is shown or a step is asked for, not by every command that declares
    the option (a one-file `apply --check` would import a dozen modules it never uses)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from transforms import restructure

        auto = restructure.parse_selection("auto").steps
        widening = [name for name in restructure.REGISTRY if name not in auto]
        self.help = (
            f"Restructure classes before labelling: auto ({', '.join(auto)}, on the classes no label "
            f"fits), or any of {', '.join(restructure.REGISTRY)} by name; {' and '.join(widening)} add "
            f"devices and run only when named (opt-in; see docs/restructure.md)."
        )
        return super().get_help_record(ctx)


restructure_option = click.option(
    "--restructure",
    "restructure_names",
    cls=_RestructureOption,
    metavar="auto|NAME[,NAME]",
    default=None,
)

verbose_option = click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="List every item a warning counts (the allowlist entries whose file is gone), not only the first few.",
)

# --- the linter gate, standard input ---------------------------------------------------------------

linter_option = click.option(
    "--linter",
    "linter",
    metavar="auto|PATH|off",
    default=None,
    help="Gate: run the checkout's own test linter (tools/linter/adapters/test_linter.py, found "
    "above the paths with auto) on the would-be outputs first; a file it rejects is not "
    "written nor graduated. Default: [tool.decouple] linter, else auto.",
)

rules_option = click.option(
    "--rules",
    "rules",
    type=click.Choice(["auto", *GENERATIONS]),
    default=None,
    help="The generation of the test linter's rules to follow: auto (the checkout's own linter, "
    "identified from its source; the newest without one) or a generation's name. "
    "Default: [tool.decouple] rules, else auto.",
)

# For the commands whose --python means nothing but the gate's interpreter (`apply` declares
# its own: the target interpreter, which runs the gate too).
gate_options = stack(
    linter_option,
    rules_option,
    click.option(
        "--python",
        "python",
        metavar="PATH",
        callback=interpreter_path,
        help="Interpreter that runs the linter gate (default: [tool.decouple] python, else this one).",
    ),
)

# `-` as the path, --quiet and --no-cache: for the commands that read test files.
stdin_quiet_options = stack(
    click.option(
        "--stdin-filename",
        metavar="PATH",
        help="With `-` as the path (read the file from standard input): the path to name in "
        "messages and rules (default: <stdin>).",
    ),
    click.option(
        "-q",
        "--quiet",
        is_flag=True,
        help="No progress bar, no summary: only the output asked for and per-file problems.",
    ),
    click.option(
        "--no-cache",
        is_flag=True,
        help="Neither reuse nor keep per-file results (kept in $DECOUPLE_CACHE_DIR, else "
        "$XDG_CACHE_HOME/decouple, else ~/.cache/decouple; keyed by each file's bytes, the tool and the options).",
    ),
)

# --- the A/B run: ab, refactor ---------------------------------------------------------------------

env_option = click.option(
    "--env", "env", multiple=True, metavar="K=V", help="A/B: set a variable in every arm (repeatable)."
)
diag_option = click.option(
    "--diag",
    "diag",
    multiple=True,
    metavar="NAME[@B]:K=V[,K=V]",
    help="A/B: add a diagnostic arm (repeatable): NAME:K=V[,K=V] reruns arm A's code with the extra "
    "variables, NAME@B:... arm B's.",
)
timeout_option = click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=600.0,
    show_default=True,
    help="A/B: per-test limit in seconds (also bounds collection); 0 = none.",
)
confirm_option = click.option(
    "--confirm",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="A/B: rerun the discordant tests (without the rest of their file) this many times per arm, "
    "alternating A and B.",
)


# --- the option groups, as values ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Excludes:
    exclude: tuple[str, ...]
    no_default_excludes: bool

    def patterns(self, cfg: Config) -> list[str]:
        return exclude_patterns(cfg.exclude, self.exclude, self.no_default_excludes)


@dataclass(frozen=True, kw_only=True)
class Selection:
    paths: tuple[str, ...]
    allowlist: str | None  # --from-allowlist
    excludes: Excludes
    jobs: int | None

    def allowlist_or_configured(self, cfg: Config, paths: Sequence[str]) -> str | None:
        """--from-allowlist, else [tool.decouple] allowlist when no path is named."""
        return self.allowlist or (cfg.allowlist if not paths else None)


@dataclass(frozen=True, kw_only=True)
class LabelChoice:
    classification: str | None
    per_class: tuple[str, ...]  # CLASS=VALUE
    force: bool


@dataclass(frozen=True, kw_only=True)
class EditChoice:
    """What `apply` and `refactor` edit besides the labels."""

    torch_load: str | None
    globals_file: str | None
    explain: bool
    restructure_names: str | None


@dataclass(frozen=True, kw_only=True)
class GateChoice:
    linter: str | None  # auto | PATH | off; None: [tool.decouple] linter, else auto
    rules: str | None  # auto | a generation's name; None: [tool.decouple] rules, else auto
    python: str | None  # None: [tool.decouple] python, else this interpreter

    def setting(self, cfg: Config) -> str:
        return self.linter or cfg.linter or "auto"

    def rules_setting(self, cfg: Config) -> str:
        return self.rules or cfg.rules or "auto"

    def interpreter(self, cfg: Config) -> str:
        return self.python or cfg.python or sys.executable


@dataclass(frozen=True, kw_only=True)
class InputChoice:
    stdin_filename: str | None
    quiet: bool
    no_cache: bool  # --no-cache: every file processed afresh, nothing kept


@dataclass(frozen=True, kw_only=True)
class ArmChoice:
    """How an A/B run treats its arms (`ab` and `refactor`)."""

    env: tuple[str, ...]  # K=V
    diag: tuple[str, ...]  # NAME[@B]:K=V[,K=V]
    timeout: float
    confirm: int

    def run_fields(self) -> dict[str, Any]:
        """These as fields of the A/B runner's RunOptions; a malformed --env or --diag is a usage error."""
        from codemod.ab.arms import options as ab_options

        try:
            return {
                "env": ab_options.parse_env(self.env),
                "diags": [ab_options.parse_diag(d) for d in self.diag],
                "timeout": self.timeout,
                "confirm": self.confirm,
            }
        except (ab_options.UsageError, ValueError) as e:
            raise click.UsageError(str(e)) from e
