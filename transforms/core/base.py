"""The contract every transform honours: pure text in, text plus findings out.

A transform never touches the file system, never keeps global state and never
decides whether a file is written: the engine (codemod/engine/process.py) owns that.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from transforms.core.strenum import StrEnum


class Severity(StrEnum):
    """How much a finding weighs, in increasing order."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One statement a transform makes about a file, a class or a call.

    `rule` is a stable, namespaced name (`hw/label`, `hw/ACCELERATOR[decorator]`,
    `torch-load/skip-pickle-module`, ...) so reports can count and filter by it.
    `path` is empty inside a transform; the engine fills it in.
    """

    rule: str
    message: str
    line: int
    severity: Severity = Severity.INFO
    cls: str | None = None
    fix: str | None = None
    path: str = ""
    # Free-form, JSON-serialisable details (evidence, candidate violations, ...).
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TransformResult:
    text: str
    findings: list[Finding] = field(default_factory=list)
    # How many classes / calls the transform left for a human (it refused to guess).
    manual: int = 0
    # `ast.parse(text)` of a new text the transform had already parsed (checking its own edit), so
    # the engine does not parse it again; None: the engine parses it.
    tree: ast.Module | None = None


class Transform(Protocol):
    """What the engine needs from a transform (label, restructure, torch_load)."""

    @property
    def name(self) -> str:
        """The transform's name (a class attribute of each transform: read-only here)."""

    @property
    def reads_path(self) -> bool:
        """Whether `run`'s result depends on the `path` it is given (a class attribute). The
        engine's result cache keys a file's result by its path only where one does."""

    def triage(self, text: str) -> bool:
        """Cheap pre-check (substring level): False means "certainly nothing to do"."""

    def run(self, text: str, tree: ast.Module, path: str | None = None) -> TransformResult:
        """Analyse and edit `text` (already parsed as `tree`). Pure: `path` is data (it
        matches records such as discovered globals), never opened."""

    def strip(self, tree: ast.Module) -> ast.Module:
        """Remove from `tree` everything this transform may add, in place (the engine hands
        over trees it parsed for the purpose): verification demands
        strip(parse(output)) == strip(parse(input)).

        A transform that moves code (transforms/restructure) cannot be stripped back; it
        offers `verified_baseline(text, tree, path) -> text` instead: its own output for the
        input, after its own checks (test inventory), which the engine then compares with."""
