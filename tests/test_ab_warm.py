"""The A/B runner's warm interpreter (fork server), its fallback, and process hygiene."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from codemod.ab.execution import processes as procs
from codemod.ab.result.notices import Notice
from codemod.ab.arms.options import DiagSpec, RunOptions
from codemod.ab.arms.sources import thread_vars
from codemod.ab.execution.run import run_ab
from codemod.ab.execution.interpreter import ForkServer, import_environment, install_server
from codemod.ab.execution.preload import WarmPlan, warm_plan

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures" / "ab"
PROJECT = HERE.parent

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")


def _facts(tmp_path: Path, fork: bool, diags: tuple = ()) -> tuple:
    facts = tmp_path / ("fork" if fork else "fresh")
    facts.mkdir()
    r = run_ab(RunOptions(paths=["test_1_mutate.py", "test_2_check.py"], a_root=str(FIX / "warm"),
                          b_root=str(FIX / "warm"), cwd=str(tmp_path), jobs=1, fork=fork,
                          env={"AB_FACTS_DIR": str(facts)}, diags=list(diags)))
    return r, {arm: json.loads((facts / f"{arm}.json").read_text()) for arm in ("A", "B", *(d.name for d in diags))}


def test_warm_files_do_not_leak_state_and_look_like_fresh_processes(tmp_path):
    warm, warm_facts = _facts(tmp_path, fork=True)
    fresh, fresh_facts = _facts(tmp_path, fork=False)
    for r in (warm, fresh):
        assert {t.nodeid: t.category for t in r.tests} == {
            "test_1_mutate.py::test_mutate_module_state": "same-pass",
            "test_2_check.py::test_no_leak_from_the_previous_file": "same-pass",
            "test_2_check.py::test_record_process_facts": "same-pass"}, [(t.nodeid, t.b and t.b.message) for t in r.tests]
    assert not any("warm interpreter" in str(w) for w in warm.warnings), warm.warnings
    if sys.platform.startswith("linux"):
        assert warm_facts["A"]["forked"] and warm_facts["B"]["forked"]
        assert not fresh_facts["A"]["forked"]
    for arm in ("A", "B"):
        w, f = dict(warm_facts[arm]), dict(fresh_facts[arm])
        for fact in ("forked", "parent_pid", "gc_frozen"):
            w.pop(fact), f.pop(fact)
        we, fe = w.pop("env"), f.pop("env")
        # without a warm interpreter to fork the probe from, a fresh process answers it after its tests
        i = f["argv"].index("decouple_ab_probe")
        assert f["argv"][i - 1] == "-p" and "decouple_ab_probe" not in w["argv"]
        del f["argv"][i - 1 : i + 1]
        assert we == fe, {k: (we.get(k), fe.get(k)) for k in set(we) | set(fe) if we.get(k) != fe.get(k)}
        assert w == f, {k: (w[k], f[k]) for k in w if w[k] != f.get(k)}
    # per-arm isolation as before: own temp dir and bytecode prefix
    assert warm_facts["A"]["tempdir"] != warm_facts["B"]["tempdir"]
    assert warm_facts["A"]["pycache_prefix"] != warm_facts["B"]["pycache_prefix"]
    assert warm_facts["A"]["argv0"].endswith(os.path.join("pytest", "__main__.py"))
    assert warm_facts["A"]["main_spec"] == "pytest.__main__"
    # the preloaded objects are out of the children's garbage collections
    if sys.platform.startswith("linux"):
        assert warm_facts["A"]["gc_frozen"] and not fresh_facts["A"]["gc_frozen"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_arms_share_a_warm_interpreter_unless_an_import_could_see_their_difference(tmp_path):
    # A and B differ only in per-arm values; torch reads TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD
    # when torch.load is called; AB_IMPORT_FLAG could be read by any import
    diags = (DiagSpec(name="weights", based_on="A", variables={"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}),
             DiagSpec(name="flag", based_on="B", variables={"AB_IMPORT_FLAG": "1"}))
    r, facts = _facts(tmp_path, fork=True, diags=diags)
    assert not any("warm interpreter" in w for w in r.warnings), r.warnings
    assert all(f["forked"] for f in facts.values())
    parent = {arm: f["parent_pid"] for arm, f in facts.items()}
    assert parent["A"] == parent["B"] == parent["weights"] != parent["flag"]
    # each child still has exactly its own arm's environment and bytecode prefix
    assert facts["weights"]["env"]["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] == "1"
    assert "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD" not in facts["A"]["env"]
    assert facts["flag"]["env"]["AB_IMPORT_FLAG"] == "1" and "AB_IMPORT_FLAG" not in facts["B"]["env"]
    assert len({f["pycache_prefix"] for f in facts.values()}) == 4
    assert len({f["tempdir"] for f in facts.values()}) == 4


def test_import_environment_ignores_per_arm_and_call_time_variables():
    a = {"PATH": "/bin", "PYTHONPYCACHEPREFIX": "/c/A", "TMPDIR": "/t/A", "TEMP": "/t/A", "TMP": "/t/A"}
    b = {**a, "PYTHONPYCACHEPREFIX": "/c/B", "TMPDIR": "/t/B", "TEMP": "/t/B", "TMP": "/t/B"}
    assert import_environment(a) == import_environment(b)
    assert import_environment({**a, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}) == import_environment(a)
    assert import_environment({**a, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}) != import_environment(a)
    assert import_environment({**a, "PATH": "/usr/bin"}) != import_environment(a)


def test_a_module_of_any_shared_tree_is_never_preloaded(tmp_path):
    # an installed `torch` stand-in, and arm B's tree with its own torch.py: B's
    # tests must import the tree's module, although A and B share a warm interpreter
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("ORIGIN = 'installed'\n")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (b / "torch.py").write_text("ORIGIN = 'tree'\n")
    test = "import os\nimport torch\n\ndef test_origin():\n    assert torch.ORIGIN == {!r}, torch.ORIGIN\n"
    (a / "test_origin.py").write_text(test.format("installed"))
    (b / "test_origin.py").write_text(test.format("tree"))
    said: list[str] = []
    r = run_ab(RunOptions(paths=["test_origin.py"], a_root=str(a), b_root=str(b), cwd=str(tmp_path), jobs=2,
                          env={"PYTHONPATH": str(site)}, progress=said.append))
    assert r.counts == {"same-pass": 1}, [(t.nodeid, t.a and t.a.message, t.b and t.b.message) for t in r.tests]
    assert any("not preloaded torch" in m for m in said), said


def test_no_fork_runs_the_mixed_suite_with_the_same_results(tmp_path):
    from test_ab_run import FIX as AB_FIX, make_repo, tree_digest

    def run(fork: bool):
        repo = make_repo(tmp_path / f"repo-{fork}", AB_FIX / "mixed" / "a", AB_FIX / "mixed" / "b")
        before = tree_digest(repo)
        r = run_ab(RunOptions(paths=["tests"], base="HEAD", cwd=str(repo), timeout=5.0, confirm=1, jobs=2,
                              fork=fork, env={"AB_FLAKY_STATE": str(tmp_path / f"flaky-{fork}")}))
        assert tree_digest(repo) == before
        return r

    warm, fresh = run(True), run(False)
    assert not any("warm interpreter" in str(w) for w in warm.warnings), warm.warnings

    def summary(r):
        # test_flaky's outcome depends on how many runs came before it (a shared counter)
        return {t.nodeid: (t.category, t.a and (t.a.outcome, t.a.signal, t.a.signature),
                           t.b and (t.b.outcome, t.b.signal, t.b.signature))
                for t in r.tests if "test_flaky" not in t.nodeid}

    assert summary(warm) == summary(fresh)
    assert warm.verdict == fresh.verdict == "REGRESSION"
    crash = next(t for t in warm.tests if t.nodeid == "tests/test_crash.py::test_crashes")
    assert (crash.category, crash.b.signal) == ("crash", "SIGABRT")
    assert warm.arm("B").crashes == fresh.arm("B").crashes == ["tests/test_crash.py::test_crashes"]
    hang = next(t for t in warm.tests if t.nodeid == "tests/test_hang.py::test_hang")
    assert (hang.a.outcome, hang.b.outcome) == ("timeout", "timeout")
    assert "--timeout 5s" in hang.b.message


def test_file_names_starting_with_a_dash_are_files_not_options(tmp_path):
    r = run_ab(RunOptions(paths=["-k_test.py", "-pplugin_test.py"], a_root=str(FIX / "dash" / "a"),
                          b_root=str(FIX / "dash" / "b"), cwd=str(tmp_path), jobs=2, confirm=1))
    rows = {t.nodeid: t for t in r.tests}
    assert set(rows) == {"-k_test.py::test_one", "-k_test.py::test_two", "-pplugin_test.py::test_plugin_file"}, \
        (rows, r.arm("B").collection_errors)
    assert rows["-k_test.py::test_one"].category == "same-pass"
    assert rows["-pplugin_test.py::test_plugin_file"].category == "same-pass"
    two = rows["-k_test.py::test_two"]
    assert two.category == "new-failure" and (two.a.reruns, two.b.reruns) == (["passed"], ["failed"])
    assert r.verdict == "REGRESSION"
    assert " ./-k_test.py ./-pplugin_test.py" in r.arm("B").command


def test_confirmation_reruns_a_files_discordant_tests_in_one_process_per_round(tmp_path):
    pids = tmp_path / "pids"
    r = run_ab(RunOptions(paths=["test_pair.py"], a_root=str(FIX / "batch" / "a"), b_root=str(FIX / "batch" / "b"),
                          cwd=str(tmp_path), jobs=2, confirm=2, env={"AB_PIDS": str(pids)}))
    rows = {t.nodeid: t for t in r.tests}
    for name in ("test_first", "test_second"):
        t = rows[f"test_pair.py::{name}"]
        assert t.category == "new-failure"
        assert (t.a.reruns, t.b.reruns) == (["passed", "passed"], ["failed", "failed"])
    runs: dict[str, dict[str, list[str]]] = {}
    for line in pids.read_text().split("\n"):
        if line:
            arm, name, pid = line.split()
            runs.setdefault(arm, {}).setdefault(name, []).append(pid)
    for arm in ("A", "B"):
        first, second = runs[arm]["first"], runs[arm]["second"]
        assert len(first) == len(second) == 3            # the file, then 2 confirmation rounds
        assert first == second                           # both tests in the same process each time
        assert len(set(first)) == 3


def test_thread_count_is_set_once_for_all_arms(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert thread_vars({}, {}, 2) == {"OMP_NUM_THREADS": "2"}
    assert thread_vars({}, {}, 8) == {"OMP_NUM_THREADS": "1"}
    assert thread_vars({}, {}, 1) == {}
    assert thread_vars({"OMP_NUM_THREADS": "3"}, {}, 2) == {}
    assert thread_vars({}, {"OMP_NUM_THREADS": "3"}, 2) == {}


def test_thread_count_is_reported_and_in_the_reproduction(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    r = run_ab(RunOptions(paths=["-pplugin_test.py"], a_root=str(FIX / "dash" / "a"), b_root=str(FIX / "dash" / "b"),
                          cwd=str(tmp_path), jobs=2))
    want = str(max(1, (os.cpu_count() or 1) // 2))
    assert r.env_set["OMP_NUM_THREADS"] == want
    for arm in r.arms:
        assert f"OMP_NUM_THREADS={want}" in arm.command


def test_preload_modules_lists_torch_imports_only(tmp_path):
    (tmp_path / "test_a.py").write_text(
        "import os\nimport torch\nfrom torch.testing._internal.common_utils import TestCase\n"
        "try:\n    import torch.ao.quantization as q\nexcept ImportError:\n    q = None\n"
        "def f():\n    import torch.nn.functional\n")
    (tmp_path / "test_b.py").write_text("from torch.testing._internal import common_device_type\nimport numpy\n")
    (tmp_path / "test_c.py").write_text("def broken(:\n")
    files = [tmp_path / n for n in ("test_a.py", "test_b.py", "test_c.py")]
    assert warm_plan(files).preload == ["torch", "torch.testing._internal.common_utils", "torch.ao.quantization",
                                      "torch.testing._internal", "torch.testing._internal.common_device_type"]
    assert warm_plan(files[2:]).preload == []


def test_the_server_takes_what_to_import_from_the_first_line_of_its_stdin(tmp_path):
    """The server starts before the runner has read the files: it imports pytest, then waits
    for the plan, the first line of its stdin; the end of stdin before a plan ends it."""
    support = tmp_path / "support"
    support.mkdir()
    script = install_server(support)
    env = {**os.environ, "PYTHONPATH": str(support)}
    for k in ("PYTHONPYCACHEPREFIX", "COVERAGE_PROCESS_START"):
        env.pop(k, None)
    planned = ForkServer(sys.executable, script, tmp_path, env, tmp_path / "planned.log")
    planned.send_plan(WarmPlan(preload=["json.decoder", "no_such_module_here"], warm_up=[]))
    hello = planned.ready(timeout=120)
    planned.close()
    # what the plan named: imported, or left out with the reason
    skipped = {"no_such_module_here": "not an installed module"}
    assert (hello["preloaded"], hello["skipped"], hello["unsafe"]) == (["json.decoder"], skipped, None), hello
    unplanned = subprocess.run([sys.executable, str(script), "--parent", str(os.getpid())], cwd=tmp_path, env=env,
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert (unplanned.returncode, unplanned.stdout) == (0, b""), unplanned.stderr[-2000:]


def test_stale_temp_roots_are_reaped_live_ones_kept(tmp_path):
    dead = tmp_path / "decouple-ab-dead"
    dead.mkdir()
    (dead / "arms").mkdir()
    lock = procs.claim_root(dead)
    os.close(lock)                                      # its run is gone
    live = tmp_path / "decouple-ab-live"
    live.mkdir()
    held = procs.claim_root(live)
    unknown = tmp_path / "decouple-ab-nolock"
    unknown.mkdir()
    other = tmp_path / "something-else"
    other.mkdir()
    try:
        assert procs.reap_stale_roots(tmp_path, "decouple-ab-") == [dead]
        assert not dead.exists() and live.exists() and unknown.exists() and other.exists()
    finally:
        os.close(held)
    assert procs.reap_stale_roots(tmp_path, "decouple-ab-") == [live]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:   # a zombie waiting for its reaper counts as dead
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@linux_only
@pytest.mark.parametrize("fork", [True, False], ids=["warm", "fresh"])
def test_sigkill_of_the_runner_kills_its_tests_and_the_next_run_reaps_its_root(tmp_path, fork):
    from test_ab_run import make_repo, tree_digest
    repo = make_repo(tmp_path / "repo", FIX / "sleep")
    before = tree_digest(repo)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    marker = tmp_path / "marker"
    env = {**os.environ, "TMPDIR": str(tmpdir), "AB_SLEEP_MARKER": str(marker),
           "PYTHONPATH": str(PROJECT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "codemod.cli.ab", "test_sleep.py", "--base", "HEAD", "-q", "-j", "2"]
    proc = subprocess.Popen(cmd + ([] if fork else ["--no-fork"]), cwd=repo, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not (marker.exists() and len(marker.read_text().split()) >= 2):
            assert proc.poll() is None and time.monotonic() < deadline, "the sleeping tests never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    pids = [int(p) for p in marker.read_text().split()]
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in pids)
    (root,) = [p for p in tmpdir.iterdir() if p.name.startswith("decouple-ab-")]   # no time to clean up
    assert tree_digest(repo) == before
    # the next run removes it
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "codemod.cli.ab", "test_ok.py", "--a-root", str(tmp_path / "a"),
                           "--b-root", str(tmp_path / "a")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"removed {root}" in done.stderr
    assert list(tmpdir.iterdir()) == []


def test_claim_root_is_released_by_the_kernel(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="decouple-ab-", dir=tmp_path))
    code = ("import sys, time; sys.path.insert(0, %r); from codemod.ab.execution import processes as procs; "
            "procs.claim_root(%r); print('ok', flush=True); time.sleep(600)") % (str(PROJECT), str(root))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ok"
        assert procs.reap_stale_roots(tmp_path, "decouple-ab-") == []
        child.kill()
        child.wait()
        assert procs.reap_stale_roots(tmp_path, "decouple-ab-") == [root]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@linux_only
def test_a_backend_that_initialises_on_import_means_fresh_processes(tmp_path):
    # a stand-in torch whose import loads an out-of-tree device backend (as torch_npu's
    # autoload does): forking it is not safe, so every file runs in a fresh process
    fake = tmp_path / "site"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("import torch_npu  # noqa: F401\nVALUE = 2\n")
    (fake / "torch_npu.py").write_text("INITIALISED = True\n")
    root = tmp_path / "t"
    root.mkdir()
    (root / "test_fake.py").write_text(
        "import os, sys\nimport torch\n\n"
        "def test_value():\n    assert torch.VALUE == 2\n\n"
        "def test_fresh_process():\n"
        "    with open(f'/proc/{os.getppid()}/cmdline', 'rb') as fh:\n"
        "        assert b'decouple_ab_server' not in fh.read()\n")
    r = run_ab(RunOptions(paths=["test_fake.py"], a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=2,
                          env={"PYTHONPATH": str(fake)}))
    assert r.counts == {"same-pass": 2}, [(t.nodeid, t.category, t.b and t.b.message) for t in r.tests]
    (warning,) = [w for w in r.warnings if w.code == "warm.given-up"]
    # A and B share one warm interpreter: one reason for both
    assert warning.reasons == [Notice("fork-unsafe.backend-imported", {"module": "torch_npu"}, arm="A+B")]
    assert str(warning) == ("no warm interpreter (arm A+B: torch_npu was imported (an out-of-tree device backend "
                            "initialises on import)): every file ran in a fresh process")


def test_fork_unsafe_reasons(monkeypatch):
    from codemod.target import forkserver
    monkeypatch.delitem(sys.modules, "torch_npu", raising=False)
    # pytest may run threads
    assert forkserver.fork_unsafe() in (None, {"code": "fork-unsafe.thread-started", "params": {}})
    monkeypatch.setitem(sys.modules, "torch_npu", object())
    assert forkserver.fork_unsafe() == {"code": "fork-unsafe.backend-imported", "params": {"module": "torch_npu"}}
    monkeypatch.delattr(os, "waitid")
    assert forkserver.fork_unsafe() == {"code": "fork-unsafe.no-waitid", "params": {}}
    monkeypatch.delattr(os, "fork")
    assert forkserver.fork_unsafe() == {"code": "fork-unsafe.no-fork", "params": {}}


@pytest.mark.parametrize("body, expect", [
    ("print('noise'); print(json.dumps({'torch_version': '9.9', 'no_such_fact': 1}))", ("9.9", "")),
    ("raise SystemExit('broken')", (None, "probe failed: ValueError: no answer (exit code 1): broken")),
    ("time.sleep(30)", (None, "probe timed out after 0.5 s")),
], ids=["answer", "failure", "timeout"])
def test_the_probe_records_its_answer_or_why_there_is_none(tmp_path, monkeypatch, body, expect):
    from codemod.ab.execution import envprobe
    monkeypatch.setattr(envprobe, "PROBE_TIMEOUT", 0.5)
    script = tmp_path / "probe.py"
    script.write_text(f"import json, time\n{body}\n")
    envr = envprobe.run_probe(sys.executable, script, dict(os.environ), tmp_path, nice=False)
    assert (envr.torch_version, envr.probe_error[: len(expect[1])]) == expect, envr.probe_error
    assert envr.executable == sys.executable


needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed here")


def _answer_probe(tmp_path: Path, test_body: str, conftest: str = "", exit_code: int = 0, **env: str) -> Path:
    """A pytest process with probe.py as its plugin, as an arm's test process runs it: the
    path of its answer (absent when it gave none)."""
    support = tmp_path / "support"
    support.mkdir(exist_ok=True)
    shutil.copy2(PROJECT / "codemod" / "target" / "probe.py", support / "decouple_ab_probe.py")
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_it.py").write_text(test_body)
    answer = tmp_path / "answer.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "decouple_ab_probe", "-p", "no:cacheprovider",
                           "test_it.py"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(support), "DECOUPLE_AB_PROBE": str(answer), **env})
    assert proc.returncode == exit_code, proc.stdout + proc.stderr
    return answer


@needs_torch
def test_a_test_process_answers_the_probe_once_with_the_state_from_before_its_tests(tmp_path):
    # (torch is imported only by the test processes: imported here, it would be in this
    # process's modules for the tests that follow)
    test = ("import json\nimport os\nimport torch\n\n\ndef test_sets():\n"
            "    os.environ['TORCH_SET_BY_A_TEST'] = '1'\n"
            "    q = torch.backends.quantized\n"
            "    before = str(q.engine)\n"
            "    others = [e for e in q.supported_engines if str(e) not in ('none', before)]\n"
            "    if others:\n"
            "        q.engine = others[0]\n"
            "    with open(os.environ['ENGINES'], 'w') as fh:\n"
            "        json.dump([before, str(q.engine)], fh)\n")
    engines = tmp_path / "engines.json"
    answer = _answer_probe(tmp_path, test, "import os\nos.environ['TORCH_SET_BY_A_CONFTEST'] = '1'\n",
                           TORCH_BEFORE="1", ENGINES=str(engines))
    facts = json.loads(answer.read_text())
    assert facts["variables"].get("TORCH_BEFORE") == "1"
    assert not {"TORCH_SET_BY_A_TEST", "TORCH_SET_BY_A_CONFTEST"} & set(facts["variables"])
    assert (facts["executable"], facts["python"]) == (sys.executable, platform.python_version())
    before, after = json.loads(engines.read_text())
    assert facts["quantized_engine"] == before, (before, after)
    # claimed once: a later process of the arm leaves the answer as it is
    _answer_probe(tmp_path, test, TORCH_BEFORE="2", ENGINES=str(engines))
    assert json.loads(answer.read_text()) == facts
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("answer")) == [
        "answer.json", "answer.json.claimed"]


@needs_torch
@pytest.mark.parametrize("test", [
    "def test_no_torch():\n    pass\n",
    "from unittest import mock\n\n\ndef test_leaves_a_mock():\n"
    "    mock.patch('torch.cuda.is_available', return_value=True).start()\n",
    "from unittest import mock\n\n\ndef test_leaves_a_mock():\n"
    "    mock.patch('torch.backends.mps.is_available', autospec=True, return_value=True).start()\n",
    "import torch\n\n\ndef test_replaces():\n    torch.accelerator.is_available = lambda: True\n",
], ids=["torch-not-imported", "a-mock-left", "an-autospecced-mock-left", "a-function-left"])
def test_a_test_process_does_not_answer_the_probe_from_what_is_not_the_machines(tmp_path, test):
    assert not _answer_probe(tmp_path, test).exists()


@needs_torch
def test_an_answer_that_hangs_ends_its_test_process_after_the_limit(tmp_path):
    hang = ("import time\nimport decouple_ab_probe\n\ndecouple_ab_probe.ANSWER_LIMIT = 1\n"
            "decouple_ab_probe.guarded_probe = lambda environ: time.sleep(600)\n")
    t = time.monotonic()
    answer = _answer_probe(tmp_path, "import torch\n\n\ndef test_x():\n    pass\n", hang, exit_code=1)
    assert not answer.exists() and time.monotonic() - t < 300


def test_when_no_test_process_answers_the_probe_a_process_of_its_own_does(tmp_path, monkeypatch):
    from codemod.ab.execution import envprobe
    root = tmp_path / "t"
    root.mkdir()
    # the test process ends before pytest's own end, where a test process answers the probe
    (root / "test_gone.py").write_text("import os\n\n\ndef test_gone():\n    os._exit(0)\n")
    asked = []
    real = envprobe.run_probe
    monkeypatch.setattr(envprobe, "run_probe", lambda *a, **k: asked.append(a) or real(*a, **k))
    r = run_ab(RunOptions(paths=["test_gone.py"], a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=1,
                          fork=False, confirm=0))
    assert len(asked) == 1
    assert r.environment.platform == platform.platform(), r.environment  # a fact only the probe gives
