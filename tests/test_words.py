"""Counted nouns (`transforms/core/words.py`): the one rule every message counts with."""

from __future__ import annotations

from transforms.core.words import noun, plural


def test_one_is_singular_every_other_count_plural():
    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert plural(1, "branch", "branches") == "1 branch"
    assert plural(3, "branch", "branches") == "3 branches"
    assert plural(2, "test still fails", "tests still fail") == "2 tests still fail"


def test_the_word_alone():
    assert noun(1, "key") == "key"
    assert noun(2, "key") == "keys"
    assert noun(0, "it needs", "they need") == "they need"
