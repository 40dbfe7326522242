"""Materialising the selection: each arm's root, copied from git objects or a directory.

Nothing here writes to the user's tree: arm A is read from git objects
(``git ls-tree`` + ``git cat-file --batch``, so ``export-ignore`` /
``export-subst`` attributes cannot alter it), arm B is copied from the work
tree, and plain directories are copied.

What is materialised
--------------------
Not just the selected directory: the tests must be able to import what they
import in a plain ``pytest`` run (``from tests.helpers import X`` next to
``tests/pkg/sub/test_x.py``).  With pytest's default ``prepend`` import mode
a test module (and every ``conftest.py``) puts its *package base directory*
on ``sys.path``: the first ancestor without an ``__init__.py``.  So each arm
gets the **import root** subtree, the shallowest of

* the package base directory of the selected directory (the common ancestor
  of PATHS; a deeper test file's base directory is never shallower), and
* the package base directory of every ancestor directory holding a
  ``conftest.py`` (a root ``conftest.py`` makes the import root the top),

plus every directory named by the ``pythonpath`` ini option, plus the
configuration files (conftest.py, pytest.ini, pyproject.toml, setup.cfg,
tox.ini, __init__.py) of the directories above the import root.

Why not always the whole rootdir / git top level: in a PyTorch checkout the
rootdir is the top (pytest.ini lives there), and copying it would put the
source ``torch/`` package (without its compiled extension) in front of the
installed torch on ``sys.path`` -- every test would break -- and cost tens of
thousands of files.  ``test/`` has no ``__init__.py``, so its import root is
``test/`` itself (a few thousand files).  Top-level modules outside the
import root (importable only because ``python -m pytest`` puts the cwd on
``sys.path``) are therefore not materialised unless the import root is the
top.

Copying is cheap: arm A reads the listing once (``git ls-tree -r``) and the
blobs through one ``git cat-file --batch`` process; the work tree and plain
directories are walked once, skipping ``.git``, ``build``, ``dist``,
``node_modules``, ``__pycache__``, ``*.egg-info``, tool caches and every
virtual environment (a directory holding ``pyvenv.cfg``) -- except on the
path to a selected test.  File contents are copied as they are (no size
limit: data files next to the tests are legitimate fixtures); no
``copystat``, only the mode.  Measured on a synthetic PyTorch-sized ``test/``
(4000 files, 94 MB, ext4, 2 shared cores): 0.45 s from the work tree, 0.45 s
from git objects (up to 1.4 s while the page cache is being flushed), the
same as ``shutil.copytree``.  The same directory-name
exclusions apply to the git arm so both arms see the same file set.

Node ids are relative to the arm root (the capture plugin rewrites pytest's
rootdir-relative ids), so they are valid command-line arguments from the
directory every command runs in, whatever pytest's rootdir is.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from codemod.ab.arms import ArmError
from codemod.ab.selection import Selection, ancestors, depth, join_path, within
from codemod.ab.testfiles import pythonpath_dirs

CONFIG_FILES = ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "__init__.py")
# Directory names never copied into an arm (see the module docstring).
SKIP_DIRS = frozenset(
    {
        ".git",
        "build",
        "dist",
        "node_modules",
        "__pycache__",
        ".pytest_cache",
        ".hypothesis",
        ".mypy_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".eggs",
        ".venv",
        "venv",
    }
)


def _git(args: list[str], cwd: Path, *, binary: bool = False, check: bool = True):
    proc = subprocess.run(["git", *args], cwd=str(cwd), capture_output=True, text=not binary)
    if check and proc.returncode != 0:
        err = proc.stderr if not binary else proc.stderr.decode("utf-8", "replace")
        raise ArmError(f"git {' '.join(args)} failed: {err.strip()}")
    return proc


def git_toplevel(cwd: Path) -> Path:
    try:
        proc = _git(["rev-parse", "--show-toplevel"], cwd)
    except FileNotFoundError as err:
        raise ArmError("git is not installed") from err
    return Path(proc.stdout.strip())


def resolve_commit(repo: Path, ref: str) -> str:
    proc = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo, check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ArmError(f"--base {ref!r} is not a commit in {repo}")
    return proc.stdout.strip()


def ancestor_config_paths(common: str) -> list[str]:
    """Config files that may matter, in every directory from the root down to
    (excluding) `common` itself, which is copied whole."""
    parts = PurePosixPath(common).parts if common else ()
    out = []
    for i in range(len(parts)):
        d = "/".join(parts[:i])
        for name in CONFIG_FILES:
            out.append(f"{d}/{name}" if d else name)
    return out


def package_basedir(d: str, exists) -> str:
    """First directory at or above `d` without an __init__.py (pytest's
    prepend-mode sys.path entry for modules in `d`)."""
    while d and exists(join_path(d, "__init__.py")):
        d = posixpath.dirname(d)
    return d


def import_root(common: str, exists, isdir) -> str:
    """The subtree the selected tests can import from (module docstring)."""
    d = common
    while d and not isdir(d):
        d = posixpath.dirname(d)
    cands = [d] + [a for a in ancestors(d) if exists(join_path(a, "conftest.py"))]
    return min((package_basedir(c, exists) for c in cands), key=depth)


def _skipped_dir(name: str, full: Path | None = None) -> bool:
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    return full is not None and (full / "pyvenv.cfg").is_file()


def _keep_path(rel: str, protected: set[str]) -> bool:
    """Git-arm filter: the same directory-name exclusions as the work-tree copy."""
    parts = PurePosixPath(rel).parts
    for i, name in enumerate(parts[:-1]):
        if _skipped_dir(name) and "/".join(parts[: i + 1]) not in protected:
            return False
    return True


def _protected(sel: Selection) -> set[str]:
    """Selected paths and their ancestors: never excluded."""
    out = set()
    for p in sel.plain_paths:
        out.update(ancestors(p))
        out.add(p)
    return out


def _copy_subtree(src_root: Path, tree: str, dest: Path, protected: set[str]) -> int:
    src = src_root / tree if tree else src_root
    n = 0
    for dirpath, dirnames, filenames in os.walk(src):
        rel_dir = os.path.relpath(dirpath, src_root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        out_dir = dest / rel_dir if rel_dir else dest
        out_dir.mkdir(parents=True, exist_ok=True)
        keep = []
        for d in dirnames:
            full = Path(dirpath, d)
            rel = join_path(rel_dir, d)
            if rel not in protected and _skipped_dir(d, full):
                continue
            if full.is_symlink():
                os.symlink(os.readlink(full), out_dir / d)
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            if f.endswith((".pyc", ".pyo")):
                continue
            s_f, d_f = os.path.join(dirpath, f), out_dir / f
            if os.path.islink(s_f):
                os.symlink(os.readlink(s_f), d_f)
            else:
                shutil.copyfile(s_f, d_f)
                shutil.copymode(s_f, d_f)
            n += 1
    return n


def _fs_plan(src_root: Path, sel: Selection) -> str:
    return import_root(sel.common, lambda p: (src_root / p).exists(), lambda p: (src_root / p).is_dir())


def _minimal(trees: Iterable[str]) -> list[str]:
    out: list[str] = []
    for t in sorted(set(trees), key=depth):
        if not any(within(t, o) for o in out):
            out.append(t)
    return out


def materialise_dir(src_root: Path, sel: Selection, dest: Path) -> list[str]:
    """Copy the import root subtree (and what pythonpath names) from a plain
    directory or work tree; returns the subtrees + config files copied."""
    dest.mkdir(parents=True, exist_ok=True)
    if not src_root.is_dir():
        raise ArmError(f"{src_root} is not a directory")
    protected = _protected(sel)
    trees = [_fs_plan(src_root, sel)]
    trees += [t for t in pythonpath_dirs(src_root, sel.common) if (src_root / t).is_dir()]
    trees = _minimal(trees)
    used: list[str] = []
    for tree in trees:
        _copy_subtree(src_root, tree, dest, protected)
        used.append(tree)
    for tree in trees:
        for rel in ancestor_config_paths(tree):
            src = src_root / rel
            if src.is_file() and not (dest / rel).exists():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest / rel)
                used.append(rel)
    return used


def materialise_git(repo: Path, commit: str, sel: Selection, dest: Path) -> list[str]:
    """Write the import root subtree of `commit` into dest; returns the git
    paths used (subtrees and config files, "" = everything)."""
    dest.mkdir(parents=True, exist_ok=True)
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", commit], repo, binary=True).stdout
    entries = []
    files: set[str] = set()
    dirs: set[str] = {""}
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, typ, sha = meta.decode().split()
        p = path.decode("utf-8", "surrogateescape")
        entries.append((mode, typ, sha, p))
        files.add(p)
        dirs.update(ancestors(p))
    exists = lambda p: p in files or p in dirs  # noqa: E731
    trees = [import_root(sel.common, exists, lambda p: p in dirs)]
    protected = _protected(sel)
    used = _write_entries(repo, entries, trees, protected, dest)
    # pythonpath (read from the configuration just written)
    extra = [t for t in pythonpath_dirs(dest, sel.common) if t in dirs]
    extra = [t for t in _minimal(trees + extra) if t not in trees]
    if extra:
        used += _write_entries(repo, entries, extra, protected, dest)
    return used


def _write_entries(repo: Path, entries, trees: list[str], protected: set[str], dest: Path) -> list[str]:
    configs = {c for t in trees for c in ancestor_config_paths(t)}
    present = {p for _, _, _, p in entries}
    chosen = [
        (m, t, s, p)
        for m, t, s, p in entries
        if (any(within(p, tree) for tree in trees) and _keep_path(p, protected)) or p in configs
    ]
    for tree in trees:
        (dest / tree if tree else dest).mkdir(parents=True, exist_ok=True)
    used = list(trees) + sorted(c for c in configs if c in present)
    blobs = [(m, s, p) for m, t, s, p in chosen if t == "blob" and not (dest / p).exists()]
    for _m, t, _s, p in chosen:
        if t == "commit":  # submodule: leave an empty directory
            (dest / p).mkdir(parents=True, exist_ok=True)
    if blobs:
        proc = subprocess.Popen(
            ["git", "cat-file", "--batch"],
            cwd=str(repo),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

        def feed() -> None:
            try:
                for _, sha, _ in blobs:
                    proc.stdin.write(sha.encode() + b"\n")
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        try:
            out = proc.stdout
            for mode, _sha, path in blobs:
                header = out.readline().split()
                if len(header) != 3:
                    raise ArmError(f"git cat-file: unexpected answer for {path}")
                size = int(header[2])
                data = out.read(size)
                out.read(1)
                target = dest / path
                target.parent.mkdir(parents=True, exist_ok=True)
                if mode == "120000":
                    os.symlink(data.decode("utf-8", "surrogateescape"), target)
                else:
                    with open(target, "wb") as fh:
                        fh.write(data)
                    if mode == "100755":
                        target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        finally:
            writer.join(timeout=5)
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    return used


def clone_root(src: Path, dest: Path) -> None:
    """Copy an already materialised arm root (for diagnostic arms)."""
    shutil.copytree(
        src, dest, symlinks=True, ignore=lambda _d, names: [n for n in names if n in ("__pycache__", ".pytest_cache")]
    )
