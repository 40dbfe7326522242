"""Which files a run looks at: explicit files, folders, or the upstream allowlist."""

from __future__ import annotations

import functools
import json
import os
import stat
import subprocess
from dataclasses import dataclass, field

import pathspec

from codemod.util.jsonfile import JSONInputError, loads

# Upstream keeps vendored code out of the refactor.
DEFAULT_EXCLUDES = (
    "test/cpython/*",
    "test/cpp_extensions/open_registration_extension/*",
)

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", "node_modules", ".mypy_cache"}


class DiscoveryError(Exception):
    """A path the user named does not exist or an allowlist cannot be read."""


class EmptyAllowlist(Exception):
    """The allowlist lists no file and no path was named: nothing to do (exit 0; the campaign
    is over). Neither a DiscoveryError nor a usage error, so that no caller reports it as one."""


def is_test_file(path: str) -> bool:
    """The linter's definition of a test file, by basename."""
    base = os.path.basename(path)
    return base.endswith(".py") and (base.startswith("test_") or base.endswith("_test.py"))


@dataclass
class Discovered:
    files: list[str] = field(default_factory=list)  # sorted, deduplicated
    excluded: list[str] = field(default_factory=list)  # files dropped by an exclude glob


def _git_root(folder: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", folder, "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _git_files(folder: str) -> list[str] | None:
    """Tracked and untracked-but-not-ignored .py files below `folder` (None: not a git tree,
    or a folder the tree ignores as a whole: named explicitly, it is walked)."""
    if _git_root(folder) is None:
        return None
    ignored = subprocess.run(["git", "-C", folder, "check-ignore", "-q", "."], capture_output=True, timeout=30)
    if ignored.returncode == 0:
        return None
    out = subprocess.run(
        ["git", "-C", folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.py"],
        capture_output=True,
        timeout=120,
    )
    if out.returncode != 0:
        return None
    names = [n for n in out.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    # ls-files also lists tracked files deleted from the work tree.
    return [p for p in (os.path.join(folder, n) for n in names) if os.path.isfile(p)]


def _walk_files(folder: str) -> list[str]:
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        found.extend(os.path.join(dirpath, f) for f in filenames if f.endswith(".py"))
    return found


@functools.cache
def repo_root(folder: str) -> str:
    """What exclude globs and diff headers are relative to: the git work tree holding
    `folder`, else the current directory."""
    return _work_tree_of(folder) or os.path.realpath(os.getcwd())


# Variables that make git find the repository otherwise than by walking up from the folder.
_GIT_SEARCH_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM")


@functools.cache
def _work_tree_of(folder: str) -> str | None:
    """_git_root(folder), asking git once per repository rather than once per folder (a run over
    a test suite of 60 folders spent 0.3 s starting git): git looks for the repository from the
    folder upwards, so a folder without a `.git` of its own, on its parent's filesystem, has its
    parent's answer, unless the environment steers git's search."""
    parent = os.path.dirname(folder)
    if (
        parent != folder
        and os.path.isdir(folder)
        and not os.path.lexists(os.path.join(folder, ".git"))
        and not any(v in os.environ for v in _GIT_SEARCH_VARIABLES)
        and _same_filesystem(folder, parent)
    ):
        return _work_tree_of(parent)
    return _git_root(folder)


def _same_filesystem(a: str, b: str) -> bool:
    try:
        return os.stat(a).st_dev == os.stat(b).st_dev
    except OSError:
        return False


@functools.lru_cache(maxsize=4096)
def _real_folder(folder: str) -> str:
    """os.path.realpath of an absolute folder, asked once per folder of a run (discover() clears
    it): realpath looks at every component of a path, and each file asked it three times."""
    return os.path.realpath(folder)


def _in_real_folder(path: str) -> str:
    """`path`'s name in the real path of its folder (the name itself may be a link)."""
    return os.path.join(_real_folder(os.path.dirname(os.path.abspath(path))), os.path.basename(path))


def _real_file(path: str) -> str:
    """os.path.realpath(path), through the folder's cached answer unless `path` is a link itself."""
    return os.path.realpath(path) if os.path.islink(path) else _in_real_folder(path)


def relative_to_root(path: str) -> str:
    """`path` relative to its repository root, with `/` separators; a path outside the root
    keeps its absolute form without the leading `/`."""
    real = _in_real_folder(path)
    root = repo_root(os.path.dirname(real))
    rel = os.path.relpath(real, root)
    if rel == ".." or rel.startswith(".." + os.sep):
        rel = real.lstrip(os.sep)
    return rel.replace(os.sep, "/")


def excluded_by(rel: str, patterns: tuple[str, ...] | list[str]) -> str | None:
    """The exclude pattern deciding that `rel` (a path relative to the repository root, `/`
    separators: see relative_to_root) is excluded, if any. Gitignore semantics: `*` stays
    within a folder, `**` crosses folders, a pattern with a `/` is anchored at the root, `!`
    re-includes."""
    patterns = tuple(patterns)
    if not patterns:
        return None
    check = _spec(patterns).check_file(rel)
    return patterns[check.index] if check.include and check.index is not None else None


def exclude_patterns(configured, given, no_default_excludes: bool = False) -> list[str]:
    """A run's exclude patterns, in the order that decides (a later `!pattern` re-includes): the
    vendored folders (unless --no-default-excludes), [tool.decouple] exclude, then --exclude."""
    return ([] if no_default_excludes else list(DEFAULT_EXCLUDES)) + list(configured) + list(given)


@functools.lru_cache(maxsize=16)
def _spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _refuse_links_leaving(folder: str, files: list[str]) -> None:
    """A folder contributes files of its repository (or, outside git, of itself) only: a
    symlink in it whose target leaves that root would have its target, a file nobody
    named, edited. Raises DiscoveryError naming them."""
    root = os.path.realpath(_git_root(folder) or folder)
    leaving = [f for f in files if os.path.commonpath([root, _real_file(f)]) != root]
    if leaving:
        raise DiscoveryError(
            f"{', '.join(leaving)}: a symlink to a file outside {root} (found in the folder {folder}); "
            "name the file itself to edit it; nothing was read or written"
        )


def discover(paths: list[str], excludes: list[str] | tuple[str, ...] = DEFAULT_EXCLUDES) -> Discovered:
    """Expand files and folders. Folders contribute test files only (the linter's naming),
    respecting .gitignore inside a git work tree; a file named explicitly is always taken
    unless an exclude glob matches it."""
    _real_folder.cache_clear()  # a folder's links may have changed since the last run in this process
    result = Discovered()
    seen: set[str] = set()
    for path in paths:
        folder = os.path.isdir(path)
        if folder:
            found = _git_files(path)
            if found is None:
                found = _walk_files(path)
            candidates = [os.path.normpath(c) for c in found if is_test_file(c)]
        elif os.path.exists(path):
            candidates = [os.path.normpath(path)]
        else:
            raise DiscoveryError(f"no such file or folder: {path}")
        excluded = {c: excluded_by(relative_to_root(c), excludes) is not None for c in candidates}
        if folder:
            _refuse_links_leaving(path, [c for c in candidates if not excluded[c]])
        for c in candidates:
            key = _real_file(c)  # one entry per real file, however it was named
            if key in seen:
                continue
            seen.add(key)
            (result.excluded if excluded[c] else result.files).append(c)
    result.files.sort()
    result.excluded.sort()
    return result


def read_paths_file(path: str) -> list[str]:
    """One path per line (lintrunner's {{PATHSFILE}}), UTF-8."""
    try:
        with open(path, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    except OSError as e:
        raise DiscoveryError(f"cannot read --paths-file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise DiscoveryError(f"--paths-file {path} is not UTF-8: {e}") from None


def diff_name(path: str, root: str | None = None) -> str:
    """The name a diff header shows after `a/` and `b/`: a relative path as given; an absolute
    one relative to `root` (the allowlist's repository), else to its repository root."""
    if not os.path.isabs(path):
        return path.replace(os.sep, "/")
    if root is not None:
        rel = os.path.relpath(path, root)
        if rel != ".." and not rel.startswith(".." + os.sep):
            return rel.replace(os.sep, "/")
    return relative_to_root(path)


# --- the upstream allowlist (tools/linter/adapters/test_linter_allowlist.json) ---------------


@dataclass(kw_only=True)
class Allowlist:
    path: str
    root: str  # the repository root the entries are relative to
    entries: list[str]
    indent: int | None  # the JSON's indentation, kept on rewrite
    trailing_newline: bool

    def listing(self) -> Listing:
        """Where each entry stands: outside the repository root (absolute, climbing out with
        `..`, or through a symlink whose target leaves it), a file that exists, or gone. Linear:
        one realpath per folder, one lstat per entry in a folder that exists."""
        root = os.path.realpath(self.root)
        inside = os.path.join(root, "")
        prefix = os.path.join(self.root, "")  # + entry: os.path.join(self.root, entry) for a relative entry
        folders: dict[str, tuple[str, bool]] = {}  # folder -> (its real path + "/", whether it exists)
        found = Listing()
        for entry in self.entries:
            if os.path.isabs(entry):
                found.outside.append(entry)
                continue
            path = prefix + entry
            folder, _, name = path.rpartition(os.sep)
            if folder not in folders:  # (a `..` in it climbs from a link's target, as realpath knows)
                folders[folder] = (os.path.join(os.path.realpath(folder), ""), os.path.isdir(folder))
            real_folder, folder_exists = folders[folder]
            exists = link = False
            if folder_exists:
                try:
                    link = stat.S_ISLNK(os.lstat(path).st_mode)
                    exists = True
                except OSError:
                    pass
            if link or name in (os.curdir, os.pardir):
                real = os.path.realpath(path)
                exists = os.path.exists(path)
            else:
                real = real_folder + name
            if real != root and not real.startswith(inside):
                found.outside.append(entry)
            elif exists:
                found.present.append(path)
            else:
                found.stale.append(entry)
        return found


@dataclass(kw_only=True)
class Listing:
    """An allowlist's entries by where they stand (Allowlist.listing)."""

    outside: list[str] = field(default_factory=list)  # entries naming a file outside the repository
    present: list[str] = field(default_factory=list)  # the files of the entries that exist (root-joined)
    stale: list[str] = field(default_factory=list)  # entries whose file is gone, as the allowlist spells them


# How many items a message about many names (the stale entries, say) spells out; the rest are counted.
NAMED = 5


def named_few(items: list[str]) -> str:
    """The first few of `items` and the count of the rest: an allowlist of 20,000 stale entries
    once made a warning of 520 KB on one line."""
    more = f" and {len(items) - NAMED:,} more" if len(items) > NAMED else ""
    return ", ".join(items[:NAMED]) + more


def stale_entries(n: int) -> str:
    """`1 allowlist entry names a file that does not exist`, `2 allowlist entries name files ...`."""
    if n == 1:
        return "1 allowlist entry names a file that does not exist"
    return f"{n:,} allowlist entries name files that do not exist"


def stale_warning(stale: list[str]) -> str:
    """The warning about allowlist entries whose file is gone (all of them: --verbose, or
    `stale` in --format json)."""
    return f"{stale_entries(len(stale))}: {named_few(stale)}"


def read_allowlist(path: str) -> Allowlist:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DiscoveryError(f"cannot read allowlist {path}: {e.strerror or e}") from None
    try:
        entries = loads(data, f"allowlist {path}")
    except JSONInputError as e:
        raise DiscoveryError(str(e)) from None
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise DiscoveryError(f"allowlist {path} must be a JSON list of paths")
    root = _allowlist_root(path, entries)
    lines = data.splitlines()
    indent = None
    if len(lines) > 1:
        second = lines[1]
        indent = len(second) - len(second.lstrip(b" "))
    return Allowlist(path=path, root=root, entries=entries, indent=indent, trailing_newline=data.endswith(b"\n"))


def _allowlist_root(path: str, entries: list[str]) -> str:
    """Entries are repo-relative: the git root, else the nearest ancestor where they exist."""
    folder = os.path.dirname(os.path.abspath(path))
    root = _git_root(folder)
    if root:
        return root
    probe = next(iter(entries), None)
    cur = folder
    while probe is not None:
        if os.path.exists(os.path.join(cur, probe)):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    return os.getcwd()


def graduate(allowlist: Allowlist, done: set[str], write: bool = True) -> list[str]:
    """Remove the entries whose files are now fully classified; rewrite the JSON keeping its
    layout (sorted list, same indentation). Returns the removed entries (`write` False: the
    entries that would be removed, nothing written)."""
    from codemod.util.files import write_atomic

    done_abs = {os.path.abspath(p) for p in done}
    removed = [e for e in allowlist.entries if os.path.abspath(os.path.join(allowlist.root, e)) in done_abs]
    if not removed or not write:
        return removed
    gone = set(removed)
    # Keep the file's own order (upstream keeps it sorted): only the graduated lines go.
    keep = [e for e in allowlist.entries if e not in gone]
    text = json.dumps(keep, indent=allowlist.indent)
    if allowlist.trailing_newline:
        text += "\n"
    write_atomic(allowlist.path, text.encode("utf-8"))
    allowlist.entries = keep
    return removed
