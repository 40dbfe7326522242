"""The linter gate: run the checkout's own test linter on the would-be outputs before
anything is written or graduated.

The linter file is the user's; it is copied, never modified.  It skips the files
its allowlist names and finds the repository root from its own location, so it
runs on a temporary mirror: a copy of the linter at
`tools/linter/adapters/test_linter.py`, an empty allowlist beside it, and each
would-be output at its repository-relative path (a file outside the repository
goes under `_outside/<n>/`, keeping its name, which is all the linter reads).

The gate proves the linter judged each file: a linter prints nothing for a file
it passes, and nothing either for one it skips (the newer generation skips
everything outside `test/**/test_*.py` of its own repository and an unreadable
file), so beside the would-be outputs it runs the linter on a canary mirror: at
each file's place, a test class without a label.  A file whose canary gets no
message, or whose path the linter's stderr names while it printed nothing for
it, was not judged: it is reported `not judged`, never counted as agreement,
not written and not graduated.

Each judged file's real messages are compared with what the tool predicts the
linter prints under the generation of the rules the run applies
(`transforms.rules.generations.lint_module`).  A file the linter rejects with a
message the tool did not predict is a rejection: it is not written and not
graduated, and it carries the linter's own messages.  A predicted message the
linter does not print (the checkout's linter is looser) is a disagreement too,
but harmless for writing; only a judged file with no linter error at all is
graduated (under the newer generation that is its own `--regenerate` outcome:
the engine never hands over an unparseable file).  A linter that crashes, hangs
or prints anything but LintMessage JSON lines is a `GateError`: the run stops
before writing (exit 2).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

from codemod.engine.result import FAILED, NEEDS_MANUAL, FileResult, GateSummary, RunResult
from codemod.util.files import SourceError, read_source
from codemod.util.jsonfile import JSONInputError, loads
from codemod.util.lintmessage import LintSeverity
from transforms.core.analysis import analyse
from transforms.core.base import Finding, Severity
from transforms.rules.generations import lint_module
from transforms.rules.registry import Generation

LINTER_REL = os.path.join("tools", "linter", "adapters", "test_linter.py")
ALLOWLIST_NAME = "test_linter_allowlist.json"
# The upstream linter takes every file on one command line; keep each call well below ARG_MAX.
_CHUNK = 400
_TIMEOUT = 600  # seconds per call; generous, a busy 2-core machine is slow
# Put at each file's place in a second mirror: every generation reports its missing label.
CANARY = "class TestDecoupleGateCanary:\n    def test_canary(self):\n        pass\n"


class GateError(Exception):
    """The linter could not be run or its output could not be read."""


@dataclass(frozen=True)
class Message:
    """One error the linter printed about a file."""

    name: str  # "[only_for]"
    line: int | None
    description: str


@dataclass
class FileVerdict:
    path: str
    messages: list[Message] = field(default_factory=list)  # every error the linter printed
    unexpected: list[Message] = field(default_factory=list)  # ... that the tool did not predict
    missing: list[tuple[str, int]] = field(default_factory=list)  # predicted, not printed
    not_judged: str = ""  # why the linter did not judge the file (empty: it did)

    @property
    def judged(self) -> bool:
        return not self.not_judged

    @property
    def rejected(self) -> bool:
        """The linter rejects something the tool claims is fine: do not write."""
        return bool(self.unexpected)

    @property
    def clean(self) -> bool:
        """Judged, and no error: what may be graduated."""
        return self.judged and not self.messages

    @property
    def disagrees(self) -> bool:
        return bool(self.unexpected or self.missing)


def find_linter(start: str) -> str | None:
    """`tools/linter/adapters/test_linter.py` in `start` or the nearest folder above it."""
    cur = os.path.abspath(start)
    if not os.path.isdir(cur):
        cur = os.path.dirname(cur)
    while True:
        candidate = os.path.join(cur, LINTER_REL)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def repo_root(linter: str) -> str:
    """The folder the linter treats as the repository root (three levels above its folder)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(linter)))))


def predicted(text: str, gen: Generation) -> set[tuple[str, int]]:
    """The (name, line) pairs `gen`'s rules expect the linter to print for `text`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {("[parse_error]", 0)} if gen.reports_unparseable else set()
    return {(m.name, m.line) for m in lint_module(analyse(tree, text), gen)}


def _mirror_paths(root: str, mirror: str, paths: list[str]) -> tuple[dict[str, str], set[str]]:
    """(user path -> its place in the mirror, the paths outside the linter's repository)."""
    out = {}
    outside = set()
    for n, path in enumerate(paths):
        rel = os.path.relpath(os.path.abspath(path), root)
        if rel.startswith(os.pardir + os.sep) or rel == os.pardir or os.path.isabs(rel):
            rel = os.path.join("_outside", str(n), os.path.basename(path))
            outside.add(path)
        out[path] = os.path.join(mirror, rel)
    return out, outside


def _make_mirror(mirror: str, linter: str, files: dict[str, bytes]) -> str:
    """A checkout at `mirror`: a copy of `linter` with an empty allowlist, and `files` (mirror
    path -> bytes). Returns the linter copy's path."""
    adapters = os.path.join(mirror, os.path.dirname(LINTER_REL))
    os.makedirs(adapters)
    shutil.copyfile(linter, os.path.join(mirror, LINTER_REL))
    with open(os.path.join(adapters, ALLOWLIST_NAME), "w", encoding="utf-8") as f:
        f.write("[]\n")
    for place, data in files.items():
        os.makedirs(os.path.dirname(place), exist_ok=True)
        with open(place, "wb") as f:
            f.write(data)
    return os.path.join(mirror, LINTER_REL)


def _parse_output(stdout: str, where: str) -> list[dict]:
    messages = []
    for raw in stdout.splitlines():
        if not raw.strip():
            continue
        try:
            msg = loads(raw, "a line")
        except JSONInputError:
            raise GateError(f"{where} printed something that is not a LintMessage JSON line: {raw[:200]!r}") from None
        if not isinstance(msg, dict) or not {"path", "name", "severity"} <= set(msg):
            raise GateError(f"{where} printed a JSON line that is not a LintMessage: {raw[:200]!r}")
        messages.append(msg)
    return messages


def _errors_by_file(
    python: str, script: str, places: dict[str, str], mirror: str, shown: str
) -> tuple[dict[str, list[Message]], str]:
    """Run the linter copy `script` on the mirror files `places` (user path -> mirror path):
    (user path -> the errors it printed, its stderr)."""
    back = {os.path.realpath(p): user for user, p in places.items()}
    found: dict[str, list[Message]] = {user: [] for user in places}
    stderr = ""
    files = list(places.values())
    for i in range(0, len(files), _CHUNK):
        messages, err = _call(python, script, files[i : i + _CHUNK], mirror, shown)
        stderr += err
        for msg in messages:
            if msg.get("severity") != LintSeverity.ERROR:
                continue  # the [allowlist_hint] advice and anything milder
            raw_path = msg["path"] if os.path.isabs(msg["path"]) else os.path.join(mirror, msg["path"])
            user = back.get(os.path.realpath(raw_path))
            if user is None:
                raise GateError(f"{shown} reported an error for a file it was not given: {msg['path']}")
            line = msg.get("line")
            found[user].append(
                Message(str(msg["name"]), line if isinstance(line, int) else None, str(msg.get("description") or ""))
            )
    return found, stderr


def _why_not_judged(path: str, root: str, outside: set[str], gen: Generation) -> str:
    if path in outside:
        return f"outside the linter's repository ({root})"
    rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    judged, why = gen.files.judges(rel)
    if not judged:
        return why
    return "the linter printed nothing for a test class without a label at this path"


def run_linter(linter: str, python: str, outputs: dict[str, bytes], gen: Generation) -> dict[str, FileVerdict]:
    """Run `linter` under `python` on `outputs` (user path -> would-be bytes), and on a canary at
    each path; one verdict per path, predicted by `gen`'s rules.

    Raises GateError when the linter cannot be run or misbehaves."""
    root = repo_root(linter)
    with tempfile.TemporaryDirectory(prefix="decouple-gate-") as tmp:
        mirror, canaries = os.path.join(tmp, "files"), os.path.join(tmp, "canary")
        places, outside = _mirror_paths(root, mirror, list(outputs))
        script = _make_mirror(mirror, linter, {places[p]: data for p, data in outputs.items()})
        canary_places = {p: os.path.join(canaries, os.path.relpath(places[p], mirror)) for p in outputs}
        canary_script = _make_mirror(canaries, linter, {c: CANARY.encode() for c in canary_places.values()})
        # late: concurrent.futures brings logging (8 ms), which a run without a linter never needs
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2) as pool:  # the two linter processes run side by side
            files_run = pool.submit(_errors_by_file, python, script, places, mirror, linter)
            canary_run = pool.submit(_errors_by_file, python, canary_script, canary_places, canaries, linter)
            printed, stderr = files_run.result()
            seen, _ = canary_run.result()
        verdicts = {path: FileVerdict(path, messages=printed[path]) for path in outputs}
        for path, verdict in verdicts.items():
            if not seen[path]:
                verdict.not_judged = _why_not_judged(path, root, outside, gen)
            elif not verdict.messages and places[path] in stderr:
                said = next(line for line in stderr.splitlines() if places[path] in line)
                verdict.not_judged = f"the linter could not read it ({said.replace(places[path], path)[:200]})"
    for path, verdict in verdicts.items():
        if not verdict.judged:
            continue
        text = outputs[path].decode("utf-8", "replace")
        expected = predicted(text, gen)
        seen_keys = set()
        for m in verdict.messages:
            key = (m.name, m.line if m.line is not None else 0)
            seen_keys.add(key)
            if key not in expected:
                verdict.unexpected.append(m)
        verdict.missing = sorted(expected - seen_keys)
    return verdicts


def _call(python: str, script: str, files: list[str], cwd: str, shown: str) -> tuple[list[dict], str]:
    try:
        proc = subprocess.run(
            [python, script, *files],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except OSError as e:
        raise GateError(f"cannot run {python}: {e.strerror or e}") from None
    except subprocess.TimeoutExpired:
        raise GateError(f"{shown} did not finish within {_TIMEOUT} s") from None
    messages = _parse_output(proc.stdout, shown)
    # The upstream linter exits 0 with or without findings; an older one may exit 1 with them.
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and not messages):
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise GateError(f"{shown} failed (exit {proc.returncode}): {tail}")
    return messages, proc.stderr


# --------------------------------------------------------------------------- on a run


def resolve(setting: str, paths: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """setting auto|off|PATH -> ({linter: [paths it judges]}, paths no linter was found for)."""
    if setting == "off":
        return {}, []
    if setting != "auto":
        if not os.path.isfile(setting):
            raise GateError(f"--linter {setting}: no such file")
        return {os.path.abspath(setting): list(paths)}, []
    groups: dict[str, list[str]] = {}
    orphans = []
    cache: dict[str, str | None] = {}
    for path in paths:
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in cache:
            cache[folder] = find_linter(folder)
        linter = cache[folder]
        if linter is None:
            orphans.append(path)
        else:
            groups.setdefault(linter, []).append(path)
    return groups, orphans


def gate_run(
    run: RunResult,
    setting: str,
    groups: dict[str, list[str]],
    orphans: list[str],
    python: str,
    gen: Generation,
    encodings: dict[str, str] | None = None,
) -> None:
    """Judge the staged results of `run` with the linters `resolve` found, predicted by `gen`'s
    rules: mark the rejected ones (findings with the linter's messages, not written, not
    graduated) and the ones a linter did not judge (the same, said so), and record a summary in
    `run.linter_gate`. `encodings`: the source encoding of results not read from their path
    (standard input); the others are read from disk. Raises GateError."""
    by_path = {r.path: r for r in run.files if r.status != FAILED and r.replacement is not None}
    summary = GateSummary(setting=setting, linters=sorted(groups), unjudged=len(orphans))
    for linter, all_paths in groups.items():
        paths = [p for p in all_paths if p in by_path]  # skipped and failed files are not judged
        outputs = {path: _output_bytes(by_path[path], encodings) for path in paths}
        for path, verdict in run_linter(linter, python, outputs, gen).items():
            _apply_verdict(by_path[path], verdict, linter, summary)
    run.linter_gate = summary


def _output_bytes(r: FileResult, encodings: dict[str, str] | None) -> bytes:
    """The would-be output of `r` in the encoding its file has (or standard input had)."""
    if encodings and r.path in encodings:
        encoding = encodings[r.path]
    else:
        try:
            encoding = read_source(r.path).encoding
        except SourceError:
            encoding = "utf-8"
    text = r.replacement or ""
    if encoding == "utf-8-sig" and text.startswith("\ufeff"):
        encoding = "utf-8"  # lint mode keeps the BOM in the text (lintrunner's form)
    return text.encode(encoding)


def _withhold(r: FileResult) -> None:
    """Nothing of `r` is written nor offered as an autofix; it is left for a human."""
    if r.replacement != r.original:
        r.status = NEEDS_MANUAL
        r.manual += 1
    r.diff = ""
    r.replacement = r.original


def _apply_verdict(r: FileResult, verdict: FileVerdict, linter: str, summary: GateSummary) -> None:
    if not verdict.judged:
        summary.not_judged.append(r.path)
        r.fully_classified = False  # never graduate what the linter did not look at
        r.findings.append(
            Finding(
                rule="gate/not-judged",
                message=f"{linter} did not judge this file ({verdict.not_judged}): nothing written, not graduated",
                line=1,
                severity=Severity.WARNING,
                path=r.path,
                data={"linter": linter, "why": verdict.not_judged},
            )
        )
        _withhold(r)
        return
    summary.checked += 1
    if verdict.disagrees:
        summary.disagree += 1
    else:
        summary.agree += 1
    if not verdict.clean:
        r.fully_classified = False  # never graduate what the linter rejects
    for name, line in verdict.missing:
        r.findings.append(
            Finding(
                rule="gate/looser",
                message=f"the tool expects the linter to report {name} here, but {linter} does not",
                line=line,
                severity=Severity.WARNING,
                path=r.path,
            )
        )
    if not verdict.rejected:
        return
    summary.rejected.append(r.path)
    for m in verdict.unexpected:
        r.findings.append(
            Finding(
                rule="gate/rejected",
                message=f"{linter} rejects the would-be output: {m.name} {m.description}",
                line=m.line or 1,
                severity=Severity.ERROR,
                path=r.path,
                data={"linter": linter, "name": m.name},
            )
        )
    r.status = NEEDS_MANUAL
    r.manual += 1
    r.diff = ""
    r.replacement = r.original  # nothing to write, nothing to offer as an autofix
