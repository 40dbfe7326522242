"""decouple A/B pack collection: a pack's files collected through their directories.

PYTEST_DONT_REWRITE (the warm interpreter's children import it before pytest starts)

This file is standalone (stdlib + pytest only), like the capture plugin beside it: the
runner copies it into the support directory as ``decouple_ab_pack.py`` and a pack's
process loads it with ``-p decouple_ab_pack``.

Why: pytest collects a file named on its command line by collecting the file's whole
directory again (files named several times are not deduplicated), so a session over N
files of one directory builds about N x N collectors: 300 files cost 5 s more than
``pytest DIR`` over the same files.  A pack therefore names the files' directories
instead, and this plugin keeps the walk to the pack's files, with what naming them would
have given:

- a file of the pack is collected, and a directory on the way to one is entered, whatever
  ``--ignore``, ``norecursedirs`` or a conftest's ``collect_ignore`` say (pytest never asks
  about a path named on its command line, nor about the directories above one);
- every other file and directory is left out (pytest builds no collector for it).

``DECOUPLE_AB_PACK`` is the path of a file that lists the pack's files (one a line,
relative to the invocation directory); the plugin takes it out of ``os.environ`` when pytest
imports it (before any conftest.py or test module), so a test does not see it.  The plugin
answers only while pytest collects: the capture plugin asks the same hook afterwards for what
``pytest DIR`` of a selected directory would have left out, and must hear the user's own hooks
then.

The runner names only files whose names pytest's default ``python_files`` patterns match
(``test_*.py``, ``*_test.py``); a file the configured patterns do not match is not
collected by the walk, and the runner then runs it on its own, named.
"""

from __future__ import annotations

import os
import pathlib

import pytest

_LISTED = os.environ.pop("DECOUPLE_AB_PACK", None)


class _PackWalk:
    def __init__(self, files: set, dirs: set):
        self.files = files
        self.dirs = dirs  # every directory above a file of the pack
        self.active = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path) -> bool | None:
        if not self.active:
            return None
        path = pathlib.Path(os.path.abspath(str(collection_path)))
        return not (path in self.files or path in self.dirs)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self):
        self.active = False


def pytest_configure(config):
    if not _LISTED:
        return
    base = pathlib.Path(os.path.abspath(str(config.invocation_params.dir)))
    with open(_LISTED, encoding="utf-8", errors="surrogateescape") as fh:
        files = {pathlib.Path(os.path.abspath(base / line.rstrip("\n"))) for line in fh if line.strip()}
    dirs = {parent for f in files for parent in f.parents}
    config.pluginmanager.register(_PackWalk(files, dirs), "decouple_ab_pack_walk")
