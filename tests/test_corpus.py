"""Robustness over a large real corpus: the CPython standard library's own test suite.

Every file is labelled in a scratch copy: nothing crashes, every output passed verification
(the engine never writes an unverified file), the only failures are inputs CPython itself
ships broken on purpose, and a second run changes nothing.
"""

import ast
import os
import shutil
import sysconfig

import pytest

from codemod.engine import process as engine
from transforms.label import HwLabel

STDLIB_TESTS = os.path.join(sysconfig.get_paths()["stdlib"], "test")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(STDLIB_TESTS), reason=f"no stdlib test suite at {STDLIB_TESTS} on this machine")
def test_stdlib_test_suite_round_trip(tmp_path):
    files = []
    for d, _, names in os.walk(STDLIB_TESTS):
        for n in names:
            if n.endswith(".py"):
                src = os.path.join(d, n)
                dst = tmp_path / os.path.relpath(src, STDLIB_TESTS)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                files.append(str(dst))
    assert len(files) > 500
    first = engine.run_files(files, [HwLabel()], "write", jobs=2)
    failed = [r for r in first if r.status == "failed"]
    assert not [r for r in failed if "internal error" in r.reason], [r.reason for r in failed][:5]
    # What may fail is input CPython keeps invalid on purpose (bad syntax / encodings).
    for r in failed:
        with open(os.path.join(STDLIB_TESTS, os.path.relpath(r.path, tmp_path)), "rb") as f:
            data = f.read()
        with pytest.raises((SyntaxError, ValueError, UnicodeDecodeError, LookupError)):
            ast.parse(data)
    changed = [r for r in first if r.status == "changed"]
    assert len(changed) > 300 and all(r.written for r in changed)
    for r in changed[:50]:
        ast.parse(open(r.path, "rb").read())
    second = engine.run_files(files, [HwLabel()], "check", jobs=2)
    assert [r.path for r in second if r.status == "changed"] == []
