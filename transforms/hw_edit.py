"""Text edits that label test classes with ``hw_classification``.

Everything here is pure (text in, text out) and byte-minimal: classes are
located with the ``ast`` tree the caller already has, whole lines of text are
spliced in, and only the one import statement that has to change is parsed
with LibCST (so its comments, aliases and parentheses are understood exactly).
The rest of the file is never parsed with LibCST and never re-generated.

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
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from transforms.members import COMMON_UTILS, ENUM_NAME, HW_ATTRIBUTE, MEMBERS

if TYPE_CHECKING:  # pragma: no cover
    import libcst

__all__ = [
    "ATTRIBUTE",
    "COMMON_UTILS",
    "ENUM_NAME",
    "EditError",
    "LINE_LENGTH",
    "MEMBERS",
    "add_labels",
    "attribute_line",
    "ensure_import",
    "has_import",
    "insert_attribute",
    "newline_of",
    "split_lines",
    "strip_hw_edits",
]

INTERNAL_PACKAGE = "torch.testing._internal"
ATTRIBUTE = HW_ATTRIBUTE
LINE_LENGTH = 88
BLACK_INDENT = "    "
BOM = "\ufeff"

_WS = " \t\x0c"
_EOLS = ("\r\n", "\r", "\n")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


class EditError(Exception):
    """The requested edit cannot be made safely; the file must stay untouched."""


# --------------------------------------------------------------------------
# Lines


def split_lines(text: str) -> list[str]:
    """Split like the Python tokenizer: only ``\\r\\n``, ``\\r`` and ``\\n`` end a
    line (not ``\\x0c``, ``\\x1c``, ``\\u2028`` ... as ``str.splitlines`` does).
    Line ends are kept, so ``"".join(split_lines(t)) == t``."""
    return _LINE_RE.findall(text)


def newline_of(text_or_lines: str | Sequence[str]) -> str:
    """The file's newline: the first line ending found, ``"\\n"`` if none."""
    lines = split_lines(text_or_lines) if isinstance(text_or_lines, str) else text_or_lines
    for line in lines:
        eol = _eol(line)
        if eol:
            return eol
    return "\n"


def _eol(line: str) -> str:
    for eol in _EOLS:  # "\r\n" first
        if line.endswith(eol):
            return eol
    return ""


def _body(line: str) -> str:
    """The line without its line end."""
    eol = _eol(line)
    return line[: len(line) - len(eol)] if eol else line


def _is_blank(line: str) -> bool:
    return not _body(line).strip(_WS)


def _is_comment(line: str) -> bool:
    return _body(line).lstrip(_WS).startswith("#")


def _indent_of(line: str) -> str:
    text = line.lstrip(BOM)
    # A form feed resets the tokenizer's column count: it is no part of the indentation.
    return text[: len(text) - len(text.lstrip(_WS))].replace("\x0c", "")


def _width(line: str) -> int:
    return len(_body(line).lstrip(BOM))


def attribute_line(indent: str, value: str, newline: str = "\n") -> str:
    """``{indent}hw_classification = HardwareClassification.{value}{newline}``."""
    return f"{indent}{ATTRIBUTE} = {ENUM_NAME}.{value}{newline}"


@dataclass(frozen=True)
class _Edit:
    """Replace ``lines[start:end]`` (0-based) by ``new``; start == end inserts."""

    start: int
    end: int
    new: tuple[str, ...]


def _insertion(lines: Sequence[str], pos: int, new: Sequence[str]) -> _Edit:
    """Insert whole lines before 0-based line ``pos`` (``len(lines)``: at the end).

    Keeps a leading BOM first and keeps "no newline at end of file" as it was."""
    new = list(new)
    if pos == 0 and lines and lines[0].startswith(BOM):
        new[0] = BOM + new[0]
        return _Edit(0, 1, (*new, lines[0][len(BOM) :]))
    if pos == len(lines) and lines and not _eol(lines[-1]):
        newline = newline_of(lines)
        new[-1] = _body(new[-1])
        return _Edit(pos - 1, pos, (lines[-1] + newline, *new))
    return _Edit(pos, pos, tuple(new))


def _apply(lines: Sequence[str], edits: Iterable[_Edit]) -> str:
    out = list(lines)
    floor = len(out)
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if edit.end > floor:
            raise EditError("internal error: overlapping edits")
        out[edit.start : edit.end] = edit.new
        floor = edit.start
    return "".join(out)


# --------------------------------------------------------------------------
# ast helpers


def _first_line(stmt: ast.stmt) -> int:
    """1-based first line of a statement, decorators included."""
    decorators = getattr(stmt, "decorator_list", None) or ()
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


_DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_common_utils(stmt: ast.stmt) -> bool:
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


def _code_after(lines: Sequence[str], lineno: int, col_offset: int) -> str:
    """The text of line ``lineno`` (1-based) from UTF-8 byte column ``col_offset``."""
    line = _body(lines[lineno - 1])
    if lineno == 1:
        line = line.lstrip(BOM)
    return line.encode("utf-8")[col_offset:].decode("utf-8", "replace")


def _continues(rest: str) -> bool:
    """Does code text ``rest`` (the end of a physical line) end with a line
    continuation backslash? A comment ending in a backslash does not."""
    rest = rest.strip(_WS)
    return rest.endswith("\\") and not rest.startswith("#")


def _logical_span(lines: Sequence[str], siblings: Sequence[ast.stmt], stmt: ast.stmt) -> tuple[int, int]:
    """1-based inclusive line span of ``stmt``, extended over statements sharing
    a line with it (``;``) and over trailing backslash continuations."""
    start, end = _first_line(stmt), stmt.end_lineno or stmt.lineno
    changed = True
    while changed:
        changed = False
        for other in siblings:
            o_start, o_end = _first_line(other), other.end_lineno or other.lineno
            if o_start <= end and o_end >= start and (o_start < start or o_end > end):
                start, end = min(start, o_start), max(end, o_end)
                changed = True
    # The code after the last statement ending on the last line.
    last_col = max(
        (o.end_col_offset or 0 for o in [stmt, *siblings] if o.end_lineno == end),
        default=0,
    )
    rest = _code_after(lines, end, last_col)
    while end < len(lines) and _continues(rest):
        end += 1
        rest = _body(lines[end - 1])
    return start, end


def _logical_end(lines: Sequence[str], siblings: Sequence[ast.stmt], stmt: ast.stmt) -> int:
    """1-based last physical line of ``stmt``'s logical line(s)."""
    return _logical_span(lines, siblings, stmt)[1]


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


def _code_before(lines: Sequence[str], lineno: int, col_offset: int) -> str:
    """The text of line ``lineno`` (1-based) before UTF-8 byte column ``col_offset``."""
    line = _body(lines[lineno - 1])
    if lineno == 1:
        line = line.lstrip(BOM)
    return line.encode("utf-8")[:col_offset].decode("utf-8", "replace")


def _attribute_edit(lines: Sequence[str], cls: ast.ClassDef, value: str, newline: str) -> _Edit | None:
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
    start = _first_line(first)
    if start == first.lineno and _code_before(lines, first.lineno, first.col_offset).strip(_WS):
        raise EditError(
            f"class {cls.name} (line {cls.lineno}) has its body on the header line; "
            "move the body to its own lines first"
        )
    # The header ends on the last code line above the first body statement.
    header_end = start - 1
    while header_end > cls.lineno and (_is_blank(lines[header_end - 1]) or _is_comment(lines[header_end - 1])):
        header_end -= 1
    header_text = _body(lines[header_end - 1])
    if "#" not in header_text and _continues(header_text):
        raise EditError(
            f"class {cls.name} (line {cls.lineno}): the header continues with a backslash into the body; not editing"
        )
    indent = _indent_of(lines[start - 1])
    attribute = attribute_line(indent, value, newline)

    if _is_docstring(first):
        end = first.end_lineno or first.lineno
        if len(body) > 1 and _first_line(body[1]) <= end:
            raise EditError(
                f"class {cls.name} (line {cls.lineno}): the docstring shares line "
                f"{end} with another statement; not editing"
            )
        if _continues(_code_after(lines, end, first.end_col_offset or 0)):
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
    if isinstance(following, _DEF_TYPES) and (pos >= len(lines) or not _is_blank(lines[pos])):
        new.append(newline)
    return _insertion(lines, pos, new)


# --------------------------------------------------------------------------
# The import: merge into an existing common_utils import (LibCST on its lines only)


def _cst():
    import libcst  # deferred: most runs never need it

    return libcst


def _alias_key(alias: libcst.ImportAlias) -> str:
    cst = _cst()
    name = alias.name
    text = name.value if isinstance(name, cst.Name) else cst.Module([]).code_for_node(name)
    return text.lower()


def _is_pw(node: object) -> bool:
    return isinstance(node, _cst().ParenthesizedWhitespace)


def _pw(
    first_line: libcst.TrailingWhitespace | None = None,
    empty_lines: Sequence[libcst.EmptyLine] = (),
    last_line: str = "",
) -> libcst.ParenthesizedWhitespace:
    cst = _cst()
    return cst.ParenthesizedWhitespace(
        first_line=first_line if first_line is not None else cst.TrailingWhitespace(),
        empty_lines=tuple(empty_lines),
        indent=True,
        last_line=cst.SimpleWhitespace(last_line),
    )


def _comma(after: str | libcst.BaseParenthesizableWhitespace = " ") -> libcst.Comma:
    cst = _cst()
    if isinstance(after, str):
        after = cst.SimpleWhitespace(after)
    return cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=after)


def _leading_ws(node: libcst.ImportFrom, names: Sequence, index: int):
    """The whitespace that leads into element ``index``."""
    if index == 0:
        return node.lpar.whitespace_after if node.lpar is not None else None
    comma = names[index - 1].comma
    return comma.whitespace_after if isinstance(comma, _cst().Comma) else None


def _set_leading_ws(node: libcst.ImportFrom, names: list, index: int, ws) -> libcst.ImportFrom:
    if index == 0:
        return node.with_changes(lpar=node.lpar.with_changes(whitespace_after=ws))
    names[index - 1] = names[index - 1].with_changes(comma=names[index - 1].comma.with_changes(whitespace_after=ws))
    return node


def _has_backslash(code: str) -> bool:
    return "\\" in code


def _normalise_alias(alias: libcst.ImportAlias) -> libcst.ImportAlias:
    """Drop backslash/newline whitespace inside ``name as alias``."""
    cst = _cst()
    if alias.asname is None:
        return alias
    code = cst.Module([]).code_for_node(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
    if "\\" not in code and "\n" not in code and "\r" not in code:
        return alias
    return alias.with_changes(
        asname=alias.asname.with_changes(
            whitespace_before_as=cst.SimpleWhitespace(" "),
            whitespace_after_as=cst.SimpleWhitespace(" "),
        )
    )


def _one_line_insert(node: libcst.ImportFrom, index: int) -> libcst.ImportFrom:
    """Insert the name with ``", "`` separators (same-line layouts)."""
    cst = _cst()
    names = list(node.names)
    new = cst.ImportAlias(name=cst.Name(ENUM_NAME))
    if index < len(names):
        names.insert(index, new.with_changes(comma=_comma(" ")))
    else:
        last = names[-1]
        names[-1] = last.with_changes(comma=_comma(" "))
        names.append(new.with_changes(comma=last.comma))
    return node.with_changes(names=names)


def _collapse_backslashes(node: libcst.ImportFrom) -> libcst.ImportFrom:
    cst = _cst()
    names = [_normalise_alias(a) for a in node.names]
    names = [a.with_changes(comma=_comma(" ")) if isinstance(a.comma, cst.Comma) else a for a in names]
    changes = {"names": names, "whitespace_after_import": cst.SimpleWhitespace(" ")}
    for field in ("whitespace_after_from", "whitespace_before_import"):
        if _has_backslash(getattr(node, field).value):
            changes[field] = cst.SimpleWhitespace(" ")
    return node.with_changes(**changes)


def _one_per_line_insert(node: libcst.ImportFrom, index: int) -> libcst.ImportFrom:
    """Parenthesised, one name per line: add a line for the new name."""
    cst = _cst()
    names = list(node.names)
    new = cst.ImportAlias(name=cst.Name(ENUM_NAME))
    if index < len(names):
        lead = _leading_ws(node, names, index)
        # Own-line comments above the neighbour stay attached to the neighbour.
        node = _set_leading_ws(node, names, index, lead.with_changes(empty_lines=()))
        names.insert(
            index,
            new.with_changes(comma=_comma(_pw(None, lead.empty_lines, lead.last_line.value))),
        )
        return node.with_changes(names=names)
    # Append after the last name, with the siblings' indentation.
    sibling = _leading_ws(node, names, len(names) - 1)
    indent = sibling.last_line.value
    last = names[-1]
    if isinstance(last.comma, cst.Comma):
        tail = last.comma.whitespace_after
        if _is_pw(tail):
            names[-1] = last.with_changes(
                comma=last.comma.with_changes(whitespace_after=_pw(tail.first_line, (), indent))
            )
            names.append(new.with_changes(comma=_comma(_pw(None, tail.empty_lines, tail.last_line.value))))
        else:  # "    zz,)" or "    zz, )"
            names[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=_pw(None, (), indent)))
            names.append(new.with_changes(comma=_comma(tail)))
        return node.with_changes(names=names)
    rpar_ws = node.rpar.whitespace_before
    if _is_pw(rpar_ws):  # "    zz  # comment\n)"
        names[-1] = last.with_changes(comma=_comma(_pw(rpar_ws.first_line, (), indent)))
        names.append(new.with_changes(comma=_comma(_pw(None, rpar_ws.empty_lines, rpar_ws.last_line.value))))
        return node.with_changes(
            names=names,
            rpar=node.rpar.with_changes(whitespace_before=cst.SimpleWhitespace("")),
        )
    # "    zz)": the closing parenthesis stays on the new name's line.
    names[-1] = last.with_changes(comma=_comma(_pw(None, (), indent)))
    names.append(new)
    return node.with_changes(names=names)


def _packed_insert(node: libcst.ImportFrom, index: int) -> libcst.ImportFrom:
    """Parenthesised, several names per line: insert next to the neighbour."""
    return _one_line_insert(node, index)


def _explode(node: libcst.ImportFrom) -> libcst.ImportFrom:
    """Black style: ``from X import (`` / one name per line with a trailing comma / ``)``.
    Comments stay with the name they follow; own-line comments stay above the
    name they precede."""
    cst = _cst()
    names = [_normalise_alias(a) for a in node.names]

    def into_name(ws) -> libcst.ParenthesizedWhitespace:
        if _is_pw(ws):
            return ws.with_changes(last_line=cst.SimpleWhitespace(BLACK_INDENT))
        return _pw(None, (), BLACK_INDENT)

    lead = node.lpar.whitespace_after if node.lpar is not None else None
    lpar = cst.LeftParen(whitespace_after=into_name(lead))
    out = []
    for alias in names[:-1]:
        comma = alias.comma
        before = comma.whitespace_before
        if not _is_pw(before):
            before = cst.SimpleWhitespace("")
        out.append(
            alias.with_changes(
                comma=comma.with_changes(whitespace_before=before, whitespace_after=into_name(comma.whitespace_after))
            )
        )
    last = names[-1]
    tails = []
    if isinstance(last.comma, cst.Comma):
        tails.append(last.comma.whitespace_after)
    if node.rpar is not None:
        tails.append(node.rpar.whitespace_before)
    first_line = None
    empty_lines: list = []
    for ws in tails:
        if _is_pw(ws):
            if first_line is None or (first_line.comment is None and ws.first_line.comment):
                first_line = ws.first_line
            empty_lines.extend(ws.empty_lines)
    out.append(last.with_changes(comma=_comma(_pw(first_line, empty_lines, ""))))
    changes = {
        "names": out,
        "lpar": lpar,
        "rpar": cst.RightParen(whitespace_before=cst.SimpleWhitespace("")),
        "whitespace_after_import": cst.SimpleWhitespace(" "),
    }
    for field in ("whitespace_after_from", "whitespace_before_import"):
        if _has_backslash(getattr(node, field).value):
            changes[field] = cst.SimpleWhitespace(" ")
    return node.with_changes(**changes)


def _layout(node: libcst.ImportFrom) -> str:
    cst = _cst()
    code = cst.Module([]).code_for_node(node)
    if node.lpar is None:
        return "backslash" if _has_backslash(code) else "line"
    if "\n" not in code and "\r" not in code:
        return "line"
    names = node.names
    if _is_pw(node.lpar.whitespace_after) and all(_is_pw(a.comma.whitespace_after) for a in names[:-1]):
        return "one-per-line"
    return "packed"


def _too_long(code: str) -> bool:
    return any(ENUM_NAME in line and _width(line) > LINE_LENGTH for line in split_lines(code))


class _ImportRewriter:
    """Rewrites the first ``from common_utils import`` found in a small module."""

    def __init__(self) -> None:
        self.done = False

    def rewrite(self, module: libcst.Module) -> libcst.Module:
        cst = _cst()
        body = []
        for line in module.body:
            if not self.done and isinstance(line, cst.SimpleStatementLine):
                small = []
                for stmt in line.body:
                    if not self.done and self._is_target(stmt):
                        merged = self._merged(module, line, stmt)
                        if stmt.lpar is None and merged.lpar is not None and len(line.body) == 1:
                            merged, line = _comment_after_paren(merged, line)
                        stmt = merged
                        self.done = True
                    small.append(stmt)
                line = line.with_changes(body=small)
            body.append(line)
        return module.with_changes(body=body)

    @staticmethod
    def _is_target(stmt: object) -> bool:
        cst = _cst()
        return (
            isinstance(stmt, cst.ImportFrom)
            and not stmt.relative
            and stmt.module is not None
            and cst.Module([]).code_for_node(stmt.module).replace(" ", "") == COMMON_UTILS
            and not isinstance(stmt.names, cst.ImportStar)
        )

    @staticmethod
    def _merged(module, line, node: libcst.ImportFrom) -> libcst.ImportFrom:
        key = ENUM_NAME.lower()
        index = next((i for i, a in enumerate(node.names) if _alias_key(a) > key), len(node.names))
        layout = _layout(node)
        if layout == "one-per-line":
            return _one_per_line_insert(node, index)
        if layout == "packed":
            merged = _packed_insert(node, index)
        elif layout == "backslash":
            merged = _collapse_backslashes(_one_line_insert(node, index))
        else:
            merged = _one_line_insert(node, index)
        candidate = module.with_changes(body=[line.with_changes(body=[merged if s is node else s for s in line.body])])
        if _too_long(candidate.code):
            return _explode(merged)
        return merged


def _comment_after_paren(node: libcst.ImportFrom, line: libcst.SimpleStatementLine):
    """A one-line import that had to be exploded keeps its trailing comment on the
    first line, `from X import (  # noqa: F401`: linters read `noqa` per physical
    line, and black leaves a comment there alone."""
    comment = line.trailing_whitespace.comment
    after = node.lpar.whitespace_after
    if comment is None or not _is_pw(after) or after.first_line.comment is not None:
        return node, line
    cst = _cst()
    first = after.first_line.with_changes(whitespace=cst.SimpleWhitespace("  "), comment=comment)
    node = node.with_changes(lpar=node.lpar.with_changes(whitespace_after=after.with_changes(first_line=first)))
    trailing = line.trailing_whitespace.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)
    return node, line.with_changes(trailing_whitespace=trailing)


def _merge_edit(lines: Sequence[str], tree: ast.Module, target: ast.ImportFrom) -> _Edit:
    cst = _cst()
    newline = newline_of(lines)
    start, end = _logical_span(lines, tree.body, target)
    old_lines = lines[start - 1 : end]
    # LibCST only needs to see "\n": an import holds no string that could
    # contain a newline, so line ends are normalised here and restored below.
    chunk = "".join(_body(line) + ("\n" if _eol(line) else "") for line in old_lines)
    bom = ""
    if start == 1 and chunk.startswith(BOM):
        bom, chunk = BOM, chunk[len(BOM) :]
    try:
        module = cst.parse_module(chunk)
    except cst.ParserSyntaxError as exc:
        raise EditError(f"cannot parse the import at line {target.lineno} with LibCST: {exc}") from exc
    rewriter = _ImportRewriter()
    new_module = rewriter.rewrite(module).with_changes(default_newline="\n")
    if not rewriter.done:
        raise EditError(f"internal error: import at line {target.lineno} not found by LibCST")
    new_lines = split_lines(bom + new_module.code)
    if len(new_lines) == len(old_lines):  # same lines: keep each line's own ending
        eols = [_eol(line) for line in old_lines]
    else:
        eols = [newline if _eol(line) else "" for line in new_lines]
        # LibCST drops the final newline after a comment ending in a backslash.
        eols[-1] = newline if _eol(old_lines[-1]) else ""
    new_lines = [_body(line) + eol for line, eol in zip(new_lines, eols, strict=False)]
    return _Edit(start - 1, end, tuple(new_lines))


# --------------------------------------------------------------------------
# The import: a new line


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
    while pos + have < len(lines) and have < want and _is_blank(lines[pos + have]):
        have += 1
    if pos + have >= len(lines):
        return []
    return [newline] * (want - have)


def _new_import_edit(lines: Sequence[str], tree: ast.Module, before_line: int | None) -> _Edit:
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
            pos = _logical_end(lines, body, internal[-1][0])
        elif later > 0:
            pos = _logical_end(lines, body, internal[later - 1][0])
        else:
            pos = _logical_span(lines, body, internal[0][0])[0] - 1
        return _insertion(lines, pos, [new_line])

    imports = [s for s in head if isinstance(s, (ast.Import, ast.ImportFrom))]
    if imports:
        return _insertion(lines, _logical_end(lines, body, imports[-1]), [new_line])

    following = body[len(head)] if len(head) < len(body) else None
    want_after = 2 if isinstance(following, _DEF_TYPES) else 1
    if head and _is_docstring(head[0]):
        # After the module docstring, one blank line in between.
        pos = _logical_end(lines, body, head[0])
        new = [newline, new_line, *_blank_lines_needed(lines, pos, want_after, newline)]
        return _insertion(lines, pos, new)
    # No docstring and no import: directly above the first statement, below the
    # file's leading comments (licence, "# Owner(s)", shebang, coding cookie).
    pos = _first_line(body[0]) - 1 if body else len(lines)
    new = [new_line, *_blank_lines_needed(lines, pos, want_after, newline)]
    return _insertion(lines, pos, new)


def _import_edit(lines: Sequence[str], tree: ast.Module, before_line: int | None) -> _Edit | None:
    if has_import(tree, before_line):
        return None
    for stmt in tree.body:
        if before_line is not None and stmt.lineno >= before_line:
            break
        if _is_common_utils(stmt):
            return _merge_edit(lines, tree, stmt)
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
    classes = {n.lineno: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    edits: list[_Edit] = []
    for lineno, value in sorted(labels.items()):
        if value not in MEMBERS:
            raise ValueError(f"unknown {ENUM_NAME} member {value!r} (expected one of {list(MEMBERS)})")
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
    return _apply(lines, edits)


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
    return text if edit is None else _apply(lines, [edit])


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
