"""Nothing in an arm root points outside it: symlinks that leave the arm are materialised.

A symlink is copied into an arm as a link (as git checks it out) only when it resolves inside
the arm root. One that leaves it (an absolute link, committed or not; a relative one climbing
out of the materialised subtree) would let a test write through it into the user's checkout or
anywhere else. Such a link becomes a **copy of what it points to** as the checkout resolves it:
reading it gives the test the same bytes as the link would, writing it changes only the arm.

- A work-tree or directory arm copies the link's target from the file system (a file with its
  mode, a folder with its files; links inside a copied folder get the same treatment).
- A git arm resolves the link's text against the repository: a target inside the repository is
  taken from the same commit's objects (so arm A never sees the work tree's version); one
  outside it (an absolute path, or `../` past the top) from the file system, as a checkout of
  that commit on this machine would read it.
- A link whose target does not exist, or a folder that holds the arm's own source (copying it
  would copy the tree into itself), is left out of the arm: the run carries an
  `arm.symlink-left-out` notice naming it, and `arm.symlink-copied` for the copies.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# Rounds of replacing: a copied folder may hold links that leave the arm too.
_ROUNDS = 8


@dataclass(frozen=True, kw_only=True)
class LinkFix:
    path: str  # arm-relative, posix
    target: str  # the link's own text
    copied: bool  # False: left out of the arm


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def leaving(dest: Path) -> list[str]:
    """The arm-relative paths of the symlinks under `dest` that resolve outside it."""
    root = os.path.realpath(dest)
    out = []
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full) and not _inside(os.path.realpath(full), root):
                out.append(Path(full).relative_to(dest).as_posix())
    return sorted(out)


def contain(dest: Path, copy: Callable[[str, str], bool]) -> list[LinkFix]:
    """Replace every link under `dest` that leaves it: `copy(rel, target)` writes what it
    points to at `rel` (the link is gone by then) and says whether it could."""
    fixes: list[LinkFix] = []
    for last in range(_ROUNDS):
        found = leaving(dest)
        if not found:
            break
        for rel in found:
            link = dest / rel
            if not os.path.islink(link):  # inside a folder an earlier copy replaced
                continue
            target = os.readlink(link)
            link.unlink()
            fixes.append(LinkFix(path=rel, target=target, copied=last + 1 < _ROUNDS and copy(rel, target)))
    return fixes


def copy_from_fs(source: Path, dest_root: Path, rel: str, keep: Callable[[str], bool]) -> bool:
    """Copy what `source` (a link's location, outside or inside the arm's source) resolves to
    into `dest_root / rel`; `keep(name)` says which folder entries a folder copy takes."""
    real = os.path.realpath(source)
    target = dest_root / rel
    if os.path.isfile(real):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(real, target)
        shutil.copymode(real, target)
        return True
    if not os.path.isdir(real) or _inside(os.path.realpath(dest_root), real):
        return False
    shutil.copytree(real, target, symlinks=True, ignore=lambda _d, names: [n for n in names if not keep(n)])
    return True


def in_repository(repo: Path, rel: str, target: str) -> str | None:
    """The repository-relative path a committed link at `rel` names (None: outside it)."""
    if os.path.isabs(target):
        top = os.path.realpath(repo)
        real = os.path.normpath(target)
        return os.path.relpath(real, top).replace(os.sep, "/") if _inside(real, top) else None
    path = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    return None if path == ".." or path.startswith("../") else ("" if path == "." else path)


class _Origins:
    """Where each part of the arm came from, so that a link inside a copied folder resolves
    as it did at its own place: arm-relative folder -> ("fs", real path) or ("git", path in
    the repository)."""

    def __init__(self, default: str):
        self.default = default  # "fs" (the arm mirrors a folder) or "git" (a commit)
        self.copied: dict[str, tuple[str, str]] = {}

    def of(self, rel: str, root: str) -> tuple[str, str]:
        for prefix in sorted(self.copied, key=len, reverse=True):
            if rel.startswith(prefix + "/"):
                kind, base = self.copied[prefix]
                rest = rel[len(prefix) + 1 :]
                return kind, os.path.join(base, rest) if kind == "fs" else posixpath.join(base, rest)
        return self.default, os.path.join(root, rel) if self.default == "fs" else rel


def contain_dir(dest: Path, src_root: Path, keep: Callable[[str], bool]) -> list[LinkFix]:
    """`contain` for an arm copied from the folder `src_root`."""
    origins = _Origins("fs")

    def copy(rel: str, target: str) -> bool:
        _, place = origins.of(rel, str(src_root))
        return _from_fs(origins, place, os.path.dirname(place), dest, rel, keep)

    return contain(dest, copy)


def contain_git(
    dest: Path, repo: Path, from_commit: Callable[[str, str], bool], keep: Callable[[str], bool]
) -> list[LinkFix]:
    """`contain` for an arm read from a commit of `repo`: `from_commit(repo_rel, arm_rel)`
    writes the commit's file or folder `repo_rel` at `arm_rel` (False: not in the commit)."""
    origins = _Origins("git")

    def copy(rel: str, target: str) -> bool:
        kind, place = origins.of(rel, str(repo))
        if kind == "fs":
            return _from_fs(origins, place, os.path.dirname(place), dest, rel, keep)
        named = in_repository(repo, place, target)
        if named is not None:
            if not from_commit(named, rel):
                return False
            if (dest / rel).is_dir() and not (dest / rel).is_symlink():
                origins.copied[rel] = ("git", named)
            return True
        here = os.path.join(repo, posixpath.dirname(place))
        return _from_fs(origins, os.path.join(here, target), here, dest, rel, keep)

    return contain(dest, copy)


def _from_fs(origins: _Origins, place: str, here: str, dest: Path, rel: str, keep: Callable[[str], bool]) -> bool:
    """Copy what `place` (a link's own place in the source, or the path it names) resolves to;
    not a folder that holds `here`, the link's own folder (the copy would hold itself)."""
    real = os.path.realpath(place)
    if os.path.isdir(real) and _inside(os.path.realpath(here), real):
        return False
    if not copy_from_fs(Path(real), dest, rel, keep):
        return False
    if os.path.isdir(real):
        origins.copied[rel] = ("fs", real)
    return True
