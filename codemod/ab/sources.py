"""Where the two arms come from: a git commit and the work tree, or two directories.

With ``--base REF`` arm A is the commit (read from git objects) and arm B the work
tree, both of the repository enclosing the cwd; with ``--a-root``/``--b-root`` they
are two directories, and PATHS are relative to both.  The selection is made relative
to the arm roots here; bad input is a ``UsageError``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from codemod.ab import materialise as _mat
from codemod.ab import selection as _sel
from codemod.ab.arms import ArmError
from codemod.ab.options import RunOptions
from codemod.ab.procs import UsageError


@dataclass
class ArmSource:
    kind: str  # "git" (a commit) or "dir" (a work tree or directory, copied)
    root: Path  # the repository or the directory
    label: str
    source: str  # as recorded in the result (git:REF, worktree, dir:PATH)


@dataclass
class Sources:
    arms: dict[str, ArmSource]  # "A" and "B"
    sel: _sel.Selection
    commit: str  # the resolved commit of arm A ("" for two directories)
    user_roots: list[Path]  # the user's trees (never written)


def resolve_sources(opts: RunOptions, cwd: Path) -> Sources:
    try:
        if opts.base:
            repo = _mat.git_toplevel(cwd)
            commit = _mat.resolve_commit(repo, opts.base)
            sel = _sel.make_selection(opts.paths, cwd, repo)
            return Sources(
                arms={
                    "A": ArmSource("git", repo, f"base {opts.base} ({commit[:12]})", f"git:{opts.base}"),
                    "B": ArmSource("dir", repo, "work tree", "worktree"),
                },
                sel=sel,
                commit=commit,
                user_roots=[repo],
            )
        a_root, b_root = Path(opts.a_root).resolve(), Path(opts.b_root).resolve()
        for root, flag in ((a_root, "--a-root"), (b_root, "--b-root")):
            if not root.is_dir():
                raise UsageError(f"{flag} {root} is not a directory")
        sel = _sel.Selection(paths=[p.strip("/") for p in opts.paths], common=_sel.common_dir(opts.paths))
        for p in sel.paths:
            if os.path.isabs(p.split("::")[0]) or ".." in Path(p.split("::")[0]).parts:
                raise UsageError(f"with --a-root/--b-root, PATHS must be relative to the roots: {p}")
        return Sources(
            arms={
                "A": ArmSource("dir", a_root, f"directory {a_root}", f"dir:{a_root}"),
                "B": ArmSource("dir", b_root, f"directory {b_root}", f"dir:{b_root}"),
            },
            sel=sel,
            commit="",
            user_roots=[a_root, b_root],
        )
    except ArmError as err:
        raise UsageError(str(err)) from None
