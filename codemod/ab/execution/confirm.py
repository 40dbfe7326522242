"""Confirming discordant tests: each alone, alternating A and B, then in its file; flaky or not.

Every test whose outcome differs between the arms is rerun without the rest of its
file, `k` rounds; each round reruns all of a file's discordant tests in one process
per arm, arm A then arm B.  When alone both arms agree although they differed in
the file, the file is rerun up to the test once per arm, to tell an order-dependent
difference (reproduces) from a flaky test (does not); a file that ran in a pack after
other files is rerun after them, in one session, as it ran.  Every rerun is a replay: it
runs in a tree as the arm was before its first run (`replay`), never in the root the
first run wrote to.  The outcomes go to the rows' ``reruns`` / ``suite_reruns``;
`rerun_state` and `settle_flaky` judge them (pure).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from codemod.ab.arms.replay import Replays
from codemod.ab.comparison.compare import FAILING_KINDS, KIND_OF, OutcomeKind, kind, sort_rows
from codemod.ab.execution.packrun import PackRunner
from codemod.ab.execution.processes import SlotPool, wait_all
from codemod.ab.result.model import ArmResult, Category, Outcome, OutcomeValue, Phase, TestComparison, file_of
from transforms.core.strenum import StrEnum
from transforms.core.words import plural

# categories whose tests get confirmed by alternating reruns
DISCORDANT = frozenset(
    {
        Category.NEW_FAILURE,
        Category.FIXED,
        Category.CRASH,
        Category.TIMEOUT,
        Category.COVERAGE_LOST,
        Category.NEWLY_RUN,
        Category.XFAIL_TO_XPASS,
        Category.XPASS_TO_XFAIL,
        Category.DIFFERENT_FAILURE,
    }
)


class RerunState(StrEnum):
    """What the alone reruns of a discordant row say."""

    NONE = "none"  # no reruns asked for
    UNCONFIRMED = "unconfirmed"  # an arm has no usable rerun (every rerun was not run)
    # the reruns of one arm disagree with each other, or each arm alone gives the
    # other arm's in-file result (alternates)
    FLAKY = "flaky"
    # each arm alone repeats its in-file result (or the arms still differ alone)
    CONFIRMED = "confirmed"
    # alone the arms agree, in the file they differed: an order-dependent difference,
    # or a flaky one (a rerun of the file tells them apart)
    ORDER_SUSPECT = "order-suspect"


# ---------------------------------------------------------------------------
# the reruns


@dataclass(frozen=True, kw_only=True)
class PackPrefix:
    """The files of a pack from its first up to one of them, as the arm ran them."""

    files: dict[str, list[str]]  # file -> its pytest arguments, in the pack's order
    deselect: dict[str, tuple[str, ...]]  # file -> the node ids its piece leaves out


@dataclass(frozen=True, kw_only=True)
class Replayer:
    """How an arm's tests are rerun: its runner, in its replay trees."""

    runner: PackRunner
    trees: Replays
    # each file that ran in a pack after other files: its pack up to it (what its
    # order-suspect rerun replays)
    packed: dict[str, PackPrefix] = field(default_factory=dict)

    @contextlib.contextmanager
    def fresh(self) -> Iterator[PackRunner]:
        """The runner on a tree as the arm was before its first run."""
        with self.trees.tree() as spec:
            yield self.runner.elsewhere(spec)


def packs_upto(
    packs: list[list[str]], files: dict[str, list[str]], deselect: dict[str, tuple[str, ...]]
) -> dict[str, PackPrefix]:
    """Each of an arm's `files` (file -> its pytest arguments) that ran in one of `packs` after
    other files: its pack from the first file up to it."""
    out: dict[str, PackPrefix] = {}
    for pack in packs:
        mine = [f for f in pack if f in files]
        for end in range(2, len(mine) + 1):
            upto = mine[:end]
            out[upto[-1]] = PackPrefix(files={g: files[g] for g in upto}, deselect={g: deselect[g] for g in upto})
    return out


def confirm_discordant(
    rows: list[TestComparison],
    ra: Replayer,
    rb: Replayer,
    a: ArmResult,
    b: ArmResult,
    k: int,
    pool: SlotPool,
    stop: threading.Event,
    say: Callable[[str], None],
) -> None:
    """Rerun the discordant tests among `rows`, each rerun a replay; `rows` is sorted again
    when any was."""
    todo = [r for r in rows if _confirmable(r, a, b)]
    if not todo:
        return
    groups = _by_file(todo)
    say(
        f"confirming {plural(len(todo), 'discordant test')} in {plural(len(groups), 'file')}, "
        f"{plural(k, 'alternating rerun')} each"
    )
    # urgent: ahead of the diagnostic arms' files still queued
    wait_all([pool.submit(_confirm, ra, rb, a, b, rs, k, urgent=True) for rs in groups.values()], stop)
    # alone, both arms agree although they differed in the file: rerun the file (up
    # to the test) once per arm to tell an order-dependent difference (reproduces)
    # from a flaky test (does not)
    suspects = [r for r in todo if rerun_state(r) == RerunState.ORDER_SUSPECT]
    if suspects:
        differ = plural(len(suspects), "test that differs", "tests that differ")
        say(f"rerunning the file around {differ} only in the file")
        futs = [
            pool.submit(_confirm_in_file, ra, rb, a, b, fa, fb, rs, urgent=True)
            for (fa, fb), rs in _by_file(suspects).items()
        ]
        wait_all(futs, stop)
    for r in todo:
        settle_flaky(r)
    sort_rows(rows)


def _confirmable(r: TestComparison, a: ArmResult, b: ArmResult) -> bool:
    """A discordant row whose test ran in both arms (not a collection outcome)."""
    return (
        r.category in DISCORDANT
        and r.a is not None
        and r.b is not None
        and r.a.phase != Phase.COLLECT
        and r.b.phase != Phase.COLLECT
        and r.a.outcome not in _NO_EVIDENCE
        and r.b.outcome not in _NO_EVIDENCE
        and r.a.nodeid in a.outcomes
        and r.b.nodeid in b.outcomes
    )


def _both(r: TestComparison) -> tuple[Outcome, Outcome]:
    """The outcomes in A and B of a row being confirmed (`_confirmable`: it has both)."""
    assert r.a is not None and r.b is not None
    return r.a, r.b


def _by_file(rows: list[TestComparison]) -> dict[tuple[str, str], list[TestComparison]]:
    """Rows grouped by (file in A, file in B); a --map may move a test to another file."""
    out: dict[tuple[str, str], list[TestComparison]] = {}
    for r in rows:
        oa, ob = _both(r)
        out.setdefault((file_of(oa.nodeid), file_of(ob.nodeid)), []).append(r)
    return out


def _rerun_together(replayer: Replayer, arm: ArmResult, nodeids: list[str]) -> dict[str, OutcomeValue]:
    """Rerun the given tests of one file in one process, in a fresh tree; node id -> outcome."""
    # node ids are relative to the arm root (the plugin rewrites pytest's
    # rootdir-relative ids), i.e. valid arguments from the cwd of run_file;
    # given in the file's collection order
    order = {n: i for i, n in enumerate(arm.outcomes)}
    ids = sorted(set(nodeids), key=lambda n: order.get(n, len(order)))
    with replayer.fresh() as runner:
        fr = runner.run_file(file_of(ids[0]), ids, only=set(ids))
    out = {}
    for nodeid in ids:
        o = fr.outcomes.get(nodeid)
        if o is not None:
            out[nodeid] = o.outcome
        elif fr.collection_errors:
            out[nodeid] = OutcomeValue.ERROR
        elif fr.collection_skips:
            out[nodeid] = OutcomeValue.SKIPPED
        else:
            out[nodeid] = OutcomeValue.NOT_RUN
    return out


def _file_prefix(arm: ArmResult, file: str, upto: set[str]) -> set[str]:
    """Node ids of `file` in collection order, up to the last of `upto`."""
    ids = [n for n in arm.outcomes if file_of(n) == file]
    last = max((i for i, n in enumerate(ids) if n in upto), default=-1)
    return set(ids[: last + 1])


def _confirm_in_file(
    ra: Replayer, rb: Replayer, a: ArmResult, b: ArmResult, fa: str, fb: str, rows: list[TestComparison]
) -> None:
    for replayer, arm, f, side in ((ra, a, fa, 0), (rb, b, fb, 1)):
        outcomes = [_both(r)[side] for r in rows]
        pack = replayer.packed.get(f)
        with replayer.fresh() as runner:
            if pack is None:
                fr = runner.run_file(f, [f], only=_file_prefix(arm, f, {o.nodeid for o in outcomes}))
            else:  # the files before it in its session may be the cause: replay them too
                fr = runner.run_pack(pack.files, pack.deselect)[-1]
        for o in outcomes:
            got = fr.outcomes.get(o.nodeid)
            o.suite_reruns.append(got.outcome if got is not None else OutcomeValue.NOT_RUN)
    if fb in rb.packed:
        before = ", ".join(list(rb.packed[fb].files)[:-1])
        for r in rows:
            _add_note(r, f"ran in a pack after {before}: the rerun of its file replayed them before it")


def _confirm(ra: Replayer, rb: Replayer, a: ArmResult, b: ArmResult, rows: list[TestComparison], k: int) -> None:
    """`k` rounds, alternating A and B; each round reruns all of the file's
    discordant tests in one process per arm."""
    pairs = [_both(r) for r in rows]
    for _ in range(k):
        got_a = _rerun_together(ra, a, [oa.nodeid for oa, _ in pairs])
        got_b = _rerun_together(rb, b, [ob.nodeid for _, ob in pairs])
        for oa, ob in pairs:
            oa.reruns.append(got_a[oa.nodeid])
            ob.reruns.append(got_b[ob.nodeid])


# ---------------------------------------------------------------------------
# what the reruns say

# A rerun that never reached an outcome says nothing either way.
_NO_EVIDENCE = (OutcomeValue.NOT_RUN, OutcomeValue.INCOMPLETE)


def _kinds(seq: Iterable[OutcomeValue]) -> list[OutcomeKind]:
    return [KIND_OF[x] for x in seq if x not in _NO_EVIDENCE]


def rerun_state(row: TestComparison) -> RerunState:
    """What the alone reruns of a discordant row say (see `RerunState`)."""
    if row.a is None or row.b is None or (not row.a.reruns and not row.b.reruns):
        return RerunState.NONE
    ra, rb = _kinds(row.a.reruns), _kinds(row.b.reruns)
    if not ra or not rb:
        return RerunState.UNCONFIRMED
    if len(set(ra)) > 1 or len(set(rb)) > 1:
        return RerunState.FLAKY
    ka0, kb0 = kind(row.a), kind(row.b)
    xa, xb = ra[0], rb[0]
    if xa == ka0 and xb == kb0:
        return RerunState.CONFIRMED
    if xa == xb:
        return RerunState.ORDER_SUSPECT
    if (xa, xb) == (kb0, ka0):
        return RerunState.FLAKY
    return RerunState.CONFIRMED


def _add_note(row: TestComparison, text: str) -> None:
    row.note = f"{row.note}; {text}" if row.note else text


def settle_flaky(row: TestComparison) -> None:
    """Settle a discordant row after its confirmation reruns.

    Flaky = the reruns of the same arm disagree (or alternate with the
    in-file results).  Reruns that did not run are no evidence: they are
    ignored, and a row left without evidence keeps its category, noted as
    unconfirmed.  When each arm is self-consistent alone but the in-file
    results differ, the difference is order-dependent (it needs the rest of
    the file) and keeps its category, unless a rerun of the file does not
    reproduce it (then it is flaky).
    """
    if row.a is None or row.b is None:
        return
    a, b = row.a, row.b
    dropped = sum(1 for x in a.reruns + b.reruns if x in _NO_EVIDENCE)
    state = rerun_state(row)
    seq_a: list[str] = [a.outcome, *a.reruns]
    seq_b: list[str] = [b.outcome, *b.reruns]
    if dropped:
        _add_note(row, f"{plural(dropped, 'confirmation rerun')} did not run (ignored)")
    if state == RerunState.UNCONFIRMED:
        _add_note(row, "unconfirmed: the test could not be rerun alone")
        return
    if state == RerunState.ORDER_SUSPECT:
        sa, sb = _kinds(a.suite_reruns), _kinds(b.suite_reruns)
        if not (sa and sb and (set(sa) != {kind(a)} or set(sb) != {kind(b)})):
            _add_note(row, _order_dependence(a, b, reproduced=bool(sa and sb)))
            return
        state = RerunState.FLAKY
        seq_a += [f"{x} (in file)" for x in a.suite_reruns]
        seq_b += [f"{x} (in file)" for x in b.suite_reruns]
    if state == RerunState.FLAKY:
        row.note = f"was {row.category}; A: {', '.join(seq_a)}; B: {', '.join(seq_b)}" + (
            f"; {row.note}" if row.note else ""
        )
        row.category = Category.FLAKY


def _order_dependence(a: Outcome, b: Outcome, reproduced: bool) -> str:
    """The note of a difference that needs the rest of the file."""
    alone = next(x for x in reversed(a.reruns) if x not in _NO_EVIDENCE)
    head = (
        "order-dependent: fails only when run with the rest of the file in B"
        if kind(b) in FAILING_KINDS
        else f"order-dependent: {a.outcome} in A and {b.outcome} in B only when run with the rest of the file"
    )
    return f"{head} (alone: {alone} in both arms" + ("; reproduced by a rerun of the file)" if reproduced else ")")
