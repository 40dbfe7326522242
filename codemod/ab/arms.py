"""Arm roots and environments: what each arm runs, where, and with what.

Nothing here writes to the user's tree: arm A is read from git objects
(``git ls-tree`` + ``git cat-file --batch``, so ``export-ignore`` /
``export-subst`` attributes cannot alter it), arm B is copied from the work
tree, and plain directories are copied.
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import shlex
import shutil
import stat
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Optional

# Variables unset in every arm (and recorded in ABResult.env_unset).
UNSET_VARS = (
    "CI",
    "PYTORCH_RETRY_TEST_CASES",
    "PYTORCH_OVERRIDE_FLAKY_SIGNAL",
    "PYTORCH_TEST_RERUN_DISABLED_TESTS",
    "DISABLED_TESTS_FILE",
    "SLOW_TESTS_FILE",
    "PYTEST_ADDOPTS",          # may carry -x, --lf, --reruns, -p randomly ...
    # Bytecode goes to the per-arm PYTHONPYCACHEPREFIX (inside the temp dir,
    # never the user's tree).  With PYTHONDONTWRITEBYTECODE=1 on top, every
    # process would recompile everything it imports (import torch: 3.4 s ->
    # 7.7 s measured), because a prefix hides the __pycache__ directories.
    "PYTHONDONTWRITEBYTECODE",
)
# Variables set in every arm (recorded in ABResult.env_set; PYTHONPYCACHEPREFIX
# is per arm and recorded as "<per-arm temp dir>").
FIXED_VARS = {
    "PYTORCH_PRINT_REPRO_ON_FAILURE": "0",
    "PYTHONHASHSEED": "0",
}
# Only in the reproduction commands (a human runs them in a real tree).
REPRO_VARS = {"PYTHONDONTWRITEBYTECODE": "1"}
PYTEST_ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly", "--continue-on-collection-errors")
CONFIG_FILES = ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "__init__.py")
_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}", "__pycache__")
DEFAULT_PYTHON_FILES = ("test_*.py", "*_test.py")


class ArmError(Exception):
    """An arm cannot be prepared (bad ref, missing path...)."""


@dataclass
class Selection:
    """What the user asked for, relative to the arm root (posix)."""

    paths: list[str]                      # as given, made root-relative (may carry ::selectors)
    common: str                           # the smallest directory enclosing all paths ("" = root)

    @property
    def plain_paths(self) -> list[str]:
        return sorted({p.split("::", 1)[0] for p in self.paths})


@dataclass
class ArmSpec:
    name: str
    label: str
    source: str
    root: Path                            # temporary root where the arm runs
    workdir: Path                         # per-arm scratch (events, logs, pycache)
    env: dict[str, str] = field(default_factory=dict)        # complete child environment
    env_added: dict[str, str] = field(default_factory=dict)  # --env + --diag variables
    extra_args: list[str] = field(default_factory=list)
    based_on: Optional[str] = None        # for diagnostic arms
    materialise_note: str = ""            # how to rebuild the root by hand


# ---------------------------------------------------------------------------
# paths


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
    for items in zip(*dirs):
        if all(x == items[0] for x in items):
            common.append(items[0])
        else:
            break
    return "/".join(common)


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


# ---------------------------------------------------------------------------
# materialisation


def _ignore(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n in ("__pycache__", ".pytest_cache", ".git", ".hypothesis") or n.endswith(".pyc")]


def materialise_dir(src_root: Path, sel: Selection, dest: Path) -> None:
    """Copy the subtree the tests need from a plain directory (or work tree)."""
    dest.mkdir(parents=True, exist_ok=True)
    common = src_root / sel.common if sel.common else src_root
    if not common.is_dir():
        raise ArmError(f"{common} is not a directory")
    target = dest / sel.common if sel.common else dest
    if sel.common:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(common, target, symlinks=True, ignore=_ignore)
    else:
        shutil.copytree(common, target, symlinks=True, ignore=_ignore, dirs_exist_ok=True)
    for rel in ancestor_config_paths(sel.common):
        src = src_root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel, follow_symlinks=True)


def materialise_git(repo: Path, commit: str, sel: Selection, dest: Path) -> list[str]:
    """Write the needed subtree of `commit` into dest; returns the git paths used."""
    dest.mkdir(parents=True, exist_ok=True)
    wanted = [sel.common] if sel.common else []
    wanted += ancestor_config_paths(sel.common)
    args = ["ls-tree", "-r", "-z", "--full-tree", commit, "--"] + (wanted if sel.common else [])
    listing = _git(args, repo, binary=True).stdout
    entries = []
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, typ, sha = meta.decode().split()
        entries.append((mode, typ, sha, path.decode("utf-8", "surrogateescape")))
    if sel.common and not any(p == sel.common or p.startswith(sel.common + "/") for _, _, _, p in entries):
        raise ArmError(f"{sel.common}/ does not exist at {commit[:12]}")
    present = {p for _, _, _, p in entries}
    wanted = [w for w in wanted if w == sel.common or w in present]
    blobs = [(m, s, p) for m, t, s, p in entries if t == "blob"]
    for m, t, s, p in entries:
        if t == "commit":  # submodule: leave an empty directory
            (dest / p).mkdir(parents=True, exist_ok=True)
    if blobs:
        proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=str(repo),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

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
            for mode, sha, path in blobs:
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
    return wanted


def clone_root(src: Path, dest: Path) -> None:
    """Copy an already materialised arm root (for diagnostic arms)."""
    shutil.copytree(src, dest, symlinks=True, ignore=_ignore)


# ---------------------------------------------------------------------------
# discovery


def python_files_patterns(root: Path) -> tuple[str, ...]:
    """`python_files` from the root's pytest configuration, else the default."""
    for name, sections in (("pytest.ini", ("pytest",)), ("tox.ini", ("pytest",)), ("setup.cfg", ("tool:pytest",))):
        path = root / name
        if not path.is_file():
            continue
        cp = configparser.ConfigParser(interpolation=None)
        try:
            cp.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        for sec in sections:
            if cp.has_section(sec):
                value = cp.get(sec, "python_files", fallback=None)
                if value:
                    return tuple(value.split())
                if name == "pytest.ini":
                    return DEFAULT_PYTHON_FILES
    pp = root / "pyproject.toml"
    if pp.is_file():
        try:
            import tomllib  # type: ignore[import-not-found]
            data = tomllib.loads(pp.read_text(encoding="utf-8"))
            value = data.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("python_files")
            if isinstance(value, str):
                return tuple(value.split())
            if isinstance(value, list):
                return tuple(value)
        except Exception:
            pass
    return DEFAULT_PYTHON_FILES


def discover_files(root: Path, sel: Selection) -> dict[str, list[str]]:
    """Test files in an arm root -> the pytest arguments selecting them
    (the file itself, or the node-id selectors given for it)."""
    patterns = python_files_patterns(root)
    out: dict[str, list[str]] = {}
    for raw in sel.paths:
        path, sep, _ = raw.partition("::")
        full = root / path if path else root
        if sep:
            if full.is_file():
                args = out.setdefault(path, [])
                if path not in args:
                    args.append(raw)
            continue
        if full.is_file():
            out[path] = [path]
        elif full.is_dir():
            for dirpath, dirnames, filenames in os.walk(full):
                dirnames[:] = sorted(d for d in dirnames if not any(fnmatch.fnmatch(d, pat) for pat in _NORECURSE))
                for fn in sorted(filenames):
                    if fn.endswith(".py") and any(fnmatch.fnmatch(fn, pat) for pat in patterns):
                        rel = Path(dirpath, fn).relative_to(root).as_posix()
                        out[rel] = [rel]
    return dict(sorted(out.items()))


def has_conftest_option(root: Path, option: str) -> bool:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".git")]
        if "conftest.py" in filenames:
            try:
                if option in Path(dirpath, "conftest.py").read_text(encoding="utf-8", errors="replace"):
                    return True
            except OSError:
                pass
    return False


# ---------------------------------------------------------------------------
# environment


def sanitised_env(base: dict[str, str], added: dict[str, str], pycache: Path, plugin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in base.items() if k not in UNSET_VARS and not k.startswith("DECOUPLE_AB_")}
    env.update(FIXED_VARS)
    env.update(added)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(plugin_dir) + (os.pathsep + old if old else "")
    return env


def pythonpath_warnings(base: dict[str, str], user_roots: Iterable[Path]) -> list[str]:
    out = []
    entries = [e for e in base.get("PYTHONPATH", "").split(os.pathsep) if e]
    for root in user_roots:
        r = str(root.resolve())
        for e in entries:
            er = os.path.realpath(e)
            if er == r or er.startswith(r + os.sep):
                out.append(f"PYTHONPATH entry {e} points into {root}: every arm imports from the user's tree there")
    return out


def repro_command(spec: ArmSpec, python: str, args: list[str], prefix: str = "", cd: Optional[str] = None) -> str:
    parts = []
    if prefix:
        parts.append(prefix)
    parts.append(f"cd {shlex.quote(cd or str(spec.root))}")
    env_bits = ["env"] + [f"-u {v}" for v in UNSET_VARS if v not in REPRO_VARS]
    env_bits += [f"{k}={shlex.quote(v)}" for k, v in {**FIXED_VARS, **REPRO_VARS}.items()]
    env_bits += [f"{k}={shlex.quote(v)}" for k, v in spec.env_added.items()]
    cmd = " ".join(env_bits + [shlex.quote(python), "-m", "pytest", *PYTEST_ARGS]
                   + [shlex.quote(a) for a in args] + [shlex.quote(a) for a in spec.extra_args])
    parts.append(cmd)
    return " && ".join(parts)
