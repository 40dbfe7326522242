"""Count the instructions `decouple` executes per file: a before/after measure that load cannot move.

    python scripts/bench_instructions.py [--files 100] [--apply-files 30] [--checkout PATH ...]

On this shared machine wall-clock times move by 20-30% between runs of the same code, more than
most single changes save. valgrind's callgrind counts the machine instructions a process executes,
the same on every run. For each checkout (default: this one) it counts, in fresh interpreters:

  check (labelled)   the engine's `apply --check` of each file of a labelled generated tree
                     (scripts/make_corpus.py, labelled by this checkout's `apply`)
  apply              the same engine on the unlabelled files: each output made and verified
                     (LibCST's parse included), as `apply` does, without writing
  ast.parse          reading and parsing each labelled file, nothing else: the floor of a check

Each figure is (instructions of a run over N+1 files - those of a run over the first file) / N, so
the interpreter's start, the imports and the first file's lazy imports are not counted. With two
checkouts it prints the ratios of the second to the first. Needs valgrind (`apt-get install
valgrind`); counts run about 50x slower than the code does: a few minutes in all.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from bench_codemod import HERE, PROJECT, py_files

# Every run keeps its bytecode (warm() writes it once): a checkout whose modules compiled afresh in
# each counted run would count its compilation.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

# Run under callgrind with the checkout first on sys.path: argv = checkout, "parse" or "engine",
# count, files... The engine's check mode verifies every output it would write, as apply does.
DRIVER = r"""
import ast, gc, sys
sys.path.insert(0, sys.argv[1])
mode, count, paths = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
if mode == "parse":
    for path in paths[:count]:
        gc.disable()
        with open(path, encoding="utf-8") as f:
            ast.parse(f.read())
        gc.enable()
else:
    from codemod.engine.process import process_file
    from codemod.engine.result import Mode
    from transforms.label.transform import HwLabel
    transforms = [HwLabel()]
    for path in paths[:count]:
        process_file(path, transforms, Mode.CHECK)
"""


def instructions(checkout: str, mode: str, count: int, files: list[str]) -> int:
    argv = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        "-c",
        DRIVER,
        checkout,
        mode,
        str(count),
        *files,
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, env=ENV)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        sys.exit(f"bench_instructions: the count failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def per_file(checkout: str, mode: str, files: list[str]) -> float:
    """Millions of instructions per file, the first file's run subtracted."""
    return (
        (instructions(checkout, mode, len(files), files) - instructions(checkout, mode, 1, files))
        / (len(files) - 1)
        / 1e6
    )


def corpus(scratch: str, files: int) -> tuple[list[str], list[str]]:
    """A generated tree and a labelled copy of it (labelled by this checkout's apply)."""
    plain, labelled = os.path.join(scratch, "plain"), os.path.join(scratch, "labelled")
    subprocess.run(
        [sys.executable, os.path.join(HERE, "make_corpus.py"), plain, "--files", str(files)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    shutil.copytree(plain, labelled)
    env = dict(os.environ, PYTHONPATH=PROJECT, DECOUPLE_CACHE_DIR=os.path.join(scratch, "cache"))
    subprocess.run(
        [sys.executable, "-m", "codemod", "apply", "--no-cache", "--linter", "off", "-q", "."],
        cwd=labelled,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return py_files(plain), py_files(labelled)


def warm(checkout: str, files: list[str]) -> None:
    """Write the checkout's bytecode, so that no count includes compiling the tool."""
    subprocess.run([sys.executable, "-c", DRIVER, checkout, "engine", "1", *files], env=ENV, check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100, help="labelled files counted for check and ast.parse")
    ap.add_argument("--apply-files", type=int, default=30, help="unlabelled files counted for apply")
    ap.add_argument("--checkout", action="append", help="a tree of the tool (repeatable; default: this one)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("bench_instructions: valgrind is not installed (apt-get install valgrind)")
    checkouts = [os.path.abspath(c) for c in args.checkout or [PROJECT]]
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as scratch:
        plain, labelled = corpus(scratch, max(args.files, args.apply_files) + 1)
        checks, applies = labelled[: args.files + 1], plain[: args.apply_files + 1]
        floor = per_file(checkouts[0], "parse", checks)
        print(f"generated PyTorch-shaped files; millions of instructions per file (ast.parse alone: {floor:.1f})")
        rows = []
        for checkout in checkouts:
            warm(checkout, checks)
            rows.append((checkout, per_file(checkout, "engine", checks), per_file(checkout, "engine", applies)))
            print(f"  {checkout}: check (labelled) {rows[-1][1]:.1f}, apply {rows[-1][2]:.1f}")
        for checkout, check, apply in rows[1:]:
            print(f"  {checkout} / {rows[0][0]}: check {check / rows[0][1]:.3f}, apply {apply / rows[0][2]:.3f}")


if __name__ == "__main__":
    main()
