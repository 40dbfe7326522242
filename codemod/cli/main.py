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

import click

from codemod.cli.ab import ab
from codemod.cli.codemod import apply, classify, lint
from codemod.cli.discover_globals import discover_globals
from codemod.cli.entry import INTERRUPTED
from codemod.cli.refactor import pr_body, refactor
from codemod.cli.survey import survey


class _Decouple(click.Group):
    """Ctrl-C is exit 130 with one line, never a traceback (click's own handling says
    `Aborted!` and exits 1). Writes hold the signal until they are whole or undone
    (`codemod.util.files.signals_held`), so no temporary file is left."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("decouple: interrupted (Ctrl-C); no file is half-written", err=True)
            ctx.exit(INTERRUPTED)


@click.group(cls=_Decouple, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="test-decouple")
def main() -> None:
    """Label PyTorch test classes with HardwareClassification, make torch.load explicit,
    and prove the change with an A/B run.

    Exit codes: 0 done / nothing to do; 1 changes needed (--diff/--check), manual work
    left (under --check/--diff only with --strict), or an A/B REGRESSION; 2 usage, input or
    internal error; 3 A/B INCONCLUSIVE.
    """


for command in (classify, lint, apply, ab, discover_globals, refactor, pr_body, survey):
    main.add_command(command)
