"""The --torch-load modes and what each needs from the target torch."""

from __future__ import annotations

import re

MODES = ("weights-only-false", "safe-globals", "auto")
LOAD_NAMES = frozenset({"torch.load", "torch.serialization.load"})
SAFE_GLOBALS_NAME = "torch.serialization.safe_globals"
RULE = "torch-load/"
WRAP_LINE_LIMIT = 100
_DOTTED_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


# --------------------------------------------------------------------------- versions


def check_mode_supported(mode: str, version: tuple[int, int] | None) -> str | None:
    """An error message when `mode` cannot work with the target torch `version`, else None."""
    if mode not in MODES:
        return f"unknown --torch-load mode {mode!r}; choose one of {', '.join(MODES)}"
    if version is None:
        return (
            "the target interpreter has no importable torch, so it is unknown whether "
            "torch.load accepts weights_only; pass --python PATH of your PyTorch environment"
        )
    if tuple(version) < (1, 13):
        return f"torch {version[0]}.{version[1]} has no weights_only argument (added in 1.13); nothing to make explicit"
    if mode == "safe-globals" and tuple(version) < (2, 5):
        return (
            f"torch {version[0]}.{version[1]} has no torch.serialization.safe_globals context "
            "manager (added in 2.5); use --torch-load weights-only-false or auto"
        )
    return None
