"""Option declarations shared by several `decouple` commands, each declared once here so that
every command spells, documents and defaults them the same way."""

from __future__ import annotations

import click

from codemod.engine.discovery import DEFAULT_EXCLUDES

STDIN = "-"


def _stack(options):
    """One decorator applying `options` so that --help lists them in the given order."""

    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def stdin_quiet_options(f):
    """`-` as the path, and --quiet: for the commands that read test files."""
    f = click.option(
        "-q",
        "--quiet",
        is_flag=True,
        help="No progress bar, no summary: only the output asked for and per-file problems.",
    )(f)
    return click.option(
        "--stdin-filename",
        metavar="PATH",
        help="With `-` as the path (read the file from standard input): the path to name in "
        "messages and rules (default: <stdin>).",
    )(f)


exclude_options = _stack(
    [
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
    ]
)


def selection_options(f=None, *, formats=("text", "json", "github", "sarif"), default="text"):
    """Options shared by every command that walks test files (`@selection_options`, or
    `@selection_options(formats=..., default=...)` for a command with formats of its own)."""
    decorate = _stack(
        [
            click.argument("paths", nargs=-1, type=click.Path()),
            click.option(
                "--from-allowlist",
                "allowlist",
                type=click.Path(),
                help="Take the files listed in the upstream test_linter_allowlist.json.",
            ),
            exclude_options,
            click.option(
                "-j", "--jobs", type=click.IntRange(1), default=None, help="Worker processes (default: all cores)."
            ),
            click.option(
                "--format",
                "fmt",
                type=click.Choice(list(formats)),
                default=default,
                show_default=True,
                help="github: workflow-command annotations; sarif: SARIF 2.1.0 (for code scanning).",
            ),
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
        ]
    )
    return decorate(f) if f is not None else decorate


linter_option = click.option(
    "--linter",
    "linter",
    metavar="auto|PATH|off",
    default=None,
    help="Gate: run the checkout's own test linter (tools/linter/adapters/test_linter.py, found "
    "above the paths with auto) on the would-be outputs first; a file it rejects is not "
    "written nor graduated. Default: [tool.decouple] linter, else auto.",
)

# For the commands whose --python means nothing but the gate's interpreter (`apply` declares
# its own: the target interpreter, which runs the gate too).
gate_options = _stack(
    [
        linter_option,
        click.option(
            "--python",
            "python",
            metavar="PATH",
            help="Interpreter that runs the linter gate (default: [tool.decouple] python, else this one).",
        ),
    ]
)
