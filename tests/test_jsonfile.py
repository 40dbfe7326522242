"""JSON files named by an option (--map-file, --globals): read, or a message naming the option."""

from __future__ import annotations

import pytest

from codemod.ab.comparison.compare import read_map_file
from codemod.cli.transform_setup import SetupError, read_globals
from codemod.util.jsonfile import read_option_json


def test_a_json_file_is_read(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text('{"schema_version": 1, "map": []}', encoding="utf-8")
    assert read_option_json(str(path), "--x") == {"schema_version": 1, "map": []}
    assert read_map_file(str(path)) == {}
    assert read_globals(str(path)) == {"schema_version": 1, "map": []}


@pytest.mark.parametrize("content, said", [
    (None, "cannot read --map-file {path}: No such file or directory"),
    (b"{not json", "--map-file {path} is not JSON: Expecting property name"),
    (b"\xff\xfe\x00{", "--map-file {path} is not JSON: 'utf-8' codec can't decode"),
], ids=["missing", "not-json", "not-utf8"])
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
