"""Exact-output tests for transforms/label/hw_edit.py (attribute insertion, import placement),
import_merge.py (the merge into an existing import) and source_lines.py (lines, line ends)."""

from __future__ import annotations

import ast
import difflib

import pytest

from transforms.label.hw_edit import (
    add_labels,
    ensure_import,
    has_import,
    insert_attribute,
    strip_hw_edits,
)
from transforms.core.members import ENUM_NAME
from transforms.core.source_lines import EditError, newline_of, split_lines

CU = "from torch.testing._internal.common_utils import"
ATTR = "hw_classification = HardwareClassification"


def parse(text: str) -> ast.Module:
    return ast.parse(text.lstrip("\ufeff"))


def class_lines(tree: ast.Module) -> dict[str, int]:
    return {n.name: n.lineno for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}


def labels_of(tree: ast.Module) -> dict[str, str]:
    """class name -> label value found in the class body."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and isinstance(stmt.targets[0], ast.Name)
                    and stmt.targets[0].id == "hw_classification"
                ):
                    found[node.name] = stmt.value.attr
    return found


def label(text: str, by_name: dict[str, str], **kwargs) -> str:
    tree = parse(text)
    lines = class_lines(tree)
    return add_labels(text, tree, {lines[n]: v for n, v in by_name.items()}, **kwargs)


def check(text: str, by_name: dict[str, str], expected: str, *, need_import: bool = True):
    """Exact output plus the properties every edit must have."""
    out = label(text, by_name, need_import=need_import)
    assert out == expected
    # Nothing but labels and the import name changed (strip works in place: fresh trees).
    assert ast.dump(strip_hw_edits(parse(out))) == ast.dump(strip_hw_edits(parse(text)))
    before, after = parse(text), parse(out)
    # The requested labels are there, and only those were added.
    expected_labels = {**labels_of(before), **by_name}
    assert labels_of(after) == expected_labels
    if need_import:
        assert has_import(parse(out))
    # The attribute is the first statement (after a docstring).
    for node in ast.walk(after):
        if isinstance(node, ast.ClassDef) and node.name in by_name:
            first = node.body[1] if isinstance(node.body[0], ast.Expr) else node.body[0]
            assert isinstance(first, ast.Assign)
            assert first.targets[0].id == "hw_classification"
    # An empty mapping changes nothing; relabelling the same way is a no-op.
    assert add_labels(out, after, {}) == out
    assert label(out, by_name, need_import=need_import) == out
    # Newline style preserved: no foreign line endings introduced.
    nl = newline_of(text)
    assert all(line.endswith(nl) for line in split_lines(out)[:-1])
    return out


def only_inserted(text: str, out: str) -> list[str]:
    """The lines added by the edit; fails if any existing line changed."""
    a, b = split_lines(text), split_lines(out)
    added = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        assert tag in ("equal", "insert"), (tag, a[i1:i2], b[j1:j2])
        if tag == "insert":
            added += b[j1:j2]
    return added


# --------------------------------------------------------------------------
# split_lines / newline_of


def test_split_lines_tokenizer_semantics():
    text = "a\r\nb\rc\nd\x0ce\x1cf\u2028g\x85h"
    assert split_lines(text) == ["a\r\n", "b\r", "c\n", "d\x0ce\x1cf\u2028g\x85h"]
    assert "".join(split_lines(text)) == text
    assert split_lines("") == []
    assert split_lines("x\n") == ["x\n"]
    assert split_lines("\n\n") == ["\n", "\n"]


def test_newline_of():
    assert newline_of("a\r\nb\n") == "\r\n"
    assert newline_of("a\rb") == "\r"
    assert newline_of("abc") == "\n"


# --------------------------------------------------------------------------
# Attribute placement

HEAD = f"{CU} HardwareClassification, TestCase\n\n\n"


def test_no_docstring_method_follows():
    src = HEAD + "class A(TestCase):\n    def test_a(self):\n        pass\n"
    check(
        src,
        {"A": "GENERIC"},
        HEAD
        + "class A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "\n"
        "    def test_a(self):\n"
        "        pass\n",
    )
    assert only_inserted(src, label(src, {"A": "GENERIC"})) == [
        "    hw_classification = HardwareClassification.GENERIC\n",
        "\n",
    ]


def test_no_docstring_blank_line_already_there():
    src = HEAD + "class A(TestCase):\n\n    def test_a(self):\n        pass\n"
    check(
        src,
        {"A": "CUDA"},
        HEAD
        + "class A(TestCase):\n"
        "    hw_classification = HardwareClassification.CUDA\n"
        "\n"
        "    def test_a(self):\n"
        "        pass\n",
    )


def test_one_line_docstring():
    src = HEAD + 'class A(TestCase):\n    """Doc."""\n\n    def test_a(self):\n        pass\n'
    check(
        src,
        {"A": "GENERIC"},
        HEAD + "class A(TestCase):\n"
        '    """Doc."""\n'
        "\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "\n"
        "    def test_a(self):\n"
        "        pass\n",
    )


def test_multi_line_docstring_no_blank_after():
    src = (
        HEAD + "class A(TestCase):\n"
        '    """Doc.\n'
        "\n"
        "    More.\n"
        '    """\n'
        "    def test_a(self):\n"
        "        pass\n"
    )
    check(
        src,
        {"A": "ACCELERATOR"},
        HEAD + "class A(TestCase):\n"
        '    """Doc.\n'
        "\n"
        "    More.\n"
        '    """\n'
        "\n"
        "    hw_classification = HardwareClassification.ACCELERATOR\n"
        "\n"
        "    def test_a(self):\n"
        "        pass\n",
    )


def test_docstring_then_attribute():
    src = HEAD + "class A(TestCase):\n    'Doc.'\n    x = 1\n\n    def test_a(self):\n        pass\n"
    check(
        src,
        {"A": "GENERIC"},
        HEAD + "class A(TestCase):\n"
        "    'Doc.'\n"
        "\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "    x = 1\n"
        "\n"
        "    def test_a(self):\n"
        "        pass\n",
    )


def test_docstring_only_class_at_eof_without_newline():
    src = HEAD + 'class A(TestCase):\n    """Doc."""'
    check(
        src,
        {"A": "GENERIC"},
        HEAD + 'class A(TestCase):\n    """Doc."""\n\n'
        "    hw_classification = HardwareClassification.GENERIC",
    )


def test_first_statement_is_attribute():
    src = HEAD + "class A(TestCase):\n    x = 1\n\n    def test_a(self):\n        pass\n"
    check(
        src,
        {"A": "GENERIC"},
        HEAD + "class A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "    x = 1\n"
        "\n"
        "    def test_a(self):\n"
        "        pass\n",
    )


def test_decorated_class_and_decorated_method():
    src = (
        HEAD + "@skipIf(True, 'x')\n"
        "@other\n"
        "class A(TestCase):\n"
        "    @staticmethod\n"
        "    def test_a():\n"
        "        pass\n"
    )
    check(
        src,
        {"A": "GENERIC"},
        HEAD + "@skipIf(True, 'x')\n"
        "@other\n"
        "class A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "\n"
        "    @staticmethod\n"
        "    def test_a():\n"
        "        pass\n",
    )


def test_multi_line_header_with_comments():
    src = (
        HEAD + "class A(\n"
        "    TestCase,  # base\n"
        "    metaclass=M,\n"
        "):  # noqa: B950\n"
        "    # about the tests\n"
        "\n"
        "    # more\n"
        "    async def test_a(self):\n"
        "        pass\n"
    )
    check(
        src,
        {"A": "GENERIC"},
        HEAD + "class A(\n"
        "    TestCase,  # base\n"
        "    metaclass=M,\n"
        "):  # noqa: B950\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "\n"
        "    # about the tests\n"
        "\n"
        "    # more\n"
        "    async def test_a(self):\n"
        "        pass\n",
    )


def test_header_trailing_comment_and_nested_class_first():
    src = HEAD + "class A(TestCase):  # noqa\n    class Inner:\n        pass\n"
    check(
        src,
        {"A": "GENERIC"},
        HEAD + "class A(TestCase):  # noqa\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "\n"
        "    class Inner:\n"
        "        pass\n",
    )


def test_tab_indented_class():
    src = HEAD + 'class A(TestCase):\n\t"""Doc."""\n\tdef test_a(self):\n\t\tpass\n'
    check(
        src,
        {"A": "MPS"},
        HEAD + "class A(TestCase):\n"
        '\t"""Doc."""\n'
        "\n"
        "\thw_classification = HardwareClassification.MPS\n"
        "\n"
        "\tdef test_a(self):\n"
        "\t\tpass\n",
    )


def test_nested_indentation_is_copied():
    src = HEAD + "if True:\n  class A(TestCase):\n      def test_a(self):\n          pass\n"
    check(
        src,
        {"A": "XPU"},
        HEAD + "if True:\n  class A(TestCase):\n"
        "      hw_classification = HardwareClassification.XPU\n"
        "\n"
        "      def test_a(self):\n"
        "          pass\n",
    )


def test_two_classes_line_numbers_shift():
    src = (
        "from torch.testing._internal.common_utils import run_tests, TestCase\n"
        "\n"
        "\n"
        "class A(TestCase):\n"
        "    def test_a(self):\n"
        "        pass\n"
        "\n"
        "\n"
        "class B(TestCase):\n"
        '    """B."""\n'
        "\n"
        "    def test_b(self, device):\n"
        "        pass\n"
    )
    check(
        src,
        {"A": "GENERIC", "B": "ACCELERATOR"},
        # 92 columns on one line: exploded
        "from torch.testing._internal.common_utils import (\n"
        "    HardwareClassification,\n"
        "    run_tests,\n"
        "    TestCase,\n"
        ")\n"
        "\n"
        "\n"
        "class A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "\n"
        "    def test_a(self):\n"
        "        pass\n"
        "\n"
        "\n"
        "class B(TestCase):\n"
        '    """B."""\n'
        "\n"
        "    hw_classification = HardwareClassification.ACCELERATOR\n"
        "\n"
        "    def test_b(self, device):\n"
        "        pass\n",
    )


def test_outer_and_nested_class():
    src = HEAD + "class A(TestCase):\n    class B(TestCase):\n        def test_b(self):\n            pass\n"
    check(
        src,
        {"A": "GENERIC", "B": "CPU"},
        HEAD + "class A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "\n"
        "    class B(TestCase):\n"
        "        hw_classification = HardwareClassification.CPU\n"
        "\n"
        "        def test_b(self):\n"
        "            pass\n",
    )


def test_crlf_file_stays_crlf():
    src = (
        "import torch\r\n"
        "from torch.testing._internal.common_utils import run_tests\r\n"
        "\r\n"
        "\r\n"
        "class A(TestCase):\r\n"
        '    """Doc."""\r\n'
        "    def test_a(self):\r\n"
        "        pass\r\n"
    )
    out = check(
        src,
        {"A": "GENERIC"},
        "import torch\r\n"
        "from torch.testing._internal.common_utils import HardwareClassification, run_tests\r\n"
        "\r\n"
        "\r\n"
        "class A(TestCase):\r\n"
        '    """Doc."""\r\n'
        "\r\n"
        "    hw_classification = HardwareClassification.GENERIC\r\n"
        "\r\n"
        "    def test_a(self):\r\n"
        "        pass\r\n",
    )
    assert out.count("\n") == out.count("\r\n")
    assert out.replace("\r\n", "").count("\r") == 0


def test_crlf_file_attribute_only_inserted_lines():
    src = f"{CU} HardwareClassification\r\nclass A:\r\n    def test_a(self):\r\n        pass\r\n"
    out = check(
        src,
        {"A": "GENERIC"},
        f"{CU} HardwareClassification\r\nclass A:\r\n"
        "    hw_classification = HardwareClassification.GENERIC\r\n"
        "\r\n"
        "    def test_a(self):\r\n        pass\r\n",
    )
    assert only_inserted(src, out) == [
        "    hw_classification = HardwareClassification.GENERIC\r\n",
        "\r\n",
    ]


def test_lone_cr_file():
    src = f"{CU} TestCase\rclass A(TestCase):\r    x = 1\r"
    check(
        src,
        {"A": "GENERIC"},
        f"{CU} HardwareClassification, TestCase\rclass A(TestCase):\r"
        "    hw_classification = HardwareClassification.GENERIC\r    x = 1\r",
    )


def test_form_feed_is_not_a_newline():
    src = f"{CU} HardwareClassification\n\x0c\nclass A:\n    x = 1  # \x0c\n"
    check(
        src,
        {"A": "GENERIC"},
        f"{CU} HardwareClassification\n\x0c\nclass A:\n"
        "    hw_classification = HardwareClassification.GENERIC\n    x = 1  # \x0c\n",
    )


def test_bom_and_coding_cookie():
    src = (
        "\ufeff# -*- coding: utf-8 -*-\n"
        "from torch.testing._internal.common_utils import TestCase\n"
        "class A(TestCase):\n"
        "    s = 'é'\n"
    )
    check(
        src,
        {"A": "GENERIC"},
        "\ufeff# -*- coding: utf-8 -*-\n"
        "from torch.testing._internal.common_utils import HardwareClassification, TestCase\n"
        "class A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "    s = 'é'\n",
    )


def test_bom_import_on_first_line():
    src = "\ufefffrom torch.testing._internal.common_utils import TestCase\nclass A(TestCase):\n    x = 1\n"
    check(
        src,
        {"A": "GENERIC"},
        "\ufefffrom torch.testing._internal.common_utils import HardwareClassification, TestCase\n"
        "class A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n    x = 1\n",
    )


def test_bom_no_imports_at_all():
    src = "\ufeffclass A:\n    x = 1\n"
    check(
        src,
        {"A": "GENERIC"},
        "\ufefffrom torch.testing._internal.common_utils import HardwareClassification\n"
        "\n\n"
        "class A:\n    hw_classification = HardwareClassification.GENERIC\n    x = 1\n",
    )


def test_non_ascii_before_body_on_header_check():
    # col_offset is in UTF-8 bytes: a non-ASCII class name must not confuse it.
    src = f"{CU} HardwareClassification\nclass Ä(TestCase):\n    é = 1\n"
    check(
        src,
        {"Ä": "GENERIC"},
        f"{CU} HardwareClassification\nclass Ä(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n    é = 1\n",
    )


def test_need_import_false_leaves_imports():
    src = "from torch.testing._internal.common_utils import TestCase\nclass A(TestCase):\n    x = 1\n"
    expected = (
        "from torch.testing._internal.common_utils import TestCase\nclass A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n    x = 1\n"
    )
    assert label(src, {"A": "GENERIC"}, need_import=False) == expected
    tree = parse(src)
    assert insert_attribute(src, tree, class_lines(tree)["A"], "GENERIC") == expected


def test_already_labelled_same_value_is_noop():
    src = f"{CU} HardwareClassification\nclass A:\n    {ATTR}.GENERIC\n"
    assert label(src, {"A": "GENERIC"}) == src


def test_empty_mapping_returns_text():
    src = "class A:\n    x = 1\n"
    assert add_labels(src, parse(src), {}) is src


# --------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    "src",
    [
        "class A: x = 1\n",
        "class A(B): pass\n",
        'class A: """doc"""\n',
        'class A:\n    """d"""; x = 1\n',
        'class A:\n    """d\n    more"""; x = 1\n',
    ],
)
def test_edit_error(src):
    with pytest.raises(EditError):
        label(src, {"A": "GENERIC"})


def test_different_existing_label_is_an_error():
    src = f"{CU} HardwareClassification\nclass A:\n    {ATTR}.CUDA\n"
    with pytest.raises(EditError, match="already sets"):
        label(src, {"A": "GENERIC"})


def test_unknown_line_and_member():
    src = "class A:\n    x = 1\n"
    with pytest.raises(ValueError, match="line 2"):
        add_labels(src, parse(src), {2: "GENERIC"})
    with pytest.raises(ValueError, match="member"):
        add_labels(src, parse(src), {1: "generic"})


# --------------------------------------------------------------------------
# Import merge

BODY = "\n\nclass A(TestCase):\n    def test_a(self):\n        pass\n"
BODY_OUT = (
    "\n\nclass A(TestCase):\n"
    "    hw_classification = HardwareClassification.GENERIC\n"
    "\n"
    "    def test_a(self):\n"
    "        pass\n"
)


def merged(import_src: str) -> str:
    out = check(import_src + BODY, {"A": "GENERIC"}, label(import_src + BODY, {"A": "GENERIC"}))
    assert out.endswith(BODY_OUT)
    return out[: -len(BODY_OUT)]


def test_single_line_fits():
    assert merged(f"{CU} run_tests, TestCase\n") == (
        # one line would be 92 columns
        "from torch.testing._internal.common_utils import (\n"
        "    HardwareClassification,\n"
        "    run_tests,\n"
        "    TestCase,\n"
        ")\n"
    )
    assert merged(f"{CU} TestCase\n") == f"{CU} HardwareClassification, TestCase\n"
    assert merged(f"{CU} run_tests\n") == f"{CU} HardwareClassification, run_tests\n"
    assert merged(f"{CU} IS_CI as ci\n") == f"{CU} HardwareClassification, IS_CI as ci\n"
    assert merged(f"{CU} a as b  # c\n") == (
        f"{CU} a as b, HardwareClassification  # c\n"
    )


def test_single_line_with_comment_and_semicolon():
    assert merged(f"import os; {CU} TestCase  # noqa: F401\n") == (
        # one line would be 103 columns with the comment (black counts it)
        f"import os; {CU} (\n"
        "    HardwareClassification,\n"
        "    TestCase,\n"
        ")  # noqa: F401\n"
    )
    assert merged(f"{CU} IS_CI  # x\n") == f"{CU} HardwareClassification, IS_CI  # x\n"


def test_single_line_overflows_and_is_exploded():
    src = f"{CU} check_leaked_tensors, instantiate_parametrized_tests, IS_FBCODE, parametrize, run_tests, subtest, TestCase\n"
    assert merged(src) == (
        "from torch.testing._internal.common_utils import (\n"
        "    check_leaked_tensors,\n"
        "    HardwareClassification,\n"
        "    instantiate_parametrized_tests,\n"
        "    IS_FBCODE,\n"
        "    parametrize,\n"
        "    run_tests,\n"
        "    subtest,\n"
        "    TestCase,\n"
        ")\n"
    )


def test_exactly_88_columns_stays_on_one_line():
    out = merged(f"{CU} HOLD5, TestCase\n")
    assert out == f"{CU} HardwareClassification, HOLD5, TestCase\n"
    assert len(out.rstrip("\n")) == 88
    out = merged(f"{CU} HOLD56, TestCase\n")
    assert out.startswith(f"{CU} (\n")


def test_backslash_continued():
    assert merged(f"{CU} \\\n    TestCase, \\\n    run_tests\n") == (
        # one line would be 91 columns
        "from torch.testing._internal.common_utils import (\n"
        "    HardwareClassification,\n"
        "    TestCase,\n"
        "    run_tests,\n"
        ")\n"
    )
    assert merged(f"{CU} \\\n    TestCase as T\n") == (
        f"{CU} HardwareClassification, TestCase as T\n"
    )


def test_parenthesised_one_line():
    assert merged(f"{CU} (run_tests)\n") == f"{CU} (HardwareClassification, run_tests)\n"
    assert merged(f"{CU} (IS_CI, run_tests)\n") == (
        f"{CU} (\n    HardwareClassification,\n    IS_CI,\n    run_tests,\n)\n"
    )
    assert merged(f"{CU} (a, b,)\n") == f"{CU} (a, b, HardwareClassification,)\n"
    long = f"{CU} (instantiate_parametrized_tests, run_tests)  # why\n"
    assert merged(long) == (
        f"{CU} (\n"
        "    HardwareClassification,\n"
        "    instantiate_parametrized_tests,\n"
        "    run_tests,\n"
        ")  # why\n"
    )


def test_parenthesised_one_per_line_comment_alias():
    src = (
        f"{CU} (\n"
        "    check_leaked_tensors,\n"
        "    instantiate_parametrized_tests as ipt,  # short name\n"
        "    run_tests,\n"
        ")\n"
    )
    out = merged(src)
    assert out == (
        f"{CU} (\n"
        "    check_leaked_tensors,\n"
        "    HardwareClassification,\n"
        "    instantiate_parametrized_tests as ipt,  # short name\n"
        "    run_tests,\n"
        ")\n"
    )
    assert only_inserted(src + BODY, out + BODY_OUT)[0] == "    HardwareClassification,\n"


def test_parenthesised_comment_after_preceding_name_stays():
    src = f"{CU} (\n    check_leaked_tensors,  # keep me here\n    run_tests,\n)\n"
    assert merged(src) == (
        f"{CU} (\n"
        "    check_leaked_tensors,  # keep me here\n"
        "    HardwareClassification,\n"
        "    run_tests,\n"
        ")\n"
    )


def test_parenthesised_own_line_comment_stays_with_its_name():
    src = f"{CU} (  # noqa: F401\n    # the runner\n    run_tests,\n)\n"
    assert merged(src) == (
        f"{CU} (  # noqa: F401\n"
        "    HardwareClassification,\n"
        "    # the runner\n"
        "    run_tests,\n"
        ")\n"
    )


def test_parenthesised_append_without_trailing_comma():
    src = f"{CU} (\n    check_leaked_tensors,\n    all_types  # comment\n)\n"
    assert merged(src) == (
        f"{CU} (\n"
        "    check_leaked_tensors,\n"
        "    all_types,  # comment\n"
        "    HardwareClassification,\n"
        ")\n"
    )


def test_parenthesised_append_with_trailing_comma_and_trailing_comment():
    src = f"{CU} (\n  a,\n  b,  # bee\n  # tail\n)\n"
    assert merged(src) == f"{CU} (\n  a,\n  b,  # bee\n  HardwareClassification,\n  # tail\n)\n"


def test_parenthesised_append_paren_on_last_line():
    src = f"{CU} (\n    a,\n    b)\n"
    assert merged(src) == f"{CU} (\n    a,\n    b,\n    HardwareClassification)\n"


def test_packed_parenthesised():
    src = f"{CU} (\n    IS_CI, run_tests,\n    TestCase,\n)\n"
    assert merged(src) == (
        f"{CU} (\n    HardwareClassification, IS_CI, run_tests,\n    TestCase,\n)\n"
    )
    src = f"{CU} (a, b,\n    c)\n"
    assert merged(src) == f"{CU} (a, b,\n    c, HardwareClassification)\n"


def test_packed_parenthesised_overflow_explodes_keeping_comments():
    src = (
        f"{CU} (\n"
        "    IS_CI, instantiate_parametrized_tests, parametrize, run_tests, subtest,  # hi\n"
        "    TestCase,\n"
        ")\n"
    )
    assert merged(src) == (
        f"{CU} (\n"
        "    HardwareClassification,\n"
        "    IS_CI,\n"
        "    instantiate_parametrized_tests,\n"
        "    parametrize,\n"
        "    run_tests,\n"
        "    subtest,  # hi\n"
        "    TestCase,\n"
        ")\n"
    )


def test_several_common_utils_imports_first_gets_it():
    src = f"{CU} run_tests\n{CU} TestCase\n"
    assert merged(src) == f"{CU} HardwareClassification, run_tests\n{CU} TestCase\n"


def test_common_utils_import_inside_try_is_not_a_target():
    src = f"try:\n    {CU} TestCase\nexcept ImportError:\n    pass\n{CU} run_tests\n"
    assert merged(src) == (
        f"try:\n    {CU} TestCase\nexcept ImportError:\n    pass\n"
        f"{CU} HardwareClassification, run_tests\n"
    )


def test_star_import_means_no_new_import():
    src = f"{CU} *\n"
    assert merged(src) == src


def test_already_imported_no_change():
    src = f"{CU} HardwareClassification, TestCase\n"
    assert merged(src) == src


def test_conditional_or_late_import_does_not_count():
    # Under `if` the name may be unbound when the class body runs: import it for sure.
    src = f"if TYPE_CHECKING:\n    {CU} HardwareClassification\n"
    assert merged(src) == f"{CU} HardwareClassification\n\n\n" + src
    # An import below the class runs too late for the class body.
    late = f"{CU} TestCase\nclass A(TestCase):\n    def test_a(self):\n        pass\n{CU} HardwareClassification\n"
    out = label(late, {"A": "GENERIC"})
    assert out.startswith(f"{CU} HardwareClassification, TestCase\n")


def test_enum_imported_from_elsewhere_counts():
    src = "from torch.testing._internal.common_device_type import HardwareClassification\n"
    assert merged(src) == src


def test_aliased_enum_does_not_count():
    src = f"{CU} HardwareClassification as HC\n"
    out = merged(src)
    assert out == (
        f"{CU} (\n    HardwareClassification as HC,\n    HardwareClassification,\n)\n"
    )


# --------------------------------------------------------------------------
# New import line


def test_new_import_sorted_among_internal_imports():
    src = (
        "# Owner(s): [\"module: tests\"]\n"
        "import torch\n"
        "from torch.testing._internal.common_device_type import (\n"
        "    instantiate_device_type_tests,\n"
        ")\n"
        "from torch.testing._internal.jit_utils import JitTestCase\n"
    )
    assert merged(src) == (
        "# Owner(s): [\"module: tests\"]\n"
        "import torch\n"
        "from torch.testing._internal.common_device_type import (\n"
        "    instantiate_device_type_tests,\n"
        ")\n"
        "from torch.testing._internal.common_utils import HardwareClassification\n"
        "from torch.testing._internal.jit_utils import JitTestCase\n"
    )


def test_new_import_before_first_greater_internal_import():
    src = "import torch\nimport torch.testing._internal.opinfo as opinfo\n"
    assert merged(src) == (
        "import torch\n"
        f"{CU} HardwareClassification\n"
        "import torch.testing._internal.opinfo as opinfo\n"
    )


def test_new_import_after_last_internal_import_with_backslash_and_comment():
    src = (
        "from torch.testing._internal.autocast_test_lists import \\\n"
        "    AutocastTestLists  # comment\n"
        "import numpy as np\n"
    )
    assert merged(src) == (
        "from torch.testing._internal.autocast_test_lists import \\\n"
        "    AutocastTestLists  # comment\n"
        f"{CU} HardwareClassification\n"
        "import numpy as np\n"
    )


def test_new_import_after_statement_ending_with_backslash():
    src = "from torch.testing._internal.common_cuda import TEST_CUDA \\\n\nimport numpy as np\n"
    assert merged(src) == (
        "from torch.testing._internal.common_cuda import TEST_CUDA \\\n"
        "\n"
        f"{CU} HardwareClassification\n"
        "import numpy as np\n"
    )


def test_new_import_after_sys_path_block():
    src = (
        "import os\n"
        "import sys\n"
        "\n"
        "pytorch_test_dir = os.path.dirname(os.path.realpath(__file__))\n"
        "sys.path.append(pytorch_test_dir)\n"
        "from helpers import TestCase  # noqa: E402\n"
        "\n"
        "try:\n"
        "    import numpy\n"
        "except ImportError:\n"
        "    numpy = None\n"
    )
    assert merged(src) == (
        "import os\n"
        "import sys\n"
        "\n"
        "pytorch_test_dir = os.path.dirname(os.path.realpath(__file__))\n"
        "sys.path.append(pytorch_test_dir)\n"
        "from helpers import TestCase  # noqa: E402\n"
        f"{CU} HardwareClassification\n"
        "\n"
        "try:\n"
        "    import numpy\n"
        "except ImportError:\n"
        "    numpy = None\n"
    )


def test_new_import_ignores_imports_after_first_class():
    src = "import torch\n\n\nclass A(TestCase):\n    def test_a(self):\n        pass\n\n\nimport numpy\n"
    check(
        src,
        {"A": "GENERIC"},
        f"import torch\n{CU} HardwareClassification\n\n\nclass A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n\n"
        "    def test_a(self):\n        pass\n\n\nimport numpy\n",
    )


def test_common_utils_import_after_the_class_is_not_merged_into():
    src = (
        "import torch\n\n\nclass A(TestCase):\n    def test_a(self):\n        pass\n\n\n"
        f"{CU} run_tests\n"
    )
    check(
        src,
        {"A": "GENERIC"},
        f"import torch\n{CU} HardwareClassification\n\n\nclass A(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n\n"
        f"    def test_a(self):\n        pass\n\n\n{CU} run_tests\n",
    )


def test_no_imports_module_docstring_and_future():
    src = '"""Doc."""\nfrom __future__ import annotations\n\nclass A:\n    x = 1\n'
    check(
        src,
        {"A": "GENERIC"},
        '"""Doc."""\nfrom __future__ import annotations\n'
        f"{CU} HardwareClassification\n"
        "\nclass A:\n    hw_classification = HardwareClassification.GENERIC\n    x = 1\n",
    )


def test_no_imports_only_docstring():
    src = '"""Doc."""\nclass A:\n    x = 1\n'
    check(
        src,
        {"A": "GENERIC"},
        '"""Doc."""\n\n'
        f"{CU} HardwareClassification\n"
        "\n\nclass A:\n    hw_classification = HardwareClassification.GENERIC\n    x = 1\n",
    )


def test_no_torch_imports_at_all_owner_comment():
    src = '# Owner(s): ["module: x"]\n\nimport unittest\n\n\nclass A(unittest.TestCase):\n    x = 1\n'
    check(
        src,
        {"A": "GENERIC"},
        '# Owner(s): ["module: x"]\n\nimport unittest\n'
        f"{CU} HardwareClassification\n"
        "\n\nclass A(unittest.TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n    x = 1\n",
    )


def test_no_imports_no_docstring():
    src = '# Owner(s): ["module: x"]\n\nclass A:\n    x = 1\n'
    check(
        src,
        {"A": "GENERIC"},
        '# Owner(s): ["module: x"]\n\n'
        f"{CU} HardwareClassification\n"
        "\n\nclass A:\n    hw_classification = HardwareClassification.GENERIC\n    x = 1\n",
    )


def test_ensure_import_standalone():
    src = "import torch\n"
    assert ensure_import(src, parse(src)) == f"import torch\n{CU} HardwareClassification\n"
    src = f"{CU} {ENUM_NAME}\n"
    assert ensure_import(src, parse(src)) == src


def test_strip_hw_edits_keeps_everything_else():
    src = f"{CU} HardwareClassification, TestCase\nclass A(TestCase):\n    {ATTR}.CPU\n    x = 1\n"
    stripped = strip_hw_edits(parse(src))
    assert ast.unparse(stripped) == f"{CU} TestCase\n\nclass A(TestCase):\n    x = 1"
    # A freshly parsed tree still has it (strip works on the tree it is given).
    assert ENUM_NAME in ast.unparse(parse(src))


def test_mixed_newlines_import_explode_uses_file_newline():
    src = (
        "import torch\r\n"
        f"{CU} run_tests, TestCase\n"
        "\r\n"
        "class A(TestCase):\r\n"
        "    x = 1\r\n"
    )
    check(
        src,
        {"A": "GENERIC"},
        "import torch\r\n"
        f"{CU} (\r\n"
        "    HardwareClassification,\r\n"
        "    run_tests,\r\n"
        "    TestCase,\r\n"
        ")\r\n"
        "\r\n"
        "class A(TestCase):\r\n"
        "    hw_classification = HardwareClassification.GENERIC\r\n"
        "    x = 1\r\n",
    )


def test_mixed_newlines_one_line_merge_keeps_line_ending():
    src = f"import torch\r\n{CU} TestCase\nclass A(TestCase):\r\n    x = 1\r\n"
    assert label(src, {"A": "GENERIC"}) == (
        f"import torch\r\n{CU} HardwareClassification, TestCase\nclass A(TestCase):\r\n"
        "    hw_classification = HardwareClassification.GENERIC\r\n    x = 1\r\n"
    )


def test_large_file_labels_every_class():
    # Speed is measured by benchmarks, never asserted in a test (CI runs on a busy machine).
    classes = "".join(
        f"class T{i}(TestCase):\n    def test_{i}(self):\n        x = [{i}] * 3\n\n\n"
        for i in range(3000)
    )
    src = f"import torch\n{CU} run_tests, TestCase\n\n\n" + classes
    tree = parse(src)
    labels = {n.lineno: "GENERIC" for n in tree.body if isinstance(n, ast.ClassDef)}
    out = add_labels(src, tree, labels)
    assert out.count("hw_classification = HardwareClassification.GENERIC\n") == 3000


def test_exploded_import_keeps_newline_after_backslash_comment():
    # LibCST drops the newline that ends `# comment \`; the next statement must stay put.
    src = f"{CU} run_tests, TestCase  # foo \\\nimport os\n" + BODY
    out = label(src, {"A": "GENERIC"})
    assert out.startswith(f"{CU} (  # foo \\\n    HardwareClassification,\n")
    assert "\n)\nimport os\n" in out


def test_exploded_import_keeps_noqa_on_the_first_line():
    # flake8/ruff read `noqa` per physical line: it stays where the import starts.
    src = f"{CU} run_tests, TestCase  # noqa: F401\n" + BODY
    assert label(src, {"A": "GENERIC"}).startswith(
        f"{CU} (  # noqa: F401\n    HardwareClassification,\n    run_tests,\n    TestCase,\n)\n"
    )


def test_form_feed_before_first_method_is_not_copied():
    src = f"{CU} TestCase\n\n\nclass A(TestCase):\n\x0c    def test_a(self):\n        pass\n"
    out = label(src, {"A": "GENERIC"})
    assert "\n    hw_classification = HardwareClassification.GENERIC\n\n\x0c    def test_a" in out


TWO_CLASSES_SRC = """from torch.testing._internal.common_utils import TestCase


class TestA(TestCase):
    def test_a(self):
        pass


class TestB(TestCase):
    def test_b(self):
        pass
"""


@pytest.mark.parametrize("misplace", ["other value", "other class", "one missing"])
def test_a_label_edit_that_does_not_land_as_intended_is_refused(monkeypatch, misplace):
    """The label transform reads the labels back from its own output (labels_of_test_classes) and
    refuses an output whose labels are not exactly the intended ones."""
    import transforms.label.hw_edit as hw_edit
    from transforms.label import HwLabel
    from transforms.label.transform import LabelCheckError

    real = hw_edit.add_labels
    a, b = (n.lineno for n in ast.parse(TWO_CLASSES_SRC).body[1:])

    def misplaced(text, tree, labels, **kw):
        wrong = {"other value": {a: "CPU", b: "GENERIC"}, "other class": {b: "GENERIC"}, "one missing": {a: "GENERIC"}}
        return real(text, tree, wrong[misplace], **kw)

    assert HwLabel().run(TWO_CLASSES_SRC, ast.parse(TWO_CLASSES_SRC)).text.count("HardwareClassification.GENERIC") == 2
    monkeypatch.setattr(hw_edit, "add_labels", misplaced)
    with pytest.raises(LabelCheckError, match="differ from the intended"):
        HwLabel().run(TWO_CLASSES_SRC, ast.parse(TWO_CLASSES_SRC))
