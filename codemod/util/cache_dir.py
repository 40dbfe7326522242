"""Where the tool keeps what it may reuse across runs: `$DECOUPLE_CACHE_DIR`, else
`$XDG_CACHE_HOME/decouple`, else `~/.cache/decouple` (as ruff and black keep theirs).

Everything there can be deleted at any time: the per-file results of `classify`, `lint`, `apply`
and `survey` (`results/`). The A/B runs keep nothing there (their arms' bytecode lives and dies
with each run), and no test they run is told where it is."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_VARIABLE = "DECOUPLE_CACHE_DIR"


def user_cache_dir() -> Path:
    """The folder (not created here)."""
    base = os.environ.get(CACHE_DIR_VARIABLE) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "decouple"
    )
    return Path(base)
