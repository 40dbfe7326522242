"""Where `weights_only=<value>` goes in a call's own text: its value replaced when the call
passes it (`weights_only=None`), else appended in the call's layout (one line, or one
argument per line with or without a trailing comma, after the comment that belongs to the
last argument)."""

from __future__ import annotations

import libcst as cst

from transforms.torch_load.analysis.source import LoadSource
from transforms.torch_load.analysis.text import TextEdit, skip_rpar, skip_to

__all__ = ["call_end", "weights_only_edits"]


def weights_only_edits(src: LoadSource, call: cst.Call, value: str) -> list[TextEdit]:
    """The text edits that set ``weights_only=value`` on `call`.  Raises ValueError when the
    call's text is not laid out as expected."""
    t = src.lines
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "weights_only":
            vp = src.pos(a.value)
            return [(t.off(vp.start.line, vp.start.column), t.off(vp.end.line, vp.end.column), value)]
    kw = f"weights_only={value}"
    text = src.text
    fp = src.pos(call.func)
    # the call's own "(": after the callee and the callee's closing parens
    lpar = skip_to(text, skip_rpar(text, t.off(fp.end.line, fp.end.column), call.func), "(")
    if not call.args:
        return [(lpar + 1, lpar + 1, kw)]
    last = call.args[-1]
    # the whole last argument, with the parentheses around its value
    # (pos(last.value) stops inside them: `map_location=(lambda s, l: s)`)
    lp = src.pos(last)
    vend = t.off(lp.end.line, lp.end.column)
    trailing = isinstance(last.comma, cst.Comma)
    after = vend
    if trailing:
        after = skip_to(text, vend, ",") + 1
    paren = skip_to(text, after, ")")
    prev_line = src.pos(call.args[-2]).start.line if len(call.args) >= 2 else t.line_of(lpar)
    one_per_line = lp.start.line != prev_line and t.line_of(paren) != t.line_of(vend)
    if not one_per_line:
        return [(after, after, f" {kw},")] if trailing else [(vend, vend, f", {kw}")]
    prefix = t.line(lp.start.line)[: lp.start.column]
    indent = prefix if not prefix.strip(" \t") else "".join(c if c == "\t" else " " for c in prefix)
    if trailing:
        comma_line = t.line_of(after - 1)
        ins = t.starts[comma_line] if comma_line < len(t.starts) else len(text)
        return [(ins, ins, f"{indent}{kw},{src.newline}")]
    # The comma goes right after the argument; the new keyword on its own line
    # after any comment that belongs to the argument (`x  # why` keeps its comment).
    line_no = t.line_of(vend)
    eol = t.off(line_no, len(t.line_body(line_no)))
    if not text[vend:eol].lstrip(" \t").startswith("#"):
        return [(vend, vend, f",{src.newline}{indent}{kw}")]
    return [(vend, vend, ","), (eol, eol, f"{src.newline}{indent}{kw}")]


def call_end(src: LoadSource, call: cst.Call) -> tuple[int, int]:
    """The end of `call` as `ast` records it (line, UTF-8 byte column): how the check of the
    output finds the call again."""
    end = src.pos(call).end
    return end.line, len(src.lines.line_body(end.line)[: end.column].encode("utf-8"))
