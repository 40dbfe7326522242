"""JSON from the user or another machine: read, or a message naming the input (never a traceback)."""

from __future__ import annotations

import json

import pytest

from codemod.ab.comparison.compare import read_map_file
from codemod.cli.transform_setup import SetupError, read_globals
from codemod.util.jsonfile import MAX_DEPTH, JSONInputError, loads, nests_deeper_than, read_option_json


def test_a_json_file_is_read(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text('{"schema_version": 1, "map": []}', encoding="utf-8")
    assert read_option_json(str(path), "--x") == {"schema_version": 1, "map": []}
    assert read_map_file(str(path)) == {}
    assert read_globals(str(path)) == {"schema_version": 1, "map": []}


@pytest.mark.parametrize("content, said", [
    (None, "cannot read --map-file {path}: No such file or directory"),
    (b"{not json", "--map-file {path} is not JSON: Expecting property name"),
    (b"\xff\xfe\x00{", "--map-file {path} is not UTF-8: 'utf-8' codec can't decode"),
    (b"[" * 200_000 + b"]" * 200_000, f"--map-file {{path}} nests deeper than {MAX_DEPTH} levels: not read"),
    (b'{"map": ' + b"9" * 5000 + b"}", "--map-file {path} is not JSON: Exceeds the limit (4300 digits)"),
], ids=["missing", "not-json", "not-utf8", "deep", "huge-number"])
def test_an_unreadable_file_is_a_message_naming_the_option(tmp_path, content, said):
    path = tmp_path / "map.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError) as err:
        read_map_file(str(path))
    assert str(err.value).startswith(said.format(path=path))
    with pytest.raises(SetupError) as err:
        read_globals(str(path))
    assert str(err.value).startswith(said.replace("--map-file", "--globals").format(path=path))


def _nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("kind", ["list", "object"])
def test_the_depth_limit_is_exact(kind):
    # MAX_DEPTH levels read; one more is refused, as is any depth the parser itself cannot reach
    assert not nests_deeper_than(loads(_nested(MAX_DEPTH, kind), "x"), MAX_DEPTH)
    for depth in (MAX_DEPTH + 1, 900, 5_000, 200_000):
        with pytest.raises(JSONInputError, match=f"^x nests deeper than {MAX_DEPTH} levels: not read$"):
            loads(_nested(depth, kind), "x")


def test_brackets_in_strings_are_no_nesting():
    text = json.dumps(["[" * 10_000, "{" * 10_000, '"]' * 5])
    assert loads(text, "x") == ["[" * 10_000, "{" * 10_000, '"]' * 5]
    assert loads(text.encode(), "x") == loads(text, "x")


def test_the_depth_is_measured_without_recursion():
    deep: list = []  # level 1
    for _ in range(99_999):  # built here, not parsed: deeper than any recursion could follow
        deep = [deep, 1]
    assert nests_deeper_than(deep, 99_999) is True and nests_deeper_than(deep, 100_000) is False
    shallow = [[1], {"a": {"b": []}}]  # four levels
    assert nests_deeper_than(shallow, 3) is True and nests_deeper_than(shallow, 4) is False


def test_scalars_and_a_wide_document_are_read():
    assert loads("7", "x") == 7 and loads('"s"', "x") == "s" and loads("null", "x") is None
    wide = [[i, {"k": [i]}] for i in range(50_000)]
    assert loads(json.dumps(wide), "x") == wide
