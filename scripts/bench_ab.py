#!/usr/bin/env python
"""Benchmark `decouple ab` against running both arms by hand.

1. Generates a suite (FILES files x TESTS tests, each test burning WORK_MS of
   CPU) in a temporary git repository: HEAD = arm A, the work tree = arm B
   (every file shifted by a few lines, same outcomes).
2. Times the two plain pytest commands one after the other (what a human
   does: check out A, run pytest; check out B, run pytest) and
   `decouple ab PATHS --base HEAD`, and prints the ratio (goal <= 0.6 on two
   cores).
3. Measures the capture overhead: the same pytest process with and without
   the capture plugin, on the generated suite and on many empty tests (per
   test cost), goal <= 5 %.
4. Measures the two ways of materialising arm A (git cat-file, git archive).

With --torch, instead: the real-torch workload of tests/fixtures/ab/torchbench
(a quantized-engine test, a whole-module torch.save/torch.load test that arm B
fixes, a device-instantiated test class, a file with a segfaulting test; arm B
adds hw_classification labels), run by `decouple ab` with one diagnostic arm
(TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1) and --confirm 2, against the three plain
pytest runs of the same arms one after the other (A, B, the diagnostic arm).
Cold = the first run with an empty decouple cache folder, warm = a second run (since the arms keep
nothing between runs, and read the environment's own bytecode, the two should cost the same);
--no-fork is timed too (fresh interpreter per process).
The plain run of a file stops at the segfault (pytest dies), so the plain
baseline runs fewer tests than `decouple ab`: the ratio is conservative.

With --scale N, instead: N generated files, each a common_utils.TestCase class with two
cheap tests (what most allowlisted files look like to the runner), arm A unlabelled, arm B
labelled with hw_classification; the plain baseline is one pytest process per arm over
the directory, A then B.  Printed: the ratio (cold: round 1, from an empty decouple cache, as on a
fresh machine, CI runner, container or venv; warm: the median of the other rounds), the wall time
per file of both, what a file
costs beyond its tests in decouple's run (its file time minus its tests' durations,
median and 90th percentile), and the peak memory of decouple's process tree (the warm
interpreter and its children, or the packed sessions): the sum of their PSS (shared pages
counted once, split between the processes that share them) and of their RSS.  With
--backend the simulated out-of-tree backend of tests/fixtures/npu_backend is installed
into a throwaway venv over --python's (tests/npu_env.py) and both runs use it: the warm
interpreter refuses to fork and each arm runs packed.  --pack / --no-pack run decouple ab with it
(from 8 files on the default packs the files; --no-pack forks a process per file).  decouple's own
process keeps its bytecode (PYTHONDONTWRITEBYTECODE is dropped for it, as an install has it), and
the ratios are timed without the memory sampler (a run of its own).

Usage: python scripts/bench_ab.py [--files 6] [--tests 25] [--work-ms 100]
       [--repeat 2] [--python PATH] [--jobs N]
       python scripts/bench_ab.py --torch [--python PATH] [--jobs N] [--repeat 1]
       python scripts/bench_ab.py --scale 24 [--backend] [--pack|--no-pack] [--python PATH] [--jobs N] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from codemod.ab.arms import sources as _arms  # noqa: E402
from codemod.ab.arms.materialise import materialise_git  # noqa: E402
from codemod.ab.arms.trees import make_selection  # noqa: E402

TEST_TEMPLATE = '''{shift}import time


def _burn(ms):
    end = time.process_time() + ms / 1000.0
    x = 0
    while time.process_time() < end:
        x += 1
    return x

{tests}
'''


def generate(root: Path, files: int, tests: int, work_ms: float, shift: str = "") -> list[str]:
    (root / "tests").mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(files):
        body = "\n\n".join(f"def test_{j}():\n    assert _burn({work_ms}) >= 0" for j in range(tests))
        path = root / "tests" / f"test_gen_{i:02d}.py"
        path.write_text(TEST_TEMPLATE.format(shift=shift, tests=body))
        names.append(f"tests/test_gen_{i:02d}.py")
    return names


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


CPU = {"last": 0.0}


def tool_env(**extra: str) -> dict:
    """The environment of decouple's own process: the tool's bytecode kept, as an install has it
    (with PYTHONDONTWRITEBYTECODE set in the calling shell every run compiled the tool again,
    about 0.2 s; the arms' processes get their environment from the runner either way)."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(cmd: list[str], cwd: Path, env: dict | None = None, ok: tuple = (0, 1)) -> float:
    """Wall seconds; the CPU seconds of the command are left in CPU['last']."""
    c = _children_cpu()
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t
    CPU["last"] = _children_cpu() - c
    if proc.returncode not in ok:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return dt


def median(values: list[float]) -> float:
    return statistics.median(values)


TORCH_BENCH = PROJECT / "tests" / "fixtures" / "ab" / "torchbench"
DIAG = "weights:TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def torch_bench(args) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-ab-torch-"))
    try:
        repo = tmp / "repo"
        shutil.copytree(TORCH_BENCH / "a", repo)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "A")
        a_copy = tmp / "a"
        shutil.copytree(repo, a_copy, ignore=shutil.ignore_patterns(".git"))
        shutil.copytree(TORCH_BENCH / "b", repo, dirs_exist_ok=True)
        files = sorted(p.name for p in repo.glob("test_*.py"))
        print(f"real-torch workload: {len(files)} files ({', '.join(files)}), arms A, B and diagnostic "
              f"{DIAG.split(':')[0]}; python {args.python}; -j {args.jobs}")
        print(f"before: {load()}")

        env = {k: v for k, v in os.environ.items() if k not in _arms.UNSET_VARS}
        env.update({**_arms.FIXED_VARS, "PYTHONDONTWRITEBYTECODE": "1"})
        plain_cmd = [args.python, "-m", "pytest", "-q", *_arms.PYTEST_ARGS, *files]
        diag_env = {**env, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
        ab_env = tool_env()
        ab_cmd = [sys.executable, "-m", "codemod.cli.ab", ".", "--base", "HEAD", "-q", "--python", args.python,
                  "-j", str(args.jobs), "--diag", DIAG, "--confirm", "2"]

        def plain_once() -> float:
            # the segfault ends each plain session (exit -SIGSEGV)
            crash = (0, 1, -11)
            return (timed(plain_cmd, a_copy, env, crash) + timed(plain_cmd, repo, env, crash)
                    + timed(plain_cmd, a_copy, diag_env, crash))

        def ours(cache: Path, extra: list[str] = ()) -> float:
            return timed(ab_cmd + list(extra), repo, {**ab_env, "DECOUPLE_CACHE_DIR": str(cache)})

        rows = []
        for k in range(args.repeat):
            plain = plain_once()
            cache = tmp / f"cache{k}"
            cold = ours(cache)
            warm = ours(cache)
            no_fork = ours(cache, ["--no-fork"])
            rows.append((plain, cold, warm, no_fork))
            print(f"round {k + 1}: plain A+B+diag {plain:6.1f} s | decouple ab cold {cold:6.1f} s "
                  f"({cold / plain:.2f}), warm {warm:6.1f} s ({warm / plain:.2f}), warm --no-fork "
                  f"{no_fork:6.1f} s ({no_fork / plain:.2f})   [{load()}]")
        p = median([r[0] for r in rows])
        for label, i in (("cold", 1), ("warm", 2), ("warm --no-fork", 3)):
            o = median([r[i] for r in rows])
            print(f"ratio decouple/plain, {label:15s}: {o / p:5.2f}   ({o:.1f} s vs {p:.1f} s; goal <= 0.60 cold)")
        print(f"after: {load()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


SCALE_TEST = """from torch.testing._internal.common_utils import {imports}


class TestScale{i}(TestCase):
{label}    def test_add(self):
        self.assertEqual(torch.ones(2) + 1, torch.full((2,), 2.0))

    def test_sum(self):
        self.assertEqual(torch.arange(4).sum().item(), 6)


if __name__ == "__main__":
    run_tests()
"""


def scale_suite(root: Path, n: int, labelled: bool) -> None:
    (root / "test").mkdir(parents=True, exist_ok=True)
    imports = ("HardwareClassification, " if labelled else "") + "TestCase, run_tests\nimport torch"
    label = "    hw_classification = HardwareClassification.GENERIC\n\n" if labelled else ""
    for i in range(n):
        text = SCALE_TEST.format(imports=imports, i=i, label=label)
        (root / "test" / f"test_scale_{i:04d}.py").write_text(text)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _memory(pids: list[int]) -> tuple[int, int]:
    """(sum of PSS, sum of RSS) in kB of `pids` (Linux)."""
    pss = rss = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1])
        except OSError:
            continue
    return pss, rss


def timed_tree(cmd: list[str], cwd: Path, env: dict) -> tuple[float, int, int, int]:
    """Wall seconds, peak PSS and RSS (kB) of the process tree, peak number of processes; the
    tree's CPU seconds are left in CPU['last']."""
    c = _children_cpu()
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0, 0, 0]

    def sample() -> None:
        while proc.poll() is None:
            pids = _descendants(proc.pid)
            pss, rss = _memory(pids)
            peak[:] = [max(peak[0], pss), max(peak[1], rss), max(peak[2], len(pids))]
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    dt = time.perf_counter() - t
    CPU["last"] = _children_cpu() - c
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"decouple ab failed ({proc.returncode}):\n{out.decode()[-3000:]}\n{err.decode()[-3000:]}")
    return dt, peak[0], peak[1], peak[2]


def _beyond_tests(durations: Path) -> list[float]:
    """Per file: its time in the run minus its tests' durations."""
    data = json.loads(durations.read_text())
    tests: dict[str, float] = {}
    for nodeid, seconds in data["tests"].items():
        tests[nodeid.split("::")[0]] = tests.get(nodeid.split("::")[0], 0.0) + seconds
    return sorted(max(0.0, seconds - tests.get(f, 0.0)) for f, seconds in data["files"].items())


def _pack_flag(pack: bool) -> str:
    return "--pack" if pack else "--no-pack"


def scale_bench(args) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-ab-scale-"))
    try:
        python = args.python
        if args.backend:
            sys.path.insert(0, str(PROJECT / "tests"))
            from npu_env import npu_python

            python = npu_python(args.python, tmp)
        repo = tmp / "repo"
        scale_suite(repo, args.scale, labelled=False)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "A")
        a_copy = tmp / "a"
        shutil.copytree(repo, a_copy, ignore=shutil.ignore_patterns(".git"))
        scale_suite(repo, args.scale, labelled=True)
        print(f"scale: {args.scale} files x 2 tests (common_utils.TestCase), arm A unlabelled, arm B labelled; "
              f"python {python}{' (simulated npu backend)' if args.backend else ''}; -j {args.jobs}"
              f"{'' if args.pack is None else '; decouple ab ' + _pack_flag(args.pack)}")
        print(f"before: {load()}")
        env = {k: v for k, v in os.environ.items() if k not in _arms.UNSET_VARS}
        env.update({**_arms.FIXED_VARS, "PYTHONDONTWRITEBYTECODE": "1"})
        plain_cmd = [python, "-m", "pytest", "-q", *_arms.PYTEST_ARGS, "test"]
        durations = tmp / "durations.json"
        ab_cmd = [sys.executable, "-m", "codemod.cli.ab", "test", "--base", "HEAD", "-q", "--python", python,
                  "-j", str(args.jobs), "--durations-out", str(durations), *([] if args.pack is None else [_pack_flag(args.pack)])]
        ab_env = tool_env(DECOUPLE_CACHE_DIR=str(tmp / "cache"))
        rows = []
        for k in range(args.repeat):
            plain = timed(plain_cmd, a_copy, env)
            plain_cpu = CPU["last"]
            plain += timed(plain_cmd, repo, env)
            plain_cpu += CPU["last"]
            # timed alone: sampling /proc/PID/smaps_rollup walks the page tables of every process
            # (about 800 MB each) four times a second and slowed the run it measured
            ours = timed(ab_cmd, repo, ab_env, ok=(0,))
            rows.append((plain, ours, _beyond_tests(durations)))
            print(f"round {k + 1}: plain A+B {plain:6.1f} s | decouple ab {ours:6.1f} s ({ours / plain:.2f}); "
                  f"CPU {plain_cpu:.1f} s / {CPU['last']:.1f} s   [{load()}]")
        _, pss, rss, procs = timed_tree(ab_cmd, repo, ab_env)  # one more run, for its memory only
        # round 1 starts from an empty decouple cache (what a fresh machine has); the others follow it
        warm = rows[1:] or rows
        p, o = median([r[0] for r in warm]), median([r[1] for r in warm])
        ratio = median([r[1] / r[0] for r in warm])
        beyond = rows[-1][2]
        print(f"ratio decouple/plain, cold      : {rows[0][1] / rows[0][0]:5.2f}   (round 1: an empty decouple cache; "
              f"goal <= 0.70 with --backend)")
        print(f"ratio decouple/plain, warm      : {ratio:5.2f}   (median of the ratios of {len(warm)} round(s); "
              f"medians {o:.1f} s vs {p:.1f} s for {args.scale} files; goal <= 0.60 at 24 files (0.70 with --backend), "
              f"<= 0.50 at 300)")
        print(f"wall per file                   : decouple {o / args.scale * 1000:.0f} ms, "
              f"plain {p / args.scale * 1000:.0f} ms (both arms)")
        print(f"a file beyond its tests (run)   : median {statistics.median(beyond) * 1000:.0f} ms, 90th percentile "
              f"{beyond[int(0.9 * (len(beyond) - 1))] * 1000:.0f} ms (goal <= 200 ms)")
        print(f"peak memory (decouple's tree)   : {pss / 1024:.0f} MB PSS, {rss / 1024:.0f} MB RSS, "
              f"at most {procs} processes (a run of its own, sampled from /proc)")
        print(f"after: {load()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=6)
    ap.add_argument("--tests", type=int, default=25)
    ap.add_argument("--work-ms", type=float, default=100.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--torch", action="store_true", help="the real-torch workload (see above)")
    ap.add_argument("--scale", type=int, default=0, help="N generated common_utils.TestCase files (see above)")
    ap.add_argument("--backend", action="store_true", help="with --scale: the simulated out-of-tree backend")
    ap.add_argument("--pack", action=argparse.BooleanOptionalAction, default=None,
                    help="with --scale: decouple ab --pack / --no-pack (default: neither)")
    args = ap.parse_args()
    # the runs start in temporary folders: a relative --python (.venv/bin/python) would name nothing there
    args.python = os.path.abspath(shutil.which(args.python) or args.python)
    if args.torch:
        return torch_bench(args)
    if args.scale:
        return scale_bench(args)

    tmp = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    try:
        repo = tmp / "repo"
        files = generate(repo, args.files, args.tests, args.work_ms)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "A")
        a_copy = tmp / "a"
        shutil.copytree(repo, a_copy, ignore=shutil.ignore_patterns(".git"))
        generate(repo, args.files, args.tests, args.work_ms, shift="# B\n# shifted\n")
        n_tests = args.files * args.tests
        print(f"suite: {args.files} files x {args.tests} tests x {args.work_ms:g} ms CPU = "
              f"{n_tests} tests, ~{n_tests * args.work_ms / 1000:.1f} s of work per arm; "
              f"{os.cpu_count()} cores, -j {args.jobs}")

        env = {k: v for k, v in os.environ.items() if k not in _arms.UNSET_VARS}
        env.update({**_arms.FIXED_VARS, "PYTHONDONTWRITEBYTECODE": "1"})
        plain_cmd = [args.python, "-m", "pytest", "-q", *_arms.PYTEST_ARGS, *files]
        ab_cmd = [sys.executable, "-m", "codemod.cli.ab", "tests", "--base", "HEAD", "-q",
                  "--python", args.python, "-j", str(args.jobs)]
        ab_env = tool_env()

        plain, ours, plain_cpu, ours_cpu = [], [], [], []
        for _ in range(args.repeat):
            wall = timed(plain_cmd, a_copy, env)
            cpu = CPU["last"]
            plain.append(wall + timed(plain_cmd, repo, env))
            plain_cpu.append(cpu + CPU["last"])
            ours.append(timed(ab_cmd, repo, ab_env))
            ours_cpu.append(CPU["last"])
        p, o = median(plain), median(ours)
        print(f"plain pytest, arm A then arm B : {p:7.2f} s (median of {args.repeat}: "
              + ", ".join(f"{x:.2f}" for x in plain) + ")")
        print(f"decouple ab                    : {o:7.2f} s (median of {args.repeat}: "
              + ", ".join(f"{x:.2f}" for x in ours) + ")")
        print(f"ratio decouple/plain           : {o / p:7.2f}   (goal <= 0.60)")
        print(f"CPU seconds (user+sys)         : plain {median(plain_cpu):.2f}, decouple {median(ours_cpu):.2f} "
              f"(the ratio can only approach 1/cores when the cores are otherwise idle; "
              f"load average now {os.getloadavg()[0]:.2f})")

        # capture overhead: same process, plugin on/off
        support = tmp / "support"
        support.mkdir()
        shutil.copy2(PROJECT / "codemod" / "target" / "plugin.py", support / "decouple_ab_plugin.py")
        penv = dict(env)
        penv["PYTHONPATH"] = str(support) + os.pathsep + env.get("PYTHONPATH", "")
        tiny = tmp / "tiny"
        tiny.mkdir()
        n_tiny = 2000
        (tiny / "test_tiny.py").write_text("import pytest\n\n@pytest.mark.parametrize('i', range(%d))\n"
                                           "def test_t(i):\n    pass\n" % n_tiny)

        # measured in CPU seconds of the pytest process (wall time on a shared
        # machine is too noisy for a few-percent effect); fsync waits are
        # not CPU, so their wall cost is shown separately
        def cpu_of(cmd: list[str], cwd: Path, e: dict) -> tuple[float, float]:
            wall = timed(cmd, cwd, e)
            return CPU["last"], wall

        def with_plugin(cwd: Path, targets: list[str], mode: str) -> tuple[float, float]:
            e = dict(penv)
            e["DECOUPLE_AB_EVENTS"] = str(tmp / f"events-{time.monotonic_ns()}.jsonl")
            e["DECOUPLE_AB_FSYNC"] = mode
            return cpu_of([args.python, "-m", "pytest", "-q", "-p", "decouple_ab_plugin", *_arms.PYTEST_ARGS, *targets], cwd, e)

        for label, cwd, targets, n in (("generated suite", a_copy, files, n_tests),
                                       (f"{n_tiny} empty tests", tiny, ["test_tiny.py"], n_tiny)):
            runs = [cpu_of([args.python, "-m", "pytest", "-q", *_arms.PYTEST_ARGS, *targets], cwd, env)
                    for _ in range(args.repeat)]
            base, base_wall = median([r[0] for r in runs]), median([r[1] for r in runs])
            for mode in ("none", "start", "all"):
                pr = [with_plugin(cwd, targets, mode) for _ in range(args.repeat)]
                plug, plug_wall = median([r[0] for r in pr]), median([r[1] for r in pr])
                print(f"capture overhead, {label:16s} fsync={mode:5s}: CPU {plug - base:+6.2f} s "
                      f"({(plug - base) / base * 100:+5.1f} %, {(plug - base) / n * 1e6:+6.0f} us/test); "
                      f"wall {(plug_wall - base_wall) / base_wall * 100:+5.1f} %")

        # materialising arm A
        sel = make_selection(["tests"], repo, repo)
        t_cat = []
        t_arch = []
        for k in range(args.repeat):
            d1, d2 = tmp / f"cat{k}", tmp / f"arch{k}"
            t = time.perf_counter()
            materialise_git(repo, "HEAD", sel, d1)
            t_cat.append(time.perf_counter() - t)
            d2.mkdir()
            t = time.perf_counter()
            subprocess.run(f"git archive HEAD tests | tar -x -C {d2}", shell=True, cwd=repo, check=True)
            t_arch.append(time.perf_counter() - t)
        print(f"materialise A: git ls-tree + cat-file {median(t_cat) * 1000:.0f} ms, "
              f"git archive | tar {median(t_arch) * 1000:.0f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
