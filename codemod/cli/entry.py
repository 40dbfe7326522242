"""The `decouple` entry point (the console script and `python -m codemod`): it imports the
commands under a guard, so a Ctrl-C that lands while they are still being imported is exit
130 with one line too, not a KeyboardInterrupt traceback."""

from __future__ import annotations

import sys

# Ctrl-C, for every command (`ab` and `refactor` say more: their temporary roots are gone).
INTERRUPTED = 130


def main() -> None:
    try:
        from codemod.cli.main import main as commands
    except KeyboardInterrupt:
        sys.stderr.write("decouple: interrupted (Ctrl-C)\n")
        sys.exit(INTERRUPTED)
    commands()
