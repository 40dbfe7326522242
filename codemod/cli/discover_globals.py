"""`decouple discover-globals`: the command around `codemod.discover.rounds.discover`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from codemod.cli.options import interpreter_path
from codemod.discover.rounds import Refusal, discover, summary
from codemod.util.files import signals_held


@click.command("discover-globals")
@click.argument("targets", nargs=-1, required=True)
@click.option(
    "--python",
    "python",
    metavar="PATH",
    callback=interpreter_path,
    default=None,
    help="Interpreter that runs the tests (default: the one running decouple).",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the JSON here instead of stdout.",
)
@click.option(
    "--max-iterations",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Rounds of allow-and-rerun before giving up.",
)
@click.option(
    "--timeout", type=click.FloatRange(min=1), default=900.0, show_default=True, help="Seconds per pytest round."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress lines and no summary on stderr (errors only).")
def discover_globals(
    targets: tuple[str, ...], python: str | None, out: str | None, max_iterations: int, timeout: float, quiet: bool
) -> None:
    """Find the globals the torch.load calls of TARGET tests need under weights_only=True.

    TARGET is a test file or pytest node id.  Prints JSON (for `decouple apply
    --torch-load safe-globals|auto --globals FILE`) and a summary on stderr.
    """

    def log(msg: str) -> None:
        if not quiet:
            click.echo(msg, err=True)

    try:
        result, status = discover(targets, python=python, max_iterations=max_iterations, timeout=timeout, log=log)
    except Refusal as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    text = json.dumps(result, indent=2, sort_keys=False)
    if out:
        with signals_held():  # Ctrl-C: after the write
            Path(out).write_text(text + "\n", encoding="utf-8")
    else:
        click.echo(text)
    if not quiet:
        click.echo(summary(result), err=True)
    sys.exit(status)


if __name__ == "__main__":  # python -m codemod.cli.discover_globals
    discover_globals()
