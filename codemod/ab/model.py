"""The A/B result model: plain dataclasses that serialise to versioned JSON.

Every A/B report (terminal, JSON, Markdown, HTML, JUnit, en/zh) is a view over
one `ABResult`, so no two reports can disagree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any, Optional, get_args, get_origin, get_type_hints

from codemod.ab.notices import Notice

SCHEMA_VERSION = 3
# Older results still read: 2 added fields only (their defaults fill the gaps); 3 made
# the runner's warnings structured notices (the plain strings of 1 and 2 read back as
# verbatim notices).
READABLE_SCHEMA_VERSIONS = (1, 2, 3)

# Outcomes of one test in one arm (worst phase wins: error > failed > ...).
OUTCOMES = (
    "passed",
    "failed",
    "error",
    "skipped",
    "xfailed",
    "xpassed",
    "crashed",
    "timeout",
    "not-run",
)

# Per-test A/B categories, in report order (most important first).
CATEGORIES = (
    "new-failure",  # passed (or skipped) in A, fails/errors in B
    "crash",  # crashed in B, not in A
    "timeout",  # timed out in B, not in A
    "missing-in-b",  # collected in A, absent from B
    "no-longer-run",  # ran in A, skipped / not run in B (never counted as fixed)
    "xfail-to-xpass",
    "xpass-to-xfail",
    "different-failure",  # fails in both, signatures differ
    "similar-failure",  # fails in both, only the loose signatures match
    "flaky",  # discordant, inconsistent on alternating reruns
    "inconclusive",  # ran in neither arm (its file was stopped before it): no evidence
    "pre-existing",  # fails in both with identical signature
    "fixed",  # fails in A, passes in B
    "newly-run",  # skipped in A, runs in B
    "added-in-b",  # absent from A, present in B
    "same-skip",
    "same-pass",
)

# A test that ran in neither arm makes the verdict INCONCLUSIVE.
INCONCLUSIVE_CATEGORY = "inconclusive"

# Categories that make the verdict REGRESSION.
REGRESSING = frozenset({"new-failure", "crash", "timeout", "missing-in-b", "xpass-to-xfail"})

VERDICTS = ("SAFE", "REGRESSION", "INCONCLUSIVE")
EXIT_CODES = {"SAFE": 0, "REGRESSION": 1, "INCONCLUSIVE": 3}


@dataclass
class Outcome:
    """One test's result in one arm."""

    nodeid: str
    outcome: str  # one of OUTCOMES
    phase: str = "call"  # collect | setup | call | teardown
    exc_type: str | None = None  # qualified, e.g. "_pickle.UnpicklingError"
    exc_chain: list[str] = field(default_factory=list)  # causes/contexts, outermost first
    message: str = ""  # raw first lines of the message (capped)
    signature: str | None = None  # exact normalised signature (None when passed)
    loose_signature: str | None = None
    traceback: str = ""  # full longrepr, for the report only
    duration: float = 0.0
    subtests: list[Outcome] = field(default_factory=list)
    signal: str | None = None  # "SIGSEGV" when crashed
    reruns: list[str] = field(default_factory=list)  # outcomes of confirmation reruns (alone)
    # outcomes of reruns of the file up to this test (only when the arms agree
    # alone but differed in the file: order dependence vs flakiness)
    suite_reruns: list[str] = field(default_factory=list)


@dataclass
class ArmResult:
    name: str  # "A", "B", or a diagnostic arm's name
    label: str  # human description: "base HEAD~1", "work tree", ...
    root: str  # where it ran (temporary, removed afterwards)
    source: str  # "git:REF", "worktree", "dir:PATH"
    env_added: dict[str, str] = field(default_factory=dict)  # --env and --diag vars
    extra_args: list[str] = field(default_factory=list)  # e.g. --hw-classification GENERIC
    command: str = ""  # reproduction command (shell-quoted)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    collection_errors: dict[str, Outcome] = field(default_factory=dict)  # by file
    # module-level pytest.skip(allow_module_level=True), by file (outcome "skipped", phase "collect")
    collection_skips: dict[str, Outcome] = field(default_factory=dict)
    crashes: list[str] = field(default_factory=list)  # nodeids attributed a crash
    ran: bool = True  # False: the arm could not run at all
    error: str = ""  # why it could not run
    duration: float = 0.0


@dataclass
class TestComparison:
    nodeid: str
    category: str  # one of CATEGORIES
    a: Outcome | None = None
    b: Outcome | None = None
    note: str = ""  # e.g. "renamed from X via --map"
    mapped_from: str | None = None


@dataclass
class DiagnosticSummary:
    name: str
    based_on: str  # "A" or "B"
    variables: dict[str, str] = field(default_factory=dict)
    # nodeid -> (outcome in the base arm, outcome in the diagnostic arm), only changed ones
    changed: dict[str, list[str]] = field(default_factory=dict)
    statement: str = ""  # "3 failures in A pass with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1"


@dataclass
class CauseFinding:
    """Why one group of identical failures fails (codemod.ab.causes), and the evidence."""

    nodeids: list[str] = field(default_factory=list)
    scope: str = "both"  # "both" (identical in A and B), "b-changed" (fails differently), "b-only"
    category: str = ""
    signature: str = ""  # the group's (B, else A) signature
    exc_type: str = ""
    cause: str | None = None  # an id of codemod.ab.causes.CAUSES; None = no cause matched
    status: str = "unknown"  # confirmed | not-confirmed | suspected | unknown
    experiment: str = ""  # "diag" | "probe" | "import"
    variables: dict[str, str] = field(default_factory=dict)  # kind "diag": the confirming arm's variables
    based_on: str = ""  # kind "diag": "A" or "B"
    evidence: dict[str, str] = field(default_factory=dict)  # facts the explanation and remedy cite


@dataclass
class Environment:
    python: str = ""
    executable: str = ""
    platform: str = ""
    machine: str = ""
    cpu_model: str | None = None  # "Intel(R) Xeon(R) ...", or the Arm implementer/part
    cpu_flags: list[str] = field(default_factory=list)  # ISA flags the quantized engines depend on
    cpu_count: int | None = None  # os.cpu_count()
    cpu_usable: int | None = None  # cores this process may run on (affinity)
    torch_version: str | None = None
    torch_git_version: str | None = None
    cuda: str | None = None  # version string when available
    rocm: str | None = None
    xpu: bool | None = None
    mps: bool | None = None
    accelerator: str | None = None  # torch.accelerator.current_accelerator()
    backends: dict[str, str] = field(default_factory=dict)  # e.g. {"torch_npu": "2.6.0"}
    quantized_engine: str | None = None
    supported_engines: list[str] = field(default_factory=list)
    prepack: dict[str, str] = field(default_factory=dict)  # engine -> "ok" | error text
    has_hw_classification: bool | None = None
    pytest_version: str | None = None  # added by the A/B runner
    variables: dict[str, str] = field(default_factory=dict)  # TORCH_*, PYTORCH_*
    probe_error: str = ""


@dataclass
class ClassChange:
    """What the diff between the arms does inside one class."""

    name: str
    labels: list[str] = field(default_factory=list)  # `hw_classification = HardwareClassification.X` added
    removed_labels: list[str] = field(default_factory=list)
    torch_load: list[str] = field(default_factory=list)  # torch.load edits: "weights_only=False", "safe_globals([...])"


@dataclass
class FileChange:
    path: str
    added: int = 0
    removed: int = 0
    classes: list[ClassChange] = field(default_factory=list)
    torch_load: list[str] = field(default_factory=list)  # torch.load edits outside any class
    imports: list[str] = field(default_factory=list)  # import lines added


@dataclass
class Changes:
    """What differs between the arms, read from `git diff REF` (arms from git only)."""

    ref: str = ""
    stat: str = ""  # `git diff --stat` text
    files: list[FileChange] = field(default_factory=list)
    error: str = ""  # why the diff could not be read


@dataclass
class ABResult:
    schema_version: int = SCHEMA_VERSION
    tool_version: str = ""
    normaliser_version: str = ""
    verdict: str = "INCONCLUSIVE"
    verdict_reason: str = ""
    paths: list[str] = field(default_factory=list)
    base_ref: str | None = None
    started: str = ""  # ISO 8601
    duration: float = 0.0
    python: str = ""  # the target interpreter
    shard: str | None = None  # "I/N"
    env_unset: list[str] = field(default_factory=list)
    env_set: dict[str, str] = field(default_factory=dict)  # applied to every arm
    arms: list[ArmResult] = field(default_factory=list)
    tests: list[TestComparison] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # category -> n
    diagnostics: list[DiagnosticSummary] = field(default_factory=list)
    environment: Environment = field(default_factory=Environment)
    mapping: dict[str, str] = field(default_factory=dict)  # --map OLD=NEW
    warnings: list[Notice] = field(default_factory=list)  # added by the A/B runner: non-fatal problems
    causes: list[CauseFinding] = field(default_factory=list)  # schema 2: per failure group (codemod.ab.causes)
    changes: Changes | None = None  # schema 2: what differs between git arms

    def arm(self, name: str) -> ArmResult | None:
        return next((a for a in self.arms if a.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> ABResult:
        """Rebuild a result; ValueError for anything that is not one (wrong shape included)."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        version = data.get("schema_version")
        if version not in READABLE_SCHEMA_VERSIONS:
            raise ValueError(f"unsupported A/B result schema version {version!r} (expected {SCHEMA_VERSION})")
        if version < 3 and isinstance(data.get("warnings"), list):
            data = {**data, "warnings": [_verbatim_warning(w) for w in data["warnings"]]}
        try:
            result = _build(cls, data)
        except (TypeError, AttributeError, KeyError, ValueError, IndexError) as err:
            raise ValueError(f"wrong shape: {type(err).__name__}: {err}") from None
        result.schema_version = SCHEMA_VERSION
        return result


def _verbatim_warning(warning: Any) -> Any:
    """A schema 1-2 warning (a plain string) as the JSON of a verbatim notice; anything
    else is left for `_build` to refuse."""
    return asdict(Notice.verbatim(warning)) if isinstance(warning, str) else warning


def _build(tp: Any, value: Any) -> Any:
    """Rebuild nested dataclasses from their asdict() form, checking the shape."""
    if value is None:
        return None
    origin = get_origin(tp)
    if origin is Optional or (origin is not None and type(None) in get_args(tp)):
        inner = [a for a in get_args(tp) if a is not type(None)][0]
        return _build(inner, value)
    if isinstance(tp, type) and is_dataclass(tp):
        if not isinstance(value, dict):
            raise TypeError(f"{tp.__name__}: expected an object, got {type(value).__name__}")
        hints = get_type_hints(tp)
        return tp(**{f.name: _build(hints[f.name], value[f.name]) for f in fields(tp) if f.name in value})
    if origin is list:
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got {type(value).__name__}")
        (item,) = get_args(tp)
        return [_build(item, v) for v in value]
    if origin is dict:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        _, item = get_args(tp)
        return {k: _build(item, v) for k, v in value.items()}
    if tp in (str, int, float, bool) and not isinstance(value, (str, int, float, bool)):
        raise TypeError(f"expected {tp.__name__}, got {type(value).__name__}")
    return value
