"""The torch.load calls of a module as the `ast` alone can see them: no LibCST.

A call is a candidate when its callee, followed through the module's imports (anywhere in it,
under any alias), names `torch.load` or `torch.serialization.load`, or spells `torch.load`
without any import at all; that is every call the LibCST finder (`calls.find_calls`, by
qualified name) can resolve, and possibly more (a name rebound after its import). `others`
says whether anything else the finder reports is there: a star import from torch, a string
naming torch.load (mock.patch targets), torch.load used as a value.

Two users: the transform's first look (a file without candidates never pays for LibCST and
its metadata, about 60 times an `ast` analysis), and `decouple survey`'s count of the calls.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from transforms.core.base import Finding, TransformResult
from transforms.core.words import plural
from transforms.torch_load.analysis.modes import LOAD_NAMES

_MODULES = ("torch", "torch.serialization")
CENSUS_RULE = "torch-load/census"


@dataclass(frozen=True, kw_only=True)
class CandidateCall:
    line: int
    explicit: bool  # passes weights_only (None counts as unset)
    pickle_module: bool  # passes pickle_module, or a third positional argument
    starred: bool  # *args or **kwargs may carry weights_only


@dataclass(frozen=True, kw_only=True)
class Candidates:
    calls: tuple[CandidateCall, ...]
    others: bool

    def __bool__(self) -> bool:
        return bool(self.calls) or self.others


def _bindings(tree: ast.Module) -> tuple[dict[str, str], set[str], bool]:
    """(name -> the torch module it stands for, names bound to torch.load, a star import)."""
    modules: dict[str, str] = {"torch": "torch"}  # `torch.load` resolves even unimported
    loads: set[str] = set()
    star = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in _MODULES:
                    modules[alias.asname or "torch"] = alias.name if alias.asname else "torch"
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module in _MODULES:
            for alias in node.names:
                if alias.name == "*":
                    star = True
                elif alias.name == "load":
                    loads.add(alias.asname or "load")
                elif node.module == "torch" and alias.name == "serialization":
                    modules[alias.asname or "serialization"] = "torch.serialization"
    return modules, loads, star


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _is_load(node: ast.expr, modules: dict[str, str], loads: set[str]) -> bool:
    parts = _dotted(node)
    if parts is None:
        return False
    if len(parts) == 1:
        return parts[0] in loads
    if parts[0] not in modules:
        return False
    return ".".join([modules[parts[0]], *parts[1:]]) in LOAD_NAMES


def _shape(call: ast.Call) -> CandidateCall:
    keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
    weights_only = keywords.get("weights_only")
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    return CandidateCall(
        line=call.lineno,
        explicit=weights_only is not None
        and not (isinstance(weights_only, ast.Constant) and weights_only.value is None),
        pickle_module="pickle_module" in keywords or len(positional) >= 3,
        starred=any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords),
    )


def find_candidates(tree: ast.Module) -> Candidates:
    modules, loads, star = _bindings(tree)
    calls: list[CandidateCall] = []
    callees: set[int] = set()
    others = star
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_load(node.func, modules, loads):
            calls.append(_shape(node))
            callees.add(id(node.func))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            others = others or "torch.load" in node.value or "serialization.load" in node.value
    if not others:
        # torch.load used as a value (`f = torch.load`, `partial(torch.load)`): the finder reports it.
        others = any(
            isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in callees and _is_load(node, modules, loads)
            for node in ast.walk(tree)
            if not (isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load))
        )
    calls.sort(key=lambda c: c.line)
    return Candidates(calls=tuple(calls), others=others)


class TorchLoadCensus:
    """A transform that only counts: one `torch-load/census` finding with the candidate calls'
    shapes, the text unchanged, nothing left for manual work (so it changes no status). The
    survey runs it beside the labels when `--torch-load` is not asked."""

    name = "torch-load-census"
    reads_path = False  # counts the calls of the text alone

    def triage(self, text: str) -> bool:
        return "load" in text and "torch" in text

    def run(self, text: str, tree: ast.Module, path: str | None = None) -> TransformResult:
        found = find_candidates(tree)
        if not found:
            return TransformResult(text=text)
        data = {
            "calls": len(found.calls),
            "explicit": sum(c.explicit for c in found.calls),
            "pickle_module": sum(c.pickle_module and not c.explicit for c in found.calls),
            "starred": sum(c.starred and not (c.explicit or c.pickle_module) for c in found.calls),
            "others": found.others,
        }
        message = f"{plural(len(found.calls), 'torch.load call')} found by name"
        line = found.calls[0].line if found.calls else 1
        return TransformResult(text=text, findings=[Finding(rule=CENSUS_RULE, message=message, line=line, data=data)])

    def strip(self, tree: ast.Module) -> ast.Module:
        return tree  # adds nothing


__all__ = ["CENSUS_RULE", "CandidateCall", "Candidates", "TorchLoadCensus", "find_candidates"]
