"""The A/B result model: typed dataclasses that serialise to versioned JSON.

Every A/B report (terminal, JSON, Markdown, HTML, JUnit, en/zh) is a view over
one `ABResult`, so no two reports can disagree.  The closed sets of strings
(outcomes, phases, categories, verdicts, cause statuses...) are `StrEnum`s:
each member is its own JSON string, so the JSON and every comparison with a
literal string stay as they were.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from codemod.ab.result.diff import Changes
from codemod.ab.result.notices import Notice
from codemod.ab.result.schema import SchemaError, build, kind
from transforms.core.strenum import StrEnum

SCHEMA_VERSION = 5
# Older results still read: 2 added fields only (their defaults fill the gaps); 3 made
# the runner's warnings structured notices (the plain strings of 1 and 2 read back as
# verbatim notices); 4 added the arms' totals (computed from the outcomes when an older
# result is read), the runtime classification census, coverage-lost / not-run-here, the
# label filter, the test plan and the structure of the diff; 5 added the outcome and
# category `incomplete`, each arm's reconciliation with pytest's own account
# (`accounting`), the run's identity (what `ab merge` checks) and the device sets B
# narrows (fields only: an older result reads with none of them).
READABLE_SCHEMA_VERSIONS = (1, 2, 3, 4, 5)


class OutcomeValue(StrEnum):
    """The outcome of one test in one arm (worst phase wins: error > failed > ...)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    XFAILED = "xfailed"
    XPASSED = "xpassed"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    NOT_RUN = "not-run"  # collected, never started: its file was stopped before it (a crash, --file-timeout)
    # collected, never run by a session that went to its end: deselected by an option or a
    # hook (-k, -m, --deselect, a conftest filter), left out of pytest's directory walk
    # (collect_ignore, --ignore), or a session that runs nothing (--collect-only); the
    # message says which
    DESELECTED = "deselected"
    # started, never concluded: no report decides it (a setup report and no call report: a
    # session ended by pytest.exit() or a KeyboardInterrupt during it, a session that runs no
    # call phase such as --setup-only), or pytest's own account of the session contradicts
    # the events; the message says where it stopped and why
    INCOMPLETE = "incomplete"


# Outcomes that count as failing (a failure in the reports, a group for the cause table).
FAILING = frozenset({OutcomeValue.FAILED, OutcomeValue.ERROR, OutcomeValue.CRASHED, OutcomeValue.TIMEOUT})


class Phase(StrEnum):
    """Where an outcome was decided."""

    COLLECT = "collect"
    SETUP = "setup"
    CALL = "call"
    TEARDOWN = "teardown"


class Category(StrEnum):
    """The A/B category of one test, in report order (most important first)."""

    NEW_FAILURE = "new-failure"  # passed (or skipped) in A, fails/errors in B
    CRASH = "crash"  # crashed in B, not in A
    TIMEOUT = "timeout"  # timed out in B, not in A
    # ran to an outcome in A; in B it started and never concluded (outcome incomplete)
    INCOMPLETE = "incomplete"
    # ran in A (passed, failed, xfail, crashed...), does not run in B: skipped (any
    # mechanism), deselected, not collected, missing; the note says how
    COVERAGE_LOST = "coverage-lost"
    MISSING_IN_B = "missing-in-b"  # in A but not run there (skipped), gone from B's run (absent, deselected)
    NO_LONGER_RUN = "no-longer-run"  # results of schema <= 3 only: what coverage-lost was then (SAFE)
    XFAIL_TO_XPASS = "xfail-to-xpass"
    XPASS_TO_XFAIL = "xpass-to-xfail"
    DIFFERENT_FAILURE = "different-failure"  # fails in both, signatures differ
    SIMILAR_FAILURE = "similar-failure"  # fails in both, only the loose signatures match
    FLAKY = "flaky"  # discordant, inconsistent on alternating reruns
    # ran in A; B moved it (--map) to a device this machine lacks, so B never generated it here
    NOT_RUN_HERE = "not-run-here"
    INCONCLUSIVE = "inconclusive"  # ran in neither arm (its file was stopped before it): no evidence
    PRE_EXISTING = "pre-existing"  # fails in both with identical signature
    FIXED = "fixed"  # fails in A, passes in B
    NEWLY_RUN = "newly-run"  # skipped in A, runs in B
    ADDED_IN_B = "added-in-b"  # absent from A, present in B
    SAME_SKIP = "same-skip"
    SAME_PASS = "same-pass"


# Per-test A/B categories, in report order.
CATEGORIES = tuple(Category)
CATEGORY_RANK = {c: i for i, c in enumerate(CATEGORIES)}

# Categories that make the verdict REGRESSION.
REGRESSING = frozenset(
    {
        Category.NEW_FAILURE,
        Category.CRASH,
        Category.TIMEOUT,
        Category.INCOMPLETE,
        Category.COVERAGE_LOST,
        Category.MISSING_IN_B,
        Category.XPASS_TO_XFAIL,
    }
)
# Categories that make the verdict INCONCLUSIVE (when nothing regresses): no evidence here.
UNPROVEN = frozenset({Category.NOT_RUN_HERE, Category.INCONCLUSIVE})


class Verdict(StrEnum):
    SAFE = "SAFE"
    REGRESSION = "REGRESSION"
    INCONCLUSIVE = "INCONCLUSIVE"


EXIT_CODES = {Verdict.SAFE: 0, Verdict.REGRESSION: 1, Verdict.INCONCLUSIVE: 3}


class Scope(StrEnum):
    """Where a group of failures fails (codemod.ab.comparison.causes)."""

    BOTH = "both"  # identically in A and B
    B_CHANGED = "b-changed"  # in both arms, differently
    B_ONLY = "b-only"


class CauseId(StrEnum):
    """The causes of the cause table (codemod.ab.comparison.causes.CAUSES), in table order."""

    WEIGHTS_ONLY_DEFAULT = "weights-only-default"
    QUANTIZED_ENGINE = "quantized-engine"
    HW_CLASSIFICATION_MISSING = "hw-classification-missing"
    DEVICE_BACKEND_AUTOLOAD = "device-backend-autoload"
    MISSING_TEST_DEPENDENCY = "missing-test-dependency"


class CauseStatus(StrEnum):
    """What the evidence says about a group's cause, in report order."""

    CONFIRMED = "confirmed"  # the experiment reproduced the cause
    NOT_CONFIRMED = "not-confirmed"  # a cause matched, the experiment contradicts it
    SUSPECTED = "suspected"  # a cause matched, its experiment has not run (use --diagnose)
    UNKNOWN = "unknown"  # no cause in the table matches


class ExperimentKind(StrEnum):
    """How a cause is confirmed."""

    DIAG = "diag"  # a diagnostic arm's variables make the failing tests pass
    PROBE = "probe"  # a fact of the environment probe
    IMPORT = "import"  # an import check of a module in the target interpreter
    NONE = ""  # no cause matched: nothing to confirm


# The arms a diagnostic arm (and a cause's confirming experiment) can be based on.
BaseArm = Literal["A", "B"]

# Part of every arm's pytest command (the runner runs them, the reproduction views
# rebuild the commands from them).  --maxfail=0 comes after the ini ``addopts`` on the
# command line and so overrides ``-x`` / ``--exitfirst`` / ``--maxfail=N`` there (same
# dest, last wins), without dropping the legitimate options ``-o addopts=`` would drop
# (``--import-mode``, ``-p plugin``, ``-m`` expressions...).
PYTEST_ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly", "--continue-on-collection-errors", "--maxfail=0")
# Set only in the reproduction commands (a human runs them in a real tree).
REPRO_VARS = {"PYTHONDONTWRITEBYTECODE": "1"}


def safe_arg(arg: str) -> str:
    """A path or node id as a pytest argument: `-k_test.py` (or `--basetemp=DIR`, from a
    hostile result) would be read as an option."""
    return "./" + arg if arg.startswith("-") else arg


def file_of(nodeid: str) -> str:
    """The test file of a node id (or of a file-level entry)."""
    return nodeid.split("::", 1)[0]


# The class-name suffixes instantiate_device_type_tests gives each device's class.
DEVICE_SUFFIXES = ("CPU", "CUDA", "MPS", "XPU", "META", "LAZY", "HPU", "NPU", "MTIA", "PRIVATEUSE1")


def device_of(nodeid: str) -> str | None:
    """The device of an instantiated test (`TestFooCUDA::test_x_float32_cuda` -> "cuda"):
    its class ends with the device's suffix and its name with `_<device>`; None otherwise."""
    parts = nodeid.split("::")
    if len(parts) < 3:
        return None
    cls, name = parts[-2], parts[-1].split("[", 1)[0]
    for suffix in DEVICE_SUFFIXES:
        if cls.endswith(suffix) and len(cls) > len(suffix) and name.endswith("_" + suffix.lower()):
            return suffix.lower()
    return None


@dataclass(kw_only=True)
class Outcome:
    """One test's result in one arm."""

    nodeid: str
    outcome: OutcomeValue
    phase: Phase = Phase.CALL
    exc_type: str | None = None  # qualified, e.g. "_pickle.UnpicklingError"
    exc_chain: list[str] = field(default_factory=list)  # causes/contexts, outermost first
    message: str = ""  # raw first lines of the message (capped)
    signature: str | None = None  # exact normalised signature (None when passed)
    loose_signature: str | None = None
    traceback: str = ""  # full longrepr, for the report only
    duration: float = 0.0
    subtests: list[Outcome] = field(default_factory=list)
    signal: str | None = None  # "SIGSEGV" when crashed
    reruns: list[OutcomeValue] = field(default_factory=list)  # outcomes of confirmation reruns (alone)
    # outcomes of reruns of the file up to this test (only when the arms agree
    # alone but differed in the file: order dependence vs flakiness)
    suite_reruns: list[OutcomeValue] = field(default_factory=list)
    # The census: the `hw_classification` the test's class carries at run time (getattr,
    # so inherited), the member's name; None when it has none (or the run took no census:
    # results of schema <= 3, and file-level entries); "?<repr>" for a value that is not a
    # HardwareClassification member.
    hw_classification: str | None = None


# The key of `classification_counts` for tests whose class carries no label at run time,
# and for a value that is not a member.
UNCLASSIFIED = "unclassified"
INVALID_LABEL = "invalid"


@dataclass(kw_only=True)
class Totals:
    """One arm's counts, as pytest and reviewers quote them.  `collected` and `run` count
    tests: run = passed + failed + xfailed + xpassed + the tests that errored (crashes and
    timeouts included); `errors` also counts each file that failed to collect and `skipped`
    each module-level skip, one each, as pytest counts them.  So collected + the skipped
    modules = run + skipped + deselected + not_run + incomplete."""

    collected: int = 0
    run: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0
    deselected: int = 0
    not_run: int = 0  # its file was stopped before it
    incomplete: int = 0  # started, never concluded (schema 5)

    @classmethod
    def of(cls, arm: ArmResult) -> Totals:
        t = cls()
        for o in arm.outcomes.values():
            t.collected += 1
            if o.outcome == OutcomeValue.PASSED:
                t.passed += 1
            elif o.outcome == OutcomeValue.FAILED:
                t.failed += 1
            elif o.outcome in (OutcomeValue.ERROR, OutcomeValue.CRASHED, OutcomeValue.TIMEOUT):
                t.errors += 1
            elif o.outcome == OutcomeValue.SKIPPED:
                t.skipped += 1
            elif o.outcome == OutcomeValue.XFAILED:
                t.xfailed += 1
            elif o.outcome == OutcomeValue.XPASSED:
                t.xpassed += 1
            elif o.outcome == OutcomeValue.DESELECTED:
                t.deselected += 1
            elif o.outcome == OutcomeValue.INCOMPLETE:
                t.incomplete += 1
            else:
                t.not_run += 1
        t.run = t.passed + t.failed + t.errors + t.xfailed + t.xpassed
        t.errors += len(arm.collection_errors)
        t.skipped += len(arm.collection_skips)
        return t


class AccountIssue(StrEnum):
    """What pytest's own account of one of an arm's sessions says that the events do not."""

    # the session ended early: pytest.exit(), a KeyboardInterrupt, -x / --maxfail, or exit
    # status 2 (interrupted), 3 (internal error) or 4 (usage error)
    STOPPED = "stopped"
    NO_TEST_RAN = "no-test-ran"  # it collected tests and ran no call phase (--setup-only, --collect-only...)
    OUTCOMES_DIFFER = "outcomes-differ"  # tests pytest counted otherwise than the events say
    COLLECTED_DIFFERS = "collected-differs"  # session.testscollected is not what the events collected
    FAILURES_UNSEEN = "failures-unseen"  # session.testsfailed counts failures the events do not hold
    NO_ACCOUNT = "no-account"  # the session ended without pytest's account (the plugin could not read it)
    NO_REPORTER = "no-reporter"  # pytest ran without its terminal reporter (-p no:terminal): no counts to compare
    # the process ended otherwise than its session (an atexit handler, a crash at interpreter exit): what a
    # caller of plain pytest sees is that exit status, not the session's
    EXITED_AFTER_END = "exited-after-end"


@dataclass(kw_only=True)
class AccountFinding:
    """One pytest session of an arm whose own account disagrees with the events (or that
    ended early): the verdict is never SAFE while an arm A or B has one."""

    issue: AccountIssue
    files: list[str] = field(default_factory=list)  # the session's test files (a pack has several)
    exit_status: int | None = None
    stopped_by: str = ""  # what ended it: "pytest.exit: done", "KeyboardInterrupt", -x's reason...
    # the figures that disagree, by name ("collected", "failures", or an outcome category):
    # pytest's own, then the events'
    pytest: dict[str, int] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)
    tests: list[str] = field(default_factory=list)  # the tests it left incomplete


@dataclass(kw_only=True)
class ArmResult:
    name: str  # "A", "B", or a diagnostic arm's name
    label: str  # human description: "base HEAD~1", "work tree", ...
    root: str  # where it ran (temporary, removed afterwards)
    source: str  # "git:REF", "worktree", "dir:PATH"
    env_added: dict[str, str] = field(default_factory=dict)  # --env and --diag vars
    extra_args: list[str] = field(default_factory=list)  # e.g. --hw-classification GENERIC
    command: str = ""  # reproduction command (shell-quoted)
    # The commit the arm's files are (full id): a git arm's, or the work tree's HEAD when the
    # files the arm ran were exactly that commit (no uncommitted or untracked change among
    # them); "" = not a commit. `tree` is that commit's tree (what `pr-body` compares).
    commit: str = ""
    tree: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    collection_errors: dict[str, Outcome] = field(default_factory=dict)  # by file
    # module-level pytest.skip(allow_module_level=True), by file (outcome "skipped", phase "collect")
    collection_skips: dict[str, Outcome] = field(default_factory=dict)
    crashes: list[str] = field(default_factory=list)  # nodeids attributed a crash
    ran: bool = True  # False: the arm could not run at all
    error: str = ""  # why it could not run
    duration: float = 0.0
    totals: Totals = field(default_factory=Totals)  # schema 4 (computed for older results)
    # schema 4: tests per runtime label (member name, UNCLASSIFIED, INVALID_LABEL); empty
    # when the run took no census (an older result)
    classification_counts: dict[str, int] = field(default_factory=dict)
    # schema 5: the sessions whose own pytest account disagrees with the events
    accounting: list[AccountFinding] = field(default_factory=list)


@dataclass(kw_only=True)
class TestComparison:
    nodeid: str
    category: Category
    a: Outcome | None = None
    b: Outcome | None = None
    note: str = ""  # e.g. "renamed from X via --map"
    mapped_from: str | None = None


@dataclass(kw_only=True)
class DiagnosticSummary:
    name: str
    based_on: BaseArm
    variables: dict[str, str] = field(default_factory=dict)
    # nodeid -> (outcome in the base arm, outcome in the diagnostic arm), only changed ones
    changed: dict[str, list[OutcomeValue]] = field(default_factory=dict)
    statement: str = ""  # "3 failures in A pass with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1"


@dataclass(kw_only=True)
class CauseFinding:
    """Why one group of identical failures fails (codemod.ab.comparison.causes), and the evidence."""

    nodeids: list[str] = field(default_factory=list)
    scope: Scope = Scope.BOTH
    category: Category
    signature: str = ""  # the group's (B, else A) signature
    exc_type: str = ""
    cause: CauseId | None = None  # None = no cause matched
    status: CauseStatus = CauseStatus.UNKNOWN
    experiment: ExperimentKind = ExperimentKind.NONE
    variables: dict[str, str] = field(default_factory=dict)  # kind "diag": the confirming arm's variables
    based_on: Literal["A", "B", ""] = ""  # kind "diag": the arm the experiment reruns
    evidence: dict[str, str] = field(default_factory=dict)  # facts the explanation and remedy cite


@dataclass(kw_only=True)
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


@dataclass(kw_only=True)
class RuntimeFinding:
    """What the census shows that the source does not: a file that carries labels in B
    whose tests run unclassified (a label on a template the module deletes, classes built
    by a factory or copy_tests): PyTorch's --hw-classification filter drops them."""

    kind: Literal["unclassified-at-runtime"] = "unclassified-at-runtime"
    file: str
    classes: list[str] = field(default_factory=list)  # the classes whose tests run unclassified
    tests: int = 0
    # the classes the source labels whose label reaches no test run (else all it labels)
    labelled: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class FilterRun:
    """One file of B run again under PyTorch's own filter, `--hw-classification` with the
    values its source writes, as the checkout's conftest.py offers it (the numbers are
    those reviewers quote: total, passed = selected, unclassified, mismatched)."""

    file: str
    values: list[str] = field(default_factory=list)
    total: int = 0  # tests B collects in the file
    selected: int = 0  # ... that the filter keeps
    passed: int = 0  # ... of those, passed
    unclassified: int = 0  # dropped: no label at run time
    mismatched: int = 0  # dropped: another label
    error: str = ""  # the filtered run could not run the file


class PlanShape(StrEnum):
    """How a test file is meant to be run directly (its `__main__` block and the checkout)."""

    PYTEST = "pytest"  # no run_tests() of its own, or the conftest offers --hw-classification
    RUN_TESTS = "run-tests"  # `python test/x.py` runs run_tests(): it accepts --hw-classification
    UNITTEST_MAIN = "unittest-main"  # unittest.main() rejects --hw-classification
    RUNNER = "runner"  # raise_on_run_directly(...): the runner it names runs it


@dataclass(kw_only=True)
class PlanRun:
    """One command of the PR's Test Plan, run in B as printed."""

    file: str
    shape: PlanShape
    command: str  # shell-quoted, from the arm root (the repository top)
    returncode: int | None = None  # None: not run
    summary: str = ""  # the summary line(s) it printed (`Ran 3 tests ...`, `OK`, `3 passed in ...`)
    note: str = ""  # why it was not run, or what its shape means


@dataclass(kw_only=True)
class RunIdentity:
    """What makes shards one run (`ab merge` takes the shards of exactly one): the code of
    both arms, the tool, the number of shards, and `run_id`, a digest of all of it and of
    what the run was asked (`request`: its paths and the options that change outcomes)."""

    run_id: str
    base_commit: str = ""  # arm A's commit ("" = not from git)
    a_tree: str = ""  # arm A's tree id, or a digest of its files and their pytest configuration
    b_tree: str = ""  # ... arm B's
    tool_version: str = ""
    shards: int = 1
    request: str = ""  # a digest of the paths and options


@dataclass(kw_only=True)
class ABResult:
    schema_version: int = SCHEMA_VERSION
    tool_version: str = ""
    normaliser_version: str = ""
    verdict: Verdict = Verdict.INCONCLUSIVE
    verdict_reason: str = ""
    paths: list[str] = field(default_factory=list)
    base_ref: str | None = None
    started: str = ""  # ISO 8601
    duration: float = 0.0
    python: str = ""  # the target interpreter
    shard: str | None = None  # "I/N"
    identity: RunIdentity | None = None  # schema 5 (None: an older result)
    env_unset: list[str] = field(default_factory=list)
    env_set: dict[str, str] = field(default_factory=dict)  # applied to every arm
    arms: list[ArmResult] = field(default_factory=list)
    tests: list[TestComparison] = field(default_factory=list)
    counts: dict[Category, int] = field(default_factory=dict)  # category -> n
    diagnostics: list[DiagnosticSummary] = field(default_factory=list)
    environment: Environment = field(default_factory=Environment)
    mapping: dict[str, str] = field(default_factory=dict)  # --map OLD=NEW
    warnings: list[Notice] = field(default_factory=list)  # added by the A/B runner: non-fatal problems
    causes: list[CauseFinding] = field(
        default_factory=list
    )  # schema 2: per failure group (codemod.ab.comparison.causes)
    changes: Changes | None = None  # schema 2: what differs between git arms
    runtime: list[RuntimeFinding] = field(default_factory=list)  # schema 4: the census's findings
    label_filter: list[FilterRun] = field(default_factory=list)  # schema 4: B under the label filter
    test_plan: list[PlanRun] = field(default_factory=list)  # schema 4: the Test Plan, run in B
    # schema 4: devices of a widened device set (instantiate options changed) that this
    # machine lacks: nothing this run shows holds there
    not_exercised: list[str] = field(default_factory=list)
    # Measured by the run, not part of the JSON: the wall seconds of each file (the
    # slower of arms A and B), for --durations-out.
    file_durations: dict[str, float] = field(default_factory=dict, metadata={"json": False})

    def arm(self, name: str) -> ArmResult | None:
        return next((a for a in self.arms if a.name == name), None)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for f in fields(self):
            if not f.metadata.get("json", True):
                del data[f.name]
        return data

    @classmethod
    def from_json(cls, data: Any) -> ABResult:
        """Rebuild a result, validated against the model (the result schema); a SchemaError
        (a ValueError) naming the field for anything that does not match. A result may come
        from another machine (a CI shard running the PR's code): nothing of it is trusted."""
        if not isinstance(data, dict):
            raise SchemaError("", f"expected a JSON object, got {kind(data)}")
        version = data.get("schema_version")
        if version not in READABLE_SCHEMA_VERSIONS or isinstance(version, bool):
            raise SchemaError(
                "schema_version", f"unsupported A/B result schema version {version!r} (expected {SCHEMA_VERSION})"
            )
        if version < 3 and isinstance(data.get("warnings"), list):
            data = {**data, "warnings": [_verbatim_warning(w) for w in data["warnings"]]}
        result = build(cls, data, "")
        _check_values(result)
        if version < 4:
            for arm in result.arms:
                arm.totals = Totals.of(arm)
        result.schema_version = SCHEMA_VERSION
        return result


# Values that end up as words of a shell script (repro.sh): an environment variable name, a
# commit or tree id. Anything else is quoted where it is written.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OBJECT_ID = re.compile(r"([0-9a-f]{40}|[0-9a-f]{64})?")


def _check_values(result: ABResult) -> None:
    names = [("env_unset", v) for v in result.env_unset] + [("env_set", k) for k in result.env_set]
    for i, arm in enumerate(result.arms):
        names += [(f"arms[{i}].env_added", k) for k in arm.env_added]
        for key in ("commit", "tree"):
            if not OBJECT_ID.fullmatch(getattr(arm, key)):
                raise SchemaError(f"arms[{i}].{key}", f"{getattr(arm, key)!r} is not a git object id")
    for where, name in names:
        if not ENV_NAME.fullmatch(name):
            raise SchemaError(where, f"{name!r} is not an environment variable name")


def _verbatim_warning(warning: Any) -> Any:
    """A schema 1-2 warning (a plain string) as the JSON of a verbatim notice; anything
    else is left for `build` to refuse."""
    return asdict(Notice.verbatim(warning)) if isinstance(warning, str) else warning
