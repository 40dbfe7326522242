"""The `decouple` command line.

Exit codes (every command):
    0  done, or nothing to do
    1  changes needed (--diff / --check), classes needing manual work (apply, classify;
       with --check / --diff only under --strict), or (ab) a REGRESSION verdict
    2  usage error, bad input (missing path, unreadable / undecodable / syntax-error
       file, broken interpreter) or an internal error
    3  (ab) INCONCLUSIVE verdict

Each command's module is imported only when that command runs (or when --help lists them all):
`apply --check` of one file must not pay for the A/B runner, the refactor pipeline or GitPython
(0.41 s of a 0.55 s one-file check when they were imported up front).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

import click

from codemod.cli.entry import INTERRUPTED

# name -> "module:attribute" of the click command.
COMMANDS: Mapping[str, str] = {
    "ab": "codemod.cli.ab:ab",
    "apply": "codemod.cli.codemod:apply",
    "classify": "codemod.cli.codemod:classify",
    "discover-globals": "codemod.cli.discover_globals:discover_globals",
    "lint": "codemod.cli.codemod:lint",
    "pr-body": "codemod.cli.refactor:pr_body",
    "refactor": "codemod.cli.refactor:refactor",
    "survey": "codemod.cli.survey:survey",
}


class LazyGroup(click.Group):
    """A group whose commands are imported by name, on first use. `commands` (every command,
    imported) stays available for code that walks the tree."""

    def __init__(self, *args, lazy: Mapping[str, str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = dict(lazy)
        self._loaded: dict[str, click.Command] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self._lazy)

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:
        if cmd_name not in self._lazy:
            return None
        if cmd_name not in self._loaded:
            module, _, attribute = self._lazy[cmd_name].partition(":")
            self._loaded[cmd_name] = getattr(importlib.import_module(module), attribute)
        return self._loaded[cmd_name]

    @property
    def commands(self) -> dict[str, click.Command]:
        return {name: command for name in self._lazy if (command := self.get_command(None, name)) is not None}

    @commands.setter
    def commands(self, value: Mapping[str, click.Command]) -> None:
        if value:  # click.Group.__init__ sets it (empty): commands come from `lazy` only
            raise TypeError("LazyGroup takes its commands by name (lazy=)")


class _Decouple(LazyGroup):
    """Ctrl-C is exit 130 with one line, never a traceback (click's own handling says
    `Aborted!` and exits 1). Writes hold the signal until they are whole or undone
    (`codemod.util.files.signals_held`), so no temporary file is left."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("decouple: interrupted (Ctrl-C); no file is half-written", err=True)
            ctx.exit(INTERRUPTED)


@click.group(cls=_Decouple, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="test-decouple")
def main() -> None:
    """Label PyTorch test classes with HardwareClassification, make torch.load explicit,
    and prove the change with an A/B run.

    Exit codes: 0 done / nothing to do; 1 changes needed (--diff/--check), manual work
    left (under --check/--diff only with --strict), or an A/B REGRESSION; 2 usage, input or
    internal error; 3 A/B INCONCLUSIVE.
    """
