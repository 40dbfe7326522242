"""Text edits that label test classes with ``hw_classification``.

Everything here is pure (text in, text out) and byte-minimal: classes are
located with the ``ast`` tree the caller already has and whole lines of text are
spliced in (``source_lines.py``); only the one import statement that has to change
is parsed with LibCST (``import_merge.py``). The rest of the file is never parsed
with LibCST and never re-generated.

Upstream style (see shared/reference/hw-classification.md):

* the attribute is the first statement of the class body, after the docstring
  (one blank line in between) when there is one, followed by a blank line when
  a method or nested class comes next;
* ``HardwareClassification`` is merged into the existing
  ``from torch.testing._internal.common_utils import ...`` in case-insensitive
  alphabetical position, staying on one line when that fits in 88 columns and
  otherwise exploded black style (one name per line, trailing comma);
* with no such import, a new ``from ... import HardwareClassification`` line
  goes beside the other ``torch.testing._internal`` imports, sorted by module.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import TypeGuard

from transforms.core.analysis import statements_below
from transforms.core.class_reading import first_line
from transforms.core.members import COMMON_UTILS, ENUM_NAME, HW_ATTRIBUTE, MEMBERS
from transforms.core.source_lines import (
    WS,
    Edit,
    EditError,
    apply,
    code_after,
    code_before,
    continues,
    indent_of,
    insertion,
    is_blank,
    is_comment,
    logical_end,
    logical_span,
    newline_of,
    split_lines,
    without_eol,
)

__all__ = [
    "ATTRIBUTE",
    "add_labels",
    "attribute_line",
    "ensure_import",
    "has_import",
    "insert_attribute",
    "strip_hw_edits",
]

INTERNAL_PACKAGE = "torch.testing._internal"
ATTRIBUTE = HW_ATTRIBUTE


def attribute_line(indent: str, value: str, newline: str = "\n") -> str:
    """``{indent}hw_classification = HardwareClassification.{value}{newline}``."""
    return f"{indent}{ATTRIBUTE} = {ENUM_NAME}.{value}{newline}"


# --------------------------------------------------------------------------
# ast helpers


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


_DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_common_utils(stmt: ast.stmt) -> TypeGuard[ast.ImportFrom]:
    return isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module == COMMON_UTILS


def has_import(tree: ast.Module, before_line: int | None = None) -> bool:
    """True when ``HardwareClassification`` is surely bound when the first labelled
    class (``before_line``) is defined: an unconditional module-level import (in
    ``tree.body`` itself, above that line) from ``torch.testing._internal.common_utils``
    by name or by a star import, or by that name from any other module (a second
    binding would only be a redefinition). An import under ``if``/``try``, or one that
    runs after the class, does not count: the class body would raise NameError."""
    for stmt in tree.body:
        if before_line is not None and stmt.lineno >= before_line:
            break
        if not isinstance(stmt, ast.ImportFrom):
            continue
        for alias in stmt.names:
            if alias.name == "*" and _is_common_utils(stmt):
                return True
            if (alias.asname or alias.name) == ENUM_NAME:
                return True
    return False


# --------------------------------------------------------------------------
# The attribute


def _is_label(stmt: ast.stmt) -> bool:
    """``hw_classification = ...`` or ``hw_classification: T = ...``."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign):
        targets = [stmt.target]
    else:
        return False
    return any(isinstance(t, ast.Name) and t.id == ATTRIBUTE for t in targets)


def _existing_label(cls: ast.ClassDef) -> ast.stmt | None:
    return next((s for s in cls.body if _is_label(s)), None)


def _label_value(stmt: ast.stmt) -> str | None:
    value = getattr(stmt, "value", None)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == ENUM_NAME:
        return value.attr
    return None


def _attribute_edit(lines: Sequence[str], cls: ast.ClassDef, value: str, newline: str) -> Edit | None:
    existing = _existing_label(cls)
    if existing is not None:
        if _label_value(existing) == value:
            return None
        raise EditError(
            f"class {cls.name} (line {cls.lineno}) already sets {ATTRIBUTE} "
            f"(line {existing.lineno}); not adding a second one"
        )
    body = cls.body
    first = body[0]
    start = first_line(first)
    if start == first.lineno and code_before(lines, first.lineno, first.col_offset).strip(WS):
        raise EditError(
            f"class {cls.name} (line {cls.lineno}) has its body on the header line; "
            "move the body to its own lines first"
        )
    # The header ends on the last code line above the first body statement.
    header_end = start - 1
    while header_end > cls.lineno and (is_blank(lines[header_end - 1]) or is_comment(lines[header_end - 1])):
        header_end -= 1
    header_text = without_eol(lines[header_end - 1])
    if "#" not in header_text and continues(header_text):
        raise EditError(
            f"class {cls.name} (line {cls.lineno}): the header continues with a backslash into the body; not editing"
        )
    indent = indent_of(lines[start - 1])
    attribute = attribute_line(indent, value, newline)

    if _is_docstring(first):
        end = first.end_lineno or first.lineno
        if len(body) > 1 and first_line(body[1]) <= end:
            raise EditError(
                f"class {cls.name} (line {cls.lineno}): the docstring shares line "
                f"{end} with another statement; not editing"
            )
        if continues(code_after(lines, end, first.end_col_offset or 0)):
            raise EditError(
                f"class {cls.name} (line {cls.lineno}): the docstring line ends with a backslash; not editing"
            )
        pos = end  # 0-based index of the line after the docstring
        new = [newline, attribute]
        following = body[1] if len(body) > 1 else None
    else:
        pos = header_end
        new = [attribute]
        following = first
    if isinstance(following, _DEF_TYPES) and (pos >= len(lines) or not is_blank(lines[pos])):
        new.append(newline)
    return insertion(lines, pos, new)


# --------------------------------------------------------------------------
# The import: merged into an existing common_utils import (import_merge.py), else a new line


def _module_key(stmt: ast.stmt) -> str | None:
    """The module name of a ``torch.testing._internal`` import, else None."""
    if isinstance(stmt, ast.ImportFrom):
        names = [stmt.module] if stmt.level == 0 and stmt.module else []
    elif isinstance(stmt, ast.Import):
        names = [a.name for a in stmt.names]
    else:
        return None
    for name in names:
        if name == INTERNAL_PACKAGE or name.startswith(INTERNAL_PACKAGE + "."):
            return name.lower()
    return None


def _blank_lines_needed(lines: Sequence[str], pos: int, want: int, newline: str) -> list[str]:
    have = 0
    while pos + have < len(lines) and have < want and is_blank(lines[pos + have]):
        have += 1
    if pos + have >= len(lines):
        return []
    return [newline] * (want - have)


def _new_import_edit(lines: Sequence[str], tree: ast.Module, before_line: int | None) -> Edit:
    newline = newline_of(lines)
    new_line = f"from {COMMON_UTILS} import {ENUM_NAME}{newline}"
    body = tree.body
    head: list[ast.stmt] = []  # top-level statements before the first class/def
    for stmt in body:
        if isinstance(stmt, _DEF_TYPES):
            break
        if before_line is not None and (stmt.end_lineno or stmt.lineno) >= before_line:
            break
        head.append(stmt)

    internal = [(s, k) for s in head if (k := _module_key(s)) is not None]
    if internal:
        target = COMMON_UTILS.lower()
        later = next((i for i, (_, k) in enumerate(internal) if k > target), None)
        if later is None:
            pos = logical_end(lines, body, internal[-1][0])
        elif later > 0:
            pos = logical_end(lines, body, internal[later - 1][0])
        else:
            pos = logical_span(lines, body, internal[0][0])[0] - 1
        return insertion(lines, pos, [new_line])

    imports = [s for s in head if isinstance(s, (ast.Import, ast.ImportFrom))]
    if imports:
        return insertion(lines, logical_end(lines, body, imports[-1]), [new_line])

    following = body[len(head)] if len(head) < len(body) else None
    want_after = 2 if isinstance(following, _DEF_TYPES) else 1
    if head and _is_docstring(head[0]):
        # After the module docstring, one blank line in between.
        pos = logical_end(lines, body, head[0])
        new = [newline, new_line, *_blank_lines_needed(lines, pos, want_after, newline)]
        return insertion(lines, pos, new)
    # No docstring and no import: directly above the first statement, below the
    # file's leading comments (licence, "# Owner(s)", shebang, coding cookie).
    pos = first_line(body[0]) - 1 if body else len(lines)
    new = [new_line, *_blank_lines_needed(lines, pos, want_after, newline)]
    return insertion(lines, pos, new)


def _import_edit(lines: Sequence[str], tree: ast.Module, before_line: int | None) -> Edit | None:
    if has_import(tree, before_line):
        return None
    for stmt in tree.body:
        if before_line is not None and stmt.lineno >= before_line:
            break
        if _is_common_utils(stmt):
            # Late: import_merge imports LibCST (0.15 s), needed only for this one edit.
            from transforms.label.import_merge import merge_edit

            return merge_edit(lines, tree, stmt)
    return _new_import_edit(lines, tree, before_line)


# --------------------------------------------------------------------------
# Public API


def add_labels(
    text: str,
    tree: ast.Module,
    labels: Mapping[int, str],
    *,
    need_import: bool = True,
) -> str:
    """Label classes and make sure the enum is imported.

    ``tree`` is ``ast.parse(text)``; ``labels`` maps a ClassDef's ``lineno`` (the
    ``class`` line) to a member name (``"GENERIC"``, ``"ACCELERATOR"`` ...).
    A class that already has the same label is left alone. Returns the new text
    (``text`` itself for an empty mapping).

    Raises ValueError for an unknown line number or member, EditError when a
    class cannot be edited safely (body on the header line, a docstring sharing
    its line with another statement, a different existing label ...).
    """
    if not labels:
        return text
    lines = split_lines(text)
    newline = newline_of(lines)
    classes = {n.lineno: n for n in statements_below(tree) if isinstance(n, ast.ClassDef)}
    edits: list[Edit] = []
    for lineno, value in sorted(labels.items()):
        if value not in MEMBERS:
            raise ValueError(f"unknown {ENUM_NAME} member {value!r} (expected one of {[str(m) for m in MEMBERS]})")
        cls = classes.get(lineno)
        if cls is None:
            raise ValueError(f"no class definition starts on line {lineno}")
        edit = _attribute_edit(lines, cls, value, newline)
        if edit is not None:
            edits.append(edit)
    if need_import:
        edit = _import_edit(lines, tree, min(labels))
        if edit is not None:
            edits.append(edit)
    return apply(lines, edits)


def insert_attribute(text: str, tree: ast.Module, lineno: int, value: str) -> str:
    """Label one class without touching the imports."""
    return add_labels(text, tree, {lineno: value}, need_import=False)


def ensure_import(text: str, tree: ast.Module, *, before_line: int | None = None) -> str:
    """Make module-level code import ``HardwareClassification`` from common_utils.

    ``before_line`` (1-based): the import must run before that line (the first
    labelled class); a ``common_utils`` import at or after it is not merged into.
    """
    lines = split_lines(text)
    edit = _import_edit(lines, tree, before_line)
    return text if edit is None else apply(lines, [edit])


def strip_hw_edits(tree: ast.Module) -> ast.Module:
    """``tree``, modified in place, without what this module may add: every class-level
    ``hw_classification = HardwareClassification.X`` and the ``HardwareClassification``
    name of ``common_utils`` imports (imports left empty are dropped). For verification:
    strip(parse(output)) must equal strip(parse(input)). Only statement lists are
    visited: labels and imports are statements, and a full ``ast.walk`` costs as much
    as the parse."""
    _strip_body(tree)
    return tree


def _strip_body(node: ast.AST) -> None:
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        stmts = getattr(node, field, None)
        if not isinstance(stmts, list):
            continue
        kept = []
        for stmt in stmts:
            if isinstance(node, ast.ClassDef) and _is_label(stmt):
                continue
            if _is_common_utils(stmt):
                stmt.names = [a for a in stmt.names if not (a.name == ENUM_NAME and a.asname is None)]
                if not stmt.names:
                    continue
            _strip_body(stmt)
            kept.append(stmt)
        setattr(node, field, kept if kept or field != "body" else [ast.Pass()])
