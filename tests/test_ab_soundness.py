"""The A/B runner's soundness corpus: B-mutations that hide a failure or lose coverage.

A verifier fails closed (issue 37): whatever B does to leave a test out of the run or to hide
its failure, `decouple ab` must never say SAFE. Each row below is one such shape: the files of
arm A, the files B changes, and the extra arguments it needs. Every row runs through the real
runner, by its command line, in three modes (a forked process per file, a fresh interpreter per
file, packed sessions) and must come out REGRESSION or INCONCLUSIVE, in its exit code and in its
`--json` verdict. Each row is also grounded: plain pytest on A and on B must show B broken or not
run (or, for the device rows, show nothing at all on this CPU machine). The controls are changes
that must stay SAFE.

**A new way for a test to leave the run is a new row.** Rows the runner still calls SAFE are
marked `xfail(strict=True)` with the issue item; the fix turns them green and the strict marker
then fails until it is removed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import pytest

TIMEOUT = 600  # seconds for one runner or pytest process: generous, never a speed assertion
TORCH_PYTHON = os.environ.get("DECOUPLE_TORCH_PYTHON")
MODES: dict[str, tuple[str, ...]] = {
    "fork": ("--fork", "--no-pack"),  # a process forked from the warm interpreter per file
    "nofork": ("--no-fork", "--no-pack"),  # a fresh interpreter per file
    "pack": ("--pack",),  # the files of an arm in shared pytest sessions
}
ALL = "*"  # an xfail reason that holds in every mode
# the holes of the second review (branch corpus2), each named by what the fix needs
NOT_ONE_SESSION = (
    "each file runs in a session (or a process) of its own: what only `pytest PATHS` as one session shows "
    "(a collection error of the whole walk, state one file leaves for the next) is never seen"
)


class Plain(Enum):
    """What plain pytest shows for B next to A on this machine."""

    BROKEN = "B fails, or runs fewer passing tests than A"
    SAME = "the same counts and exit status (the loss is on devices this machine lacks)"
    HEALTHY = "B exits 0 and passes at least what A passes"


@dataclass(frozen=True, kw_only=True)
class Row:
    name: str
    description: str
    a: Mapping[str, str]  # arm A's files (relative path -> text)
    b: Mapping[str, str | None]  # what B changes: a new text, or None for a deleted file
    paths: tuple[str, ...] = ("tests",)
    args: tuple[str, ...] = ()
    git: bool = False  # arm A = `--base HEAD` of a git repository, B = its work tree
    torch: bool = False
    plain: Plain = Plain.BROKEN
    xfail: Mapping[str, str] = field(default_factory=dict)  # mode (or ALL) -> the reason
    says: str = ""  # a phrase the runner's terminal summary must print

    def b_files(self) -> dict[str, str]:
        files = dict(self.a)
        for path, text in self.b.items():
            if text is None:
                files.pop(path)
            else:
                files[path] = text
        return files


def py(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def ini(addopts: str, extra: str = "") -> dict[str, str]:
    return {"pytest.ini": f"[pytest]\naddopts = {addopts}\n{extra}"}


# ---------------------------------------------------------------------------
# arm A's files

X = "tests/test_x.py"
U = "tests/test_u.py"
CONF = "tests/conftest.py"
PLAIN = {
    X: py("""
        def test_one():
            assert 1 + 1 == 2


        def test_two():
            assert 2 + 2 == 4
        """)
}
UNIT = {
    U: py("""
        import unittest


        class TestU(unittest.TestCase):
            def test_one(self):
                self.assertEqual(1 + 1, 2)

            def test_two(self):
                self.assertEqual(2 + 2, 4)
        """)
}
# test_one fails in both arms (pre-existing), test_two passes in A: what `-x` stops at
FIRST_FAILS = {
    X: py("""
        def test_one():
            assert 1 + 1 == 3


        def test_two():
            assert 2 + 2 == 4
        """)
}


def plain_b(body_two: str, *, head: str = "", deco: str = "") -> dict[str, str]:
    """B's test_x.py: test_one as in A, test_two broken (`2 + 2 == 5`) behind `body_two`."""
    body = textwrap.indent(py(body_two), "    ") if body_two else ""
    one = "def test_one():\n    assert 1 + 1 == 2\n\n\n"
    return {X: f"{head}{one}{deco}def test_two():\n{body}    assert 2 + 2 == 5\n"}


def unit_b(body_two: str = "", *, head: str = "", deco: str = "", tail: str = "") -> dict[str, str]:
    """B's test_u.py: test_one as in A, test_two broken behind `body_two`."""
    body = textwrap.indent(py(body_two), "        ") if body_two else ""
    return {
        U: f"import unittest\n{head}\n\nclass TestU(unittest.TestCase):\n"
        f"    def test_one(self):\n        self.assertEqual(1 + 1, 2)\n\n"
        f"    {deco}def test_two(self):\n{body}        self.assertEqual(2 + 2, 5)\n{tail}"
    }


BROKEN_TWO = plain_b("")

TORCH_A = py("""
    import torch
    from torch.testing._internal.common_device_type import instantiate_device_type_tests
    from torch.testing._internal.common_utils import TestCase, run_tests


    class TestDev(TestCase):
        def test_add(self, device):
            self.assertEqual(torch.ones(2, device=device).sum().item(), 2.0)


    instantiate_device_type_tests(TestDev, globals(){opts})

    if __name__ == "__main__":
        run_tests()
    """)
D = "tests/test_dev.py"


# ---------------------------------------------------------------------------
# the rows: B-mutations that must never be SAFE

ROWS: list[Row] = [
    # --- a test ends the session, or the process, before its failing assert
    Row(name="exit-rc0-last", description="the last test calls pytest.exit(returncode=0) before its broken assert",
        a=PLAIN, b=plain_b("import pytest\npytest.exit('done', returncode=0)\n")),
    Row(name="exit-default", description="the last test calls pytest.exit('done') (exit status 2, interrupted)",
        a=PLAIN, b=plain_b("import pytest\npytest.exit('done')\n")),
    Row(name="keyboardinterrupt-unittest",
        description="a unittest test raises KeyboardInterrupt (unittest re-raises it)",
        a=UNIT, b=unit_b("raise KeyboardInterrupt\n")),
    Row(name="keyboardinterrupt-function", description="a plain test function raises KeyboardInterrupt",
        a=PLAIN, b=plain_b("raise KeyboardInterrupt\n")),
    Row(name="sigint-self", description="the test sends itself SIGINT (the same as Ctrl-C)",
        a=PLAIN,
        b=plain_b("import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(1)\n")),
    Row(name="os-exit-0", description="the last test calls os._exit(0): the process ends with status 0, no summary",
        a=PLAIN, b=plain_b("import os\nos._exit(0)\n")),
    # (B changes nothing else: the process's death is the only sign, the rest of the file resumes and passes)
    Row(name="os-exit-0-teardown", description="an autouse fixture's teardown calls os._exit(0) after test_one passed",
        a=PLAIN, b={CONF: py("""
            import os

            import pytest


            @pytest.fixture(autouse=True)
            def leave(request):
                yield
                if request.node.name == "test_one":
                    os._exit(0)
            """)}),
    Row(name="exit-in-fixture", description="an autouse fixture calls pytest.exit(returncode=0) before test_two",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            import pytest


            @pytest.fixture(autouse=True)
            def leave(request):
                if request.node.name == "test_two":
                    pytest.exit("done", returncode=0)
            """)}),
    Row(name="keyboardinterrupt-setup", description="a unittest setUp raises KeyboardInterrupt before test_two",
        a=UNIT,
        b=unit_b(tail="\n    def setUp(self):\n        if self._testMethodName == 'test_two':\n"
                      "            raise KeyboardInterrupt\n")),
    Row(name="closes-fds", description="the test closes every file descriptor above 2 before its broken assert",
        a=PLAIN, b=plain_b("import os\nos.closerange(3, 65536)\n")),
    Row(name="exit-at-import", description="the module calls pytest.exit(returncode=0) at import",
        a=PLAIN, b=plain_b("", head="import pytest\n\npytest.exit('done', returncode=0)\n\n\n")),
    Row(name="keyboardinterrupt-at-import", description="the module raises KeyboardInterrupt at import",
        a=PLAIN, b=plain_b("", head="raise KeyboardInterrupt\n\n\n")),
    Row(name="os-exit-at-import", description="the module calls os._exit(0) at import",
        a=PLAIN, b=plain_b("", head="import os\n\nos._exit(0)\n\n\n")),
    Row(name="sys-exit-at-import", description="the module calls sys.exit(0) at import",
        a=PLAIN, b=plain_b("", head="import sys\n\nsys.exit(0)\n\n\n")),
    Row(name="conftest-exit-sessionstart", description="a conftest pytest_sessionstart calls pytest.exit(returncode=0)",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            import pytest


            def pytest_sessionstart(session):
                pytest.exit("not today", returncode=0)
            """)}),
    Row(name="conftest-exit-collection", description="a conftest pytest_collection_modifyitems calls pytest.exit(0)",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            import pytest


            def pytest_collection_modifyitems(config, items):
                pytest.exit("collected enough", returncode=0)
            """)}),
    Row(name="conftest-module-skip", description="the conftest calls pytest.skip(allow_module_level=True) at import",
        a=PLAIN, b={**BROKEN_TWO, CONF: "import pytest\n\npytest.skip('later', allow_module_level=True)\n"}),
    Row(name="conftest-cmdline-main", description="a root conftest's pytest_cmdline_main returns 0: no session at all",
        a=PLAIN, b={**BROKEN_TWO, "conftest.py": "def pytest_cmdline_main(config):\n    return 0\n"}),
    Row(name="conftest-runtestloop", description="a conftest pytest_runtestloop returns True without running a test",
        a=PLAIN, b={**BROKEN_TWO, CONF: "def pytest_runtestloop(session):\n    return True\n"}),
    Row(name="conftest-runtest-protocol", description="a conftest pytest_runtest_protocol returns True without running",
        a=PLAIN, b={**BROKEN_TWO, CONF: "def pytest_runtest_protocol(item, nextitem):\n    return True\n"}),
    Row(name="conftest-shouldstop", description="a conftest sets session.shouldstop after the first test",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            SESSION = []


            def pytest_sessionstart(session):
                SESSION.append(session)


            def pytest_runtest_logfinish(nodeid, location):
                SESSION[0].shouldstop = "enough"
            """)}),
    Row(name="conftest-maxfail", description="a conftest sets config.option.maxfail = 1 past the runner's --maxfail=0",
        a=FIRST_FAILS, b={X: FIRST_FAILS[X].replace("2 + 2 == 4", "2 + 2 == 5"),
                          CONF: "def pytest_configure(config):\n    config.option.maxfail = 1\n"}),
    # --- a configuration that runs setups only, or nothing
    Row(name="ini-setup-only", description="pytest.ini addopts = --setup-only", a=PLAIN,
        b={**BROKEN_TWO, **ini("--setup-only")}),
    Row(name="ini-setup-plan", description="pytest.ini addopts = --setup-plan", a=PLAIN,
        b={**BROKEN_TWO, **ini("--setup-plan")}),
    Row(name="tests-ini-setup-only", description="tests/pytest.ini (next to the tests, not at the root): --setup-only",
        a=PLAIN, b={**BROKEN_TWO, "tests/pytest.ini": "[pytest]\naddopts = --setup-only\n"}),
    Row(name="setup-cfg-setup-only", description="setup.cfg [tool:pytest] addopts = --setup-only", a=PLAIN,
        b={**BROKEN_TWO, "setup.cfg": "[tool:pytest]\naddopts = --setup-only\n"}),
    Row(name="tox-ini-setup-only", description="tox.ini [pytest] addopts = --setup-only", a=PLAIN,
        b={**BROKEN_TWO, "tox.ini": "[pytest]\naddopts = --setup-only\n"}),
    Row(name="pyproject-setup-only", description="pyproject.toml [tool.pytest.ini_options] addopts = --setup-only",
        a=PLAIN,
        b={**BROKEN_TWO, "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--setup-only"\n'}),
    Row(name="conftest-setuponly", description="a conftest pytest_configure sets config.option.setuponly",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            def pytest_configure(config):
                config.option.setuponly = True
                config.option.setupshow = True
            """)}),
    Row(name="conftest-collectonly", description="a conftest pytest_configure sets config.option.collectonly",
        a=PLAIN, b={**BROKEN_TWO, CONF: "def pytest_configure(config):\n    config.option.collectonly = True\n"}),
    Row(name="ini-collect-only", description="pytest.ini addopts = --collect-only", a=PLAIN,
        b={**BROKEN_TWO, **ini("--collect-only")}),
    Row(name="ini-co", description="pytest.ini addopts = --co", a=PLAIN, b={**BROKEN_TWO, **ini("--co")}),
    Row(name="ini-fixtures", description="pytest.ini addopts = --fixtures", a=PLAIN,
        b={**BROKEN_TWO, **ini("--fixtures")}),
    Row(name="ini-fixtures-per-test", description="pytest.ini addopts = --fixtures-per-test", a=PLAIN,
        b={**BROKEN_TWO, **ini("--fixtures-per-test")}),
    Row(name="ini-markers", description="pytest.ini addopts = --markers", a=PLAIN,
        b={**BROKEN_TWO, **ini("--markers")}),
    Row(name="ini-x-after-failure", description="pytest.ini addopts = -x; a pre-existing failure comes first",
        a=FIRST_FAILS, b={X: FIRST_FAILS[X].replace("2 + 2 == 4", "2 + 2 == 5"), **ini("-x")}),
    Row(name="ini-maxfail-after-failure", description="pytest.ini addopts = --maxfail=1 after a failure",
        a=FIRST_FAILS, b={X: FIRST_FAILS[X].replace("2 + 2 == 4", "2 + 2 == 5"), **ini("--maxfail=1")}),
    Row(name="ini-last-failed-none", description="pytest.ini addopts = --lf --lfnf=none (no cache: all deselected)",
        a=PLAIN, b={**BROKEN_TWO, **ini("--lf --lfnf=none")}),
    Row(name="ini-no-unittest", description="pytest.ini addopts = -p no:unittest: the TestCase class is not collected",
        a=UNIT, b={**unit_b(), **ini("-p no:unittest")}),
    Row(name="ini-no-python", description="pytest.ini addopts = -p no:python: no test module is collected",
        a=PLAIN, b={**BROKEN_TWO, **ini("-p no:python")}),
    Row(name="ini-no-terminal", description="pytest.ini addopts = -p no:terminal: no summary, no terminal stats",
        a=PLAIN, b={**BROKEN_TWO, **ini("-p no:terminal")}),
    Row(name="ini-required-plugins", description="pytest.ini required_plugins names a plugin that is not installed",
        a=PLAIN, b={**BROKEN_TWO, "pytest.ini": "[pytest]\nrequired_plugins = pytest-no-such-plugin\n"}),
    Row(name="ini-minversion", description="pytest.ini minversion = 99", a=PLAIN,
        b={**BROKEN_TWO, "pytest.ini": "[pytest]\nminversion = 99\n"}),
    # --- deselected or never collected
    Row(name="ini-k", description="pytest.ini addopts = -k 'not test_two'", a=PLAIN,
        b={**BROKEN_TWO, **ini('-k "not test_two"')}),
    Row(name="ini-m", description="B marks test_two slow and pytest.ini says -m 'not slow'", a=PLAIN,
        b={**plain_b("", head="import pytest\n\n\n", deco="@pytest.mark.slow\n"),
           **ini('-m "not slow"', "markers = slow\n")}),
    Row(name="ini-deselect", description="pytest.ini addopts = --deselect tests/test_x.py::test_two", a=PLAIN,
        b={**BROKEN_TWO, **ini("--deselect tests/test_x.py::test_two")}),
    Row(name="ini-ignore", description="pytest.ini addopts = --ignore=tests/test_x.py", a=PLAIN,
        b={**BROKEN_TWO, **ini("--ignore=tests/test_x.py")}),
    Row(name="ini-python-files", description="pytest.ini python_files = check_*.py: the file is no longer a test file",
        a=PLAIN, b={**BROKEN_TWO, "pytest.ini": "[pytest]\npython_files = check_*.py\n"}),
    Row(name="ini-python-functions", description="pytest.ini python_functions = check_*", a=PLAIN,
        b={**BROKEN_TWO, "pytest.ini": "[pytest]\npython_functions = check_*\n"}),
    Row(name="ini-python-classes", description="pytest.ini python_classes = Check (a plain test class)",
        a={X: "class TestX:\n    def test_one(self):\n        assert 1 + 1 == 2\n"},
        b={X: "class TestX:\n    def test_one(self):\n        assert 1 + 1 == 3\n",
           "pytest.ini": "[pytest]\npython_classes = Check\n"}),
    Row(name="ini-norecursedirs", description="pytest.ini norecursedirs = sub: the folder of the tests is not walked",
        a={"tests/sub/test_x.py": PLAIN[X]},
        b={"tests/sub/test_x.py": BROKEN_TWO[X], "pytest.ini": "[pytest]\nnorecursedirs = sub\n"}),
    Row(name="conftest-deselect-hook", description="a conftest pytest_collection_modifyitems deselects (and says so)",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            def pytest_collection_modifyitems(config, items):
                dropped = [item for item in items if item.name == "test_two"]
                items[:] = [item for item in items if item.name != "test_two"]
                config.hook.pytest_deselected(items=dropped)
            """)}),
    Row(name="conftest-keyword", description="a conftest pytest_configure sets config.option.keyword (-k)",
        a=PLAIN, b={**BROKEN_TWO, CONF: 'def pytest_configure(config):\n    config.option.keyword = "not test_two"\n'}),
    Row(name="conftest-drop-silently", description="a conftest pytest_collection_modifyitems drops a test silently",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            def pytest_collection_modifyitems(config, items):
                items[:] = [item for item in items if item.name != "test_two"]
            """)}),
    Row(name="conftest-collect-ignore", description="collect_ignore in a conftest names the file", a=PLAIN,
        b={**BROKEN_TWO, CONF: 'collect_ignore = ["test_x.py"]\n'}),
    Row(name="conftest-collect-ignore-glob", description="collect_ignore_glob in a conftest matches the file",
        a=PLAIN, b={**BROKEN_TWO, CONF: 'collect_ignore_glob = ["test_*.py"]\n'}),
    Row(name="conftest-ignore-collect", description="a conftest pytest_ignore_collect hook ignores the file",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            def pytest_ignore_collect(collection_path, config):
                return collection_path.name == "test_x.py" or None
            """)}),
    Row(name="conftest-pycollect-makeitem", description="a conftest pytest_pycollect_makeitem returns no item",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            def pytest_pycollect_makeitem(collector, name, obj):
                if name == "test_two":
                    return []
            """)}),
    Row(name="test-false-class", description="__test__ = False on the unittest class", a=UNIT,
        b=unit_b(tail="\n\nTestU.__test__ = False\n")),
    Row(name="test-false-module", description="__test__ = False at module level", a=PLAIN,
        b=plain_b("", head="__test__ = False\n\n\n")),
    Row(name="class-deleted", description="the module deletes its TestCase class at the end (del TestU)",
        a=UNIT, b=unit_b(tail="\n\ndel TestU\n")),
    Row(name="class-init", description="a plain test class gains __init__ (pytest cannot collect it)",
        a={X: "class TestX:\n    def test_one(self):\n        assert 1 + 1 == 2\n"},
        b={X: "class TestX:\n    def __init__(self):\n        pass\n\n"
              "    def test_one(self):\n        assert 1 + 1 == 3\n"}),
    Row(name="fixture-decorator", description="@pytest.fixture on a test makes it a fixture, not a test", a=PLAIN,
        b=plain_b("", head="import pytest\n\n\n", deco="@pytest.fixture\n")),
    Row(name="doctest-modules-dropped", description="--doctest-modules removed from addopts: the doctest is not run",
        a={X: '"""\n>>> 1 + 1\n2\n"""\n\n\n' + PLAIN[X], **ini("--doctest-modules")},
        b={X: '"""\n>>> 1 + 1\n3\n"""\n\n\n' + PLAIN[X], "pytest.ini": "[pytest]\n"}),
    Row(name="renamed-test", description="test_two renamed check_two", a=PLAIN,
        b={X: BROKEN_TWO[X].replace("def test_two", "def check_two")}),
    Row(name="removed-test", description="test_two removed", a=PLAIN,
        b={X: "def test_one():\n    assert 1 + 1 == 2\n"}),
    Row(name="node-id-renamed", description="the run names a node id (PATHS) that B renamed",
        a=PLAIN, b={X: BROKEN_TWO[X].replace("def test_two", "def check_two")}, paths=("tests/test_x.py::test_two",)),
    Row(name="map-two-onto-one", description="B removes test_two and --map compares it with test_one, which A has too",
        a=PLAIN, b={X: "def test_one():\n    assert 1 + 1 == 2\n"},
        args=("--map", "tests/test_x.py::test_two=tests/test_x.py::test_one")),
    Row(name="deleted-file", description="the test file deleted", a={**PLAIN, **UNIT}, b={U: None}),
    Row(name="renamed-file", description="the test file renamed helper_x.py (not a test file name)", a=PLAIN,
        b={X: None, "tests/helper_x.py": BROKEN_TWO[X]}),
    Row(name="parametrize-shrunk", description="a parameter dropped from @pytest.mark.parametrize",
        a={X: "import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_n(n):\n    assert n < 4\n"},
        b={X: "import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2])\ndef test_n(n):\n    assert n < 4\n"}),
    # --- skipped, or its failure expected
    Row(name="unittest-skip", description="@unittest.skip on the broken test", a=UNIT,
        b=unit_b(deco="@unittest.skip('later')\n    ")),
    Row(name="pytest-mark-skip", description="@pytest.mark.skip on the broken test", a=PLAIN,
        b=plain_b("", head="import pytest\n\n\n", deco="@pytest.mark.skip(reason='later')\n")),
    Row(name="skiptest-in-test", description="self.skipTest() before the broken assert", a=UNIT,
        b=unit_b("self.skipTest('later')\n")),
    Row(name="module-skiptest", description="raise unittest.SkipTest at module level", a=UNIT,
        b=unit_b(head="\nraise unittest.SkipTest('later')\n")),
    Row(name="module-pytest-skip", description="pytest.skip(allow_module_level=True)", a=PLAIN,
        b=plain_b("", head="import pytest\n\npytest.skip('later', allow_module_level=True)\n\n\n")),
    Row(name="pytestmark-skip", description="pytestmark = pytest.mark.skip", a=PLAIN,
        b=plain_b("", head="import pytest\n\npytestmark = pytest.mark.skip(reason='later')\n\n\n")),
    Row(name="importorskip", description="pytest.importorskip of a module that is not installed", a=PLAIN,
        b=plain_b("", head="import pytest\n\npytest.importorskip('decouple_no_such_module')\n\n\n")),
    Row(name="setupmodule-skiptest", description="setUpModule raises unittest.SkipTest", a=UNIT,
        b=unit_b(head="\n\ndef setUpModule():\n    raise unittest.SkipTest('later')\n")),
    Row(name="package-init-skiptest", description="the tests package's __init__.py raises unittest.SkipTest",
        a={**UNIT, "tests/__init__.py": ""},
        b={**unit_b(), "tests/__init__.py": "import unittest\n\nraise unittest.SkipTest('later')\n"}),
    Row(name="setupclass-skiptest", description="setUpClass raises unittest.SkipTest", a=UNIT,
        b=unit_b(tail="\n    @classmethod\n    def setUpClass(cls):\n        raise unittest.SkipTest('later')\n")),
    Row(name="autouse-fixture-skip", description="an autouse conftest fixture calls pytest.skip", a=PLAIN,
        b={**BROKEN_TWO, CONF: py("""
            import pytest


            @pytest.fixture(autouse=True)
            def later(request):
                if request.node.name == "test_two":
                    pytest.skip("later")
            """)}),
    Row(name="runtest-setup-skip", description="a conftest pytest_runtest_setup skips the test", a=PLAIN,
        b={**BROKEN_TWO, CONF: py("""
            import pytest


            def pytest_runtest_setup(item):
                if item.name == "test_two":
                    pytest.skip("later")
            """)}),
    Row(name="conftest-adds-skip-marker", description="a conftest pytest_collection_modifyitems adds a skip marker",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            import pytest


            def pytest_collection_modifyitems(config, items):
                for item in items:
                    if item.name == "test_two":
                        item.add_marker(pytest.mark.skip(reason="later"))
            """)}),
    Row(name="report-rewritten-skipped", description="a conftest makereport hookwrapper turns the failure into a skip",
        a=PLAIN, b={**BROKEN_TWO, CONF: py("""
            import pytest


            @pytest.hookimpl(wrapper=True)
            def pytest_runtest_makereport(item, call):
                report = yield
                if report.failed:
                    report.outcome = "skipped"
                    report.longrepr = (str(item.path), 0, "Skipped: hidden")
                return report
            """)}),
    Row(name="expected-failure", description="@unittest.expectedFailure on the broken test", a=UNIT,
        b=unit_b(deco="@unittest.expectedFailure\n    ")),
    Row(name="mark-xfail", description="@pytest.mark.xfail (not strict) on the broken test", a=PLAIN,
        b=plain_b("", head="import pytest\n\n\n", deco="@pytest.mark.xfail(reason='later')\n")),
    Row(name="mark-xfail-run-false", description="@pytest.mark.xfail(run=False): the test is not even run", a=PLAIN,
        b=plain_b("", head="import pytest\n\n\n", deco="@pytest.mark.xfail(run=False, reason='later')\n")),
    # --- a tracked helper folder named like a build output (left out by its name until issue 37 item 3)
    # (another file passes in both arms: with none, no test is collected in either arm, INCONCLUSIVE)
    *(Row(name=f"tracked-{folder}-helper", git=True,
          description=f"the tests import a tracked helper from tests/{folder}/, and B changes the helper",
          a={**PLAIN,
             "tests/test_h.py": f"from {folder}.helper_mod import VALUE\n\n\ndef test_h():\n    assert VALUE == 4\n",
             f"tests/{folder}/helper_mod.py": "VALUE = 4\n"},
          b={f"tests/{folder}/helper_mod.py": "VALUE = 5\n"})
      for folder in ("build", "dist", "node_modules", "env")),
    # --- a narrowed device set: nothing changes on this CPU machine (torch)
    Row(name="except-for-accelerators", torch=True, git=True, plain=Plain.SAME,
        description='except_for=("cuda", "xpu", "mps") added to instantiate_device_type_tests',
        a={D: TORCH_A.format(opts="")}, b={D: TORCH_A.format(opts=', except_for=("cuda", "xpu", "mps")')},
        # A's default set is cpu, cuda and the other accelerators (mps and xpu only with allow_mps /
        # allow_xpu, as instantiate_device_type_tests does): B drops cuda
        says="no longer instantiated for: cuda"),
    Row(name="only-for-cpu", torch=True, git=True, plain=Plain.SAME,
        description='only_for=("cpu",) added to instantiate_device_type_tests',
        a={D: TORCH_A.format(opts="")}, b={D: TORCH_A.format(opts=', only_for=("cpu",)')}),
    Row(name="allow-mps-dropped", torch=True, git=True, plain=Plain.SAME,
        description="allow_mps=True removed from instantiate_device_type_tests",
        a={D: TORCH_A.format(opts=", allow_mps=True")}, b={D: TORCH_A.format(opts="")}),
    Row(name="only-cpu-decorator", torch=True, git=True, plain=Plain.SAME,
        description="@onlyCPU added to a device-generic test: on a CUDA machine it is now skipped",
        a={D: TORCH_A.format(opts="")},
        b={D: TORCH_A.format(opts="").replace(
            "import instantiate_device_type_tests", "import instantiate_device_type_tests, onlyCPU").replace(
            "    def test_add", "    @onlyCPU\n    def test_add")}),
    Row(name="instantiate-removed", torch=True, git=True,
        description="the instantiate_device_type_tests call removed: the generic class has no runnable test",
        a={D: TORCH_A.format(opts="")},
        b={D: TORCH_A.format(opts="").replace("instantiate_device_type_tests(TestDev, globals())\n", "")}),
    # --- the process fails after pytest's session ended 0 (every test passed; plain pytest exits non-zero)
    Row(name="atexit-exit-1", description="a conftest registers os._exit(1) with atexit: all pass, the process exits 1",
        a=PLAIN, b={CONF: "import atexit\nimport os\n\natexit.register(os._exit, 1)\n"},
        says="after pytest's session ended with exit status 0"),
    Row(name="atexit-sigsegv", description="a conftest's atexit handler sends the process SIGSEGV (a crash at exit)",
        a=PLAIN, b={CONF: "import atexit, os, signal\n\natexit.register(os.kill, os.getpid(), signal.SIGSEGV)\n"},
        says="after pytest's session ended with exit status 0"),
    Row(name="unconfigure-exit-1", description="a conftest pytest_unconfigure calls os._exit(1) after the session ends",
        a=PLAIN, b={CONF: "import os\n\n\ndef pytest_unconfigure(config):\n    os._exit(1)\n"},
        says="after pytest's session ended with exit status 0"),
    # --- what only `pytest PATHS` as one session shows
    Row(name="pytest-plugins-nested-conftest",
        description="pytest_plugins in tests/sub/conftest.py: `pytest tests` refuses it (not a top-level conftest)",
        a={"tests/sub/test_x.py": PLAIN[X]}, b={"tests/sub/conftest.py": "pytest_plugins = []\n"},
        xfail={ALL: NOT_ONE_SESSION}),
    Row(name="duplicate-basename", description="B adds tests/sub/test_x.py beside tests/test_x.py, no __init__.py: "
        "`pytest tests` cannot import the second (import file mismatch)",
        a=PLAIN, b={"tests/sub/test_x.py": "def test_three():\n    assert True\n"},
        xfail={"fork": NOT_ONE_SESSION, "nofork": NOT_ONE_SESSION}),
    Row(name="leak-into-next-file",
        description="B's test_a.py sets an environment variable at import that test_b.py, run after it, fails on",
        a={"tests/test_a.py": "def test_a():\n    assert True\n",
           "tests/test_b.py": "import os\n\n\ndef test_b():\n    assert os.environ.get('LEAK') is None\n"},
        b={"tests/test_a.py": "import os\n\nos.environ['LEAK'] = '1'\n\n\ndef test_a():\n    assert True\n"},
        xfail={"fork": NOT_ONE_SESSION, "nofork": NOT_ONE_SESSION}),
    # --- the reruns that call a failure flaky are not a replay of the run
    Row(name="fails-on-a-clean-tree",
        description="test_two fails the first time it runs in a tree and leaves a file there that makes it pass",
        a=PLAIN, b=plain_b("from pathlib import Path\nseen = Path(__file__).with_name('seen.txt')\n"
                           "first = not seen.exists()\nseen.touch()\nif not first:\n    return\n")),
    # --- a test that deliberately detects the runner (out of the isolation threat model; still never SAFE)
    Row(name="detects-runner-env", description="the broken test returns early when DECOUPLE_AB_EVENTS is set",
        a=PLAIN, b=plain_b("import os\nif 'DECOUPLE_AB_EVENTS' in os.environ:\n    return\n")),
]


# ---------------------------------------------------------------------------
# the controls: changes that must stay SAFE

CONTROLS: list[Row] = [
    Row(name="label-line", plain=Plain.HEALTHY, description="a hw_classification label line added to a class",
        a=UNIT, b={U: UNIT[U].replace("TestCase):\n", 'TestCase):\n    hw_classification = "generic"\n\n')}),
    Row(name="comment", plain=Plain.HEALTHY, description="a comment added", a=PLAIN,
        b={X: "# the arithmetic tests\n" + PLAIN[X]}),
    Row(name="docstring", plain=Plain.HEALTHY, description="a docstring added to a test", a=PLAIN,
        b={X: PLAIN[X].replace("def test_two():\n", 'def test_two():\n    """Two and two."""\n')}),
    Row(name="new-test", plain=Plain.HEALTHY, description="a new passing test added", a=PLAIN,
        b={X: PLAIN[X] + "\n\ndef test_three():\n    assert 3 + 3 == 6\n"}),
    Row(name="fixed-test", plain=Plain.HEALTHY, description="a failing test fixed", a=FIRST_FAILS, b=PLAIN),
    Row(name="reformatted", plain=Plain.HEALTHY, description="the file reformatted (spacing, parentheses, blank lines)",
        a=PLAIN, b={X: "def test_one( ):\n    assert (1+1) == 2\ndef test_two( ):\n    assert (2+2) == 4\n"}),
    Row(name="unrelated-file", plain=Plain.HEALTHY, description="an unrelated data file and helper module added",
        a=PLAIN, b={"tests/data.txt": "numbers\n", "tests/helper_mod.py": "VALUE = 1\n"}),
    Row(name="harmless-config", plain=Plain.HEALTHY, description="pytest.ini with -ra and a marker added", a=PLAIN,
        b=ini("-ra", "markers = slow: slow tests\n")),
    Row(name="skip-in-both", plain=Plain.HEALTHY, description="a test skipped in both arms, its reason reworded",
        a={X: PLAIN[X].replace("def test_two", "import pytest\n\n\n@pytest.mark.skip(reason='a')\ndef test_two")},
        b={X: PLAIN[X].replace("def test_two", "import pytest\n\n\n@pytest.mark.skip(reason='b')\ndef test_two")}),
    Row(name="ignored-build", git=True, plain=Plain.HEALTHY,
        description="an untracked build/ that .gitignore ignores, holding a failing test, stays out of the run",
        a={**PLAIN, ".gitignore": "build/\n"},
        b={"tests/build/test_stale.py": "def test_stale():\n    assert False\n",
           "build/junk.py": "raise SystemExit\n"}),
    Row(name="torch-label", torch=True, git=True, plain=Plain.HEALTHY,
        description="a HardwareClassification label added to a device-generic class",
        a={D: TORCH_A.format(opts="")},
        b={D: TORCH_A.format(opts="").replace(
            "import TestCase, run_tests", "import HardwareClassification, TestCase, run_tests").replace(
            "(TestCase):\n", "(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n")}),
]


# ---------------------------------------------------------------------------
# running


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    return env


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=clean_env(), check=True, capture_output=True, timeout=TIMEOUT)


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def lay_out(row: Row, tmp: Path) -> tuple[list[str], Path]:
    """The trees of the row under `tmp`: the runner's arm arguments and the directory to run it in."""
    if not row.git:
        write_tree(tmp / "a", row.a)
        write_tree(tmp / "b", row.b_files())
        return ["--a-root", str(tmp / "a"), "--b-root", str(tmp / "b")], tmp
    repo = write_tree(tmp / "repo", row.a)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "A")
    for rel, text in row.b.items():
        if text is None:
            (repo / rel).unlink()
    write_tree(repo, {rel: text for rel, text in row.b.items() if text is not None})
    return ["--base", "HEAD"], repo


def python_for(row: Row) -> str:
    if row.torch:
        if not TORCH_PYTHON:
            pytest.skip("needs torch: set DECOUPLE_TORCH_PYTHON (scripts/test.sh does)")
        return TORCH_PYTHON
    return sys.executable


@dataclass(frozen=True, kw_only=True)
class Verdict:
    code: int
    verdict: str | None  # the --json result's verdict; None when no result was written
    output: str


def run_ab(row: Row, mode: str, tmp: Path) -> Verdict:
    arms, cwd = lay_out(row, tmp)
    out = tmp / "result.json"
    cmd = [sys.executable, "-m", "codemod", "ab", *row.paths, *arms, "--python", python_for(row), "-j", "2",
           *MODES[mode], "--json", str(out), "--no-color", "-q", *row.args]
    proc = subprocess.run(cmd, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)
    verdict = json.loads(out.read_text())["verdict"] if out.exists() else None
    return Verdict(code=proc.returncode, verdict=verdict, output=proc.stdout + proc.stderr)


def cases(rows: list[Row]) -> list:
    out = []
    for row in rows:
        for mode in MODES:
            reason = row.xfail.get(mode) or row.xfail.get(ALL)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(row, mode, marks=marks, id=f"{row.name}-{mode}"))
    return out


@pytest.mark.parametrize(("row", "mode"), cases(ROWS))
def test_never_safe(row: Row, mode: str, tmp_path: Path):
    got = run_ab(row, mode, tmp_path)
    assert (got.code, got.verdict) in ((1, "REGRESSION"), (3, "INCONCLUSIVE")), f"{row.description}\n{got.output}"
    assert row.says in got.output, got.output


@pytest.mark.parametrize(("row", "mode"), cases(CONTROLS))
def test_control_stays_safe(row: Row, mode: str, tmp_path: Path):
    got = run_ab(row, mode, tmp_path)
    assert (got.code, got.verdict) == (0, "SAFE"), f"{row.description}\n{got.output}"


def test_rows_are_named_once():
    names = [row.name for row in ROWS + CONTROLS]
    assert len(names) == len(set(names))
    assert len(ROWS) >= 40 and len(CONTROLS) >= 8


# ---------------------------------------------------------------------------
# grounding: what plain pytest says of each row's A and B


@dataclass(frozen=True, kw_only=True)
class Summary:
    code: int
    counts: dict[str, int]  # from pytest's last "N passed, M failed ... in Xs" line; {} without one

    @property
    def passed(self) -> int:
        return self.counts.get("passed", 0)


def start_pytest(python: str, root: Path, paths: tuple[str, ...]) -> subprocess.Popen:
    return subprocess.Popen([python, "-m", "pytest", *paths], cwd=root, env=clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)


def summary(proc: subprocess.Popen) -> Summary:
    out, _ = proc.communicate(timeout=TIMEOUT)
    counts: dict[str, int] = {}
    for line in reversed(out.splitlines()):
        if re.search(r"\bin [\d.]+s\b", line):
            found = re.findall(r"(\d+) (passed|failed|errors?|skipped|deselected|xfailed|xpassed)", line)
            counts = {word.rstrip("s"): int(n) for n, word in found}  # "errors" -> "error"
            break
    return Summary(code=proc.returncode, counts=counts)


@pytest.mark.parametrize("row", [pytest.param(row, id=row.name) for row in ROWS + CONTROLS])
def test_plain_pytest_grounds_the_row(row: Row, tmp_path: Path):
    python = python_for(row)
    if row.git:
        _, b_root = lay_out(row, tmp_path)
    else:
        b_root = write_tree(tmp_path / "b", row.b_files())
    procs = start_pytest(python, write_tree(tmp_path / "a", row.a), row.paths), start_pytest(python, b_root, row.paths)
    a, b = summary(procs[0]), summary(procs[1])
    assert a.passed > 0, a
    if row.plain is Plain.BROKEN:
        assert b.code != 0 or b.passed < a.passed, (a, b)
    elif row.plain is Plain.SAME:
        assert (a.code, a.counts) == (b.code, b.counts)
    else:
        assert b.code == 0 and b.passed >= a.passed, (a, b)


# ---------------------------------------------------------------------------
# `ab merge`: shards of different runs, or an incomplete set, must never merge into SAFE

SHARDED = {
    "tests/test_a.py": "def test_a():\n    assert 1 + 1 == 2\n",
    "tests/test_b.py": "def test_b1():\n    assert 2 + 2 == 4\n\n\ndef test_b2():\n    assert 3 + 3 == 6\n",
}


def run_shards(repo: Path, out: Path, tag: str, shards: tuple[int, ...] = (1, 2)) -> None:
    for i in shards:
        cmd = [sys.executable, "-m", "codemod", "ab", "tests", "--base", "HEAD", "--shard", f"{i}/2", "-j", "2",
               "--json", str(out / f"{tag}{i}.json"), "-q", "--no-color"]
        proc = subprocess.run(cmd, cwd=repo, env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def shard_results(tmp_path_factory) -> Path:
    """safe1/2.json: a run whose B is A (SAFE); regression1/2.json: the same repository once B broke a test of
    each file (uncommitted); other2.json: shard 2 of another repository, whose base is another commit."""
    tmp = tmp_path_factory.mktemp("shards")
    repo = write_tree(tmp / "repo", SHARDED)
    other = write_tree(tmp / "other", {**SHARDED, "tests/test_c.py": "def test_c():\n    assert True\n"})
    for tree in (repo, other):
        git(tree, "init", "-q")
        git(tree, "add", "-A")
        git(tree, "commit", "-qm", "A")
    run_shards(repo, tmp, "safe")
    write_tree(repo, {path: text.replace(" == ", " != ") for path, text in SHARDED.items()})
    run_shards(repo, tmp, "regression")
    run_shards(other, tmp, "other", shards=(2,))
    return tmp


def merge(results: Path, *args: str) -> Verdict:
    out = results / "merged.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "codemod", "ab", "merge", *(str(results / a) if a.endswith(".json") else a
                                                              for a in args), "--json", str(out), "-q", "--no-color"]
    proc = subprocess.run(cmd, cwd=results, env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    verdict = json.loads(out.read_text())["verdict"] if out.exists() else None
    return Verdict(code=proc.returncode, verdict=verdict, output=proc.stdout + proc.stderr)


def test_merge_of_one_run_keeps_its_verdict(shard_results: Path):
    got = merge(shard_results, "safe1.json", "safe2.json")
    assert (got.code, got.verdict) == (0, "SAFE"), got.output
    got = merge(shard_results, "regression1.json", "regression2.json")
    assert (got.code, got.verdict) == (1, "REGRESSION"), got.output


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(("safe1.json", "safe2.json", "regression1.json", "regression2.json"), id="earlier-safe-run-first"),
        pytest.param(("safe1.json", "regression2.json"), id="one-shard-of-each-run"),
        pytest.param(("safe1.json", "other2.json"), id="two-repositories"),
    ],
)
def test_merge_refuses_results_of_different_runs(shard_results: Path, files: tuple[str, ...]):
    got = merge(shard_results, *files)
    assert got.code == 2 and got.verdict is None, got.output
    assert files[0] in got.output and files[-1] in got.output, got.output


def test_merge_refuses_an_incomplete_set(shard_results: Path):
    got = merge(shard_results, "safe1.json")
    assert got.code == 2 and got.verdict is None and "2/2" in got.output, got.output


def test_merge_allow_missing_is_inconclusive(shard_results: Path):
    got = merge(shard_results, "safe1.json", "--allow-missing")
    assert (got.code, got.verdict) == (3, "INCONCLUSIVE"), got.output
