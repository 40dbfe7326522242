"""The test files of an arm, as pytest would collect them, read from its configuration.

The configuration file governing the selection (pytest's own order: pytest.ini,
.pytest.ini, pyproject.toml with a [tool.pytest...] table, tox.ini with [pytest],
setup.cfg with [tool:pytest]) gives ``python_files`` (which files are tests) and
``pythonpath`` (directories the arm must also materialise).
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import posixpath
from pathlib import Path

from codemod.ab.selection import Selection, ancestors, join_path

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
