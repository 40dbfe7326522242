"""The options of an A/B run: what the command line asks for, parsed and checked.

``RunOptions`` is what ``run.run_ab`` takes (and never changes); the parsers turn
``--diag``, ``--env`` and ``--shard`` values into it, raising ``UsageError`` (exit 2)
for bad input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from codemod.ab.arms.shard import Durations
from codemod.ab.result.model import BaseArm
from transforms.core.strenum import StrEnum

# From this many files that run whole, an arm's files run packed even with a warm interpreter
# (`--pack`'s default; packrun.packing decides): a forked file still costs a pytest session of its
# own (about 0.1 s of CPU), which 8 files of each arm pay about a second of.
PACK_FROM = 8


class UsageError(Exception):
    """Bad input: exit code 2."""


class FsyncPolicy(StrEnum):
    """When the capture plugin fsyncs its event file (`--fsync`)."""

    NONE = "none"
    START = "start"  # test starts, collection and the sentinel
    ALL = "all"  # every event


@dataclass(frozen=True, kw_only=True)
class DiagSpec:
    name: str
    based_on: BaseArm
    variables: dict[str, str]


def parse_diag(text: str) -> DiagSpec:
    """``NAME:K=V[,K=V...]`` (based on A) or ``NAME@B:K=V[,...]``."""
    head, sep, body = text.partition(":")
    if not sep or not head or not body:
        raise UsageError(f"--diag expects NAME[@A|@B]:K=V[,K=V...], got {text!r}")
    name, at, base = head.partition("@")
    base = (base or "A").upper() if at else "A"
    if base not in ("A", "B"):
        raise UsageError(f"--diag {text!r}: the base arm must be A or B")
    based_on: BaseArm = "B" if base == "B" else "A"
    if not name.replace("-", "").replace("_", "").isalnum() or name.upper() in ("A", "B"):
        raise UsageError(f"--diag {text!r}: the name must be alphanumeric (and not A or B)")
    variables = {}
    for item in body.split(","):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise UsageError(f"--diag {text!r}: expected K=V, got {item!r}")
        variables[k.strip()] = v
    return DiagSpec(name=name, based_on=based_on, variables=variables)


def parse_env(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise UsageError(f"--env expects K=V, got {item!r}")
        out[k] = v
    return out


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard expects I/N, got {text!r}") from None
    if n < 1 or not 1 <= i <= n:
        raise UsageError(f"--shard {text!r}: need 1 <= I <= N")
    return i, n


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    paths: list[str]
    base: str | None = None
    a_root: str | None = None
    b_root: str | None = None
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    diags: list[DiagSpec] = field(default_factory=list)
    hw_classification: list[str] = field(default_factory=list)
    timeout: float = 600.0  # per test (0 = none)
    file_timeout: float = 0.0  # per file (0 = none)
    jobs: int = 0  # 0 = cpu count
    confirm: int = 2
    mapping: dict[str, str] = field(default_factory=dict)
    shard: str | None = None
    durations: Durations | None = None  # recorded times that balance the shards
    cwd: str | None = None
    progress: Callable[[str], None] | None = None
    keep_temp: bool = False  # debugging only
    fsync: FsyncPolicy = FsyncPolicy.NONE  # when the capture plugin fsyncs its events
    fork: bool = True  # warm interpreters (False: a fresh process per run)
    # B once more under PyTorch's label filter where the tree's conftest.py offers it
    label_filter: bool = True
    test_plan: bool = False  # run each file's Test Plan command in B (the PR body prints them)
    # several files of an arm in one pytest session: True always, False never, None = from
    # PACK_FROM files on (and wherever no warm interpreter can be used)
    pack: bool | None = None


def check_options(opts: RunOptions) -> None:
    """The combinations no run can start with."""
    if not opts.paths:
        raise UsageError("give at least one test path")
    if opts.base and (opts.a_root or opts.b_root):
        raise UsageError("use either --base REF or --a-root/--b-root, not both")
    if not opts.base and not (opts.a_root and opts.b_root):
        raise UsageError("give --base REF (git) or both --a-root DIR and --b-root DIR")
    names = [d.name for d in opts.diags]
    if len(set(names)) != len(names):
        raise UsageError("--diag names must be unique")
