"""The capture plugin's events: the shapes of the JSON lines it writes (``plugin.py``).

Types only: nothing imports this file at run time. The plugin builds its events as literals of
these types (checked by mypy, imported under ``TYPE_CHECKING``: the target interpreter never
loads this file), and the runner reads each line as one of them (``codemod/ab/execution/events.py``).
"""

from __future__ import annotations

from typing import Literal, TypedDict


class ExcInfo(TypedDict):
    type: str  # qualified, e.g. "_pickle.UnpicklingError"
    chain: list[str]  # causes/contexts, outermost first
    message: str  # first lines of str(exc), capped


class SubtestInfo(TypedDict):
    msg: str | None
    kwargs: dict[str, str]


class _Stamped(TypedDict, total=False):
    t: float  # when the event was written (added by _Recorder.emit)


class SessionEvent(_Stamped):
    ev: Literal["session"]
    pid: int
    python: str
    pytest: str
    cwd: str
    rootdir: str
    nodeid_prefix: str


class CollectedEvent(_Stamped, total=False):
    ev: Literal["collected"]
    nodeids: list[str]
    hw: dict[str, str | None]  # node id -> its class's label at run time (the census)


class DeselectedEvent(_Stamped):
    ev: Literal["deselected"]
    nodeids: list[str]
    reason: str  # "-k EXPR", "collect_ignore in conftest.py", ...
    hw: dict[str, str | None]  # their census


class CollectErrorEvent(_Stamped):
    ev: Literal["collecterror"]
    nodeid: str
    file: str
    exc: ExcInfo | None
    longrepr: str


class CollectSkipEvent(_Stamped):
    ev: Literal["collectskip"]
    nodeid: str
    file: str
    reason: str


class StartEvent(_Stamped):
    ev: Literal["start"]
    nodeid: str


class _SkipReason(_Stamped, total=False):
    skip_reason: str  # a skipped phase's reason


class ReportEvent(_SkipReason):
    """One phase of a test (or one unittest subtest, with `subtest`)."""

    ev: Literal["report"]
    nodeid: str
    when: Literal["setup", "call", "teardown"]
    outcome: Literal["passed", "failed", "skipped"]
    duration: float
    wasxfail: str | None
    xfail: bool
    exc: ExcInfo | None
    longrepr: str
    subtest: SubtestInfo | None


class FinishEvent(_Stamped):
    ev: Literal["finish"]
    nodeid: str


class PytestAccount(TypedDict):
    """What pytest itself concluded of the session, read at its end."""

    testscollected: int
    testsfailed: int
    shouldstop: str  # why pytest was told to stop ("" = it was not: -x, --maxfail, a plugin)
    shouldfail: str
    interrupted: ExcInfo | None  # what pytest_keyboard_interrupt got: pytest.exit(), KeyboardInterrupt
    # the terminal reporter's categories ("passed", "failed", "error", "skipped", "xfailed", "xpassed",
    # a plugin's own) -> the node ids of the test reports it counted in each (what its "N passed"
    # line says); None: no terminal reporter
    stats: dict[str, list[str]] | None


class EndEvent(_Stamped):
    ev: Literal["end"]
    exitstatus: int
    account: PytestAccount | None  # None: it could not be read (a plugin-error event says why)


class PluginErrorEvent(_Stamped):
    ev: Literal["plugin-error"]
    error: str


Event = (
    SessionEvent
    | DeselectedEvent
    | CollectedEvent
    | CollectErrorEvent
    | CollectSkipEvent
    | StartEvent
    | ReportEvent
    | FinishEvent
    | EndEvent
    | PluginErrorEvent
)
