"""Record what the tool prints and writes on a fixed set of inputs, for a pure refactor's proof.

    python scripts/behaviour_snapshot.py OUT_DIR [--checkout PATH] [--python PY] [--no-ab]

runs the `decouple` of `--checkout` (default: this one) on the bundled examples, the
fixture trees and the CPython standard library's test suite, and writes every output into
OUT_DIR: `classify --format json`, `apply --diff` (plain, `--restructure auto`,
`--torch-load weights-only-false`), `lint`, and `decouple ab` (JSON, Markdown en/zh, HTML,
JUnit, repro.sh, terminal) on the A/B fixture suites, with times, temporary paths and
process ids masked. Two snapshots taken before and after a refactor are compared with
`diff -r BEFORE AFTER`: a pure refactor leaves no difference.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
AB_SUITES = ("mixed", "diag", "order", "xfail", "lesser", "batch")

MASKS = [
    (re.compile(r"/tmp/[^\s\"'`<>)\]]*"), "<tmp>"),
    (re.compile(r"\b\d+\.\d+ ?(s|ms|seconds)\b"), "<time>"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:?\d\d)?"), "<when>"),
    (re.compile(r"\bpid \d+"), "pid <n>"),
    (re.compile(r"\b\d+(\.\d+)? ?秒"), "<time>"),
    (re.compile(r'\btime="[\d.]+"'), 'time="<time>"'),
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x<addr>"),
    # the HTML table's duration cells
    (re.compile(r'data-sort="\d+\.\d+">\d+\.\d+<'), 'data-sort="<time>"><time><'),
    # os.environ's repr in a traceback: the caller's whole environment, cut at a random place
    (re.compile(r"environ\(\{.*?\}\)"), "environ(<env>)"),
]
TIME_KEYS = {"duration", "started", "finished", "seconds", "elapsed", "wall", "time", "durations"}


def mask_text(text: str) -> str:
    for pattern, repl in MASKS:
        text = pattern.sub(repl, text)
    return text


def mask_json(value):
    if isinstance(value, dict):
        return {k: ("<time>" if k in TIME_KEYS else mask_json(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_json(v) for v in value]
    if isinstance(value, str):
        return mask_text(value)
    return value


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr


def record(out: Path, name: str, rc: int, stdout: str, stderr: str) -> None:
    (out / f"{name}.out").write_text(mask_text(stdout))
    (out / f"{name}.err").write_text(mask_text(stderr))
    (out / f"{name}.rc").write_text(f"{rc}\n")


def codemod_snapshots(decouple: list[str], out: Path, env: dict[str, str], work: Path) -> None:
    corpora = {
        "examples": PROJECT / "examples" / "pytorch_tree",
        "hw_fixtures": PROJECT / "tests" / "fixtures" / "hw",
        "restructure_fixtures": PROJECT / "tests" / "fixtures" / "restructure",
    }
    stdlib_tests = Path(sysconfig.get_paths()["stdlib"]) / "test"
    if stdlib_tests.is_dir():
        corpora["cpython"] = stdlib_tests
    for name, src in corpora.items():
        tree = work / name
        shutil.copytree(src, tree, symlinks=True)
        # fixture file names do not match test_*.py: name every .py file explicitly
        files = sorted(str(p.relative_to(tree)) for p in tree.rglob("*.py"))
        runs = {
            "classify": ["classify", "--format", "json", "--linter", "off", "-j", "2"],
            "diff": ["apply", "--diff", "--linter", "off", "-j", "2"],
            "diff_restructure": ["apply", "--diff", "--restructure", "auto", "--linter", "off", "-j", "2"],
            "diff_torch_load": ["apply", "--diff", "--torch-load", "weights-only-false", "--linter", "off", "-j", "2"],
            "lint": ["lint", "--linter", "off", "-j", "2"],
        }
        for run_name, args in runs.items():
            rc, so, se = run([*decouple, *args, *files], tree, env)
            record(out, f"{name}.{run_name}", rc, so, se)


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def ab_snapshots(decouple: list[str], out: Path, env: dict[str, str], work: Path, python: str) -> None:
    fixtures = PROJECT / "tests" / "fixtures" / "ab"
    for suite in AB_SUITES:
        a, b = fixtures / suite / "a", fixtures / suite / "b"
        if not a.is_dir():
            continue
        repo = work / f"ab-{suite}"
        shutil.copytree(a, repo)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base")
        for path in list(repo.rglob("*")):
            if ".git" not in path.parts and path.is_file() and not (b / path.relative_to(repo)).exists():
                path.unlink()
        shutil.copytree(b, repo, dirs_exist_ok=True)
        reports = work / f"reports-{suite}"
        reports.mkdir()
        suite_env = {**env, "AB_FLAKY_STATE": str(work / f"flaky-{suite}")}
        cmd = [*decouple, "ab", ".", "--base", "HEAD", "--python", python, "--timeout", "5", "--confirm", "1",
               "-j", "2", "--json", str(reports / "ab.json"), "--markdown", str(reports / "ab.md"),
               "--html", str(reports / "ab.html"), "--junit", str(reports / "ab.xml")]
        rc, so, se = run(cmd, repo, suite_env)
        # progress lines on stderr come in completion order, which parallelism decides
        record(out, f"ab-{suite}.terminal", rc, so, "".join(sorted(se.splitlines(keepends=True))))
        rc_zh, so_zh, se_zh = run([*decouple, "ab", "merge", str(reports / "ab.json"), "--lang", "zh",
                                   "--markdown", str(reports / "ab.zh.md")], repo, suite_env)
        record(out, f"ab-{suite}.merge-zh", rc_zh, so_zh, se_zh)
        for report in sorted(reports.iterdir()):
            text = report.read_text(errors="surrogateescape")
            if report.suffix == ".json":
                text = json.dumps(mask_json(json.loads(text)), indent=1, sort_keys=True)
            (out / f"ab-{suite}.{report.name}").write_text(mask_text(text), errors="surrogateescape")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--checkout", type=Path, default=PROJECT)
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs decouple and the A/B arms")
    parser.add_argument("--no-ab", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=False)
    env = {**os.environ, "PYTHONPATH": str(args.checkout.resolve()), "NO_COLOR": "1", "COLUMNS": "120"}
    env.pop("CI", None)
    decouple = [args.python, "-m", "codemod"]
    with tempfile.TemporaryDirectory(prefix="decouple-snapshot-") as tmp:
        work = Path(tmp)
        codemod_snapshots(decouple, args.out, env, work)
        if not args.no_ab:
            ab_snapshots(decouple, args.out, env, work, args.python)
    print(f"snapshot written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
