"""What differs between the arms, read from git: the diff stat and, per file and class,
the labels written and the torch.load edits; per file, from both versions
(`structure.py`), the instantiate options added or removed, the tests moved to another
class and the imports added or extended (whole statements).

The A/B runner knows nothing about codemods: this module only reads the diff between
arm A (`git:REF`) and arm B (the work tree) and recognises a few line shapes:
`hw_classification = HardwareClassification.X` added (or removed) inside a class,
`weights_only=` and `safe_globals` appearing on added lines (a torch.load edit), and
import lines added at module level (when a version does not parse). Everything else
counts only in the stat.
"""

from __future__ import annotations

import ast
import codecs
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from codemod.ab.arms import trees as _trees
from codemod.ab.arms.structure import read_structure
from codemod.ab.result.diff import Changes, ClassChange, FileChange

_LABEL = re.compile(r"^\s+hw_classification\s*(?::[^=]*)?=\s*(?:[\w.]*\.)?HardwareClassification\.(\w+)")
_WEIGHTS_ONLY = re.compile(r"weights_only\s*=\s*([\w.]+)")
_SAFE_GLOBALS = re.compile(r"safe_globals\s*\(\s*\[([^\]]*)\]?")
_IMPORT = re.compile(r"^(?:from\s+\S+\s+import\s+.+|import\s+\S.*)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _git(args: list[str], cwd: Path) -> str:
    return _trees.run_git(args, cwd, binary=True, timeout=120).stdout.decode("utf-8", "surrogateescape")


def _shown(ref: str, names: list[str], top: Path) -> dict[str, str]:
    """The text of each of `names` at `ref` (a name not there is left out), read by one
    `git cat-file --batch` (a `git show` a file cost 4 ms: 1.2 s for 300 files)."""
    listed = [n for n in names if "\n" not in n]
    answers = _trees.cat_file(top, [f"{ref}:{n}" for n in listed])
    texts = {
        n: data.decode("utf-8", "surrogateescape")
        for n, (_, data) in zip(listed, answers, strict=True)
        if data is not None
    }
    for name in names:
        if name not in listed:  # a newline in the name: cat-file reads names a line each
            try:
                texts[name] = _git(["show", f"{ref}:{name}"], top)
            except _trees.ArmError:
                pass
    return texts


def _unquoted(path: str) -> str:
    """A path as git prints it in a diff header: C-quoted ("...", with backslash escapes and
    octal bytes) when it holds a newline, a quote, a backslash or a control character."""
    if len(path) > 1 and path.startswith('"') and path.endswith('"'):
        raw = codecs.escape_decode(path[1:-1].encode("utf-8", "surrogateescape"))[0]
        return raw.decode("utf-8", "surrogateescape")
    return path


def class_spans(source: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every class, innermost last; a file
    that does not parse falls back to `class X` lines at any indentation."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        spans, lines = [], source.splitlines()
        for i, line in enumerate(lines, 1):
            m = re.match(r"^(\s*)class\s+(\w+)", line)
            if m:
                spans.append((i, len(lines), m.group(2)))
        return spans
    out: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = prefix + child.name
                out.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, prefix + child.name + ".<locals>.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _class_at(spans: list[tuple[int, int, str]], line: int) -> str | None:
    inside = [s for s in spans if s[0] <= line <= s[1]]
    return max(inside, key=lambda s: s[0])[2] if inside else None


def torch_load_edit(line: str) -> str | None:
    """A short description of the torch.load edit on an added line, if it is one."""
    bits = []
    m = _WEIGHTS_ONLY.search(line)
    if m:
        bits.append(f"weights_only={m.group(1)}")
    m = _SAFE_GLOBALS.search(line)
    if m:
        names = ", ".join(x.strip() for x in m.group(1).split(",") if x.strip())
        bits.append(f"safe_globals([{names}])")
    return "; ".join(bits) or None


def read_patch(patch: str, new_sources: dict[str, str], old_sources: dict[str, str]) -> list[FileChange]:
    """Per file: lines added/removed, labels and torch.load edits per class, imports added.
    `patch` is `git diff -U0` output; `*_sources` give each side's text for class lookup."""
    files: list[FileChange] = []
    current: FileChange | None = None
    new_line = old_line = 0
    spans_new: list = []
    spans_old: list = []
    classes: dict[str, ClassChange] = {}

    def klass(name: str) -> ClassChange:
        if name not in classes:
            assert current is not None  # a hunk line belongs to a file
            classes[name] = ClassChange(name=name)
            current.classes.append(classes[name])
        return classes[name]

    for raw in patch.splitlines():
        if raw.startswith("diff --git "):
            current = None
            continue
        if raw.startswith("+++ "):
            path = _unquoted(raw[4:].removesuffix("\t"))  # (git ends a name with a space by a tab)
            path = path[2:] if path.startswith("b/") else path
            if path == "/dev/null":
                continue
            current = FileChange(path=path)
            files.append(current)
            classes = {}
            spans_new = class_spans(new_sources.get(path, ""))
            spans_old = class_spans(old_sources.get(path, ""))
            continue
        if raw.startswith("--- ") or current is None:
            continue
        m = _HUNK.match(raw)
        if m:
            old_line, new_line = int(m.group(1)), int(m.group(3))
            continue
        if raw.startswith("+"):
            text = raw[1:]
            current.added += 1
            cls = _class_at(spans_new, new_line)
            label = _LABEL.match(text)
            # a comment is no edit (`apply --explain` writes one above the call it edits)
            edit = None if text.lstrip().startswith("#") else torch_load_edit(text)
            if label and cls:
                klass(cls).labels.append(label.group(1))
            elif edit:
                (klass(cls).torch_load if cls else current.torch_load).append(edit)
            elif cls is None and _IMPORT.match(text):
                current.imports.append(text.strip())
            new_line += 1
        elif raw.startswith("-"):
            current.removed += 1
            cls = _class_at(spans_old, old_line)
            label = _LABEL.match(raw[1:])
            if label and cls:
                klass(cls).removed_labels.append(label.group(1))
            old_line += 1
    for fc in files:
        lines = fc.imports
        if not read_structure(fc, old_sources.get(fc.path, ""), new_sources.get(fc.path, "")):
            fc.imports = lines
    return files


def git_changes(cwd: str, ref: str, paths: Iterable[str]) -> Changes:
    """What differs between `ref` and the work tree under `paths` (relative to the
    repository top), including untracked files. Never raises: a failure is `error`."""
    changes = Changes(ref=ref)
    try:
        top = Path(_git(["rev-parse", "--show-toplevel"], Path(cwd)).strip())
        specs = sorted({p.split("::")[0] for p in paths}) or ["."]
        # diff-index, git's plumbing, never `git diff`: on a file whose stat data changed but not its
        # content, `git diff` rewrites the user's .git/index (GIT_OPTIONAL_LOCKS does not stop it)
        stat = _git(["diff-index", "--stat=100", "--no-color", "--no-renames", ref, "--", *specs], top)
        # core.quotePath=false: a name with non-ASCII letters is printed as it is
        diff = ["-c", "core.quotePath=false", "diff-index", "-p", "-U0", "--no-color", "--no-renames"]
        patch = _git([*diff, ref, "--", *specs], top)
        untracked = [
            p
            for p in _git(["ls-files", "-z", "--others", "--exclude-standard", "--", *specs], top).split("\0")
            if p.endswith(".py")
        ]
        # (--numstat, not --name-only: diff-index names a file whose stat data alone changed)
        numstat = _git(["diff-index", "--numstat", "-z", "--no-renames", ref, "--", *specs], top)
        names = [rec.split("\t", 2)[2] for rec in numstat.split("\0") if rec.count("\t") >= 2]
        new_sources = {}
        for name in names + untracked:
            try:
                new_sources[name] = (top / name).read_text(encoding="utf-8", errors="surrogateescape")
            except OSError:
                pass
        old_sources = _shown(ref, names, top)
        for name in untracked:  # new files: every line added
            text = new_sources.get(name, "")
            lines = text.splitlines()
            patch += (
                f"\ndiff --git a/{name} b/{name}\n--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{len(lines)} @@\n"
                + "".join(f"+{ln}\n" for ln in lines)
            )
            stat = stat.rstrip("\n") + f"\n {name} (untracked) | {len(lines)} +\n"
        changes.stat = stat.rstrip("\n")
        changes.files = read_patch(patch, new_sources, old_sources)
    except (OSError, _trees.ArmError, subprocess.SubprocessError) as err:
        changes.error = str(err)
    return changes
