"""Merging ``HardwareClassification`` into an existing ``from ...common_utils import``.

Only the lines of that one statement are parsed with LibCST, so its comments, aliases
and parentheses are understood exactly; the rest of the file is never parsed with LibCST
and never re-generated. The name goes in case-insensitive alphabetical position and the
statement keeps its layout (one line, backslash continuations, several names per line
or one per line in parentheses), unless the line holding the name would pass 88
columns: then it is exploded black style (one name per line, trailing comma).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING

from transforms.core.members import COMMON_UTILS, ENUM_NAME
from transforms.core.source_lines import (
    BOM,
    Edit,
    EditError,
    eol_of,
    logical_span,
    newline_of,
    split_lines,
    without_eol,
)

if TYPE_CHECKING:  # pragma: no cover
    import libcst

__all__ = ["LINE_LENGTH", "merge_edit"]

LINE_LENGTH = 88
BLACK_INDENT = "    "


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


def _width(line: str) -> int:
    return len(without_eol(line).lstrip(BOM))


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


def merge_edit(lines: Sequence[str], tree: ast.Module, target: ast.ImportFrom) -> Edit:
    """The edit that adds the name to ``target``, a module-level ``from common_utils import``
    (its logical lines are replaced, statements sharing them with it included)."""
    cst = _cst()
    newline = newline_of(lines)
    start, end = logical_span(lines, tree.body, target)
    old_lines = lines[start - 1 : end]
    # LibCST only needs to see "\n": an import holds no string that could
    # contain a newline, so line ends are normalised here and restored below.
    chunk = "".join(without_eol(line) + ("\n" if eol_of(line) else "") for line in old_lines)
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
        eols = [eol_of(line) for line in old_lines]
    else:
        eols = [newline if eol_of(line) else "" for line in new_lines]
        # LibCST drops the final newline after a comment ending in a backslash.
        eols[-1] = newline if eol_of(old_lines[-1]) else ""
    new_lines = [without_eol(line) + eol for line, eol in zip(new_lines, eols, strict=False)]
    return Edit(start - 1, end, tuple(new_lines))
