"""LibCST's check of an output reads the statements the edit touched (codemod/engine/libcst_reading.py).

What is parsed for each kind of edit; that the answer agrees with parsing the whole files, on
the project's fixtures, generated files and CPython's test suite; and that an edit LibCST cannot
read is refused, where the input was readable, while an input LibCST never read gets the note.
"""

import ast
import glob
import os
import shutil
import sysconfig

import libcst
import pytest

from codemod.engine import process as engine
from codemod.engine.libcst_reading import touched_snippets
from codemod.util.files import read_source
from transforms.label import HwLabel

LABEL = "    hw_classification = HardwareClassification.GENERIC\n"
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
STDLIB_TESTS = os.path.join(sysconfig.get_paths()["stdlib"], "test")


def snippets(old: str, new: str) -> list[str]:
    return touched_snippets(old, new, ast.parse(new))


def test_a_label_in_a_class_body_is_parsed_alone_in_its_indentation():
    old = "import x\n\n\nclass TestA(TestCase):\n    '''Doc.'''\n\n    def test_a(self):\n        pass\n"
    new = old.replace("'''Doc.'''\n", "'''Doc.'''\n" + LABEL)
    assert snippets(old, new) == ["if True:\n" + LABEL]


def test_a_name_added_to_a_parenthesised_import_parses_the_whole_import():
    old = "from a import (\n    b,\n    c,\n)\nx = 1\n"
    new = old.replace("    c,\n", "    c,\n    d,\n")
    assert snippets(old, new) == ["from a import (\n    b,\n    c,\n    d,\n)\n"]


def test_statements_sharing_a_line_or_a_continuation_are_parsed_together():
    old = "x = 1; y = 2\nz = 1 + \\\n    2\n"
    assert snippets(old, old.replace("y = 2", "y = 3")) == ["x = 1; y = 3\n"]
    assert snippets(old, old.replace("z = 1", "z = 5")) == ["z = 5 + \\\n    2\n"]


def test_a_decorated_method_starts_at_its_decorator():
    old = "class A:\n    @dec\n    def f(self):\n        return 1\n"
    assert snippets(old, old.replace("return 1", "return 2")) == ["if True:\n        return 2\n"]
    assert snippets(old, old.replace("def f", "def g")) == ["if True:\n    @dec\n    def g(self):\n        return 1\n"]


def test_a_one_line_suite_and_an_elif_are_parsed_with_their_header():
    old = "if a: b = 1\nx = 2\n"
    assert snippets(old, old.replace("b = 1", "b = 3")) == ["if a: b = 3\n"]
    old = "if a:\n    pass\nelif b:\n    c = 1\nelse:\n    d = 1\n"
    # The body of the elif is a block of its own; the elif line itself belongs to the whole `if`.
    assert snippets(old, old.replace("c = 1", "c = 2")) == ["if True:\n    c = 2\n"]
    assert snippets(old, old.replace("elif b", "elif e")) == [old.replace("elif b", "elif e")]
    old = "if a: \\\n    b = 1\n"  # a suite on the header's logical line, though on a line of its own
    assert snippets(old, old.replace("b = 1", "b = 3")) == [old.replace("b = 1", "b = 3")]


def test_comments_and_deletions_take_the_statements_around_them():
    old = "class A:\n    def f(self):\n        pass\n\n    def g(self):\n        pass\n"
    new = old.replace("\n    def g", "\n    # note\n    def g")
    assert snippets(old, new) == ["if True:\n    def f(self):\n        pass\n\n    # note\n    def g(self):\n        pass\n"]
    old = "a = 1\nb = 2\nc = 3\n"
    assert snippets(old, "a = 1\nc = 3\n") == ["a = 1\nc = 3\n"]


def test_edits_far_apart_give_a_snippet_each_in_file_order():
    old = "import os\n\nclass A:\n    def test_a(self):\n        pass\n\nclass B:\n    def test_b(self):\n        pass\n"
    new = old.replace("import os\n", "import os\nfrom t import HardwareClassification\n")
    new = new.replace("class A:\n", "class A:\n" + LABEL).replace("class B:\n", "class B:\n" + LABEL)
    assert snippets(old, new) == ["from t import HardwareClassification\n", "if True:\n" + LABEL, "if True:\n" + LABEL]


# --------------------------------------------------------------------------- agreement with whole files


def libcst_reads(text: str) -> bool:
    try:
        libcst.parse_module(text)
    except libcst.ParserSyntaxError:
        return False
    return True


def assert_agrees(pairs: list[tuple[str, str, str]]) -> int:
    """For each (name, input, output) LibCST reads the input of: every touched statement parses
    alone, and the whole output parses. Returns how many pairs were checked."""
    checked = 0
    for name, old, new in pairs:
        if old == new or not libcst_reads(old):
            continue
        parts = snippets(old, new)
        assert all(libcst_reads(p) for p in parts), name
        assert libcst_reads(new), name
        checked += 1
    return checked


def fixture_pairs() -> list[tuple[str, str, str]]:
    pairs = []
    for inp in sorted(glob.glob(os.path.join(FIXTURES, "**", "*.in.py"), recursive=True)):
        out = inp[: -len(".in.py")] + ".out.py"
        if os.path.exists(out):
            pairs.append((inp, read_source(inp).text, read_source(out).text))
    return pairs


def labelled_pairs(sources: list[str], tmp_path) -> list[tuple[str, str, str]]:
    """Label copies of `sources` with the engine; (name, input, output) of each file it wrote."""
    copies = []
    for i, src in enumerate(sources):
        dst = tmp_path / f"test_{i}_{os.path.basename(src)}"
        shutil.copyfile(src, dst)
        copies.append((src, str(dst)))
    results = engine.run_files([c for _, c in copies], [HwLabel()], "write", jobs=1)
    written = {r.path for r in results if r.written}
    pairs = []
    for src, dst in copies:
        if dst in written:
            pairs.append((src, read_source(src).text, read_source(dst).text))
    return pairs


def test_the_touched_statements_agree_with_the_whole_files_on_every_fixture():
    assert assert_agrees(fixture_pairs()) > 50


def test_the_touched_statements_agree_with_the_whole_files_on_generated_files(tmp_path):
    import subprocess
    import sys

    corpus = tmp_path / "corpus"
    script = os.path.join(os.path.dirname(FIXTURES), "..", "scripts", "make_corpus.py")
    subprocess.run([sys.executable, script, str(corpus), "--files", "40", "--seed", "3"], check=True, capture_output=True)
    sources = sorted(glob.glob(str(corpus / "**" / "*.py"), recursive=True))
    labelled = tmp_path / "labelled"
    labelled.mkdir()
    pairs = labelled_pairs(sources, labelled)
    assert assert_agrees(pairs) == len(pairs) > 20
    # What LibCST parses is a small part of each output: the point of the check.
    touched = sum(len(p) for _, old, new in pairs for p in snippets(old, new))
    assert touched < 0.2 * sum(len(new) for _, _, new in pairs)


@pytest.mark.skipif(not os.path.isdir(STDLIB_TESTS), reason=f"no stdlib test suite at {STDLIB_TESTS} on this machine")
def test_the_touched_statements_agree_with_the_whole_files_on_cpython_tests(tmp_path):
    sources = sorted(glob.glob(os.path.join(STDLIB_TESTS, "test_*.py")))[::12]
    pairs = labelled_pairs(sources, tmp_path)
    assert assert_agrees(pairs) > 25


# --------------------------------------------------------------------------- the engine's verdicts


class MarkClasses:
    """Adds `(marked): int = 0` at the top of each class: `ast` reads it, LibCST does not."""

    name = "mark-classes"
    reads_path = False

    def triage(self, text):
        return "class " in text

    def run(self, text, tree, path=None):
        from transforms.core.base import TransformResult

        lines = text.splitlines(keepends=True)
        for node in sorted((n for n in tree.body if isinstance(n, ast.ClassDef)), key=lambda n: -n.body[0].lineno):
            if not (isinstance(node.body[0], ast.AnnAssign) and not node.body[0].simple):
                lines.insert(node.body[0].lineno - 1, "    (marked): int = 0\n")
        return TransformResult(text="".join(lines))

    def strip(self, tree):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                node.body = [s for s in node.body if not (isinstance(s, ast.AnnAssign) and not s.simple)]
        return tree


def test_an_edit_libcst_cannot_read_is_refused_and_nothing_is_written(tmp_path):
    src = "class A:\n    def test_a(self):\n        pass\n"
    f = tmp_path / "test_a.py"
    f.write_text(src)
    [r] = engine.run_files([str(f)], [MarkClasses()], "write", jobs=1)
    assert r.status == "failed" and "output does not parse with LibCST" in r.reason
    assert f.read_text() == src


def test_an_input_libcst_cannot_read_is_written_with_the_note(tmp_path):
    src = "class A:\n    (pars): bool = True\n\n    def test_a(self):\n        pass\n\nclass B:\n    x = 1\n"
    f = tmp_path / "test_a.py"
    f.write_text(src)
    [r] = engine.run_files([str(f)], [MarkClasses()], "write", jobs=1)
    assert r.written and [x.rule for x in r.findings] == ["engine/libcst-unparsable"]
    assert f.read_text() == src.replace("class B:\n", "class B:\n    (marked): int = 0\n")


def test_a_label_is_checked_without_parsing_the_whole_file(tmp_path, monkeypatch):
    # An untouched statement LibCST cannot read stays out of the check (it is the input's); the
    # label and the import it added are parsed alone, and nothing says the file was not checked.
    src = (
        "from torch.testing._internal.common_utils import TestCase, run_tests\n\n"
        "ANNOTATED = 1\n(pars): bool = True\n\n\nclass TestA(TestCase):\n    def test_a(self):\n        pass\n"
    )
    f = tmp_path / "test_a.py"
    f.write_text(src)
    parsed = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda text: parsed.append(text) or real(text))
    [r] = engine.run_files([str(f)], [HwLabel()], "write", jobs=1)
    out = f.read_text()
    assert r.written and "hw_classification = HardwareClassification.GENERIC" in out
    assert not [x for x in r.findings if x.rule == "engine/libcst-unparsable"]
    assert out not in parsed and src not in parsed
    assert [p for p in parsed if "hw_classification" in p] == ["if True:\n" + LABEL + "\n"]  # (with its blank line)
