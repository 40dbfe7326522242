"""Which generation of the linter's rules a run applies: `--rules auto|NAME`.

`auto` (the default) reads the checkout's own test linter (the one the gate runs, or, with the
gate off, the one `auto` finds above the files) and applies its generation, identified from its
source (`transforms.rules.identify`); an unknown linter gets the nearest generation, and the run
says how the linter differs; without a linter, the newest generation.  A name applies that
generation whatever the checkout has (the gate still judges with the real linter).  Files from
checkouts whose linters are of different generations cannot share a run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from codemod.engine import linter_gate
from codemod.engine.result import RulesChoice
from transforms.core.base import Transform
from transforms.rules.generations import GENERATIONS, NEWEST
from transforms.rules.identify import Identification, identify

__all__ = ["AUTO", "RulesError", "choose", "choose_for", "follows_rules", "identify_linter", "with_rules"]

AUTO = "auto"


class RulesError(Exception):
    """The generation cannot be chosen (an unknown name, linters of different generations)."""


def identify_linter(source: bytes) -> Identification:
    """The generation of the linter whose file holds `source`."""
    return identify(source.decode("utf-8", "replace"))


def choose(setting: str, linters: Sequence[str], sources: dict[str, bytes] | None = None) -> RulesChoice:
    """The generation `setting` (auto | a generation's name) means for a run whose files the
    `linters` (paths) judge; `sources`: their text where it is not read from the path (a linter
    taken from a git commit). Raises RulesError."""
    if setting != AUTO and setting not in GENERATIONS:
        raise RulesError(f"--rules {setting}: expected auto or one of {', '.join(GENERATIONS)}")
    found: dict[str, Identification] = {}
    for linter in sorted(set(linters)):
        try:
            data = sources[linter] if sources and linter in sources else _read(linter)
        except OSError as e:
            raise RulesError(f"cannot read the linter {linter}: {e.strerror or e}") from None
        found[linter] = identify_linter(data)
    if setting != AUTO:
        named = [f"{path} is the {i.generation} linter" for path, i in found.items() if i.generation != setting]
        own = [d for i in found.values() if i.generation == setting for d in i.differences]
        return RulesChoice(name=setting, setting=setting, linters=tuple(found), differences=tuple(named + own))
    if not found:
        return RulesChoice(name=NEWEST, setting=setting)
    names = {i.generation for i in found.values()}
    if len(names) > 1:
        listed = "; ".join(f"{i.generation}: {path}" for path, i in found.items())
        raise RulesError(
            f"the files belong to checkouts whose linters are of different generations ({listed}): "
            "run them separately, or name one with --rules"
        )
    differences = tuple(dict.fromkeys(d for i in found.values() for d in i.differences))
    return RulesChoice(name=names.pop(), setting=setting, linters=tuple(found), differences=differences)


def choose_for(
    setting: str, gate: str, files: Sequence[str], linters: Mapping[str, list[str]] | None = None
) -> RulesChoice:
    """The generation for `files`, the one choice `apply` and `survey` both make: from the linters
    the gate runs (`linters`, else resolved from `gate`); with the gate off, from the checkouts' own
    linters, found as `auto` finds them. Raises RulesError (a gate that cannot be resolved too)."""
    if gate == "off" or linters is None:
        try:
            linters, _ = linter_gate.resolve("auto" if gate == "off" else gate, list(files))
        except linter_gate.GateError as e:
            raise RulesError(f"linter gate: {e}") from None
    return choose(setting, list(linters))


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _has_rules(t: Transform) -> bool:
    """A transform that applies the linter's rules: a dataclass with a `rules` field (the label
    and restructure transforms)."""
    return dataclasses.is_dataclass(t) and any(f.name == "rules" for f in dataclasses.fields(t))


def with_rules(transforms: Iterable[Transform], name: str) -> list[Transform]:
    """The transforms, with the generation `name` given to every one that applies the rules."""
    return [dataclasses.replace(t, rules=name) if _has_rules(t) else t for t in transforms]  # type: ignore[type-var]


def follows_rules(transforms: Iterable[Transform]) -> bool:
    """Does any transform apply the linter's rules (so the run has a generation to name)?"""
    return any(_has_rules(t) for t in transforms)
