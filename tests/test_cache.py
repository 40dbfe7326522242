"""The cache of per-file results: the store (codemod/engine/cache.py), the key and entries of the
codemod's results (codemod/engine/file_results.py), and what the commands do with them."""

import dataclasses
import hashlib
import inspect
import json
import os
import pickle
import sqlite3
import subprocess
import sys
from contextlib import closing
from dataclasses import dataclass

import pytest

from codemod.engine import cache as store
from codemod.engine import file_results
from codemod.engine import process as engine
from codemod.engine.cache import Cache
from codemod.engine.file_results import ResultKeys, canonical
from codemod.engine.result import Mode
from test_cli_ecosystem import GENERIC_SRC, MIXED_SRC, cli
from transforms.label import HwLabel
from transforms.restructure import Restructure, parse_selection

LABELLED_SRC = (
    "from torch.testing._internal.common_utils import HardwareClassification, TestCase\n\n\n"
    "class TestA(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n"
    "    def test_a(self):\n        pass\n"
)


def shape(value):
    """`value` spelled with the type of every part (StrEnum members equal their strings)."""
    if dataclasses.is_dataclass(value):
        return type(value), {f.name: shape(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return type(value), [shape(v) for v in value]
    if isinstance(value, dict):
        return type(value), [(shape(k), shape(v)) for k, v in value.items()]
    return type(value), value


def _database(folder):
    found = sorted(folder.rglob(store.DB_NAME))
    assert len(found) <= 1, found
    return found[0] if found else None


def store_rows(folder):
    """key -> (digest, payload) of every entry the store below `folder` holds."""
    db = _database(folder)
    if db is None:
        return {}
    with closing(sqlite3.connect(db)) as conn:
        return {k: (d, p) for k, d, p in conn.execute("SELECT key, digest, payload FROM entries")}


def rewrite_rows(folder, change):
    """Replace each row's (digest, payload) by change(n, key, digest, payload), behind the store's back."""
    with closing(sqlite3.connect(_database(folder))) as conn, conn:
        for n, (k, (d, p)) in enumerate(sorted(store_rows(folder).items())):
            conn.execute("UPDATE entries SET digest = ?, payload = ? WHERE key = ?", (*change(n, k, d, p), k))


def entries(folder):
    return sorted(store_rows(folder))


# --- the store -------------------------------------------------------------------------------------


def test_put_get_round_trip_and_a_miss(tmp_path):
    c = Cache(str(tmp_path))
    k = store.key("a", b"b")
    assert c.get(k) is None
    c.put(k, b"payload\nwith lines\n")
    assert c.get(k) == b"payload\nwith lines\n"  # collected, not written yet
    assert not tmp_path.joinpath(store.DB_NAME).exists() or not entries(tmp_path)
    c.flush()
    assert Cache(str(tmp_path)).get(k) == b"payload\nwith lines\n"  # written, for the next run
    assert store.key("a", b"b") == k and store.key("ab") != k and store.key("a", "b", "") != k
    assert sorted(p.name for p in tmp_path.iterdir()) == [store.DB_NAME, store.SECRET_NAME]  # no journal left


def test_corrupt_and_foreign_entries_are_ignored(tmp_path):
    c = Cache(str(tmp_path))
    k1, k2 = store.key("one"), store.key("two")
    c.put(k1, b"the first payload")
    c.put(k2, b"the second payload")
    c.flush()
    good = store_rows(tmp_path)[k1]

    def read(k):
        return Cache(str(tmp_path)).get(k)

    for damaged in (
        good[1].replace(b"first", b"frist"),  # a flipped byte in the payload
        good[1][:-3],  # truncated
        b"garbage",
    ):
        rewrite_rows(tmp_path, lambda n, k, d, p, damaged=damaged: (d, damaged) if k == k1 else (d, p))
        assert read(k1) is None and read(k2) == b"the second payload"
    rewrite_rows(tmp_path, lambda n, k, d, p: good if k == k2 else (d, p))  # another key's row, copied
    assert read(k2) is None
    rewrite_rows(tmp_path, lambda n, k, d, p: good if k == k1 else (d, p))
    assert read(k1) == b"the first payload"


def test_an_entry_rewritten_without_the_stores_secret_is_not_trusted(tmp_path):
    c = Cache(str(tmp_path))
    k = store.key("file", b"unlabelled source")
    c.put(k, b"needs a label")
    c.flush()
    assert Cache(str(tmp_path)).get(k) == b"needs a label"
    forged = b"already classified"
    # the digest a store without a secret would check: anyone can compute it
    plain = hashlib.sha256(k.encode() + b"\n" + forged).hexdigest()
    rewrite_rows(tmp_path, lambda n, key, d, p: (plain, forged))
    again = Cache(str(tmp_path))
    assert again.get(k) is None  # recomputed by the caller
    again.put(k, b"needs a label")
    again.flush()
    assert Cache(str(tmp_path)).get(k) == b"needs a label"


def test_the_secret_is_the_stores_own_file(tmp_path):
    c = Cache(str(tmp_path))
    k = store.key("x")
    c.put(k, b"payload")
    c.flush()
    secret = tmp_path / store.SECRET_NAME
    assert secret.stat().st_mode & 0o777 == 0o600 and len(secret.read_bytes()) == store.SECRET_BYTES
    secret.unlink()  # a new secret: every old entry is a miss, then written again
    assert Cache(str(tmp_path)).get(k) is None
    (tmp_path / "elsewhere").write_bytes(b"k" * store.SECRET_BYTES)
    secret.unlink()
    secret.symlink_to(tmp_path / "elsewhere")  # a link is not followed: the store is not used
    assert Cache(str(tmp_path)).get(k) is None
    assert (tmp_path / "elsewhere").read_bytes() == b"k" * store.SECRET_BYTES


def test_a_database_the_store_did_not_make_is_left_alone(tmp_path):
    db = tmp_path / store.DB_NAME
    with closing(sqlite3.connect(db)) as conn, conn:  # another program's database at that name
        conn.execute("CREATE TABLE entries (key TEXT, digest TEXT, size INTEGER, used REAL, payload BLOB)")
    before = db.read_bytes()
    c = Cache(str(tmp_path))
    c.put(store.key("k"), b"v")
    c.flush()
    assert Cache(str(tmp_path)).get(store.key("k")) is None and db.read_bytes() == before


def test_a_link_at_the_store_s_name_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / store.DB_NAME).symlink_to(target)
    c = Cache(str(tmp_path / "store"))
    c.put(store.key("k"), b"v")
    c.flush()
    assert Cache(str(tmp_path / "store")).get(store.key("k")) is None and target.read_bytes() == b""


def test_a_store_sqlite_cannot_read_is_made_again(tmp_path):
    (tmp_path / store.DB_NAME).write_bytes(b"not a database, " * 1000)
    c = Cache(str(tmp_path))
    assert c.get(store.key("k")) is None
    c.put(store.key("k"), b"v")
    c.flush()
    assert Cache(str(tmp_path)).get(store.key("k")) == b"v"


def test_a_store_another_run_holds_locked_is_a_miss_and_kept(tmp_path, monkeypatch):
    c = Cache(str(tmp_path))
    c.put(store.key("k"), b"v")
    c.flush()
    monkeypatch.setattr(store, "_LOCK_TIMEOUT_S", 0.2)
    with closing(sqlite3.connect(tmp_path / store.DB_NAME, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")  # another run, mid-write, past the timeout
        blocked = Cache(str(tmp_path))
        assert blocked.get(store.key("k")) is None
        blocked.put(store.key("j"), b"w")
        blocked.flush()  # dropped, not waited for past the timeout, nothing raised
        other.execute("ROLLBACK")
    assert Cache(str(tmp_path)).get(store.key("k")) == b"v"  # the store was not taken for a damaged one


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_store_of_another_user_is_ignored(tmp_path):
    c = Cache(str(tmp_path))
    k = store.key("x")
    c.put(k, b"value")
    c.flush()
    os.chown(tmp_path / store.DB_NAME, 12345, 12345)
    assert Cache(str(tmp_path)).get(k) is None


def test_a_record_naming_anything_but_the_tools_records_is_refused(tmp_path):
    c = Cache(str(tmp_path))
    k = store.key("evil")
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    c.put(k, pickle.dumps(Evil()))  # a well-formed entry whose payload would run a command
    assert c.get(k) is not None and c.get_value(k) is None and not marker.exists()
    c.put(k, pickle.dumps(dataclasses.replace))  # a function of an allowed kind of module
    assert c.get_value(k) is None
    c.put_value(k, {"a": [1, (2, 3)], "b": Mode.CHECK})
    assert c.get_value(k) == {"a": [1, (2, 3)], "b": Mode.CHECK}


def test_trim_keeps_the_store_bounded_and_the_recent_entries(tmp_path, monkeypatch):
    c = Cache(str(tmp_path), max_bytes=20_000)
    keys = [store.key(str(i)) for i in range(40)]
    for i, k in enumerate(keys):
        monkeypatch.setattr(store.time, "time", lambda i=i: 1_000_000.0 + i)  # written in order, oldest first
        c.put(k, b"x" * 1000)
        c.flush()
    kept = [k for k in keys if Cache(str(tmp_path)).get(k) is not None]
    assert sum(len(p) for _, p in store_rows(tmp_path).values()) <= 20_000
    assert kept == keys[-len(kept) :] and len(kept) >= 15  # the least recently used went first


def test_a_hit_refreshes_the_time_of_an_old_entry(tmp_path, monkeypatch):
    c = Cache(str(tmp_path), max_bytes=2_900)
    old, new = store.key("old"), store.key("new")
    monkeypatch.setattr(store.time, "time", lambda: 1_000_000.0)
    c.put(old, b"o" * 1000)
    c.put(new, b"n" * 1000)
    c.flush()
    monkeypatch.setattr(store.time, "time", lambda: 1_000_000.0 + 2 * 3600)
    reader = Cache(str(tmp_path), max_bytes=2_900)
    assert reader.get(old) is not None  # used again: now the most recent
    reader.put(store.key("third"), b"t" * 1000)  # over the bound: the least recently used one goes
    reader.flush()
    assert sorted(store_rows(tmp_path)) == sorted([old, store.key("third")])


def test_concurrent_writers_of_one_key_leave_one_whole_entry(tmp_path):
    script = (
        "import sys\nfrom codemod.engine.cache import Cache\nc = Cache(sys.argv[1])\n"
        "for i in range(200):\n    c.put('ab' + '0' * 62, sys.argv[2].encode() * 5000)\n    c.flush()\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), w]) for w in "pq"]
    assert [p.wait() for p in procs] == [0, 0]
    assert Cache(str(tmp_path)).get("ab" + "0" * 62) in (b"p" * 5000, b"q" * 5000)
    assert entries(tmp_path) == ["ab" + "0" * 62]
    assert sorted(p.name for p in tmp_path.iterdir()) == [store.DB_NAME, store.SECRET_NAME]


def test_open_is_none_where_the_cache_folder_cannot_be_made(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DECOUPLE_CACHE_DIR", str(blocker / "cache"))
    assert Cache.open() is None
    f = tmp_path / "test_a.py"
    f.write_text(GENERIC_SRC)
    code, out, err = cli("apply", "--check", str(f), "--linter", "off")  # runs without a cache
    assert code == 1 and "1 would change" in err


def test_the_folder_follows_decouple_cache_dir_then_xdg(tmp_path, monkeypatch):
    from codemod.util.cache_dir import user_cache_dir

    monkeypatch.delenv("DECOUPLE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "decouple"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "decouple"
    monkeypatch.setenv("DECOUPLE_CACHE_DIR", str(tmp_path / "mine"))
    assert user_cache_dir() == tmp_path / "mine"
    assert Cache.open().folder == str(tmp_path / "mine" / "results" / "v2")


# --- the key -----------------------------------------------------------------------------------------


def _options_key(transforms, mode=Mode.CHECK, staged=False):
    return ResultKeys.of(transforms, mode, staged).options


def test_every_option_of_every_transform_is_in_the_key():
    from transforms.torch_load import TorchLoad

    variants = [
        [HwLabel()],
        [HwLabel(classification="CPU")],
        [HwLabel(per_class=(("TestA", "CPU"),))],
        [HwLabel(force=True)],
        [Restructure(), HwLabel()],
        [Restructure(parse_selection("split-class")), HwLabel()],
        [HwLabel(), TorchLoad("weights-only-false", None, (2, 14))],
        [HwLabel(), TorchLoad("weights-only-false", None, (2, 14), explain=True)],
        [HwLabel(), TorchLoad("weights-only-false", None, (2, 13))],
        [HwLabel(), TorchLoad("auto", {"schema_version": 1, "globals": []}, (2, 14))],
        [HwLabel(), TorchLoad("auto", {"schema_version": 1, "globals": [{"name": "a.B"}]}, (2, 14))],
    ]
    keys = [_options_key(v) for v in variants]
    assert len(set(keys)) == len(keys)
    assert _options_key([HwLabel(classification="CPU")]) == keys[1]  # and only the options
    assert len({_options_key([HwLabel()], m) for m in (Mode.CLASSIFY, Mode.CHECK, Mode.DIFF, Mode.LINT)}) == 4
    assert _options_key([HwLabel()], Mode.WRITE) == _options_key([HwLabel()], Mode.CHECK)
    assert _options_key([HwLabel()], staged=True) != _options_key([HwLabel()])


def test_a_new_option_is_in_the_key_without_anyone_listing_it():
    @dataclass(frozen=True)
    class HwLabelWithGeneration(HwLabel):
        generation: int = 1

    assert _options_key([HwLabelWithGeneration(generation=1)]) != _options_key([HwLabelWithGeneration(generation=2)])
    assert _options_key([HwLabelWithGeneration()]) != _options_key([HwLabel()])

    class PlainTransform:  # not a dataclass: its attributes all the same
        name = "plain"

        def __init__(self, level):
            self.level = level

    assert _options_key([PlainTransform(1)]) != _options_key([PlainTransform(2)])


def test_a_value_the_key_cannot_spell_fails_loudly():
    with pytest.raises(TypeError, match="cannot key"):
        canonical(lambda text: text)
    with pytest.raises(TypeError, match="cannot key"):
        canonical({"hook": print})
    assert canonical({3, 1, 2}) == canonical({2, 3, 1})  # sets in a stable order


def test_the_key_covers_every_argument_of_process_file():
    # A new argument of process_file changes what a file's result depends on: give it to
    # ResultKeys (and extend this list) so that the cache cannot serve a result made without it.
    # (on_output is told of the outputs; it changes nothing of the result)
    assert list(inspect.signature(engine.process_file).parameters) == [
        "path", "transforms", "mode", "display", "src", "staged", "on_output",
    ]
    from transforms.torch_load import TorchLoad

    raw, other = (file_results.RawSource(data=data, mtime_ns=0, size=1) for data in (b"x", b"y"))

    def distinct_keys(keys):
        return len({keys.key("a.py", "a.py", raw), keys.key("b.py", "a.py", raw), keys.key("a.py", "b.py", raw),
                    keys.key("a.py", "a.py", other)})

    # torch_load matches discovered call sites by path: the path and the name are in its keys
    assert distinct_keys(ResultKeys.of([HwLabel(), TorchLoad("auto", None, (2, 14))], Mode.CHECK, False)) == 4
    # the label and restructure transforms never read the path: only the bytes (and the name a diff shows)
    assert distinct_keys(ResultKeys.of([Restructure(), HwLabel()], Mode.CHECK, False)) == 2
    assert distinct_keys(ResultKeys.of([HwLabel()], Mode.DIFF, False)) == 3

    class Unknown:  # a transform that does not say whether it reads the path: assumed to
        name = "unknown"

    assert distinct_keys(ResultKeys.of([Unknown()], Mode.CHECK, False)) == 4


def test_every_transform_says_whether_it_reads_the_path():
    from transforms.torch_load import TorchLoad

    from transforms.torch_load.analysis.triage import TorchLoadCensus

    transforms = (HwLabel(), Restructure(), TorchLoadCensus(), TorchLoad("auto", None, (2, 14)))
    assert [t.reads_path for t in transforms] == [False, False, False, True]


def test_the_tool_itself_is_in_the_key(monkeypatch):
    before = file_results.tool_fingerprint()
    file_results.tool_fingerprint.cache_clear()
    real = file_results._read
    edited = os.path.join("transforms", "core", "base.py")
    monkeypatch.setattr(file_results, "_read", lambda path: real(path) + (b"#" if path.endswith(edited) else b""))
    try:
        assert file_results.tool_fingerprint() != before
    finally:
        file_results.tool_fingerprint.cache_clear()
        monkeypatch.undo()
    assert file_results.tool_fingerprint() == before


# --- the engine through the cache --------------------------------------------------------------------


def _tree(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return [str(tmp_path / name) for name in sorted(files)]


CORPUS = {
    "test_generic.py": GENERIC_SRC,
    "test_labelled.py": LABELLED_SRC,
    "test_mixed.py": MIXED_SRC,
    "test_crlf.py": GENERIC_SRC.replace("\n", "\r\n"),
    "test_latin1.py": "# -*- coding: latin-1 -*-\n# caf\xe9\n" + GENERIC_SRC,
    "test_nothing.py": "x = 1\n",
    "test_bad.py": "class TestX(TestCase):\n    def test_x(self:\n",
}


@pytest.mark.parametrize("mode", [Mode.CLASSIFY, Mode.CHECK, Mode.DIFF, Mode.LINT])
@pytest.mark.parametrize("staged", [False, True])
def test_a_cached_result_is_the_result(tmp_path, mode, staged, monkeypatch):
    paths = _tree(tmp_path, CORPUS)
    c = Cache(str(tmp_path / "cache"))
    fresh = engine.run_files(paths, [HwLabel()], mode, jobs=1, staged=staged)
    first = engine.run_files(paths, [HwLabel()], mode, jobs=1, staged=staged, cache=c)
    processed = []
    real = engine.process_file
    monkeypatch.setattr(engine, "process_file", lambda path, *a, **k: processed.append(path) or real(path, *a, **k))
    again = engine.run_files(paths, [HwLabel()], mode, jobs=1, staged=staged, cache=c)
    assert fresh == first == again
    assert shape(again) == shape(fresh)  # the same types, not only equal values
    assert processed == [str(tmp_path / "test_bad.py")]  # a failure is never taken from the cache


def test_a_file_the_cache_does_not_hold_is_looked_up_once(tmp_path, monkeypatch):
    paths = _tree(tmp_path, CORPUS)
    c = Cache(str(tmp_path / "cache"))
    asked = []
    real = c.get_value
    monkeypatch.setattr(c, "get_value", lambda key: asked.append(key) or real(key))
    engine.run_files(paths, [HwLabel()], Mode.CHECK, jobs=1, cache=c)
    assert len(asked) == len(set(asked)) == len(paths)


def test_parallel_runs_fill_and_use_the_cache(tmp_path, monkeypatch):
    paths = _tree(tmp_path, {f"test_{i}.py": GENERIC_SRC.replace("TestA", f"Test{i}") for i in range(12)})
    c = Cache(str(tmp_path / "cache"))
    first = engine.run_files(paths, [HwLabel()], Mode.CHECK, jobs=2, cache=c)
    assert len(entries(tmp_path / "cache")) == 12
    monkeypatch.setattr(engine.multiprocessing, "get_context", None)  # no pool is started for hits
    assert engine.run_files(paths, [HwLabel()], Mode.CHECK, jobs=2, cache=c) == first


def test_apply_verifies_and_writes_a_file_the_cache_says_would_change(tmp_path, monkeypatch):
    [path] = _tree(tmp_path, {"test_a.py": GENERIC_SRC})
    c = Cache(str(tmp_path / "cache"))
    [checked] = engine.run_files([path], [HwLabel()], Mode.CHECK, cache=c)
    assert checked.status == "changed" and entries(tmp_path / "cache")

    def refuse(*args, **kwargs):
        raise engine.VerificationError("refused by the test")

    monkeypatch.setattr(engine, "verify", refuse)
    [written] = engine.run_files([path], [HwLabel()], Mode.WRITE, cache=c)
    assert written.status == "failed" and "refused by the test" in written.reason and not written.written
    assert (tmp_path / "test_a.py").read_text() == GENERIC_SRC
    monkeypatch.undo()
    [written] = engine.run_files([path], [HwLabel()], Mode.WRITE, cache=c)
    assert written.status == "changed" and written.written
    [again] = engine.run_files([path], [HwLabel()], Mode.WRITE, cache=c)
    assert again.status == "already" and not again.written


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("staged", [False, True])
def test_a_check_after_apply_takes_every_file_apply_wrote_from_the_cache(tmp_path, monkeypatch, jobs, staged):
    """apply keeps what a check of each file it writes gives (its verification ran the transforms
    on the output once more), also when the linter gate stages the outputs and writes them after
    judging them (`staged`): the check and the lint that follow parse none of those files, and say
    exactly what they say without the cache (a CRLF file, a Latin-1 one, a labelled one, a failure)."""
    paths = _tree(tmp_path, CORPUS)
    c = Cache(str(tmp_path / "cache"))
    written = engine.run_files(paths, [HwLabel()], Mode.WRITE, jobs=jobs, staged=staged, cache=c)
    for r in written if staged else ():
        engine.write_staged(r)  # what the gate does with the outputs it accepts
    assert sorted(os.path.basename(r.path) for r in written if r.written) == ["test_crlf.py", "test_generic.py",
                                                                              "test_latin1.py"]
    processed = []
    real = engine.process_file
    monkeypatch.setattr(engine, "process_file", lambda path, *a, **k: processed.append(path) or real(path, *a, **k))
    after = {Mode.CHECK: engine.run_files(paths, [HwLabel()], Mode.CHECK, jobs=1, staged=staged, cache=c)}
    assert processed == [str(tmp_path / "test_bad.py")]  # a failure is never taken from the cache
    after[Mode.LINT] = engine.run_files(paths, [HwLabel()], Mode.LINT, jobs=1, staged=staged, cache=c)
    wrote = {r.path for r in written if r.written}
    assert not wrote & set(processed)  # (lint parses the others once: apply kept them for the check only)
    monkeypatch.undo()
    for mode, results in after.items():
        fresh = engine.run_files(paths, [HwLabel()], mode, jobs=1, staged=staged)
        assert results == fresh and shape(results) == shape(fresh)
        assert {r.status for r in fresh if r.path in wrote} == {"already"}


@pytest.mark.parametrize("mode", [Mode.CLASSIFY, Mode.CHECK, Mode.DIFF, Mode.LINT])
def test_the_same_bytes_elsewhere_are_taken_from_the_cache_under_their_own_path(tmp_path, mode, monkeypatch):
    """A fresh clone, the temporary work tree `refactor` labels a branch in, a renamed file: the
    label transform never reads the path, so the result of the same bytes is reused, given the
    file's own path (and its findings too); a diff, which shows the name, is keyed by it."""
    first_tree, clone = tmp_path / "checkout", tmp_path / "clone"
    first_tree.mkdir()
    clone.mkdir()
    paths = _tree(first_tree, CORPUS)
    copies = _tree(clone, {f"renamed_{name}": text for name, text in CORPUS.items()})
    c = Cache(str(tmp_path / "cache"))
    engine.run_files(paths, [HwLabel()], mode, jobs=1, cache=c)
    processed = []
    real = engine.process_file
    monkeypatch.setattr(engine, "process_file", lambda path, *a, **k: processed.append(path) or real(path, *a, **k))
    again = engine.run_files(copies, [HwLabel()], mode, jobs=1, cache=c)
    monkeypatch.undo()
    fresh = engine.run_files(copies, [HwLabel()], mode, jobs=1)
    assert again == fresh and shape(again) == shape(fresh)
    assert {f.path for r in again for f in r.findings} <= set(copies) and {r.path for r in again} == set(copies)
    if mode == Mode.DIFF:  # each file's result holds its name (the diff headers, the display): keyed by it
        assert sorted(processed) == sorted(copies)
    else:
        assert processed == [str(clone / "renamed_test_bad.py")]  # a failure is never taken from the cache


def test_a_file_edited_between_runs_is_processed_again(tmp_path):
    [path] = _tree(tmp_path, {"test_a.py": GENERIC_SRC})
    c = Cache(str(tmp_path / "cache"))
    [first] = engine.run_files([path], [HwLabel()], Mode.CLASSIFY, cache=c)
    (tmp_path / "test_a.py").write_text(LABELLED_SRC)
    [second] = engine.run_files([path], [HwLabel()], Mode.CLASSIFY, cache=c)
    assert first.findings[0].rule == "hw/label" and second.findings[0].rule == "hw/already"


# --- the commands ----------------------------------------------------------------------------------


def _cli_tree(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir(parents=True)
    _tree(tree, CORPUS)
    return tree


@pytest.mark.parametrize("args", [
    ["apply", "--check"],
    ["apply", "--diff"],
    ["apply", "--check", "--format", "json"],
    ["classify", "--format", "json"],
    ["lint"],
    ["lint", "--format", "sarif"],
])
def test_commands_print_the_same_from_the_cache(tmp_path, result_cache, args):
    tree = _cli_tree(tmp_path)
    uncached = cli(*args, ".", "--linter", "off", "--no-cache", cwd=tree)
    assert not (result_cache / "results").exists()  # --no-cache keeps nothing
    first = cli(*args, ".", "--linter", "off", cwd=tree)
    stored = entries(result_cache / "results")
    assert len(stored) == len(CORPUS) - 1  # every file but the failed one
    assert cli(*args, ".", "--linter", "off", cwd=tree) == first == uncached
    assert entries(result_cache / "results") == stored


def test_the_cache_is_shared_by_concurrent_commands(tmp_path, result_cache):
    tree = _cli_tree(tmp_path)
    argv = [sys.executable, "-m", "codemod", "lint", ".", "--linter", "off", "-j", "2"]
    procs = [subprocess.Popen(argv, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outputs = {p.communicate()[0] for p in procs}
    assert len(outputs) == 1 and [p.returncode for p in procs] == [0] * 4
    assert len(entries(result_cache / "results")) == len(CORPUS) - 1
    assert sorted(p.name for p in (result_cache / "results" / "v2").iterdir()) == [store.DB_NAME, store.SECRET_NAME]


def test_a_corrupt_cache_changes_no_output(tmp_path, result_cache):
    tree = _cli_tree(tmp_path)
    first = cli("apply", "--diff", ".", "--linter", "off", cwd=tree)
    rewrite_rows(result_cache / "results", lambda n, k, d, p: (d, p[:-20] + hashlib.sha256(p).digest()[:20]))
    assert cli("apply", "--diff", ".", "--linter", "off", cwd=tree) == first
    (result_cache / "results" / "v2" / store.DB_NAME).write_bytes(b"\0" * 4096)  # not a database at all
    assert cli("apply", "--diff", ".", "--linter", "off", cwd=tree) == first
    assert len(entries(result_cache / "results")) == len(CORPUS) - 1  # made again


def test_entries_rewritten_by_hand_change_no_output(tmp_path, result_cache):
    tree = _cli_tree(tmp_path)
    first = cli("apply", "--check", ".", "--linter", "off", cwd=tree)
    rows = store_rows(result_cache / "results")
    payloads = [p for _, (_, p) in sorted(rows.items())]
    # each key given another file's result, with the digest anyone can compute for it
    forged = {k: payloads[(n + 1) % len(payloads)] for n, k in enumerate(sorted(rows))}
    rewrite_rows(
        result_cache / "results",
        lambda n, k, d, p: (hashlib.sha256(k.encode() + b"\n" + forged[k]).hexdigest(), forged[k]),
    )
    assert cli("apply", "--check", ".", "--linter", "off", cwd=tree) == first


def test_apply_writes_the_same_with_a_warm_cache(tmp_path):
    warm, cold = _cli_tree(tmp_path / "warm"), _cli_tree(tmp_path / "cold")
    cli("apply", "--check", ".", "--linter", "off", cwd=warm)  # fills the cache
    assert cli("apply", ".", "--linter", "off", cwd=warm) == cli("apply", ".", "--linter", "off", "--no-cache",
                                                                  cwd=cold)
    assert {p.name: p.read_bytes() for p in warm.iterdir()} == {p.name: p.read_bytes() for p in cold.iterdir()}
    assert "HardwareClassification.GENERIC" in (warm / "test_generic.py").read_text()


def test_stdin_results_are_cached_too(tmp_path, result_cache):
    runs = [cli("lint", "-", "--stdin-filename", "test/test_x.py", stdin=GENERIC_SRC.encode()) for _ in range(2)]
    assert runs[0] == runs[1] and '"name": "autofix"' in runs[0][1]
    assert len(entries(result_cache / "results")) == 1
    message = json.loads(runs[1][1].splitlines()[0])
    assert "hw_classification = HardwareClassification.GENERIC" in message["replacement"]
