"""The reproduction command: how a human reruns one arm's files in a real tree.

The command repeats the arm's environment (``arms``: the variables unset and
set, the pytest arguments) as an ``env`` prefix, plus ``REPRO_VARS``.
"""

from __future__ import annotations

import shlex

from codemod.ab.arms import FIXED_VARS, PYTEST_ARGS, UNSET_VARS, ArmSpec, safe_arg

# Only in the reproduction commands (a human runs them in a real tree).
REPRO_VARS = {"PYTHONDONTWRITEBYTECODE": "1"}


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
