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
from typing import TypeGuard

import libcst as cst

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
from transforms.core.strenum import StrEnum

__all__ = ["LINE_LENGTH", "merge_edit"]

LINE_LENGTH = 88
BLACK_INDENT = "    "


class _Layout(StrEnum):
    """How an import statement lays out its names."""

    LINE = "line"  # on one line, parenthesised or not
    BACKSLASH = "backslash"  # continued with backslashes
    ONE_PER_LINE = "one-per-line"  # parenthesised, one name per line
    PACKED = "packed"  # parenthesised, several names per line


def _layout_error(what: str) -> EditError:
    return EditError(f"internal error: the import's layout changed under the merge ({what})")


def _aliases(node: cst.ImportFrom) -> Sequence[cst.ImportAlias]:
    if isinstance(node.names, cst.ImportStar):  # _is_target never picks a star import
        raise _layout_error("a star import")
    return node.names


def _lpar(node: cst.ImportFrom) -> cst.LeftParen:
    if node.lpar is None:  # only the parenthesised layouts ask
        raise _layout_error("no parenthesis")
    return node.lpar


def _rpar(node: cst.ImportFrom) -> cst.RightParen:
    if node.rpar is None:
        raise _layout_error("no parenthesis")
    return node.rpar


def _comma_of(alias: cst.ImportAlias) -> cst.Comma:
    """The comma after a name that is not the last (Python requires one there)."""
    if not isinstance(alias.comma, cst.Comma):
        raise _layout_error("a name without its comma")
    return alias.comma


def _alias_key(alias: cst.ImportAlias) -> str:
    name = alias.name
    text = name.value if isinstance(name, cst.Name) else cst.Module([]).code_for_node(name)
    return text.lower()


def _is_pw(node: object) -> TypeGuard[cst.ParenthesizedWhitespace]:
    return isinstance(node, cst.ParenthesizedWhitespace)


def _pw(
    first_line: cst.TrailingWhitespace | None = None,
    empty_lines: Sequence[cst.EmptyLine] = (),
    last_line: str = "",
) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=first_line if first_line is not None else cst.TrailingWhitespace(),
        empty_lines=tuple(empty_lines),
        indent=True,
        last_line=cst.SimpleWhitespace(last_line),
    )


def _comma(after: str | cst.BaseParenthesizableWhitespace = " ") -> cst.Comma:
    if isinstance(after, str):
        after = cst.SimpleWhitespace(after)
    return cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=after)


def _leading_ws(node: cst.ImportFrom, names: Sequence[cst.ImportAlias], index: int) -> cst.ParenthesizedWhitespace:
    """The whitespace that leads into element ``index`` of a one-name-per-line import: after
    the opening parenthesis or the previous name's comma, a line break."""
    ws = _lpar(node).whitespace_after if index == 0 else _comma_of(names[index - 1]).whitespace_after
    if not _is_pw(ws):
        raise _layout_error("a name not on a line of its own")
    return ws


def _set_leading_ws(
    node: cst.ImportFrom, names: list[cst.ImportAlias], index: int, ws: cst.ParenthesizedWhitespace
) -> cst.ImportFrom:
    if index == 0:
        return node.with_changes(lpar=_lpar(node).with_changes(whitespace_after=ws))
    names[index - 1] = names[index - 1].with_changes(
        comma=_comma_of(names[index - 1]).with_changes(whitespace_after=ws)
    )
    return node


def _has_backslash(code: str) -> bool:
    return "\\" in code


def _normalise_alias(alias: cst.ImportAlias) -> cst.ImportAlias:
    """Drop backslash/newline whitespace inside ``name as alias``."""
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


def _one_line_insert(node: cst.ImportFrom, index: int) -> cst.ImportFrom:
    """Insert the name with ``", "`` separators (same-line layouts)."""
    names = list(_aliases(node))
    new = cst.ImportAlias(name=cst.Name(ENUM_NAME))
    if index < len(names):
        names.insert(index, new.with_changes(comma=_comma(" ")))
    else:
        last = names[-1]
        names[-1] = last.with_changes(comma=_comma(" "))
        names.append(new.with_changes(comma=last.comma))
    return node.with_changes(names=names)


def _collapse_backslashes(node: cst.ImportFrom) -> cst.ImportFrom:
    names = [_normalise_alias(a) for a in _aliases(node)]
    names = [a.with_changes(comma=_comma(" ")) if isinstance(a.comma, cst.Comma) else a for a in names]
    changes: dict[str, object] = {"names": names, "whitespace_after_import": cst.SimpleWhitespace(" ")}
    for field in ("whitespace_after_from", "whitespace_before_import"):
        if _has_backslash(getattr(node, field).value):
            changes[field] = cst.SimpleWhitespace(" ")
    return node.with_changes(**changes)


def _one_per_line_insert(node: cst.ImportFrom, index: int) -> cst.ImportFrom:
    """Parenthesised, one name per line: add a line for the new name."""
    names = list(_aliases(node))
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
    indent = _leading_ws(node, names, len(names) - 1).last_line.value
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
    rpar = _rpar(node)
    rpar_ws = rpar.whitespace_before
    if _is_pw(rpar_ws):  # "    zz  # comment\n)"
        names[-1] = last.with_changes(comma=_comma(_pw(rpar_ws.first_line, (), indent)))
        names.append(new.with_changes(comma=_comma(_pw(None, rpar_ws.empty_lines, rpar_ws.last_line.value))))
        return node.with_changes(
            names=names,
            rpar=rpar.with_changes(whitespace_before=cst.SimpleWhitespace("")),
        )
    # "    zz)": the closing parenthesis stays on the new name's line.
    names[-1] = last.with_changes(comma=_comma(_pw(None, (), indent)))
    names.append(new)
    return node.with_changes(names=names)


def _packed_insert(node: cst.ImportFrom, index: int) -> cst.ImportFrom:
    """Parenthesised, several names per line: insert next to the neighbour."""
    return _one_line_insert(node, index)


def _into_name(ws: object) -> cst.ParenthesizedWhitespace:
    """A line break, then the black indentation of a name."""
    if _is_pw(ws):
        return ws.with_changes(last_line=cst.SimpleWhitespace(BLACK_INDENT))
    return _pw(None, (), BLACK_INDENT)


def _explode(node: cst.ImportFrom) -> cst.ImportFrom:
    """Black style: ``from X import (`` / one name per line with a trailing comma / ``)``.
    Comments stay with the name they follow; own-line comments stay above the
    name they precede."""
    names = [_normalise_alias(a) for a in _aliases(node)]
    lead = node.lpar.whitespace_after if node.lpar is not None else None
    lpar = cst.LeftParen(whitespace_after=_into_name(lead))
    out = []
    for alias in names[:-1]:
        comma = _comma_of(alias)
        before: cst.BaseParenthesizableWhitespace = comma.whitespace_before
        if not _is_pw(before):
            before = cst.SimpleWhitespace("")
        out.append(
            alias.with_changes(
                comma=comma.with_changes(whitespace_before=before, whitespace_after=_into_name(comma.whitespace_after))
            )
        )
    last = names[-1]
    tails: list[cst.BaseParenthesizableWhitespace] = []
    if isinstance(last.comma, cst.Comma):
        tails.append(last.comma.whitespace_after)
    if node.rpar is not None:
        tails.append(node.rpar.whitespace_before)
    first_line = None
    empty_lines: list[cst.EmptyLine] = []
    for ws in tails:
        if _is_pw(ws):
            if first_line is None or (first_line.comment is None and ws.first_line.comment):
                first_line = ws.first_line
            empty_lines.extend(ws.empty_lines)
    out.append(last.with_changes(comma=_comma(_pw(first_line, empty_lines, ""))))
    changes: dict[str, object] = {
        "names": out,
        "lpar": lpar,
        "rpar": cst.RightParen(whitespace_before=cst.SimpleWhitespace("")),
        "whitespace_after_import": cst.SimpleWhitespace(" "),
    }
    for field in ("whitespace_after_from", "whitespace_before_import"):
        if _has_backslash(getattr(node, field).value):
            changes[field] = cst.SimpleWhitespace(" ")
    return node.with_changes(**changes)


def _layout(node: cst.ImportFrom) -> _Layout:
    code = cst.Module([]).code_for_node(node)
    if node.lpar is None:
        return _Layout.BACKSLASH if _has_backslash(code) else _Layout.LINE
    if "\n" not in code and "\r" not in code:
        return _Layout.LINE
    names = _aliases(node)
    if _is_pw(node.lpar.whitespace_after) and all(_is_pw(_comma_of(a).whitespace_after) for a in names[:-1]):
        return _Layout.ONE_PER_LINE
    return _Layout.PACKED


def _width(line: str) -> int:
    return len(without_eol(line).lstrip(BOM))


def _too_long(code: str) -> bool:
    return any(ENUM_NAME in line and _width(line) > LINE_LENGTH for line in split_lines(code))


def _is_target(stmt: cst.BaseSmallStatement) -> TypeGuard[cst.ImportFrom]:
    return (
        isinstance(stmt, cst.ImportFrom)
        and not stmt.relative
        and stmt.module is not None
        and cst.Module([]).code_for_node(stmt.module).replace(" ", "") == COMMON_UTILS
        and not isinstance(stmt.names, cst.ImportStar)
    )


class _ImportRewriter:
    """Rewrites the first ``from common_utils import`` found in a small module."""

    def __init__(self) -> None:
        self.done = False

    def rewrite(self, module: cst.Module) -> cst.Module:
        body = []
        for line in module.body:
            if not self.done and isinstance(line, cst.SimpleStatementLine):
                small = []
                for stmt in line.body:
                    if not self.done and _is_target(stmt):
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
    def _merged(module: cst.Module, line: cst.SimpleStatementLine, node: cst.ImportFrom) -> cst.ImportFrom:
        key = ENUM_NAME.lower()
        names = _aliases(node)
        index = next((i for i, a in enumerate(names) if _alias_key(a) > key), len(names))
        layout = _layout(node)
        if layout == _Layout.ONE_PER_LINE:
            return _one_per_line_insert(node, index)
        if layout == _Layout.PACKED:
            merged = _packed_insert(node, index)
        elif layout == _Layout.BACKSLASH:
            merged = _collapse_backslashes(_one_line_insert(node, index))
        else:
            merged = _one_line_insert(node, index)
        candidate = module.with_changes(body=[line.with_changes(body=[merged if s is node else s for s in line.body])])
        if _too_long(candidate.code):
            return _explode(merged)
        return merged


def _comment_after_paren(
    node: cst.ImportFrom, line: cst.SimpleStatementLine
) -> tuple[cst.ImportFrom, cst.SimpleStatementLine]:
    """A one-line import that had to be exploded keeps its trailing comment on the
    first line, `from X import (  # noqa: F401`: linters read `noqa` per physical
    line, and black leaves a comment there alone."""
    comment = line.trailing_whitespace.comment
    lpar = _lpar(node)
    after = lpar.whitespace_after
    if comment is None or not _is_pw(after) or after.first_line.comment is not None:
        return node, line
    first = after.first_line.with_changes(whitespace=cst.SimpleWhitespace("  "), comment=comment)
    node = node.with_changes(lpar=lpar.with_changes(whitespace_after=after.with_changes(first_line=first)))
    trailing = line.trailing_whitespace.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)
    return node, line.with_changes(trailing_whitespace=trailing)


def merge_edit(lines: Sequence[str], tree: ast.Module, target: ast.ImportFrom) -> Edit:
    """The edit that adds the name to ``target``, a module-level ``from common_utils import``
    (its logical lines are replaced, statements sharing them with it included)."""
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
