"""The A/B runner at scale: the warm-up before forking, packed sessions where forking is
unsafe, and the simulated out-of-tree backend (tests/fixtures/npu_backend)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemod.ab.result.notices import Notice
from codemod.ab.arms.options import RunOptions, parse_diag
from codemod.ab.execution.packrun import packs_per_arm, plan_packs
from codemod.ab.execution.preload import warm_plan
from codemod.ab.execution.run import run_ab

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures" / "ab"
WARM = FIX / "warmup"

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _rows(r) -> dict:
    return {t.nodeid: t.category for t in r.tests}


# ---------------------------------------------------------------------------
# the warm-up


def test_warm_up_classes_are_the_torch_bases_the_files_classes_derive_from(tmp_path):
    (tmp_path / "test_a.py").write_text(
        "import torch\n"
        "from torch.testing._internal.common_utils import TestCase, run_tests\n"
        "from torch.testing._internal import common_quantization as cq\n"
        "import torch.testing._internal.jit_utils as ju\n"
        "try:\n    from torch.testing._internal.common_nn import NNTestCase as NN\nexcept ImportError:\n    NN = object\n"
        "import unittest\n\n"
        "class Base(TestCase):\n    pass\n\n"
        "class TestOne(Base):\n    pass\n\n"
        "class TestTwo(TestCase):\n    pass\n\n"
        "class TestQ(cq.QuantizationTestCase):\n    pass\n\n"
        "class TestJ(ju.JitTestCase, unittest.TestCase):\n    pass\n\n"
        "class TestN(NN):\n    pass\n\n"
        "class Net(torch.nn.Module):\n    pass\n\n"
        "def f():\n    class TestLocal(TestCase):\n        pass\n"
    )
    (tmp_path / "test_b.py").write_text(
        "from torch.testing._internal.common_quantization import QuantizationTestCase\n\n"
        "class TestQ(QuantizationTestCase):\n    pass\n"
    )
    (tmp_path / "test_c.py").write_text("class Broken(:\n")
    files = [tmp_path / n for n in ("test_a.py", "test_b.py", "test_c.py")]
    # the most used first (QuantizationTestCase: two files), then in first-seen order;
    # torch.nn.Module is listed (the server skips what is not a unittest.TestCase)
    assert warm_plan(files).warm_up == [
        "torch.testing._internal.common_quantization:QuantizationTestCase",
        "torch.testing._internal.common_utils:TestCase",
        "torch.testing._internal.jit_utils:JitTestCase",
        "torch.testing._internal.common_nn:NNTestCase",
        "torch.nn:Module",
    ]
    assert warm_plan(files[2:]).warm_up == []


@linux_only
def test_the_first_test_of_a_base_class_runs_once_in_the_warm_interpreter(tmp_path):
    said: list[str] = []
    r = run_ab(RunOptions(paths=["test_warm_1.py", "test_warm_2.py"], a_root=str(WARM / "tree"),
                          b_root=str(WARM / "tree"), cwd=str(tmp_path), jobs=2, confirm=0,
                          env={"PYTHONPATH": str(WARM / "site")}, progress=said.append))
    assert set(_rows(r).values()) == {"same-pass"} and len(r.tests) == 4, \
        [(t.nodeid, t.category, t.b and t.b.message) for t in r.tests]
    assert not r.warnings, r.warnings
    (ready,) = [m for m in said if m.startswith("warm interpreters")]
    assert "a first test of torch.fakecase:TestCase run once" in ready, ready


def test_a_diagnosis_run_of_node_ids_with_a_diagnostic_arm_warms_up_too(tmp_path):
    """--diagnose's second run: node ids as paths, a diagnostic arm that shares A's warm
    interpreter (its variable is read when torch.load runs); the warm-up still runs first."""
    said: list[str] = []
    node = "test_warm_1.py::TestWarm::test_the_first_test_imports_were_done_before_the_fork"
    r = run_ab(RunOptions(paths=[node], a_root=str(WARM / "tree"), b_root=str(WARM / "tree"), cwd=str(tmp_path),
                          jobs=2, confirm=0, env={"PYTHONPATH": str(WARM / "site")}, progress=said.append,
                          diags=[parse_diag("nowo:TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1")]))
    assert _rows(r) == {node: "same-pass"}, [(t.nodeid, t.category, t.b and t.b.message) for t in r.tests]
    # the diagnostic arm's run of the test passed as A's did: it was forked after the warm-up too
    (diag,) = r.diagnostics
    assert diag.name == "nowo" and diag.changed == {} and not r.warnings, (diag, r.warnings)
    (ready,) = [m for m in said if m.startswith("warm interpreters")]
    assert "a first test of torch.fakecase:TestCase run once" in ready, ready


@linux_only
def test_a_warm_up_that_makes_forking_unsafe_is_dropped_and_says_why(tmp_path):
    said: list[str] = []
    r = run_ab(RunOptions(paths=["test_threading.py"], a_root=str(WARM / "tree"), b_root=str(WARM / "tree"),
                          cwd=str(tmp_path), jobs=2, confirm=0, env={"PYTHONPATH": str(WARM / "site")},
                          progress=said.append))
    # the server started again without the warm-up: the files are still forked
    assert _rows(r) == {"test_threading.py::TestThreading::test_forked_without_the_warm_up": "same-pass"}, \
        [(t.nodeid, t.b and t.b.message) for t in r.tests]
    (warning,) = r.warnings
    assert warning == Notice("warm.warm-up-dropped", {"classes": "torch.fakecase:ThreadingTestCase"}, arm="A+B",
                             reasons=[Notice("fork-unsafe.thread-started")])
    assert warning.text("zh").startswith("A+B 组：未保留预热（在 fork 之前先运行一次 torch.fakecase:ThreadingTestCase")
    (ready,) = [m for m in said if m.startswith("warm interpreters")]
    assert "a first test" not in ready


# ---------------------------------------------------------------------------
# packs


def test_packs_are_contiguous_runs_of_nearly_equal_length():
    files = [f"t{i}.py" for i in range(7)]
    assert plan_packs(files, 3) == [["t0.py", "t1.py", "t2.py"], ["t3.py", "t4.py"], ["t5.py", "t6.py"]]
    assert plan_packs(files, 1) == [files]
    assert plan_packs(files[:2], 5) == [["t0.py"], ["t1.py"]]
    assert plan_packs([], 2) == []
    assert [packs_per_arm(j) for j in (1, 2, 3, 4, 8)] == [1, 1, 1, 2, 4]


def stand_in_torch(tmp_path: Path) -> Path:
    """A site folder with an empty stand-in torch: the warm interpreter preloads it and forks."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("")
    return site


def _unsafe_to_fork(tmp_path: Path) -> Path:
    """A stand-in torch whose import loads an out-of-tree backend (forking is unsafe)."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("import torch_npu  # noqa: F401\n")
    (site / "torch_npu.py").write_text("INITIALISED = True\n")
    return site


def _importing_torch(src: Path, dest: Path) -> Path:
    """A copy of a fixture tree whose test files import torch first."""
    shutil.copytree(src, dest)
    for path in dest.rglob("test_*.py"):
        path.write_text("import torch  # noqa: F401\n" + path.read_text())
    return dest


def _summary(r) -> dict:
    # test_flaky's outcome depends on how many runs came before it (a shared counter)
    return {t.nodeid: (t.category, t.a and (t.a.outcome, t.a.signal, t.a.signature),
                       t.b and (t.b.outcome, t.b.signal, t.b.signature))
            for t in r.tests if "test_flaky" not in t.nodeid}


@linux_only
def test_packed_sessions_give_each_file_the_outcomes_of_a_run_of_it_alone(tmp_path):
    from test_ab_run import make_repo

    site = _unsafe_to_fork(tmp_path)
    a = _importing_torch(FIX / "mixed" / "a", tmp_path / "mixed-a")
    b = _importing_torch(FIX / "mixed" / "b", tmp_path / "mixed-b")

    def run(fork: bool):
        repo = make_repo(tmp_path / f"repo-{fork}", a, b)
        env = {"PYTHONPATH": str(site), "AB_FLAKY_STATE": str(tmp_path / f"flaky-{fork}")}
        return run_ab(RunOptions(paths=["tests"], base="HEAD", cwd=str(repo), timeout=5.0, confirm=1, jobs=2,
                                 fork=fork, env=env))

    packed, alone = run(True), run(False)
    (warning,) = [w for w in packed.warnings if w.code.startswith("warm.")]
    assert warning == Notice("warm.given-up-packed", {"processes": "1"},
                             reasons=[Notice("fork-unsafe.backend-imported", {"module": "torch_npu"}, arm="A+B")])
    assert warning.text() == (
        "no warm interpreter (arm A+B: torch_npu was imported (an out-of-tree device backend initialises on import)): "
        "each arm's files ran in 1 pytest session of several files each, as plain pytest runs them (the tests of "
        "one session share its process)")
    assert not [w for w in alone.warnings if w.code.startswith("warm.")]   # --no-fork: a process per file
    assert _summary(packed) == _summary(alone)
    assert packed.verdict == alone.verdict == "REGRESSION"
    crash = next(t for t in packed.tests if t.nodeid == "tests/test_crash.py::test_crashes")
    assert (crash.category, crash.b.signal) == ("crash", "SIGABRT")
    assert packed.arm("B").crashes == alone.arm("B").crashes == ["tests/test_crash.py::test_crashes"]
    hang = next(t for t in packed.tests if t.nodeid == "tests/test_hang.py::test_hang")
    assert (hang.a.outcome, hang.b.outcome) == ("timeout", "timeout") and "--timeout 5s" in hang.b.message


def _pids_tree(root: Path, files: int) -> None:
    """Files whose test records its arm, its file and the pid of its process."""
    root.mkdir()
    for i in range(files):
        (root / f"test_p{i}.py").write_text(
            "import os\nimport torch  # noqa: F401\n\n"
            "def test_pid():\n"
            "    with open(os.environ['AB_PIDS'], 'a') as fh:\n"
            f"        fh.write(os.environ['TMPDIR'].split(os.sep)[-2] + ' {i} ' + str(os.getpid()) + '\\n')\n"
        )


@linux_only
def test_each_arm_runs_a_pack_in_one_process_and_a_file_timeout_ends_only_its_file(tmp_path):
    site = _unsafe_to_fork(tmp_path)
    root = tmp_path / "t"
    _pids_tree(root, 4)
    (root / "test_p1.py").write_text((root / "test_p1.py").read_text()
                                     + "\ndef test_slow():\n    import time\n    time.sleep(60)\n\n"
                                     "def test_never():\n    pass\n")
    pids = tmp_path / "pids"
    r = run_ab(RunOptions(paths=["."], a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=2, confirm=0,
                          file_timeout=5.0, env={"PYTHONPATH": str(site), "AB_PIDS": str(pids)}))
    rows = {t.nodeid: t for t in r.tests}
    outcomes = {n: (t.a.outcome, t.b.outcome) for n, t in rows.items()}
    assert outcomes == {**{f"test_p{i}.py::test_pid": ("passed", "passed") for i in range(4)},
                        "test_p1.py::test_slow": ("timeout", "timeout"),
                        "test_p1.py::test_never": ("not-run", "not-run")}, outcomes
    assert "--file-timeout 5s" in rows["test_p1.py::test_slow"].b.message
    assert [w.code for w in r.warnings].count("file.timeout") == 2
    by_arm: dict[str, set[str]] = {}
    for line in pids.read_text().split("\n"):
        if line:
            arm, _, pid = line.split()
            by_arm.setdefault(arm, set()).add(pid)
    # before the timeout every file of an arm ran in its one process, and one more after it
    assert {arm: len(p) for arm, p in by_arm.items()} == {"A": 2, "B": 2}


@linux_only
def test_a_process_that_dies_outside_a_test_ends_the_pack_and_its_files_go_on_alone(tmp_path):
    site = _unsafe_to_fork(tmp_path)
    root = tmp_path / "t"
    _pids_tree(root, 3)
    # the first process of each arm dies after test_p0 has finished (after the capture plugin
    # said so), before the next test starts
    (root / "conftest.py").write_text(
        "import os\n\nimport pytest\n\n\n@pytest.hookimpl(trylast=True)\n"
        "def pytest_runtest_logfinish(nodeid, location):\n"
        "    marker = os.environ['AB_DIE_ONCE'] + os.environ['TMPDIR'].split(os.sep)[-2]\n"
        "    if nodeid == 'test_p0.py::test_pid' and not os.path.exists(marker):\n"
        "        open(marker, 'w').close()\n"
        "        os._exit(3)\n")
    pids = tmp_path / "pids"
    r = run_ab(RunOptions(paths=["."], a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=2, confirm=0,
                          env={"PYTHONPATH": str(site), "AB_PIDS": str(pids), "AB_DIE_ONCE": str(tmp_path / "died-")}))
    assert _rows(r) == {f"test_p{i}.py::test_pid": "same-pass" for i in range(3)}, \
        [(t.nodeid, t.category, t.b and t.b.message) for t in r.tests]
    runs: dict[str, list[str]] = {}
    for line in pids.read_text().split("\n"):
        if line:
            arm, i, pid = line.split()
            runs.setdefault(arm, []).append(i)
    # test_p0 ran once in the pack; test_p1 and test_p2 each alone, once
    assert {arm: sorted(i) for arm, i in runs.items()} == {"A": ["0", "1", "2"], "B": ["0", "1", "2"]}


@linux_only
def test_pack_packs_the_files_with_a_warm_interpreter_too(tmp_path):
    site = stand_in_torch(tmp_path)
    root = tmp_path / "t"
    _pids_tree(root, 4)
    (root / "test_p3.py").write_text((root / "test_p3.py").read_text() + (
        "\ndef test_forked_by_the_warm_interpreter():\n"
        "    with open(f'/proc/{os.getppid()}/cmdline', 'rb') as fh:\n"
        "        assert b'decouple_ab_server' in fh.read()\n"))
    pids = tmp_path / "pids"
    r = run_ab(RunOptions(paths=["."], a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=4, confirm=0,
                          pack=True, env={"PYTHONPATH": str(site), "AB_PIDS": str(pids)}))
    assert set(_rows(r).values()) == {"same-pass"} and len(r.tests) == 5, \
        [(t.nodeid, t.category, t.b and t.b.message) for t in r.tests]
    assert r.warnings == [Notice("run.packed", {"processes": "2"})]
    assert str(r.warnings[0]).startswith("--pack: each arm's files ran in 2 pytest sessions of several files")
    packs: dict[tuple[str, str], set[str]] = {}
    for line in pids.read_text().split("\n"):
        if line:
            arm, i, pid = line.split()
            packs.setdefault((arm, pid), set()).add(i)
    # -j 4: two packs per arm, (test_p0, test_p1) and (test_p2, test_p3), each in one process
    assert sorted(sorted(p) for p in packs.values()) == [["0", "1"], ["0", "1"], ["2", "3"], ["2", "3"]]


# ---------------------------------------------------------------------------
# the simulated out-of-tree backend, with a real torch


def _torch_python() -> str | None:
    from test_ab_torch import _torch_python as find

    py, _ = find()
    return py


@pytest.fixture(scope="module")
def npu_python(tmp_path_factory):
    py = _torch_python()
    if py is None:
        pytest.skip("no torch >= 2.6 (set DECOUPLE_TORCH_PYTHON)")
    from npu_env import npu_python as make

    return make(py, tmp_path_factory.mktemp("npu"))


def _generated(root: Path, n: int) -> None:
    root.mkdir()
    for i in range(n):
        (root / f"test_gen_{i}.py").write_text(
            "import json\nimport os\n\nimport torch\nfrom torch.testing._internal.common_utils import TestCase\n\n"
            "# what the warm interpreter must not change: torch's random state at import\n"
            "DRAWN = torch.rand(3).tolist()\n\n\n"
            f"class TestGen{i}(TestCase):\n"
            "    def test_facts(self):\n"
            "        facts = {'drawn': DRAWN, 'backend': torch._C._get_privateuse1_backend_name(),\n"
            "                 'pid': os.getpid()}\n"
            f"        with open(os.path.join(os.environ['AB_FACTS'], os.environ['TMPDIR'].split(os.sep)[-2]"
            f" + '-{i}.json'), 'w') as fh:\n"
            "            json.dump(facts, fh)\n\n"
            "    def test_add(self):\n"
            "        self.assertEqual(torch.ones(2) + 1, torch.full((2,), 2.0))\n"
        )


def _facts(where: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in where.glob("*.json")}


@pytest.mark.torch
@linux_only
def test_with_the_simulated_backend_the_server_refuses_and_each_arm_runs_one_packed_session(
        tmp_path, npu_python, monkeypatch):
    from codemod.ab.execution import envprobe
    root = tmp_path / "t"
    _generated(root, 4)
    facts = tmp_path / "facts"
    facts.mkdir()
    probes = []  # the probe's process of its own: not needed, the arms' test processes answered
    monkeypatch.setattr(envprobe, "run_probe", lambda *a, **k: probes.append(a))
    r = run_ab(RunOptions(paths=["."], a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=2, confirm=0,
                          python=npu_python, env={"AB_FACTS": str(facts)}))
    assert probes == []
    assert "decouple-fake-npu" in r.environment.backends and r.environment.torch_version, r.environment
    assert set(_rows(r).values()) == {"same-pass"} and len(r.tests) == 8
    (warning,) = [w for w in r.warnings if w.code.startswith("warm.")]
    assert warning == Notice("warm.given-up-packed", {"processes": "1"}, reasons=[
        Notice("fork-unsafe.backend-autoload", {"backends": "decouple_fake_npu"}, arm="A+B")])
    seen = _facts(facts)
    assert {f["backend"] for f in seen.values()} == {"npu"}
    assert len({f["pid"] for name, f in seen.items() if name.startswith("A-")}) == 1
    assert len({f["pid"] for name, f in seen.items() if name.startswith("B-")}) == 1


@pytest.mark.torch
@linux_only
def test_without_autoload_the_backend_is_not_loaded_and_files_are_forked_warm(tmp_path, npu_python):
    """TORCH_DEVICE_BACKEND_AUTOLOAD=0: torch loads no backend; the warm interpreter preloads
    torch and runs a first common_utils test (whose setUp seeds torch with SEED), and what a
    file draws at import is drawn from the generator as the server had it before (the
    warm-up's seeding is undone)."""
    root = tmp_path / "t"
    _generated(root, 2)
    facts = tmp_path / "facts"
    facts.mkdir()
    said: list[str] = []
    env = {"AB_FACTS": str(facts), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    r = run_ab(RunOptions(paths=["."], a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=2, confirm=0,
                          python=npu_python, progress=said.append, env=env))
    assert set(_rows(r).values()) == {"same-pass"} and not r.warnings, r.warnings
    (ready,) = [m for m in said if m.startswith("warm interpreters")]
    assert "a first test of torch.testing._internal.common_utils:TestCase run once" in ready, ready
    warm = _facts(facts)
    assert len(warm) == 4 and {f["backend"] for f in warm.values()} == {"privateuseone"}
    code = ("import json, torch; from torch.testing._internal.common_utils import SEED; torch.manual_seed(SEED); "
            "print(json.dumps(torch.rand(3).tolist()))")
    seeded = subprocess.run([npu_python, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}).stdout.strip().splitlines()[-1]
    assert json.loads(seeded) not in [f["drawn"] for f in warm.values()]
