"""Benchmark the allowlist at campaign scale: is its handling linear in its size?

    python scripts/bench_allowlist.py [--sizes 1000,20000,300000] [--commands apply,refactor]

Makes a git checkout with two test files and, per size N, an allowlist of those two and N stale
entries (half in test/, which exists, half in 500 folders that do not), commits it, and times
each command over it:

  apply     decouple apply --check --linter off --no-cache --from-allowlist A
  survey    decouple survey --linter off --no-cache --from-allowlist A
  refactor  decouple refactor --dry-run --linter off --from-allowlist A

It prints the seconds, the microseconds per entry above the smallest size's run (the start-up
and the two real files cancel out) and that figure's ratio to the next smaller size's: about 1
when linear, N/M when quadratic. No test asserts them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "apply": ["apply", "--check", "--linter", "off", "--no-cache"],
    "survey": ["survey", "--linter", "off", "--no-cache"],
    "refactor": ["refactor", "--dry-run", "--linter", "off"],
}
SOURCE = (
    "from torch.testing._internal.common_utils import TestCase\n\n\n"
    "class TestA(TestCase):\n    def test_a(self):\n        pass\n"
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def checkout(root: str, sizes: list[int]) -> None:
    os.makedirs(os.path.join(root, "test"))
    for name in ("test_a.py", "test_b.py"):
        with open(os.path.join(root, "test", name), "w", encoding="utf-8") as f:
            f.write(SOURCE)
    for n in sizes:
        stale = [f"test/test_gone_{i}.py" if i % 2 else f"test/gone{i % 500}/test_{i}.py" for i in range(n)]
        with open(os.path.join(root, f"allow{n}.json"), "w", encoding="utf-8") as f:
            json.dump(["test/test_a.py", *stale, "test/test_b.py"], f, indent=2)
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)


def timed(argv: list[str], cwd: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,20000,300000")
    parser.add_argument("--commands", default="apply,survey,refactor")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="decouple-bench-allowlist-") as tmp:
        root = os.path.join(tmp, "pytorch")
        checkout(root, sizes)
        for command in args.commands.split(","):
            base: tuple[int, float] | None = None
            previous: float | None = None
            for n in sizes:
                seconds = timed(
                    [sys.executable, "-m", "codemod", *COMMANDS[command], "--from-allowlist", f"allow{n}.json"], root
                )
                line = f"{command:9} {n:>8,} entries  {seconds:7.2f} s"
                if base is None:
                    base = (n, seconds)
                else:
                    per_entry = (seconds - base[1]) / (n - base[0]) * 1e6
                    line += f"  {per_entry:7.1f} us/entry"
                    if previous is not None:
                        line += f"  x{per_entry / previous:.2f} of the smaller size's"
                    previous = per_entry
                print(line, flush=True)


if __name__ == "__main__":
    main()
