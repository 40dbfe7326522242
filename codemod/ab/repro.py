"""The reproduction command: how a human rebuilds an arm's root and reruns its files.

A git arm's root is rebuilt with ``git archive`` of the resolved commit into a fresh
directory (``git_archive_note``); a work-tree or directory arm runs where it is.  The
command repeats the arm's environment (``arms``: the variables unset and
set, the pytest arguments) as an ``env`` prefix, plus ``REPRO_VARS``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from codemod.ab.arms import FIXED_VARS, PYTEST_ARGS, UNSET_VARS, ArmSpec, safe_arg

# Only in the reproduction commands (a human runs them in a real tree).
REPRO_VARS = {"PYTHONDONTWRITEBYTECODE": "1"}


def git_archive_note(repo: Path, commit: str, used: list[str]) -> str:
    """The shell command that rebuilds a git arm's root in ``$D``: the resolved SHA (a
    branch may move), a fresh directory; the whole commit when the import root is the top."""
    paths = "" if "" in used else " --" + "".join(f" {shlex.quote(p)}" for p in used)
    return f'D=$(mktemp -d) && git -C {shlex.quote(str(repo))} archive {commit}{paths} | tar -x -C "$D"'


def repro_command(
    spec: ArmSpec, python: str, args: list[str], prefix: str = "", cd: str | None = None, cd_raw: bool = False
) -> str:
    """`cd_raw`: `cd` is a shell expression (e.g. ``"$D"``), not a path to quote."""
    parts = []
    if prefix:
        parts.append(prefix)
    target = cd or str(spec.root)
    parts.append(f"cd {target if cd_raw else shlex.quote(target)}")
    env_bits = ["env"] + [f"-u {v}" for v in UNSET_VARS if v not in REPRO_VARS]
    env_bits += [f"{k}={shlex.quote(v)}" for k, v in {**FIXED_VARS, **REPRO_VARS}.items()]
    env_bits += [f"{k}={shlex.quote(v)}" for k, v in spec.env_added.items()]
    cmd = " ".join(
        env_bits
        + [shlex.quote(python), "-m", "pytest", *PYTEST_ARGS]
        + [shlex.quote(safe_arg(a)) for a in args]
        + [shlex.quote(a) for a in spec.extra_args]
    )
    parts.append(cmd)
    return " && ".join(parts)
