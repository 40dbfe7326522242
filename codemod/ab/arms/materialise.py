"""An arm's root, materialised: the files git sees there, or a directory whole.

Which subtrees an arm needs is `trees`' answer (the import root of the selection, what the
``pythonpath`` ini option names, the configuration files of the folders above them). What of
them is copied depends on where the arm comes from, never on a file's name:

- **A commit** (arm A of ``--base REF``): every file tracked at the commit, read from git
  objects (``git ls-tree`` + one ``git cat-file --batch``, so ``export-ignore`` /
  ``export-subst`` attributes cannot alter it).
- **A work tree** (arm B of ``--base REF``; an ``--a-root``/``--b-root`` folder inside a git
  work tree that does not ignore it): what ``git ls-files -co --exclude-standard`` names, the
  tracked files (whatever their names: a tracked ``test/build/`` helper package is copied, and
  a change to it is seen) and the untracked ones git does not ignore; what git ignores (a
  ``build/`` of object files that ``.gitignore`` names, a virtual environment, caches) stays
  out. A selected path that git ignores is copied whole: you named it.
- **A directory in no work tree** (or one its work tree ignores): copied whole, but for any
  ``.git`` in it (an arm is never a repository: `isolation`).

A submodule or a nested repository is an empty folder in either arm (its files are another
repository's). Symlinks are copied as links and then contained (`links`). A tree too big to
copy quickly (more than `MAX_FILES` files or `MAX_BYTES` bytes) is refused before anything is
copied, naming its size, its largest folders and how to narrow it (`TreeTooBig`); nothing is
ever silently left out. File contents are copied as they are (data files next to the tests
are fixtures), with their mode, no other metadata. Measured on a synthetic PyTorch-sized
``test/`` (4000 files, 94 MB, ext4, 2 shared cores): 0.45 s from the work tree, 0.45 s from
git objects (up to 1.4 s while the page cache is being flushed), the same as
``shutil.copytree``; listing git's view of it costs a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from codemod.ab.arms import links
from codemod.ab.arms.trees import (
    ArmError,
    Selection,
    ancestor_config_paths,
    ancestors,
    cat_file,
    depth,
    import_root,
    pythonpath_dirs,
    run_git,
    within,
)

MAX_FILES = 100_000
MAX_BYTES = 2 * 1024**3
_REPOSITORY = ".git"


class TreeTooBig(ArmError):
    """The files an arm needs are too many to copy quickly; the message says how to narrow them."""


def materialise_dir(
    src_root: Path, sel: Selection, dest: Path, git_env: dict[str, str] | None = None
) -> tuple[list[str], list[links.LinkFix]]:
    """Copy what the arm needs of a work tree or directory (the module docstring says what);
    returns the subtrees and configuration files copied, and the links that left the arm.
    `git_env`: the environment git finds the work tree with (None: the tool's own)."""
    dest.mkdir(parents=True, exist_ok=True)
    if not src_root.is_dir():
        raise ArmError(f"{src_root} is not a directory")
    subtrees = [import_root(sel.common, lambda p: (src_root / p).exists(), lambda p: (src_root / p).is_dir())]
    subtrees = _minimal(subtrees + [t for t in pythonpath_dirs(src_root, sel.common) if (src_root / t).is_dir()])
    configs = sorted({c for t in subtrees for c in ancestor_config_paths(t)} - set(subtrees))
    named = _git_view(src_root, subtrees, configs, sel, git_env)
    if named is None:
        named = [n for t in subtrees for n in _walk(src_root, t)] + [c for c in configs if (src_root / c).is_file()]
    files = _sized(src_root, named)
    _check_size({rel: size for rel, size in files.items() if size is not None}, subtrees)
    for rel, size in files.items():
        _copy(src_root, rel, dest, size is not None)
    used = subtrees + [c for c in configs if c in files and os.path.lexists(dest / c)]
    return used, links.contain_dir(dest, src_root, _everything)


def _everything(_name: str) -> bool:
    """What a copy of a folder a link points to takes: all of it (a link names the folder whole)."""
    return True


def _minimal(subtrees: Iterable[str]) -> list[str]:
    out: list[str] = []
    for t in sorted(set(subtrees), key=depth):
        if not any(within(t, o) for o in out):
            out.append(t)
    return out


def _git_view(
    src_root: Path, subtrees: list[str], configs: list[str], sel: Selection, env: dict[str, str] | None
) -> list[str] | None:
    """What git's view of the work tree `src_root` lies in names under `subtrees` and among
    `configs`, plus the selected paths it ignores, whole (a folder ends with "/": a nested
    repository or submodule). None when `src_root` is in no work tree, or one that ignores it (or
    git is not installed: then there is no work tree to speak of)."""
    try:
        top = run_git(["rev-parse", "--show-toplevel"], src_root, check=False, env=env)
    except FileNotFoundError:
        return None
    if top.returncode != 0 or run_git(["check-ignore", "-q", "."], src_root, check=False, env=env).returncode == 0:
        return None
    specs = [t or "." for t in subtrees] + configs
    listing = ["--literal-pathspecs", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--"]
    named = _names(run_git([*listing, *specs], src_root, env=env).stdout)
    seen = set(named) | {a for n in named for a in ancestors(n.rstrip("/"))}
    ignored = [p for p in sel.plain_paths if p and p not in seen and os.path.lexists(src_root / p)]
    if ignored:  # named by the user: everything under them, ignored or not
        whole = ["--literal-pathspecs", "ls-files", "-z", "--cached", "--others", "--"]
        named += _names(run_git([*whole, *ignored], src_root, env=env).stdout)
    return list(dict.fromkeys(named))


def _names(out: str) -> list[str]:
    # (tracked files listed once per stage of a conflict)
    return list(dict.fromkeys(n for n in out.split("\0") if n))


def _walk(src_root: Path, tree: str) -> list[str]:
    """Everything under `tree` of a directory copied whole: files and links, and each folder
    (ending with "/", so that an empty one is copied too); no `.git`."""
    out: list[str] = []
    top = src_root / tree if tree else src_root
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = Path(dirpath).relative_to(src_root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        out.append(rel_dir + "/" if rel_dir else "")
        kept = []
        for d in dirnames:
            if d == _REPOSITORY:
                continue
            if os.path.islink(os.path.join(dirpath, d)):
                filenames.append(d)  # a link, not followed
            else:
                kept.append(d)
        dirnames[:] = kept
        out += [posixpath.join(rel_dir, f) for f in filenames if f != _REPOSITORY]
    return [n for n in out if n]


def _sized(src_root: Path, named: list[str]) -> dict[str, int | None]:
    """Each name with its size in bytes (None: a folder or a link); a name that does not exist
    (a tracked file deleted in the work tree) or is no file, link or folder is left out."""
    out: dict[str, int | None] = {}
    for rel in named:
        try:
            st = os.lstat(src_root / rel.rstrip("/"))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out[rel] = st.st_size
        elif stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
            out[rel] = None
    return out


def _copy(src_root: Path, rel: str, dest: Path, regular: bool) -> None:
    source, target = src_root / rel.rstrip("/"), dest / rel.rstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if regular:
        shutil.copyfile(source, target)
        shutil.copymode(source, target)
    elif os.path.islink(source):
        os.symlink(os.readlink(source), target)
    else:  # a folder: a submodule's or a nested repository's (empty), or an empty one
        target.mkdir(exist_ok=True)


def _check_size(sizes: dict[str, int], subtrees: list[str]) -> None:
    total = sum(sizes.values())
    if len(sizes) <= MAX_FILES and total <= MAX_BYTES:
        return
    where = ", ".join(f"{t or 'the top'}/" for t in subtrees)
    folders: dict[str, int] = {}
    for rel, size in sizes.items():
        tree = next((t for t in subtrees if within(rel, t)), "")
        parts = rel[len(tree) :].lstrip("/").split("/")
        key = posixpath.join(tree, parts[0]) + ("/" if len(parts) > 1 else "")
        folders[key] = folders.get(key, 0) + size
    largest = ", ".join(f"{k} ({_size(v)})" for k, v in sorted(folders.items(), key=lambda kv: -kv[1])[:3])
    raise TreeTooBig(
        f"the arm would copy {len(sizes):,} files ({_size(total)}) under {where}, more than an arm copies "
        f"({MAX_FILES:,} files or {_size(MAX_BYTES)}); the largest: {largest}. Select a narrower path (an arm "
        "copies the package base folder of the selection, and the top when a conftest.py lies above it), or "
        "have git ignore what the tests do not need"
    )


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


# ---------------------------------------------------------------------------
# from a commit


def materialise_git(repo: Path, commit: str, sel: Selection, dest: Path) -> tuple[list[str], list[links.LinkFix]]:
    """Write what the arm needs of `commit` into dest; returns the git paths used (subtrees
    and config files, "" = everything), and the links that left the arm."""
    dest.mkdir(parents=True, exist_ok=True)
    listing = run_git(["ls-tree", "-r", "-z", "-l", "--full-tree", commit], repo, binary=True).stdout
    entries: list[_Entry] = []
    files: set[str] = set()
    dirs: set[str] = {""}
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, typ, sha, size = meta.decode().split()
        p = path.decode("utf-8", "surrogateescape")
        entries.append((mode, typ, sha, p, int(size) if size.isdigit() else 0))
        files.add(p)
        dirs.update(ancestors(p))
    exists = lambda p: p in files or p in dirs  # noqa: E731
    subtrees = [import_root(sel.common, exists, lambda p: p in dirs)]
    chosen = _chosen(entries, subtrees)
    _check_size(_blob_sizes(chosen), subtrees)
    _write_entries(repo, chosen, subtrees, dest)
    # pythonpath, read from the configuration just written
    extra = [t for t in pythonpath_dirs(dest, sel.common) if t in dirs]
    extra = [t for t in _minimal(subtrees + extra) if t not in subtrees]
    if extra:
        had = {e[3] for e in chosen}
        more = [e for e in _chosen(entries, extra) if e[3] not in had]
        _check_size(_blob_sizes(chosen + more), subtrees + extra)
        _write_entries(repo, more, extra, dest)
        subtrees, chosen = subtrees + extra, chosen + more
    configs = {c for t in subtrees for c in ancestor_config_paths(t)}
    used = subtrees + sorted(p for _, _, _, p, _ in chosen if p in configs)

    def from_commit(repo_rel: str, arm_rel: str) -> bool:  # what a link names, from the same commit
        picked = [(m, t, s, arm_rel + p[len(repo_rel) :]) for m, t, s, p, _ in entries if within(p, repo_rel)]
        folder = any(p != repo_rel for _, _, _, p, _ in entries if within(p, repo_rel))
        if not picked or not repo_rel or (folder and within(arm_rel, repo_rel)):  # not into itself
            return False
        _write_entries(repo, [(*e, 0) for e in picked], [arm_rel if folder else posixpath.dirname(arm_rel)], dest)
        return True

    return used, links.contain_git(dest, repo, from_commit, _everything)


_Entry = tuple[str, str, str, str, int]  # mode, type, object id, path, size (blobs)


def _chosen(entries: list[_Entry], subtrees: list[str]) -> list[_Entry]:
    """The entries of the commit under `subtrees`, and the configuration files above them."""
    configs = {c for t in subtrees for c in ancestor_config_paths(t)}
    return [e for e in entries if e[3] in configs or any(within(e[3], t) for t in subtrees)]


def _blob_sizes(entries: list[_Entry]) -> dict[str, int]:
    return {p: size for _, t, _, p, size in entries if t == "blob"}


def _write_entries(repo: Path, entries: list[_Entry], subtrees: list[str], dest: Path) -> None:
    """Write `entries` of the commit into `dest` (a file already there is kept): blobs with
    their mode, links as links, submodules as empty folders; and each of `subtrees`, even empty."""
    for tree in subtrees:
        (dest / tree if tree else dest).mkdir(parents=True, exist_ok=True)
    blobs = [(m, s, p) for m, t, s, p, _ in entries if t == "blob" and not os.path.lexists(dest / p)]
    for _m, t, _s, p, _ in entries:
        if t == "commit":  # submodule: leave an empty directory
            (dest / p).mkdir(parents=True, exist_ok=True)
    with contextlib.closing(cat_file(repo, [sha for _, sha, _ in blobs])) as answers:
        for (mode, _sha, path), (_, data) in zip(blobs, answers, strict=True):
            if data is None:
                raise ArmError(f"git cat-file: no blob for {path}")
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == "120000":
                os.symlink(data.decode("utf-8", "surrogateescape"), target)
            else:
                with open(target, "wb") as fh:
                    fh.write(data)
                if mode == "100755":
                    target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def clone_root(src: Path, dest: Path) -> None:
    """Copy an already materialised arm root (for diagnostic arms), as it is."""
    shutil.copytree(src, dest, symlinks=True)
