"""The --torch-load modes, what each needs from the target torch, and the names of the
findings the transform reports."""

from __future__ import annotations

import re

from transforms.core.strenum import StrEnum


class Mode(StrEnum):
    WEIGHTS_ONLY_FALSE = "weights-only-false"
    SAFE_GLOBALS = "safe-globals"
    AUTO = "auto"


# The mode names, as the command line offers them.
MODES: tuple[str, ...] = tuple(mode.value for mode in Mode)
LOAD_NAMES = frozenset({"torch.load", "torch.serialization.load"})
SAFE_GLOBALS_NAME = "torch.serialization.safe_globals"
WRAP_LINE_LIMIT = 100
DOTTED_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


class LoadRule(StrEnum):
    """What became of a call (or why the file was not looked at): a finding's rule is
    `torch-load/<this>`."""

    SKIP_EXPLICIT = "skip-explicit"  # passes weights_only already
    SKIP_PICKLE_MODULE = "skip-pickle-module"
    SKIP_KWARGS = "skip-kwargs"  # *args / **kwargs may carry weights_only
    SKIP_STATE_DICT = "skip-state-dict"  # discovery saw it load under weights_only=True
    SKIP_COVERED = "skip-covered"  # inside a safe_globals block that lists what it needs
    SAFE_GLOBALS = "safe-globals"  # wrapped in a safe_globals block
    WEIGHTS_ONLY_FALSE = "weights-only-false"
    FALLBACK = "fallback"  # weights_only=False where safe_globals cannot be written
    INVALID_GLOBAL = "invalid-global"  # the discovery data names something that is no global
    NO_DISCOVERY = "no-discovery"  # safe-globals without a --globals file
    NOT_DISCOVERED = "not-discovered"  # auto, and the --globals file has no record of the call
    DANGEROUS_GLOBAL = "dangerous-global"
    UNRESOLVED = "unresolved"  # left for a human: cannot be rewritten safely
    PARSE_ERROR = "parse-error"  # LibCST cannot parse the file

    @property
    def finding_rule(self) -> str:
        return f"torch-load/{self.value}"


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
    if mode == Mode.SAFE_GLOBALS and tuple(version) < (2, 5):
        return (
            f"torch {version[0]}.{version[1]} has no torch.serialization.safe_globals context "
            "manager (added in 2.5); use --torch-load weights-only-false or auto"
        )
    return None
