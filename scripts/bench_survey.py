"""Benchmark `decouple survey` against `decouple classify` of the same files.

    python scripts/bench_survey.py [--files 1200] [--jobs 2] [--rounds 3] [--linter auto|off]

Generates a PyTorch-shaped checkout (tests/survey_tree.py: folders, owners, a stand-in linter,
an allowlist that shrank over four commits; a mix like the real allowlist's: about three
quarters one refactor away, a tenth restructured, the rest manual or broken) and times, each
round in turn and with the same job count:

  decouple classify --from-allowlist ALLOWLIST      (the floor: the label analysis and the gate)
  decouple survey                (cold: an empty cache)
  decouple survey                (warm: nothing changed since the cold run)

It prints the medians and the two ratios the goals are stated in: survey / classify (goal at
most 1.5) and warm / cold (goal at most 0.3). No test asserts them.

Wall-clock time on a shared machine swings with the load (the same run took 18 s and 52 s), and
it hides what many cores expose: work the command's own process does alone (reading, hashing,
the selection, the gate's runs, the cache) does not shrink with `-j`. So each run also records
CPU time: the command's own process (`main`, measured inside it) and its workers and linters
(`workers`: every child's, minus main's). The median CPU seconds, and the ratio a machine of N
cores would see (main + workers / N, each command alike), are printed too; they move little
with the load.
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
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from survey_tree import ALLOWLIST, bench_counts, make_tree  # noqa: E402

# `python -c LAUNCH OUT decouple-args...`: runs `decouple` and, at its exit, writes the CPU seconds
# of its own process to OUT (the workers end with os._exit: they never run it).
LAUNCH = (
    "import atexit, json, resource, runpy, sys\n"
    "out = sys.argv.pop(1)\n"
    "def own():\n"
    "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    with open(out, 'w') as f:\n"
    "        json.dump(r.ru_utime + r.ru_stime, f)\n"
    "atexit.register(own)\n"
    "runpy.run_module('codemod', run_name='__main__', alter_sys=True)\n"
)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(args: list[str], cwd: str, env: dict[str, str], scratch: str) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of decouple's own process, CPU seconds of its children)."""
    own = os.path.join(scratch, "own-cpu.json")
    argv = [sys.executable, "-c", LAUNCH, own, *args]
    before = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1, 2):  # classify exits 2 for the tree's syntax-error files
        raise SystemExit(f"decouple {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    total = _children_cpu() - before
    with open(own) as f:
        main = json.load(f)
    return wall, main, total - main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--linter", default="auto", help="the gate of both commands (auto: the stand-in linter)")
    ap.add_argument("--keep", help="generate the tree here and keep it")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="decouple-bench-survey-")
    root = args.keep or os.path.join(tmp, "pytorch")
    try:
        tree = make_tree(root, bench_counts(args.files), size=(5, 20))
        size = sum(os.path.getsize(os.path.join(root, p)) for p in tree.kinds) / 1e6
        print(f"{len(tree.kinds)} test files ({size:.1f} MB) in {root}; {args.jobs} jobs, gate {args.linter}")
        common = ["-q", "-j", str(args.jobs), "--linter", args.linter]
        env = dict(os.environ)
        runs = ("classify", "survey cold", "survey warm")
        times: dict[str, list[tuple[float, float, float]]] = {k: [] for k in runs}
        for n in range(args.rounds):
            cache = os.path.join(tmp, f"cache-{n}")
            env["DECOUPLE_CACHE_DIR"] = cache
            classify = ["classify", "--from-allowlist", ALLOWLIST, "--format", "json", *common]
            survey = ["survey", "--json", os.path.join(tmp, "survey.json"), *common]
            times["classify"].append(timed(classify, root, env, tmp))
            times["survey cold"].append(timed(survey, root, env, tmp))
            times["survey warm"].append(timed(survey, root, env, tmp))
            print(
                f"round {n + 1}: "
                + ", ".join(
                    f"{k} {v[-1][0]:.2f} s (cpu: main {v[-1][1]:.2f} s, workers {v[-1][2]:.2f} s)"
                    for k, v in times.items()
                ),
                flush=True,
            )
        med = {k: statistics.median(t[0] for t in v) for k, v in times.items()}
        main = {k: statistics.median(t[1] for t in v) for k, v in times.items()}
        workers = {k: statistics.median(t[2] for t in v) for k, v in times.items()}
        per_file = {k: 1000 * v / len(tree.kinds) for k, v in med.items()}
        print("median: " + ", ".join(f"{k} {v:.2f} s ({per_file[k]:.1f} ms/file)" for k, v in med.items()))
        print("median cpu: " + ", ".join(f"{k} main {main[k]:.2f} s + workers {workers[k]:.2f} s" for k in runs))
        print(f"survey / classify: {med['survey cold'] / med['classify']:.2f}  (goal <= 1.5)")
        print(f"warm / cold:       {med['survey warm'] / med['survey cold']:.2f}  (goal <= 0.3)")
        for cores in (args.jobs, 8, 32):

            def cpu_wall(k: str, n: int = cores) -> float:
                return main[k] + workers[k] / n

            print(
                f"from cpu, on {cores} cores: survey / classify {cpu_wall('survey cold') / cpu_wall('classify'):.2f}, "
                f"warm / cold {cpu_wall('survey warm') / cpu_wall('survey cold'):.2f}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
