"""The restructure transform: the registry of restructuring steps and their composition.

`REGISTRY` maps each transform's name to a pure function `(text, tree, diagnoses) ->
Step`, in the order they apply; each acts on the classes whose diagnosis
(transforms/diagnosis/) advises it.  `Restructure` runs the selected ones, checks every
step (verify.check_step) and reports, per class, the test moves with their device sets
before and after; one `restructure/moves` finding per file carries the composed moves
(never a test that stayed where it was, on the same devices) from which `--map-out` writes
the node-id map.  It runs before the label transform, which then labels the resulting classes.

`auto` runs the steps that keep every test's devices, and only on the classes no label fits;
a step that adds devices (`advice.WIDENING`: drop-only-for, cuda-to-accelerator) runs only
where it is named.  Where one would fit but was not named, a `restructure/could-widen`
finding says so (`widenings_from_findings` reads it back).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from transforms.core.analysis import analyse, may_have_test_class
from transforms.core.base import Finding, Severity, TransformResult
from transforms.core.words import plural
from transforms.diagnosis.diagnose import ClassDiagnosis, Widening, diagnose
from transforms.label.classify import Status, infer
from transforms.restructure.call_args import drop_only_for, inline_only_for, keyword_args
from transforms.restructure.cuda import cuda_to_accelerator
from transforms.restructure.model import Move, Step, moves_from_json
from transforms.restructure.split import split_class
from transforms.restructure.verify import check_step
from transforms.rules.advice import WIDENING, Pattern
from transforms.rules.generations import NEWEST, generation
from transforms.rules.registry import Generation

__all__ = [
    "COULD_WIDEN",
    "REGISTRY",
    "Restructure",
    "Selection",
    "moves_from_findings",
    "parse_selection",
    "widenings_from_findings",
]

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
# The finding on a class a widening step would fit but that no one named.
COULD_WIDEN = "restructure/could-widen"


@dataclass(frozen=True, kw_only=True)
class Selection:
    """Which steps run, on which classes. `auto`: the steps that keep every test's devices, on
    the classes no label fits; else the named steps, on every class their diagnosis advises."""

    steps: tuple[Pattern, ...]
    auto: bool

    @property
    def widening(self) -> frozenset[Pattern]:
        """The steps named that add devices: the only ones the diagnosis may advise."""
        return WIDENING.intersection(self.steps)


AUTO_SELECTION = Selection(steps=tuple(p for p in REGISTRY if p not in WIDENING), auto=True)


def parse_selection(raw: str) -> Selection:
    """'auto' or 'NAME[,NAME]' -> the selection (names in registry order); ValueError otherwise."""
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise ValueError("name at least one transform, or auto")
    if AUTO in names:
        if len(names) > 1:
            raise ValueError("auto selects the transforms itself; do not combine it with names")
        return AUTO_SELECTION
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown transform {', '.join(unknown)} (expected auto or {', '.join(REGISTRY)})")
    return Selection(steps=tuple(n for n in REGISTRY if n in names), auto=False)


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
    """Where a step put the tests of `cls` (every test counted), its real moves as data."""
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
        data={"moves": [_move_json(m) for m in moves if not m.noop]},
    )


def _propose(diags: Sequence[ClassDiagnosis], proposed: dict[str, dict[Pattern, tuple[int, Widening]]]) -> None:
    """Adds the widening steps that fit a class of `diags` but were not selected to `proposed`
    (a step can make one fit: a whitelist dropped, its @onlyCUDA tests could be converted)."""
    for diag in diags:
        for w in diag.could_widen:
            proposed.setdefault(diag.name, {}).setdefault(w.step, (diag.line, w))


def _could_widen(cls: str, found: Mapping[Pattern, tuple[int, Widening]]) -> Finding:
    """The finding on a class widening steps fit that were not selected."""
    widenings = [w for _, w in found.values()]
    return Finding(
        rule=COULD_WIDEN,
        message=(
            f"{cls}: could be widened: {'; '.join(w.note() for w in widenings)} "
            f"(not by auto: name it to run it, --restructure {','.join(found)})"
        ),
        line=min(line for line, _ in found.values()),
        cls=cls,
        data={"widenings": [{"step": w.step, "tests": list(w.tests), "adds": list(w.adds)} for w in widenings]},
    )


def widenings_from_findings(findings: Iterable[Finding]) -> dict[str, tuple[Widening, ...]]:
    """Per class, the widening steps that would fit it but were not run (`COULD_WIDEN`)."""
    return {
        f.cls or "": tuple(
            Widening(step=Pattern(w["step"]), tests=tuple(w["tests"]), adds=tuple(w["adds"]))
            for w in f.data["widenings"]
        )
        for f in findings
        if f.rule == COULD_WIDEN
    }


def _unfitted(text: str, tree: ast.Module, gen: Generation) -> set[str]:
    """The classes no label fits: the ones the label transform's inference leaves to a human."""
    return {c.name for c in analyse(tree, text).classes if infer(c, gen, advice=False).status != Status.LABEL}


@dataclass(frozen=True)
class Restructure:
    name: ClassVar[str] = "restructure"
    reads_path: ClassVar[bool] = False

    selected: Selection = AUTO_SELECTION
    rules: str = NEWEST  # the generation whose rules the restructured classes must satisfy

    def triage(self, text: str) -> bool:
        if not may_have_test_class(text):
            return False
        # A class that is not instantiated is split only where GENERIC forbids accelerator calls.
        return "instantiate_device_type_tests" in text or bool(generation(self.rules).accelerator_modules)

    def run(self, text: str, tree: ast.Module, path: str | None = None) -> TransformResult:
        gen = generation(self.rules)
        selected = self.selected
        findings: list[Finding] = []
        proposed: dict[str, dict[Pattern, tuple[int, Widening]]] = {}  # class -> step -> (line, widening)
        moves: list[Move] = []
        diags = diagnose(tree, text, gen, widen=selected.widening)
        for name in selected.steps:
            _propose(diags, proposed)
            if selected.auto:  # only where no label fits (a step may have made one fit)
                unfitted = _unfitted(text, tree, gen)
                diags = tuple(d for d in diags if d.name in unfitted)
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
                gen,
            )
            lines = {d.name: d.line for d in diags}
            for cls in sorted(touched, key=lambda c: lines.get(c, 0)):
                own = [m for m in step.moves if m.old_class == cls]
                findings.append(_summary(name, cls, lines.get(cls, 1), own))
            moves += step.moves
            text, tree = step.text, ast.parse(step.text)
            diags = diagnose(tree, text, gen, widen=selected.widening)
        _propose(diags, proposed)
        findings = [_could_widen(cls, found) for cls, found in proposed.items()] + findings
        real = moved(compose(moves))
        if real:
            findings.append(
                Finding(
                    rule="restructure/moves",
                    message=f"{plural(len(real), 'test')} restructured",
                    line=1,
                    data={"moves": [_move_json(m) for m in real]},
                )
            )
        return TransformResult(text, findings)

    def strip(self, tree: ast.Module) -> ast.Module:
        return tree  # verified by verified_baseline, not by stripping

    def verified_baseline(self, old_text: str, old_tree: ast.Module, path: str | None = None) -> str:
        """The engine's hook: this transform's output for `old_text`, every step checked
        (check_step raises); the engine then compares the final output with it."""
        return self.run(old_text, old_tree, path).text


def moved(composed: list[Move]) -> list[Move]:
    """The moves of `composed` that move a test (another class or other devices), each carrying
    the tests that stayed in its instantiated class whose names extend its own (`kept_longer`: the
    node-id map must not take theirs for its)."""
    stayed = [m for m in composed if m.noop and m.old_instantiated]
    return [
        replace(
            m,
            kept_longer=tuple(k.test for k in stayed if k.old_class == m.old_class and k.test.startswith(m.test + "_")),
        )
        if m.old_instantiated and m.new_instantiated
        else m
        for m in composed
        if not m.noop
    ]


def _move_json(m: Move) -> dict:
    return {**m.__dict__, "before": list(m.before), "after": list(m.after), "kept_longer": list(m.kept_longer)}


def moves_from_findings(findings: list[Finding]) -> list[Move]:
    """The composed moves of one file's `restructure/moves` finding (none: empty)."""
    return [m for f in findings if f.rule == "restructure/moves" for m in moves_from_json(f.data["moves"])]
