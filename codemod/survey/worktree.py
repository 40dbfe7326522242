"""What a survey read, against the commit: HEAD, and the files it read whose work-tree content
is not HEAD's (modified, staged or untracked). The survey reads the work tree; `refactor
--batches` plans from the commit, so the two agree exactly when that list is empty, and the
survey says which it was.

git is asked while the analysis runs (`git status` looks at every tracked file's stat, a
fraction of a second on a large checkout): `UncommittedQuery` launches it, `finish` reads its
answer.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

_TIMEOUT = 120  # seconds; generous, a busy machine is slow


@dataclass(frozen=True, kw_only=True)
class WorkTreeState:
    commit: str | None  # HEAD; None: no git repository (or no commit yet)
    uncommitted: list[str] | None  # the files read that differ from HEAD; None: nothing to compare with


class UncommittedQuery:
    """A `git status` under way over the files a survey reads (`read`: relative to `root`, the
    repository's top, `/` separators)."""

    def __init__(self, root: str, read: Iterable[str]) -> None:
        self.root = root
        self.read = sorted(set(read))
        # Their folders (and the files themselves) bound what git looks at; literal, not globs.
        specs = sorted({os.path.dirname(p) or "." for p in self.read} | set(self.read))
        argv = ["git", "--literal-pathspecs", "-C", root, "status", "--porcelain=v1", "-z"]
        argv += ["--untracked-files=all", "--no-renames", "--", *specs]
        try:
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
        except OSError:
            self.proc = None  # no git

    def finish(self) -> WorkTreeState:
        commit = head(self.root)
        if self.proc is None:
            return WorkTreeState(commit=commit, uncommitted=None)
        try:
            out, _ = self.proc.communicate(timeout=_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            return WorkTreeState(commit=commit, uncommitted=None)
        if self.proc.returncode != 0 or commit is None:
            return WorkTreeState(commit=commit, uncommitted=None)
        changed = {entry[3:] for entry in out.decode("utf-8", "surrogateescape").split("\0") if len(entry) > 3}
        return WorkTreeState(commit=commit, uncommitted=[p for p in self.read if p in changed])


def head(root: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None
