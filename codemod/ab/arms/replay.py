"""Trees for the confirmation reruns: each rerun is a replay of the arm as it was before its first run.

The first run writes to the arm's root (a test's leftovers, a cache file next to a test): a
rerun there could pass only because of them. So a pristine copy of the root is taken before
anything runs in it, and every rerun runs in a tree of its own that is exactly that copy, with a
temp dir of its own, empty. Such a tree is made once (a full copy: hardlinks would let a test
write through to the pristine copy) and, after each rerun, put back as it was: what the rerun
added is removed, what it changed or removed is copied again from the pristine copy. A change is
told by each entry's inode, type, mode, size and modification and change times (the kernel sets
the change time on every write, rename or chmod; a process cannot set it back), so putting a tree
back costs a walk of it and the copies of what changed. A tree that cannot be put back is
deleted; a new one is made for the next rerun. Every tree lives in the arm's scratch folder,
inside the run's temporary root, and goes with it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from codemod.ab.arms.sources import CWD_VARS, TEMP_VARS, ArmSpec

_Stat = tuple[int, int, int, int, int]  # inode, mode (type and permissions), size, mtime, ctime (ns)


def _stat_of(st: os.stat_result) -> _Stat:
    return (st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _listing(root: Path) -> dict[str, _Stat]:
    """Every entry under `root` (relative path -> its stat), links not followed."""
    out: dict[str, _Stat] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = _stat_of(os.lstat(path))
    return out


def _changed(before: _Stat, now: _Stat) -> bool:
    if stat.S_ISDIR(before[1]) and stat.S_ISDIR(now[1]):
        # a folder's times change with its entries, which are compared one by one
        return before[:2] != now[:2]
    return before != now


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


@dataclasses.dataclass(kw_only=True)
class _Tree:
    root: Path
    tmp: Path
    listing: dict[str, _Stat]


class Replays:
    """The replay trees of one arm, made from its pristine copy; thread-safe."""

    def __init__(self, spec: ArmSpec, pristine: Path):
        self.spec = spec  # read at each rerun: its arguments and environment as they are then
        self.pristine = pristine
        self._free: list[_Tree] = []
        self._made = 0
        self._lock = threading.Lock()

    @classmethod
    def snapshot(cls, spec: ArmSpec) -> Replays:
        """Take the pristine copy of the arm's root (before anything runs in it)."""
        pristine = spec.workdir / "pristine"
        shutil.copytree(spec.root, pristine, symlinks=True)
        return cls(spec, pristine)

    @contextlib.contextmanager
    def tree(self) -> Iterator[ArmSpec]:
        """The arm's spec moved to a tree as the arm was before its first run; the tree is put
        back when the block ends."""
        tree = self._take()
        spec = self.spec
        env = {**spec.env, **{k: str(tree.root) for k in CWD_VARS}, **{k: str(tree.tmp) for k in TEMP_VARS}}
        try:
            yield dataclasses.replace(spec, root=tree.root, env=env)
        finally:
            self._give_back(tree)

    def _take(self) -> _Tree:
        with self._lock:
            if self._free:
                return self._free.pop()
            self._made += 1
            where = self.spec.workdir / "replays" / str(self._made)
        shutil.copytree(self.pristine, where / "root", symlinks=True)
        (where / "tmp").mkdir()
        return _Tree(root=where / "root", tmp=where / "tmp", listing=_listing(where / "root"))

    def _give_back(self, tree: _Tree) -> None:
        try:
            restore(tree.root, self.pristine, tree.listing)
            shutil.rmtree(tree.tmp)
            tree.tmp.mkdir()
            tree.listing = _listing(tree.root)
        except OSError:  # (a folder a test made unwritable): this tree is not used again
            shutil.rmtree(tree.root.parent, ignore_errors=True)
            return
        with self._lock:
            self._free.append(tree)


def restore(root: Path, pristine: Path, listing: dict[str, _Stat]) -> None:
    """Put `root` back as `pristine` is, given `listing` (`root`'s entries when it was a copy of
    it): remove what was added or changed, copy again what was changed or removed."""
    now = _listing(root)
    gone = sorted(p for p, st in now.items() if p not in listing or _changed(listing[p], st))
    for rel in gone:
        path = root / rel
        if os.path.lexists(path):  # (not under a folder removed before it)
            _remove(path)
    missing = sorted(p for p in listing if not os.path.lexists(root / p))
    for rel in missing:
        source, target = pristine / rel, root / rel
        if os.path.lexists(target):  # under a folder copied before it
            continue
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
