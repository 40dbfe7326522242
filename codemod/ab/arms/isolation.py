"""What keeps a test of an arm away from the user's repository and the tool's own state.

A test that runs git finds no repository but one it made itself: the arms' environment has none
of the variables git reads to locate or redirect a repository (`GIT_LOCATION_VARS`, every
`GIT_CONFIG*`: a hook exports `GIT_DIR` and `GIT_WORK_TREE`, and a test inheriting them would
commit to the user's branch), and `GIT_CEILING_DIRECTORIES` names the run's temporary root, so
git's search for a repository never leaves it. That root is never inside a git work tree
(`temp_base`): the arms' roots, temp dirs and bytecode all live under it. Nor does a test's
environment name the tool's cache: every `DECOUPLE_*` variable of the caller is removed (the
runner then sets the few of its own that its plugin reads, all inside the run's root).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

# What git reads to find or redirect a repository (git's "Environment Variables": the
# repository, and what `git rev-parse --local-env-vars` prints; tests/test_isolation.py checks
# that this list holds all of the latter), besides every GIT_CONFIG* (`GIT_CONFIG_COUNT` with
# `GIT_CONFIG_KEY_0=core.worktree` points a repository elsewhere).
GIT_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_GRAFT_FILE",
    "GIT_REPLACE_REF_BASE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_SHALLOW_FILE",
    "GIT_QUARANTINE_PATH",
)
GIT_CONFIG_PREFIX = "GIT_CONFIG"
TOOL_PREFIX = "DECOUPLE_"
CEILING_VAR = "GIT_CEILING_DIRECTORIES"

# Where a run's temporary root may go when $TMPDIR is inside a git work tree (tempfile's own
# fallbacks on POSIX).
FALLBACK_TEMP = ("/tmp", "/var/tmp", "/usr/tmp")


def removed(name: str) -> bool:
    """Whether the variable `name` of the caller's environment is kept from the arms."""
    return name in GIT_LOCATION_VARS or name.startswith((GIT_CONFIG_PREFIX, TOOL_PREFIX))


def without_git_location(env: dict[str, str]) -> dict[str, str]:
    """`env` without what leads git to a repository: git then finds the one a folder lies in."""
    return {k: v for k, v in env.items() if k not in GIT_LOCATION_VARS and not k.startswith(GIT_CONFIG_PREFIX)}


def removed_present(env: dict[str, str]) -> list[str]:
    """The variables of `env` that the arms do not get (what the report lists as unset)."""
    return sorted(k for k in env if removed(k))


def ceiling(run_root: Path) -> str:
    """`GIT_CEILING_DIRECTORIES` of every arm: git looks for a repository up to the run's
    temporary root and never above it (git compares the entries resolved, so is the root)."""
    return os.path.realpath(run_root)


def work_tree_of(path: str, env: dict[str, str]) -> str | None:
    """The git work tree `path` lies in (the folder holding `.git`, or the caller's
    `GIT_WORK_TREE`), None when it lies in none."""
    real = os.path.realpath(path)
    named = env.get("GIT_WORK_TREE")
    if named and _inside(real, os.path.realpath(named)):
        return os.path.realpath(named)
    d = real
    while True:
        if os.path.lexists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


class NoTempRoot(Exception):
    """Every temporary location lies in a git work tree or a tree being compared."""


def temp_base(trees: Iterable[Path], env: dict[str, str]) -> tuple[str, tuple[str, str] | None]:
    """Where the run's temporary root goes: the caller's temporary folder, unless it lies in a
    git work tree or in one of `trees` (the directories being compared); then the first
    fallback that lies in neither. (folder, None) or (folder, (the caller's folder, the tree it
    lies in)); NoTempRoot when none will do."""
    roots = [os.path.realpath(t) for t in trees]
    refused: list[tuple[str, str]] = []
    for candidate in (tempfile.gettempdir(), *FALLBACK_TEMP):
        if not os.path.isdir(candidate) or not os.access(candidate, os.W_OK | os.X_OK):
            continue
        tree = _enclosing(candidate, roots, env)
        if tree is None:
            return candidate, refused[0] if refused else None
        refused.append((candidate, tree))
    said = "; ".join(dict.fromkeys(f"{c} is inside {t}" for c, t in refused))
    raise NoTempRoot(said or "no writable temporary folder")


def _enclosing(candidate: str, roots: list[str], env: dict[str, str]) -> str | None:
    """The git work tree or compared tree `candidate` lies in, None when none."""
    top = work_tree_of(candidate, env)
    if top is not None:
        return top
    real = os.path.realpath(candidate)
    return next((root for root in roots if _inside(real, root)), None)
