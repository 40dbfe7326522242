"""The survey's result model: one typed record per file, the campaign's aggregates, the
suggested batches and the allowlist's history, with their JSON form (`schema_version` 2:
graduate-only files, the widenings proposed apart, the restructure batches, what was surveyed;
`read_batch_plans` still reads version 1's batches, as label batches).

The aggregates (`totals`, `by_directory`, `by_owner`) are computed from the files, never
stored beside them, so the views and the JSON cannot disagree with the per-file records.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from codemod.engine.result import RulesChoice
from transforms.core.strenum import StrEnum

SCHEMA_VERSION = 2
BATCH_VERSIONS = (1, SCHEMA_VERSION)  # the surveys whose batches `refactor --batches` takes
KIND = "decouple-survey"  # what the JSON says it is (other results of the tool have a schema_version too)
NO_OWNER = "(no owner header)"


class SurveyStatus(StrEnum):
    """Where a file stands, best first."""

    READY = "ready"  # labels alone make the linter pass (or it passes already): one `decouple refactor` away
    RESTRUCTURE = "restructure"  # passes after `--restructure auto` (see `transforms`)
    MANUAL = "manual"  # something stays manual even after restructuring (see `manual`)
    ERROR = "error"  # unreadable or unparseable (see `reason`)


STATUSES = tuple(SurveyStatus)


class BatchPlan(StrEnum):
    """What `refactor` runs on a suggested batch."""

    LABELS = "labels"  # its files are ready: labels alone (or graduate only)
    RESTRUCTURE = "restructure"  # its files pass after `--restructure auto`


class SurveyFormatError(ValueError):
    """A JSON document that is not a survey of this schema."""


@dataclass(frozen=True, kw_only=True)
class ClassDecision:
    """What the label transform decides for one test class (after any restructuring)."""

    name: str
    line: int
    decision: str  # the label transform's status: label, already, needs-manual, ...
    value: str | None  # the value written or found; None when no value fits

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "line": self.line, "decision": self.decision, "value": self.value}


@dataclass(frozen=True, kw_only=True)
class ManualItem:
    """One thing a human has to do, and why."""

    cls: str  # the class, or "(file)" / "torch.load" for what is not a class's
    line: int
    reason: str
    fits: str = ""  # the restructuring the diagnosis advises, when one is named

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls, "line": self.line, "reason": self.reason, "fits": self.fits}


@dataclass(frozen=True, kw_only=True)
class Widening:
    """A restructuring step that would fit a class but adds devices its tests run on: never part
    of the file's plan (`--restructure auto` does not run it), proposed apart."""

    cls: str
    step: str  # cuda-to-accelerator, drop-only-for
    tests: tuple[str, ...]  # the tests whose devices it widens
    adds: tuple[str, ...]  # the devices it adds

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls, "step": self.step, "tests": list(self.tests), "adds": list(self.adds)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Widening:
        return cls(cls=data["class"], step=data["step"], tests=tuple(data["tests"]), adds=tuple(data["adds"]))


@dataclass(frozen=True, kw_only=True)
class TorchLoadFacts:
    """The file's torch.load calls as the torch.load planner sees them."""

    calls: int = 0  # calls found (by qualified name)
    edits: int = 0  # calls `--torch-load` makes explicit
    left_alone: int = 0  # already explicit, pickle_module, **kwargs, a state_dict load, covered
    undiscovered: int = 0  # calls with no discover-globals record: `auto` needs discovery to choose
    manual: int = 0  # calls left for a human (unresolvable)

    @property
    def needs_discovery(self) -> bool:
        return self.undiscovered > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "edits": self.edits,
            "left_alone": self.left_alone,
            "undiscovered": self.undiscovered,
            "manual": self.manual,
        }


@dataclass(frozen=True, kw_only=True)
class FileSurvey:
    path: str  # relative to the survey's root, `/` separators
    directory: str  # the folder holding it ("." at the root)
    owners: tuple[str, ...]  # from the `# Owner(s):` header
    status: SurveyStatus
    reason: str  # one line: why this status
    classes: tuple[ClassDecision, ...] = ()
    # ready with nothing to write: the linter accepts the file as it is (every test class
    # labelled, or none), so only its allowlist entry goes
    graduate_only: bool = False
    transforms: tuple[str, ...] = ()  # restructure: the transforms `--restructure auto` applies
    # Widening steps that would fit a class, which `--restructure auto` never runs: proposed apart
    # (known where the restructuring ran: the files labels alone do not finish).
    could_widen: tuple[Widening, ...] = ()
    manual: tuple[ManualItem, ...] = ()  # what stays manual, per class (status manual)
    torch_load: TorchLoadFacts = field(default_factory=TorchLoadFacts)
    allowlisted: bool | None = None  # None: no allowlist to compare with

    def values(self) -> dict[str, int]:
        """The classes' values (written or found), by value."""
        return dict(sorted(Counter(c.value for c in self.classes if c.value).items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "directory": self.directory,
            "owners": list(self.owners),
            "status": self.status,
            "reason": self.reason,
            "classes": len(self.classes),
            "values": self.values(),
            "class_decisions": [c.to_json() for c in self.classes],
            "graduate_only": self.graduate_only,
            "transforms": list(self.transforms),
            "could_widen": [w.to_json() for w in self.could_widen],
            "manual": [m.to_json() for m in self.manual],
            "torch_load_calls": self.torch_load.calls,
            "needs_discovery": self.torch_load.needs_discovery,
            "torch_load": self.torch_load.to_json(),
            "allowlisted": self.allowlisted,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileSurvey:
        return cls(
            path=data["path"],
            directory=data["directory"],
            owners=tuple(data["owners"]),
            status=SurveyStatus(data["status"]),
            reason=data["reason"],
            classes=tuple(
                ClassDecision(name=c["name"], line=c["line"], decision=c["decision"], value=c["value"])
                for c in data["class_decisions"]
            ),
            graduate_only=bool(data["graduate_only"]),
            transforms=tuple(data["transforms"]),
            could_widen=tuple(Widening.from_json(w) for w in data["could_widen"]),
            manual=tuple(
                ManualItem(cls=m["class"], line=m["line"], reason=m["reason"], fits=m["fits"]) for m in data["manual"]
            ),
            torch_load=TorchLoadFacts(**data["torch_load"]),
            allowlisted=data["allowlisted"],
        )


@dataclass(frozen=True, kw_only=True)
class Excluded:
    path: str
    pattern: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "pattern": self.pattern}


@dataclass(frozen=True, kw_only=True)
class Batch:
    """A suggested PR: up to `group_size` files of one plan (ready, or restructure), one owner
    set, nearby folders."""

    number: int  # 1-based, in the suggested order
    files: tuple[str, ...]
    owners: tuple[str, ...]
    directory: str  # the folder all its files share (their common folder)
    classes: int  # test classes the PR labels or keeps
    plan: BatchPlan = BatchPlan.LABELS
    restructure: tuple[str, ...] = ()  # the steps `--restructure auto` takes in its files (registry order)

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "plan": self.plan,
            "files": list(self.files),
            "owners": list(self.owners),
            "directory": self.directory,
            "classes": self.classes,
            "restructure": list(self.restructure),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Batch:
        return cls(
            number=data["number"],
            plan=BatchPlan(data["plan"]),
            files=tuple(data["files"]),
            owners=tuple(data["owners"]),
            directory=data["directory"],
            classes=data["classes"],
            restructure=tuple(data["restructure"]),
        )


@dataclass(frozen=True, kw_only=True)
class HistoryPoint:
    """The allowlist at one commit that changed it."""

    commit: str
    date: str  # the committer date, ISO 8601
    entries: int | None  # None: not a JSON list of paths at that commit
    added: int = 0  # entries that were not there at the previous point
    removed: int = 0  # ... and entries that left (graduated)

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "date": self.date,
            "entries": self.entries,
            "added": self.added,
            "removed": self.removed,
        }


def _counts(files: list[FileSurvey]) -> dict[str, int]:
    counts = Counter(f.status for f in files)
    return {"files": len(files)} | {s.value: counts[s] for s in STATUSES}


@dataclass(kw_only=True)
class Survey:
    root: str  # what the paths are relative to (not in the JSON: the same survey anywhere)
    allowlist: str | None  # the allowlist surveyed, relative to the root
    commit: str | None  # HEAD of the root's repository when surveyed
    # The files the survey read (the selection, the allowlist, the linters) whose work-tree
    # content is not HEAD's: modified, staged or untracked. Empty: it surveyed the commit;
    # None: no git repository to compare with.
    uncommitted: list[str] | None = None
    group_size: int
    settings: dict[str, Any]  # what the analysis ran with (torch-load mode, the gate, the linters)
    # The generation of the linter's rules applied (as `apply` names it; linters relative to the root).
    generation: RulesChoice | None = None
    files: list[FileSurvey] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # allowlist entries whose file is gone
    batches: list[Batch] = field(default_factory=list)
    history: list[HistoryPoint] | None = None  # None: --git-history not asked
    warnings: list[str] = field(default_factory=list)

    @property
    def surveyed(self) -> str:
        """`commit` when every file read is HEAD's, else `work-tree`."""
        return "commit" if self.commit is not None and self.uncommitted == [] else "work-tree"

    def totals(self) -> dict[str, int]:
        torch_files = [f for f in self.files if f.torch_load.calls]
        return _counts(self.files) | {
            "excluded": len(self.excluded),
            "stale": len(self.stale),
            "batches": len(self.batches),
            "torch_load_files": len(torch_files),
            "needs_discovery": sum(1 for f in torch_files if f.torch_load.needs_discovery),
            "graduate_only": sum(1 for f in self.files if f.graduate_only),
            "could_widen": sum(1 for f in self.files if f.could_widen),
        }

    def by_directory(self) -> dict[str, dict[str, int]]:
        groups: dict[str, list[FileSurvey]] = {}
        for f in self.files:
            groups.setdefault(f.directory, []).append(f)
        return {d: _counts(groups[d]) for d in sorted(groups)}

    def by_owner(self) -> dict[str, dict[str, int]]:
        """A file with several owners counts for each."""
        groups: dict[str, list[FileSurvey]] = {}
        for f in self.files:
            for owner in f.owners or (NO_OWNER,):
                groups.setdefault(owner, []).append(f)
        return {o: _counts(groups[o]) for o in sorted(groups)}

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "schema_version": SCHEMA_VERSION,
            "allowlist": self.allowlist,
            "commit": self.commit,
            "surveyed": self.surveyed,
            "uncommitted": self.uncommitted,
            "group_size": self.group_size,
            "settings": self.settings,
            "generation": _generation_json(self.generation),
            "totals": self.totals(),
            "by_directory": self.by_directory(),
            "by_owner": self.by_owner(),
            "batches": [b.to_json() for b in self.batches],
            "history": None if self.history is None else [h.to_json() for h in self.history],
            "warnings": self.warnings,
            "excluded": [e.to_json() for e in self.excluded],
            "stale": self.stale,
            "files": [f.to_json() for f in self.files],
        }

    @classmethod
    def from_json(cls, data: Any, root: str = ".") -> Survey:
        """Raises SurveyFormatError for anything but a survey of this schema."""
        _check_kind(data)
        try:
            history = data["history"]
            return cls(
                root=root,
                allowlist=data["allowlist"],
                commit=data["commit"],
                uncommitted=data["uncommitted"],
                group_size=data["group_size"],
                settings=dict(data["settings"]),
                generation=_generation(data.get("generation")),
                files=[FileSurvey.from_json(f) for f in data["files"]],
                excluded=[Excluded(path=e["path"], pattern=e["pattern"]) for e in data["excluded"]],
                stale=list(data["stale"]),
                batches=[Batch.from_json(b) for b in data["batches"]],
                history=None if history is None else [HistoryPoint(**h) for h in history],
                warnings=list(data["warnings"]),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise SurveyFormatError(f"not a decouple survey: {type(e).__name__}: {e}") from None


def _generation_json(choice: RulesChoice | None) -> dict[str, Any] | None:
    """As `apply`'s JSON names it (in JSON's own types: lists, not tuples)."""
    if choice is None:
        return None
    return choice.to_json() | {"linters": list(choice.linters), "differences": list(choice.differences)}


def _generation(data: dict[str, Any] | None) -> RulesChoice | None:
    if data is None:
        return None
    return RulesChoice(
        name=data["name"],
        setting=data["setting"],
        linters=tuple(data["linters"]),
        differences=tuple(data["differences"]),
    )


def _check_kind(data: Any, versions: tuple[int, ...] = (SCHEMA_VERSION,)) -> None:
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise SurveyFormatError("not a decouple survey (`decouple survey --json`)")
    if data.get("schema_version") not in versions:
        raise SurveyFormatError(
            f"a survey of schema_version {data.get('schema_version')!r}; this decouple reads "
            + " or ".join(map(str, versions))
        )


@dataclass(frozen=True, kw_only=True)
class PlannedBatch:
    """A suggested batch as `refactor --batches` takes it."""

    number: int
    files: tuple[str, ...]
    plan: BatchPlan  # restructure: run it with `--restructure auto`


def read_batch_plans(data: Any) -> list[PlannedBatch]:
    """The suggested batches of a survey's JSON, in order, each with its plan (a survey of
    version 1 made label batches only). Raises SurveyFormatError."""
    _check_kind(data, BATCH_VERSIONS)
    batches = data.get("batches")
    if not isinstance(batches, list) or not all(
        isinstance(b, dict) and isinstance(b.get("files"), list) and all(isinstance(p, str) for p in b["files"])
        for b in batches
    ):
        raise SurveyFormatError("the survey's batches must be a list of {files: [path, ...]}")
    try:
        return [
            PlannedBatch(number=n, files=tuple(b["files"]), plan=BatchPlan(b.get("plan", BatchPlan.LABELS)))
            for n, b in enumerate(batches, 1)
        ]
    except ValueError as e:
        raise SurveyFormatError(f"a batch's plan: {e}") from None
