"""Text edits: the weights_only keyword in the call's own style, the with-blocks
(re-indenting what they wrap), comments and import lines, applied to the text so
everything else stays byte-identical."""

from __future__ import annotations

from transforms.torch_load.modes import WRAP_LINE_LIMIT
from transforms.torch_load.plan import _Wrap
from transforms.torch_load.text import (
    _NL_RE,
    _indent_of,
    _skip_rpar,
    _skip_to,
    _string_interior_lines,
    comment_lines,
)


class TextEditor:
    """Mixin of the per-file run: turn the plan into the new text."""

    # ------------------------------------------------------------------ keyword edits
    def _set_kw(self, call, value: str):
        """Plan the text edit that sets ``weights_only=value`` on `call`.  Raises
        ValueError when the call's text is not laid out as expected."""
        import libcst as cst

        T = self.T
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "weights_only":
                vp = self.pos(a.value)
                self.kw_edits.append((T.off(vp.start.line, vp.start.column), T.off(vp.end.line, vp.end.column), value))
                return
        kw = f"weights_only={value}"
        text = self.text
        fp = self.pos(call.func)
        # the call's own "(": after the callee and the callee's closing parens
        lpar = _skip_to(text, _skip_rpar(text, T.off(fp.end.line, fp.end.column), call.func), "(")
        if not call.args:
            self.kw_edits.append((lpar + 1, lpar + 1, kw))
            return
        last = call.args[-1]
        # the whole last argument, with the parentheses around its value
        # (pos(last.value) stops inside them: `map_location=(lambda s, l: s)`)
        lp = self.pos(last)
        vend = T.off(lp.end.line, lp.end.column)
        trailing = isinstance(last.comma, cst.Comma)
        after = vend
        if trailing:
            after = _skip_to(text, vend, ",") + 1
        paren = _skip_to(text, after, ")")
        if len(call.args) >= 2:
            prev_line = self.pos(call.args[-2]).start.line
        else:
            prev_line = T.line_of(lpar)
        one_per_line = lp.start.line != prev_line and T.line_of(paren) != T.line_of(vend)
        if not one_per_line:
            if trailing:
                self.kw_edits.append((after, after, f" {kw},"))
            else:
                self.kw_edits.append((vend, vend, f", {kw}"))
            return
        arg_line = T.line(lp.start.line)
        prefix = arg_line[: lp.start.column]
        indent = prefix if not prefix.strip(" \t") else "".join(c if c == "\t" else " " for c in prefix)
        if trailing:
            comma_line = T.line_of(after - 1)
            ins = T.starts[comma_line] if comma_line < len(T.starts) else len(text)
            self.kw_edits.append((ins, ins, f"{indent}{kw},{self.newline}"))
            return
        # The comma goes right after the argument; the new keyword on its own line
        # after any comment that belongs to the argument (`x  # why` keeps its comment).
        line_no = T.line_of(vend)
        eol = T.off(line_no, len(T.line_body(line_no)))
        rest = text[vend:eol]
        if not rest.lstrip(" \t").startswith("#"):
            self.kw_edits.append((vend, vend, f",{self.newline}{indent}{kw}"))
            return
        self.kw_edits.append((vend, vend, ","))
        self.kw_edits.append((eol, eol, f"{self.newline}{indent}{kw}"))

    # ------------------------------------------------------------------ applying
    def _apply(self, merged: list[_Wrap], imports: tuple) -> str:
        """The new text: keyword edits, the `merged` with-blocks, comments and the
        rendered `imports` ((line to insert before, text) per new line, in-line edits)."""
        text = self.text
        T = self.T
        # phase 1: in-line keyword edits (may add lines); track the line shift
        added_before: list[tuple[int, int]] = []  # (offset, newlines added)
        for start, end, rep in sorted(self.kw_edits, key=lambda e: (e[0], e[1]), reverse=True):
            text = text[:start] + rep + text[end:]
            added_before.append((start, len(_NL_RE.findall(rep)) - len(_NL_RE.findall(self.text[start:end]))))

        def new_line(old: int) -> int:
            off = T.starts[old - 1] if old - 1 < len(T.starts) else len(self.text)
            return old + sum(n for o, n in added_before if o < off)

        def new_last(old_last: int) -> int:
            end = T.starts[old_last] if old_last < len(T.starts) else len(self.text) + 1
            return old_last + sum(n for o, n in added_before if o < end)

        lines = _NL_RE.split(text)
        seps = _NL_RE.findall(text)
        # keep separators: rebuild as list of (content, sep)
        L = [[c, s] for c, s in zip(lines, seps + [""], strict=False)]
        interior = _string_interior_lines(text)
        nl = self.newline

        inserts: dict[int, list[str]] = {}  # new line number -> lines to insert before it
        indent_ranges: list[tuple[int, int, str]] = []

        torch_name = self.imports.torch_name()
        spans = []
        for w in merged:
            a, b = new_line(w.first), new_last(w.last)
            spans.append((w, a, b, self._unit(_indent_of(L[a - 1][0]))))
        indent_ranges = [(a, b, unit) for _, a, b, unit in spans]

        def outer(a: int) -> str:
            """Indentation the wraps around line `a` add (their lines are re-indented
            below, lines inserted here are not): nested wraps need it on their head."""
            return "".join(u for s, e, u in reversed(indent_ranges) if s < a <= e)

        for w, a, _b, unit in spans:
            ind = outer(a) + _indent_of(L[a - 1][0])
            head = f"{ind}with {torch_name}.serialization.safe_globals([{', '.join(w.entries)}]):"
            block = []
            if w.comment:
                block += comment_lines(ind, w.comment)
            if len(head) > WRAP_LINE_LIMIT:
                block.append(f"{ind}with {torch_name}.serialization.safe_globals([")
                block += [f"{ind}{unit}{e}," for e in w.entries]
                block.append(f"{ind}]):")
            else:
                block.append(head)
            inserts.setdefault(a, []).extend(block)
        comment_at = []
        for old, comment in self.comments.items():
            a = new_line(old)
            comment_at.append((a, comment_lines(outer(a) + _indent_of(L[a - 1][0]), comment)))
        for a, c in sorted(comment_at, reverse=True):
            inserts.setdefault(a, [])[0:0] = c

        for a, b, unit in indent_ranges:
            for n in range(a, b + 1):
                if n in interior or not L[n - 1][0].strip():
                    continue
                L[n - 1][0] = unit + L[n - 1][0]

        import_lines, import_edits = imports
        for ln, col_text_old, col_text_new in import_edits:
            n = new_line(ln)
            L[n - 1][0] = L[n - 1][0].replace(col_text_old, col_text_new, 1)
        by_line: dict[int, list[str]] = {}
        for at, line in import_lines:
            n = new_line(at) if at <= len(T.starts) else len(L) + 1
            by_line.setdefault(n, []).append(line)
        for n, new_imports in by_line.items():
            inserts[n] = new_imports + inserts.get(n, [])

        out: list[str] = []
        for i, (content, sep) in enumerate(L, start=1):
            for extra in inserts.get(i, []):
                out.append(extra + nl)
            out.append(content + sep)
        tail = inserts.get(len(L) + 1, [])
        if tail:
            if out and not out[-1].endswith(("\n", "\r")):
                out[-1] += nl
            out += [x + nl for x in tail]
        return "".join(out)

    def _unit(self, ind: str) -> str:
        """One indentation level in the style of the statement being wrapped."""
        u = self.indent_unit
        if ind.startswith("\t"):
            return "\t"
        if ind:
            return u if u and u.strip(" ") == "" else "    "
        return u if u and u.strip(" \t") == "" else "    "
