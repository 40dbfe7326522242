"""The `decouple` entry point (the console script and `python -m codemod`): it imports the
commands under a guard, so a Ctrl-C that lands while they are still being imported is exit
130 with one line too, not a KeyboardInterrupt traceback."""

from __future__ import annotations

import os
import sys

# Ctrl-C, for every command (`ab` and `refactor` say more: their temporary roots are gone).
INTERRUPTED = 130
USAGE = 2  # as click's usage errors


def main() -> None:
    try:  # every command resolves paths from here: a folder deleted under the shell is no traceback
        os.getcwd()
    except FileNotFoundError:
        sys.stderr.write("decouple: the current folder no longer exists (deleted under the shell)\n")
        sys.exit(USAGE)
    try:
        from codemod.cli.main import main as commands
    except KeyboardInterrupt:
        sys.stderr.write("decouple: interrupted (Ctrl-C)\n")
        sys.exit(INTERRUPTED)
    commands()
