"""Benchmark `decouple apply` against a plain LibCST codemod doing the same job.

    python scripts/bench_codemod.py [--corpus stdlib|generated|both] [--jobs 2] [--no-baseline]

For each corpus it copies the .py files to scratch folders and times, with the same job count:
  decouple apply --check   (unlabelled tree)        decouple apply --diff
  decouple apply           (labels the tree)        decouple apply --check (labelled tree)
  python -m libcst.tool codemod -x --no-format      (scripts/libcst_baseline.py), then again
                                                    on its own labelled result
and prints the ratios the goals are stated in (apply >= 5x faster than the baseline; --check on a
labelled tree >= 20x faster than the baseline's re-run) plus the peak memory of the largest process.
The baseline takes minutes on the stdlib corpus: that is the point.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)


def py_files(root: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".py"))


def copy_tree(src: str, dst: str) -> list[str]:
    files = []
    for path in py_files(src):
        target = os.path.join(dst, os.path.relpath(path, src))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(path, target)
        files.append(target)
    return files


def timed(argv: list[str], env: dict | None = None) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) of the largest process in the tree, exit code."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, proc.returncode


def bench(name: str, src: str, jobs: int, baseline: bool) -> None:
    print(f"\n== {name}: {src}")
    with tempfile.TemporaryDirectory() as tmp:
        ours = copy_tree(src, os.path.join(tmp, "ours"))
        size = sum(os.path.getsize(p) for p in ours) / 1e6
        print(f"{len(ours)} files, {size:.1f} MB, {jobs} jobs")
        decouple = [os.path.join(BIN, "decouple"), "apply", "-j", str(jobs)]
        rows = {}
        for label, extra in (("check (unlabelled)", ["--check"]), ("diff", ["--diff"]),
                             ("apply", []), ("check (labelled)", ["--check"])):
            rows[label] = timed(decouple + extra + ours)
            print(f"decouple {label:<20} {rows[label][0]:7.1f} s  peak {rows[label][1]:5.0f} MB  exit {rows[label][2]}")
        if not baseline:
            return
        theirs = copy_tree(src, os.path.join(tmp, "theirs"))
        env = dict(os.environ, PYTHONPATH=HERE)
        # `--jobs=N` in one word: libcst.tool's parser takes `-j N` for the command name.
        cmd = [sys.executable, "-m", "libcst.tool", "codemod", "-x", "--no-format", "--hide-progress",
               f"--jobs={jobs}", "libcst_baseline.AddHwLabel", *theirs]
        base = timed(cmd, env)
        print(f"libcst codemod (label)        {base[0]:7.1f} s  peak {base[1]:5.0f} MB  exit {base[2]}")
        rerun = timed(cmd, env)
        print(f"libcst codemod (re-run)       {rerun[0]:7.1f} s  peak {rerun[1]:5.0f} MB  exit {rerun[2]}")
        print(f"ratio apply:   baseline / decouple = {base[0] / rows['apply'][0]:6.1f}x   (goal >= 5x)")
        print(f"ratio --check: baseline re-run / decouple check (labelled) = "
              f"{rerun[0] / rows['check (labelled)'][0]:6.1f}x   (goal >= 20x)")
        peak = max(r[1] for r in rows.values())
        print(f"peak memory of decouple: {peak:.0f} MB   (goal < 300 MB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", choices=["stdlib", "generated", "both"], default="both")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--files", type=int, default=600, help="files in the generated corpus")
    ap.add_argument("--no-baseline", action="store_true", help="skip the (slow) LibCST baseline")
    args = ap.parse_args()
    if args.corpus in ("stdlib", "both"):
        stdlib = os.path.join(sysconfig.get_paths()["stdlib"], "test")
        if os.path.isdir(stdlib):
            bench("stdlib test suite", stdlib, args.jobs, not args.no_baseline)
        else:
            print(f"stdlib test suite not found at {stdlib}: skipped")
    if args.corpus in ("generated", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, os.path.join(HERE, "make_corpus.py"), tmp, "--files", str(args.files)],
                           check=True)
            bench("generated PyTorch-shaped tree", tmp, args.jobs, not args.no_baseline)


if __name__ == "__main__":
    main()
