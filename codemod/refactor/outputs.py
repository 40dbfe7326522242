"""The refactor's output folder: each branch's reports and PR body in a folder of its own,
state.json (what was verified, for resuming a batch) updated under a lock, and every file
replaced atomically, so a concurrent run or a Ctrl-C never leaves half a file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: state.json is still replaced atomically
    fcntl = None  # type: ignore[assignment]

from codemod.ab.result.model import ABResult
from codemod.refactor import plan as _plan
from codemod.refactor import prbody
from codemod.util.files import signals_held
from codemod.util.jsonfile import read_json

STATE_VERSION = 1


# --- state (what was verified: resuming a batch) -----------------------------------------------


def _state_path(out: str) -> str:
    return os.path.join(out, "state.json")


def load_state(out: str) -> dict[str, dict]:
    try:
        data = read_json(_state_path(out), "state.json")
        return {b["branch"]: b for b in data.get("branches", [])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


@contextmanager
def _state_lock(out: str) -> Iterator[None]:
    """Hold `state.json.lock` (an flock, released by the kernel however the run ends): two
    runs in one repository update state.json one after the other."""
    os.makedirs(out, exist_ok=True)
    fd = os.open(_state_path(out) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def record_state(out: str, branch: str, record: dict) -> None:
    """Add a branch's `record` to state.json: read, updated and replaced under the lock, so a concurrent
    run's branches are kept."""
    with _state_lock(out):
        state = load_state(out)
        state[branch] = record
        text = json.dumps({"schema_version": STATE_VERSION, "branches": [state[k] for k in sorted(state)]}, indent=2)
        write_text(_state_path(out), text + "\n")


def write_text(path: str, text: str) -> None:
    """Replace `path` atomically: a temporary file of its own (concurrent runs never share
    one) in the same folder, renamed onto it."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    with signals_held():
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".decouple-tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


# Files of the output folder itself: no branch's folder may be one of them.
SUMMARY_FILES = ("batch.md", "batch.json", "state.json")


def branch_folder(out: str, branch: str) -> str:
    """A branch's output folder: the branch name as folders (`hw-classification/test_foo`),
    so no two branches share one (a branch name never has `.` or `..` parts)."""
    return os.path.join(out, *branch.split("/"))


def write_outputs(
    out_dir: str, result: ABResult | None, facts: _plan.CommitFacts, lang: str
) -> tuple[str, dict[str, str]]:
    """ab.json / ab.md / ab.html (when there is a result) and PR_BODY.md."""
    reports: dict[str, str] = {}
    if result is not None:
        from codemod.report.ab import html as ab_html
        from codemod.report.ab import markdown as ab_markdown
        from codemod.report.ab import repro as ab_repro

        for name, text in (
            ("ab.json", json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n"),
            ("ab.md", ab_markdown.render(result, lang)),
            ("ab.html", ab_html.render(result, lang)),
            (ab_repro.REPRO_SCRIPT, ab_repro.render(result)),  # the script ab.md and ab.html refer to
        ):
            path = os.path.join(out_dir, name)
            write_text(path, text)
            reports[name.split(".")[1]] = path
        os.chmod(reports["sh"], 0o755)
    moves = {p.path: p.moves for p in facts.files if p.moves}
    if moves:  # what `decouple ab --map-file` reads (the PR's Test Plan names it)
        from transforms.restructure import model

        document = model.map_document({path: [model.Move(**m.__dict__) for m in ms] for path, ms in moves.items()})
        write_text(os.path.join(out_dir, "test-map.json"), json.dumps(document, indent=2) + "\n")
    body = os.path.join(out_dir, "PR_BODY.md")
    write_text(body, prbody.compose(facts, result, lang))
    return body, reports
