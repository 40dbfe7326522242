"""What `decouple refactor` will do to each file, worked out on the base commit's blobs.

The files are read from git objects (never the work tree) into a scratch folder and run
through the ordinary engine in diff mode, so the plan is exactly what `decouple apply`
would write at the base. The plan is also what the commit message records, in a plain
format that `parse_commit_message` reads back (`decouple pr-body` composes the PR body
from the commit, on whichever machine holds the branch).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Literal

from codemod.engine import linter_gate, rules_choice
from codemod.engine.process import run_files
from codemod.engine.result import ALREADY, FAILED, SKIPPED, FileResult, FileStatus, Mode, RunResult
from codemod.refactor.gitrepo import Repo
from codemod.util.files import SourceError, read_source
from transforms.core.base import Finding, Severity, Transform
from transforms.core.words import noun, plural
from transforms.rules.generations import generation

TRACKING_ISSUE = "pytorch/pytorch#185590"
TITLE_MARK = "[Testcase Refactoring] "  # how every commit (and PR) title of the refactor starts
TITLE_PREFIX = TITLE_MARK + "Add hw_classification in "
ALLOWLIST_TITLE = TITLE_MARK + "Remove {files} from the test linter allowlist"
MAX_TITLE = 100
# torch.load findings that are edits (the rest say why a call was left alone).
LOAD_EDITS = ("torch-load/weights-only-false", "torch-load/safe-globals", "torch-load/fallback")
LABEL_RULES = ("hw/label", "hw/forced")
# What a plan says about a file: the engine's bucket, or "missing" (not a file at the base).
MISSING: Literal["missing"] = "missing"
# ... or "not-batched": the survey finds it doable but put it in no batch (`refactor --batches`).
NOT_BATCHED: Literal["not-batched"] = "not-batched"
PlanStatus = FileStatus | Literal["missing", "not-batched"]


@dataclass
class ClassLabel:
    cls: str
    value: str
    line: int
    evidence: str


@dataclass
class LoadEdit:
    line: int
    message: str


@dataclass
class ManualClass:
    cls: str
    line: int
    reason: str
    fits: str = ""


@dataclass(kw_only=True)
class Moved:
    """One test moved by a restructuring transform (`transforms.restructure.Move`, flattened)."""

    transform: str
    test: str
    old_class: str
    new_class: str
    old_instantiated: bool
    new_instantiated: bool
    before: tuple[str, ...]
    after: tuple[str, ...]
    # the tests that stayed whose names extend this one's: the A/B map must not move them too
    kept_longer: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        """Something about the test changes (a move to its own class, or its devices); an
        identity entry does not, and no text lists it."""
        return (self.old_class, self.old_instantiated, self.before) != (
            self.new_class,
            self.new_instantiated,
            self.after,
        )


@dataclass
class FilePlan:
    path: str  # repo-relative, POSIX
    _: KW_ONLY
    status: PlanStatus | None = None  # None: read back from a commit message, which does not record it
    reason: str = ""
    labels: list[ClassLabel] = field(default_factory=list)
    loads: list[LoadEdit] = field(default_factory=list)
    manual: list[ManualClass] = field(default_factory=list)
    restructured: list[str] = field(default_factory=list)  # the transforms' per-class summaries
    moves: list[Moved] = field(default_factory=list)
    fully_classified: bool = False
    # Fully labelled afterwards without a human (what a batch picks): the engine's FileResult.doable.
    doable: bool = False
    graduated_from: str = ""  # the allowlist the entry was removed from
    # No test class at all (the linter has nothing to check): graduated as it is.
    no_test_class: bool = False
    diff: str = ""
    rules: str = ""  # the generation of the linter's rules the plan applied

    @property
    def allowlist_only(self) -> bool:
        """Nothing in the file changes: the branch only removes it from the allowlist."""
        moved = any(m.changes for m in self.moves)
        return bool(self.graduated_from) and not (self.labels or self.loads or moved or self.restructured)

    @property
    def skip_reason(self) -> str:
        if self.doable:
            return ""
        if self.status in (FAILED, SKIPPED, MISSING):
            return self.reason or str(self.status)
        if self.manual:
            return "needs manual work: " + "; ".join(f"{m.cls} ({m.reason})" for m in self.manual)
        return "the linter would still reject it"


# The engine's reason for a file it found no test class in, and the one `accept_as_is` gives it.
NO_TEST_CLASSES = "no test classes"
AS_IS = "no test class: the linter accepts it as it is"


def accept_as_is(fr: FileResult) -> None:
    """A file with no test class is one the linter already accepts (it has nothing to check):
    `fr` (the engine's result for it) becomes one with nothing to change and every class (none)
    labelled, so the file is graduated as it is, provided it parses; a linter gate judges it as
    it judges any output (it sees the file unchanged)."""
    if fr.status != SKIPPED or fr.reason != NO_TEST_CLASSES:
        return
    try:
        text = read_source(fr.path).text
        ast.parse(text)
    except (SourceError, SyntaxError, ValueError, RecursionError):
        return  # not for graduation: the newer linter says nothing of a file it cannot parse
    fr.status, fr.reason, fr.fully_classified = ALREADY, AS_IS, True
    fr.original = fr.replacement = text


class GateFailed(Exception):
    """The checkout's linter could not be run or its output could not be read."""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def from_result(path: str, fr: FileResult) -> FilePlan:
    """The plan of the file at `path` (repo-relative) that the engine's result `fr` describes."""
    plan = FilePlan(path, status=fr.status, reason=fr.reason, fully_classified=fr.fully_classified, doable=fr.doable)
    plan.no_test_class = fr.reason == AS_IS
    for x in fr.findings:
        if x.rule in LABEL_RULES and x.data.get("value"):
            evidence = "; ".join(_one_line(e["text"]) for e in x.data.get("evidence", []) if e.get("text"))
            plan.labels.append(
                ClassLabel(
                    cls=x.cls or "?", value=x.data["value"], line=x.line, evidence=evidence or _one_line(x.message)
                )
            )
        elif x.rule == "hw/needs-manual" or x.rule == "hw/refused":
            reason = _one_line(x.message).removeprefix(f"{x.cls}: ")
            plan.manual.append(ManualClass(cls=x.cls or "?", line=x.line, reason=reason, fits=_one_line(x.fix or "")))
        elif x.rule in BROKEN_LABEL or (x.rule == "hw/already-disagrees" and x.data.get("violations")):
            plan.manual.append(_broken_label(x))
        elif x.rule in LOAD_EDITS:
            plan.loads.append(LoadEdit(line=x.line, message=_one_line(x.message)))
        elif x.rule == "restructure/moves":
            plan.moves += [
                Moved(
                    transform=m["transform"],
                    test=m["test"],
                    old_class=m["old_class"],
                    new_class=m["new_class"],
                    old_instantiated=bool(m["old_instantiated"]),
                    new_instantiated=bool(m["new_instantiated"]),
                    before=tuple(m["before"]),
                    after=tuple(m["after"]),
                    kept_longer=tuple(m.get("kept_longer", ())),
                )
                for m in x.data.get("moves", [])
            ]
        elif x.rule == "gate/rejected":
            plan.manual.append(
                ManualClass(
                    cls=x.cls or "(file)", line=x.line, reason=_one_line(x.message), fits="see the linter's message"
                )
            )
        elif x.rule == "gate/not-judged":
            plan.manual.append(ManualClass(cls="(file)", line=x.line, reason=_one_line(x.message)))
        elif x.rule.startswith("restructure/") and x.severity != Severity.ERROR:
            plan.restructured.append(_one_line(x.message))
    left = fr.manual - len(plan.manual)
    if left > 0:  # the transforms counted manual work no finding above explains: say which findings
        plan.manual.append(_unexplained(fr, left))
    return plan


BROKEN_LABEL = ("hw/invalid-label",)


def _broken_label(x: Finding) -> ManualClass:
    """A class that already carries a label breaking its rules: the label, the rules, why."""
    violations = [v for vs in (x.data.get("violations") or {}).values() for v in vs]
    if not violations:  # a label the linter does not read as one: its [hw_classification] rule
        reason = "its existing label breaks the linter's [hw_classification] rule: " + _one_line(
            x.message
        ).removeprefix(f"{x.cls}: ")
        return ManualClass(cls=x.cls or "?", line=x.line, reason=reason, fits="fix the label by hand")
    value = violations[0].get("value", "?")
    names = dict.fromkeys(f"[{v.get('rule', '?')}]" for v in violations)
    rules = ", ".join(names)
    reason = f"its existing label {value} breaks the linter's {rules} {noun(len(names), 'rule')}: " + "; ".join(
        _one_line(v.get("message", "")) for v in violations
    )
    return ManualClass(
        cls=x.cls or "?", line=x.line, reason=reason, fits=_one_line(x.fix or "") or "fix the label by hand"
    )


def _unexplained(fr: FileResult, n: int) -> ManualClass:
    loads = [
        x
        for x in fr.findings
        if x.rule.startswith("torch-load/") and x.rule not in LOAD_EDITS and x.severity != Severity.INFO
    ]
    if loads:
        return ManualClass(
            cls="torch.load",
            line=loads[0].line,
            reason=f"{plural(n, 'call')} left for manual work: " + _one_line(loads[0].message),
        )
    rules = sorted({x.rule for x in fr.findings if x.severity != Severity.INFO})
    return ManualClass(
        cls="(file)", line=0, reason=f"{plural(n, 'item')} left for manual work ({', '.join(rules) or 'no finding'})"
    )


def plan_at(
    repo: Repo,
    commit: str,
    paths: list[str],
    transforms: Sequence[Transform],
    jobs: int | None,
    linter: str = "off",
    python: str | None = None,
    rules: str = rules_choice.AUTO,
) -> dict[str, FilePlan]:
    """Run the engine (diff mode) over `paths` as they are at `commit`, under the generation of
    the rules `rules` names (`auto`: the base commit's own linter's, else the newest); with a
    linter gate (`auto`: the base commit's own tools/linter/adapters/test_linter.py; or a PATH),
    a file that linter rejects or does not judge is planned as manual work (not committed, not
    graduated)."""
    plans: dict[str, FilePlan] = {}
    stage = tempfile.mkdtemp(prefix="decouple-plan-")
    try:
        source = repo.blob(commit, linter_gate.LINTER_REL.replace(os.sep, "/"))
        choice = _choose(rules, linter, source)
        transforms = rules_choice.with_rules(transforms, choice.name)
        if linter == "auto":
            # The linter the PR's CI runs is the one at the base commit: stage it beside the
            # files, where `linter_gate.resolve` finds it by walking up.
            if source is not None:
                full = os.path.join(stage, linter_gate.LINTER_REL)
                os.makedirs(os.path.dirname(full))
                with open(full, "wb") as f:
                    f.write(source)
        staged: dict[str, str] = {}
        for rel in paths:
            data = repo.blob(commit, rel)
            if data is None:
                plans[rel] = FilePlan(rel, status=MISSING, reason=f"not a file at {commit[:12]}")
                continue
            full = os.path.join(stage, *rel.split("/"))
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as f:
                f.write(data)
            staged[full] = rel
        try:
            groups, _ = linter_gate.resolve(linter, list(staged))
        except linter_gate.GateError as e:
            raise GateFailed(str(e)) from None
        results = run_files(list(staged), transforms, Mode.DIFF, jobs, staged=bool(groups))
        for fr in results:
            accept_as_is(fr)
        if groups:
            try:
                run = RunResult(mode=Mode.DIFF, files=results)
                linter_gate.gate_run(run, linter, groups, [], python or sys.executable, generation(choice.name))
            except linter_gate.GateError as e:
                raise GateFailed(str(e)) from None
        for fr in results:
            rel = staged[fr.path]
            plan = from_result(rel, fr)
            plan.rules = choice.name
            plan.diff = fr.diff.replace(f"a/{fr.path}", f"a/{rel}").replace(f"b/{fr.path}", f"b/{rel}")
            plans[rel] = plan
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return plans


def _choose(rules: str, linter: str, base_linter: bytes | None) -> rules_choice.RulesChoice:
    """The generation for a plan: the base commit's linter's (`base_linter`: its bytes, when the
    gate is not given another linter), the named linter's, or the one `rules` names."""
    try:
        if linter not in ("auto", "off"):
            return rules_choice.choose(rules, [os.path.abspath(linter)])
        at_base = linter_gate.LINTER_REL
        return rules_choice.choose(rules, [at_base] if base_linter else [], {at_base: base_linter or b""})
    except rules_choice.RulesError as e:
        raise GateFailed(str(e)) from None


# --- names --------------------------------------------------------------------------------


def path_slug(rel: str) -> str:
    stem = rel[:-3] if rel.endswith(".py") else rel
    if stem.startswith("test/"):
        stem = stem[len("test/") :]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.")
    return re.sub(r"\.{2,}", ".", slug) or "file"


def default_branch(files: list[str]) -> str:
    slug = path_slug(files[0])
    if len(files) > 1:
        slug += f"-and-{len(files) - 1}-more"
    return f"hw-classification/{slug}"


def commit_title(files: list[str], allowlist_only: bool = False) -> str:
    """The commit's (and the PR's) title; a branch that only removes files from the
    allowlist says so instead of "Add hw_classification"."""
    if allowlist_only:
        return ALLOWLIST_TITLE.format(files=files[0] if len(files) == 1 else f"{len(files)} files")
    if len(files) == 1:
        return TITLE_PREFIX + files[0]
    listed = TITLE_PREFIX + ", ".join(files)
    if len(listed) <= MAX_TITLE:
        return listed
    common = os.path.commonpath(files) if files else ""
    where = f" under {common}/" if common and common not in files else ""
    return f"{TITLE_PREFIX}{len(files)} files{where}"


# --- the commit message, written and read back ---------------------------------------------

_INTRO = "Label the test classes with hw_classification (tracking issue: {issue})."
_LABEL = re.compile(r"^- (?P<cls>\S+) = (?P<value>[A-Z]+) \(line (?P<line>\d+)\): (?P<evidence>.*)$")
_LOAD = re.compile(r"^- torch\.load at line (?P<line>\d+): (?P<message>.*)$")
_MANUAL = re.compile(
    r"^- needs manual work: (?P<cls>\S+) \(line (?P<line>\d+)\): (?P<reason>.*?)"
    r"(?: \| fits: (?P<fits>.*))?$"
)
_RESTRUCTURED = re.compile(r"^- restructured: (?P<message>.*)$")
_MOVED = re.compile(
    r"^- moved (?P<test>\S+): (?P<old>\S+)(?P<oi> \(instantiated\))? -> (?P<new>\S+)"
    r"(?P<ni> \(instantiated\))? by (?P<transform>\S+); devices (?P<before>\S*) -> (?P<after>\S*)"
    r"(?:; stays: (?P<kept>\S+))?$"
)
_GRADUATED = re.compile(r"^- graduated from (?P<allowlist>.+)$")
_NO_TEST_CLASS = "- no test class: nothing to label"
_BASE = re.compile(r"^Decouple-Base: (?P<sha>[0-9a-f]{40})$")
_RULES = re.compile(r"^Decouple-Rules: (?P<name>\S+)$")


def commit_message(files: list[FilePlan], base: str) -> str:
    only = bool(files) and all(p.allowlist_only for p in files)
    lines = [commit_title([p.path for p in files], only), "", _INTRO.format(issue=TRACKING_ISSUE)]
    for p in files:
        lines += ["", p.path]
        lines += [f"- {c.cls} = {c.value} (line {c.line}): {c.evidence}" for c in p.labels]
        lines += [f"- torch.load at line {e.line}: {e.message}" for e in p.loads]
        lines += [
            f"- needs manual work: {m.cls} (line {m.line}): {m.reason}" + (f" | fits: {m.fits}" if m.fits else "")
            for m in p.manual
        ]
        lines += [f"- restructured: {r}" for r in p.restructured]
        lines += [
            f"- moved {m.test}: {m.old_class}{' (instantiated)' if m.old_instantiated else ''} -> "
            f"{m.new_class}{' (instantiated)' if m.new_instantiated else ''} by {m.transform}; "
            f"devices {','.join(m.before)} -> {','.join(m.after)}"
            + (f"; stays: {','.join(m.kept_longer)}" if m.kept_longer else "")
            for m in p.moves
            if m.changes
        ]
        if p.no_test_class:
            lines.append(_NO_TEST_CLASS)
        if p.graduated_from:
            lines.append(f"- graduated from {p.graduated_from}")
    lines += ["", f"Decouple-Base: {base}"]
    rules = sorted({p.rules for p in files if p.rules})
    lines += [f"Decouple-Rules: {name}" for name in rules[:1]] + [""]
    return "\n".join(lines)


@dataclass
class CommitFacts:
    title: str
    base: str
    files: list[FilePlan]
    rules: str = ""  # the generation of the linter's rules the labels follow (older commits: unknown)


def parse_commit_message(message: str) -> CommitFacts | None:
    """The facts `commit_message` wrote; None for a commit `decouple refactor` did not make."""
    lines = message.splitlines()
    base = next((m["sha"] for m in map(_BASE.match, lines) if m), None)
    rules = next((m["name"] for m in map(_RULES.match, lines) if m), "")
    if not lines or not lines[0].startswith(TITLE_MARK) or base is None:
        return None
    files: list[FilePlan] = []
    for line in lines[1:]:
        if not line.strip() or line.startswith("Decouple-") or line == _INTRO.format(issue=TRACKING_ISSUE):
            continue
        if not line.startswith("- "):
            files.append(FilePlan(line))
            continue
        if not files:
            return None
        p = files[-1]
        if m := _LABEL.match(line):
            p.labels.append(ClassLabel(cls=m["cls"], value=m["value"], line=int(m["line"]), evidence=m["evidence"]))
        elif m := _LOAD.match(line):
            p.loads.append(LoadEdit(line=int(m["line"]), message=m["message"]))
        elif m := _MANUAL.match(line):
            p.manual.append(ManualClass(cls=m["cls"], line=int(m["line"]), reason=m["reason"], fits=m["fits"] or ""))
        elif m := _RESTRUCTURED.match(line):
            p.restructured.append(m["message"])
        elif m := _MOVED.match(line):
            p.moves.append(
                Moved(
                    transform=m["transform"],
                    test=m["test"],
                    old_class=m["old"],
                    new_class=m["new"],
                    old_instantiated=bool(m["oi"]),
                    new_instantiated=bool(m["ni"]),
                    before=tuple(x for x in m["before"].split(",") if x),
                    after=tuple(x for x in m["after"].split(",") if x),
                    kept_longer=tuple(x for x in (m["kept"] or "").split(",") if x),
                )
            )
        elif m := _GRADUATED.match(line):
            p.graduated_from = m["allowlist"]
        elif line == _NO_TEST_CLASS:
            p.no_test_class = True
    return CommitFacts(lines[0], base, files, rules)


def test_map(files: list[FilePlan]) -> dict[str, str]:
    """The A/B `--map` of the restructured tests (what `apply --map-out` writes)."""
    from transforms.restructure import model

    mapping: dict[str, str] = {}
    for p in files:
        if p.moves:
            moves = [model.Move(**m.__dict__) for m in p.moves]
            mapping.update({e["old"]: e["new"] for e in model.map_entries(p.path, moves)})
    return mapping
