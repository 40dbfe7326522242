"""The restructure transform: the registry of restructuring steps and their composition.

`REGISTRY` maps each transform's name to a pure function `(text, tree, diagnoses) ->
Step`, in the order they apply; each acts on the classes whose diagnosis
(transforms/diagnosis/) advises it.  `Restructure` runs the selected ones (or all
with `auto`), checks every step (verify.check_step) and reports, per class, the test
moves with their device sets before and after; one `restructure/moves` finding per file
carries the composed moves from which `--map-out` writes the node-id map.  It runs
before the label transform, which then labels the resulting classes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from transforms.core.analysis import may_have_test_class
from transforms.core.base import Finding, Severity, TransformResult
from transforms.diagnosis.diagnose import ClassDiagnosis, diagnose
from transforms.restructure.call_args import drop_only_for, inline_only_for, keyword_args
from transforms.restructure.cuda import cuda_to_accelerator
from transforms.restructure.model import Move, Step, moves_from_json
from transforms.restructure.split import split_class
from transforms.restructure.verify import check_step
from transforms.rules.advice import Pattern
from transforms.rules.generations import NEWEST, generation

__all__ = ["REGISTRY", "Restructure", "moves_from_findings", "parse_selection"]

# A step: the module's text and tree and the diagnosis of its classes in, the step's output out.
StepFunction = Callable[[str, ast.Module, Sequence[ClassDiagnosis]], Step]

REGISTRY: Mapping[Pattern, StepFunction] = {
    Pattern.KEYWORD_ARGS: keyword_args,
    Pattern.INLINE_ONLY_FOR: inline_only_for,
    Pattern.DROP_ONLY_FOR: drop_only_for,
    Pattern.CUDA_TO_ACCELERATOR: cuda_to_accelerator,
    Pattern.SPLIT_CLASS: split_class,
}
AUTO = "auto"


def parse_selection(raw: str) -> tuple[Pattern, ...]:
    """'auto' or 'NAME[,NAME]' -> the names in registry order; ValueError otherwise."""
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise ValueError("name at least one transform, or auto")
    if AUTO in names:
        if len(names) > 1:
            raise ValueError("auto selects every transform; do not combine it with names")
        return tuple(REGISTRY)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown transform {', '.join(unknown)} (expected auto or {', '.join(REGISTRY)})")
    return tuple(n for n in REGISTRY if n in names)


def compose(moves: list[Move]) -> list[Move]:
    """Chain the moves of successive steps: one move per test, first `before`, last `after`."""
    current: dict[tuple[str, str], Move] = {}
    for m in moves:
        prev = current.pop((m.old_class, m.test), None)
        if prev is not None:
            m = Move(
                transform=f"{prev.transform},{m.transform}",
                test=m.test,
                old_class=prev.old_class,
                new_class=m.new_class,
                old_instantiated=prev.old_instantiated,
                new_instantiated=m.new_instantiated,
                before=prev.before,
                after=m.after,
            )
        current[(m.new_class, m.test)] = m
    return list(current.values())


def _summary(name: Pattern, cls: str, line: int, moves: list[Move]) -> Finding:
    targets: dict[str, int] = {}
    for m in moves:
        targets[m.new_class] = targets.get(m.new_class, 0) + 1
    widened = sorted({d for m in moves for d in m.widened})
    where = ", ".join(f"{c} ({n} test{'s' if n != 1 else ''})" for c, n in targets.items())
    message = f"{cls}: {name} -> {where}"
    if widened:
        message += f"; WIDENS the devices the tests run on: adds {', '.join(widened)} (review it)"
    return Finding(
        rule=f"restructure/{name}",
        message=message,
        line=line,
        severity=Severity.WARNING if widened else Severity.INFO,
        cls=cls,
        data={"moves": [_move_json(m) for m in moves]},
    )


@dataclass(frozen=True)
class Restructure:
    name: ClassVar[str] = "restructure"
    reads_path: ClassVar[bool] = False

    selected: tuple[Pattern, ...] = tuple(REGISTRY)
    rules: str = NEWEST  # the generation whose rules the restructured classes must satisfy

    def triage(self, text: str) -> bool:
        if not may_have_test_class(text):
            return False
        # A class that is not instantiated is split only where GENERIC forbids accelerator calls.
        return "instantiate_device_type_tests" in text or bool(generation(self.rules).accelerator_modules)

    def run(self, text: str, tree: ast.Module, path: str | None = None) -> TransformResult:
        findings: list[Finding] = []
        moves: list[Move] = []
        for name in self.selected:
            diags = diagnose(tree, text, generation(self.rules))
            step = REGISTRY[name](text, tree, diags)
            findings += step.findings
            if step.text == text:
                continue
            touched = {m.old_class for m in step.moves}
            check_step(
                text,
                step.text,
                touched,
                step.created,
                step.resolved,
                step.normalise,
                step.imports,
                generation(self.rules),
            )
            lines = {d.name: d.line for d in diags}
            for cls in sorted(touched, key=lambda c: lines.get(c, 0)):
                own = [m for m in step.moves if m.old_class == cls]
                findings.append(_summary(name, cls, lines.get(cls, 1), own))
            moves += step.moves
            text, tree = step.text, ast.parse(step.text)
        if moves:
            composed = compose(moves)
            findings.append(
                Finding(
                    rule="restructure/moves",
                    message=f"{len(composed)} test(s) restructured",
                    line=1,
                    data={"moves": [_move_json(m) for m in composed]},
                )
            )
        return TransformResult(text, findings)

    def strip(self, tree: ast.Module) -> ast.Module:
        return tree  # verified by verified_baseline, not by stripping

    def verified_baseline(self, old_text: str, old_tree: ast.Module, path: str | None = None) -> str:
        """The engine's hook: this transform's output for `old_text`, every step checked
        (check_step raises); the engine then compares the final output with it."""
        return self.run(old_text, old_tree, path).text


def _move_json(m: Move) -> dict:
    return {**m.__dict__, "before": list(m.before), "after": list(m.after)}


def moves_from_findings(findings: list[Finding]) -> list[Move]:
    """The composed moves of one file's `restructure/moves` finding (none: empty)."""
    return [m for f in findings if f.rule == "restructure/moves" for m in moves_from_json(f.data["moves"])]
