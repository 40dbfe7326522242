"""What the user selected, relative to an arm root, and the path arithmetic on it.

Paths inside an arm are posix strings relative to the arm root ("" is the root
itself); a selected path may carry pytest's ``::`` node-id selectors.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codemod.ab.arms import ArmError


@dataclass
class Selection:
    """What the user asked for, relative to the arm root (posix)."""

    paths: list[str]  # as given, made root-relative (may carry ::selectors)
    common: str  # the smallest directory enclosing all paths ("" = root)

    @property
    def plain_paths(self) -> list[str]:
        return sorted({p.split("::", 1)[0] for p in self.paths})


def make_selection(paths: Iterable[str], cwd: Path, root: Path) -> Selection:
    """Turn user paths (relative to cwd, or absolute) into root-relative ones."""
    rel: list[str] = []
    root_r = root.resolve()
    for raw in paths:
        path, sep, sel = raw.partition("::")
        p = Path(path)
        if not p.is_absolute():
            p = cwd / p
        p = Path(os.path.normpath(str(p)))
        try:
            r = p.resolve().relative_to(root_r) if p.exists() else p.relative_to(root)
        except ValueError:
            try:
                r = p.relative_to(root)
            except ValueError:
                raise ArmError(f"{raw} is outside {root}") from None
        r_posix = PurePosixPath(*r.parts).as_posix() if r.parts else ""
        rel.append(r_posix + (sep + sel if sep else ""))
    return Selection(paths=rel, common=common_dir(rel))


def common_dir(rel_paths: Iterable[str]) -> str:
    dirs = []
    for p in rel_paths:
        p = p.split("::", 1)[0]
        parts = PurePosixPath(p).parts
        if p.endswith(".py"):
            parts = parts[:-1]
        dirs.append(parts)
    if not dirs:
        return ""
    common = []
    for items in zip(*dirs, strict=False):
        if all(x == items[0] for x in items):
            common.append(items[0])
        else:
            break
    return "/".join(common)


def join_path(d: str, name: str) -> str:
    return f"{d}/{name}" if d else name


def depth(d: str) -> int:
    return len(PurePosixPath(d).parts) if d else 0


def ancestors(d: str) -> list[str]:
    """ "" ... parent of d (root first)."""
    parts = PurePosixPath(d).parts if d else ()
    return ["/".join(parts[:i]) for i in range(len(parts))]


def within(path: str, tree: str) -> bool:
    return not tree or path == tree or path.startswith(tree + "/")
