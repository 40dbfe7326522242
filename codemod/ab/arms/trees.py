"""An arm's tree: the selection relative to its root, the tree's pytest configuration and
test files, and what of the tree an arm needs (`materialise` copies it).

Paths inside an arm are posix strings relative to the arm root ("" is the root
itself); a selected path may carry pytest's ``::`` node-id selectors.  The
configuration file governing the selection (pytest's own order: pytest.ini,
.pytest.ini, pyproject.toml with a [tool.pytest...] table, tox.ini with [pytest],
setup.cfg with [tool:pytest]) gives ``python_files`` (which files are tests) and
``pythonpath`` (directories the arm must also materialise).

Nothing here writes to the user's tree, and the git commands here only read
(`run_git`: ``GIT_OPTIONAL_LOCKS=0``, and plumbing where a porcelain command would
refresh the user's index).

What an arm needs
-----------------
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

Node ids are relative to the arm root (the capture plugin rewrites pytest's
rootdir-relative ids), so they are valid command-line arguments from the
directory every command runs in, whatever pytest's rootdir is.
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import posixpath
import subprocess
import threading
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


class ArmError(Exception):
    """An arm cannot be prepared (bad ref, missing path...)."""


# ---------------------------------------------------------------------------
# the selection


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


# ---------------------------------------------------------------------------
# the tree's pytest configuration and test files

_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}", "__pycache__")
DEFAULT_PYTHON_FILES = ("test_*.py", "*_test.py")
INI_NAMES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def _read_cfg(path: Path) -> configparser.ConfigParser | None:
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    return cp


def _pyproject_table(path: Path) -> dict | None:
    try:
        import tomllib  # type: ignore[import-not-found]

        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except Exception:
        return None
    tool = data.get("tool", {}).get("pytest")
    if not isinstance(tool, dict):
        return None
    ini = tool.get("ini_options")
    return ini if isinstance(ini, dict) else tool


def find_inifile(root: Path, start: str) -> tuple[str, str] | None:
    """pytest's configuration file for arguments under `start` (arm-relative
    directory): the first of pytest.ini, .pytest.ini, pyproject.toml with a
    [tool.pytest...] table, tox.ini with [pytest], setup.cfg with
    [tool:pytest], from `start` up to the arm root.  (dir, file name)."""
    d = start
    while d and not (root / d).is_dir():
        d = posixpath.dirname(d)
    for cand in [d] + list(reversed(ancestors(d))):
        base = root / cand if cand else root
        for name in INI_NAMES:
            path = base / name
            if not path.is_file():
                continue
            if name in ("pytest.ini", ".pytest.ini"):
                return cand, name
            if name == "pyproject.toml":
                if _pyproject_table(path) is not None:
                    return cand, name
                continue
            cp = _read_cfg(path)
            if cp is not None and cp.has_section("pytest" if name == "tox.ini" else "tool:pytest"):
                return cand, name
    return None


def ini_values(root: Path, found: tuple[str, str]) -> dict[str, list[str]]:
    """python_files / pythonpath of a configuration file, as lists."""
    d, name = found
    path = root / d / name if d else root / name
    out: dict[str, list[str]] = {}
    if name == "pyproject.toml":
        table = _pyproject_table(path) or {}
        for key in ("python_files", "pythonpath"):
            v = table.get(key)
            if isinstance(v, str):
                out[key] = v.split()
            elif isinstance(v, list):
                out[key] = [str(x) for x in v]
        return out
    cp = _read_cfg(path)
    section = {"setup.cfg": "tool:pytest"}.get(name, "pytest")
    if cp is not None and cp.has_section(section):
        for key in ("python_files", "pythonpath"):
            v = cp.get(section, key, fallback=None)
            if v:
                out[key] = v.split()
    return out


def python_files_patterns(root: Path, start: str = "") -> tuple[str, ...]:
    """`python_files` from the pytest configuration governing `start`, else the default."""
    found = find_inifile(root, start)
    if found is None:
        return DEFAULT_PYTHON_FILES
    return tuple(ini_values(root, found).get("python_files") or DEFAULT_PYTHON_FILES)


def pythonpath_dirs(root: Path, common: str) -> list[str]:
    """Arm-relative directories named by the ini ``pythonpath`` option."""
    found = find_inifile(root, common)
    if found is None:
        return []
    ini_dir, _ = found
    value = ini_values(root, found).get("pythonpath") or []
    out = []
    for item in value:
        p = posixpath.normpath(join_path(ini_dir, item))
        if p == ".":
            p = ""
        if not p.startswith("../") and p != "..":
            out.append(p)
    return out


def discover_files(root: Path, sel: Selection) -> dict[str, list[str]]:
    """Test files in an arm root -> the pytest arguments selecting them
    (the file itself, or the node-id selectors given for it)."""
    patterns = python_files_patterns(root, sel.common)
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
# reading git, and what an arm needs

CONFIG_FILES = ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "__init__.py")


def _reading_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """A command that reads must not refresh (rewrite) the user's index."""
    return {**(os.environ if env is None else env), "GIT_OPTIONAL_LOCKS": "0"}


def run_git(
    args: list[str],
    cwd: Path,
    *,
    binary: bool = False,
    check: bool = True,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
):
    """`git ARGS` (a command that reads) in `cwd`, in `env` (None: the tool's own); ArmError
    when it fails (unless not `check`)."""
    proc = subprocess.run(
        ["git", *args], cwd=str(cwd), capture_output=True, text=not binary, env=_reading_env(env), timeout=timeout
    )
    if check and proc.returncode != 0:
        err = proc.stderr if not binary else proc.stderr.decode("utf-8", "replace")
        raise ArmError(f"git {' '.join(args)} failed: {err.strip()}")
    return proc


def cat_file(repo: Path, names: Sequence[str]) -> Generator[tuple[str, bytes | None], None, None]:
    """Each object name (a sha or ``REF:PATH``, no newline) with its content (None: no such blob),
    from one `git cat-file --batch`, streamed (a large tree's blobs are never all held at once);
    names are fed on a thread (git answers as it reads: one thread doing both would hang)."""
    if not names:
        return  # (no git process for nothing: a subtree without files asks for none)
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch"],
        cwd=str(repo),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_reading_env(),
    )
    stdin, out = proc.stdin, proc.stdout
    assert stdin is not None and out is not None  # both are pipes

    def feed() -> None:
        try:
            stdin.write(b"".join(name.encode("utf-8", "surrogateescape") + b"\n" for name in names))
            stdin.close()
        except (BrokenPipeError, OSError):
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        for name in names:
            header = out.readline().split()
            if len(header) == 3 and header[2].isdigit():  # SHA TYPE SIZE, then the content
                data = out.read(int(header[2]))
                out.read(1)
                yield name, data if header[1] == b"blob" else None
            elif header[-1:] in ([b"missing"], [b"ambiguous"]):  # NAME missing: nothing follows
                yield name, None
            else:
                raise ArmError(f"git cat-file: unexpected answer for {name}")
    finally:
        writer.join(timeout=5)
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def git_toplevel(cwd: Path) -> Path:
    try:
        proc = run_git(["rev-parse", "--show-toplevel"], cwd)
    except FileNotFoundError as err:
        raise ArmError("git not found: --base needs git on PATH") from err
    return Path(proc.stdout.strip())


def resolve_commit(repo: Path, ref: str) -> str:
    proc = run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo, check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ArmError(f"--base {ref!r} is not a commit in {repo}")
    return proc.stdout.strip()


def ancestor_config_paths(common: str) -> list[str]:
    """Config files that may matter, in every directory from the root down to
    (excluding) `common` itself, which is copied whole."""
    return [join_path(d, name) for d in ancestors(common) for name in CONFIG_FILES]


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
