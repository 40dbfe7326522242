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
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from survey_tree import ALLOWLIST, bench_counts, make_tree  # noqa: E402


def timed(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in (0, 1, 2):  # classify exits 2 for the tree's syntax-error files
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return time.perf_counter() - start


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
        decouple = [sys.executable, "-m", "codemod"]
        common = ["-q", "-j", str(args.jobs), "--linter", args.linter]
        env = dict(os.environ)
        times: dict[str, list[float]] = {"classify": [], "survey cold": [], "survey warm": []}
        for n in range(args.rounds):
            cache = os.path.join(tmp, f"cache-{n}")
            env["DECOUPLE_CACHE_DIR"] = cache
            classify = [*decouple, "classify", "--from-allowlist", ALLOWLIST, "--format", "json", *common]
            survey = [*decouple, "survey", "--json", os.path.join(tmp, "survey.json"), *common]
            times["classify"].append(timed(classify, root, env))
            times["survey cold"].append(timed(survey, root, env))
            times["survey warm"].append(timed(survey, root, env))
            print(f"round {n + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
        med = {k: statistics.median(v) for k, v in times.items()}
        per_file = {k: 1000 * v / len(tree.kinds) for k, v in med.items()}
        print("median: " + ", ".join(f"{k} {v:.2f} s ({per_file[k]:.1f} ms/file)" for k, v in med.items()))
        print(f"survey / classify: {med['survey cold'] / med['classify']:.2f}  (goal <= 1.5)")
        print(f"warm / cold:       {med['survey warm'] / med['survey cold']:.2f}  (goal <= 0.3)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
