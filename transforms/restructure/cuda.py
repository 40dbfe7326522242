"""cuda-to-accelerator: `@onlyCUDA` -> `@onlyAccelerator` and `torch.cuda.<fn>` -> its
equivalent (CUDA_EQUIVALENTS), for the tests whose every CUDA-specific use has
one.  The others are left for split-class, which moves them to a CUDA class."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Sequence

from transforms.core.class_reading import FUNCTION_TYPES, dotted_name
from transforms.diagnosis.devices import ACCELERATOR_GUARD
from transforms.diagnosis.diagnose import ClassDiagnosis, TestDiagnosis, class_nodes
from transforms.diagnosis.reading import CUDA_EQUIVALENTS
from transforms.restructure.model import Move, Step
from transforms.restructure.textedit import Lines, SpanEdit, apply_spans
from transforms.restructure.verify import DEVICE_TYPE
from transforms.rules.advice import Pattern

NAME = Pattern.CUDA_TO_ACCELERATOR


def convertible(t: TestDiagnosis) -> bool:
    return (
        t.takes_device
        and t.guards in (("onlyCUDA",), ("common_device_type.onlyCUDA",))
        and t.cuda_uses is not None
        and not t.cuda_only_apis
    )


def _only_cuda(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Name | ast.Attribute | None:
    """The name of the test's `onlyCUDA` decorator: the decorator itself or, written as a call
    (`@onlyCUDA()`), its callee, so that the rename keeps the parentheses and arguments."""
    for dec in fn.decorator_list:
        callee = dec.func if isinstance(dec, ast.Call) else dec
        name = dotted_name(callee)
        if name is not None and name.rsplit(".", 1)[-1] == "onlyCUDA" and isinstance(callee, (ast.Name, ast.Attribute)):
            return callee
    return None


def _cuda_attrs(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Attribute]:
    return [
        node
        for stmt in fn.body
        for node in ast.walk(stmt)
        if isinstance(node, ast.Attribute) and dotted_name(node.value) == "torch.cuda"
    ]


def _import_edit(tree: ast.Module, lines: Lines, still_used: bool) -> list[SpanEdit] | None:
    """Make `onlyAccelerator` importable: nothing if it is, else insert it beside (or,
    when no use of `onlyCUDA` is left, in place of) `onlyCUDA` in its from-import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == ACCELERATOR_GUARD for a in node.names):
            return []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module == DEVICE_TYPE):
            continue
        cuda = next((a for a in node.names if a.name == "onlyCUDA" and a.asname is None), None)
        if cuda is None:
            continue
        if not still_used:
            return [(lines.start(cuda), lines.end(cuda), ACCELERATOR_GUARD)]
        keys = [a.name.lower() for a in node.names]
        # In a sorted list (usort: case-insensitive) the new name goes in its place.
        anchor = (
            next((a for a in node.names if a.name.lower() > ACCELERATOR_GUARD.lower()), cuda)
            if keys == sorted(keys)
            else cuda
        )
        line = lines.lines[anchor.lineno - 1]
        if line.strip().rstrip(",") == anchor.name:  # one name per line: a line of its own
            line_start = lines.line_start(anchor.lineno)
            indent = line[: len(line) - len(line.lstrip())]
            eol = line[len(line.rstrip("\r\n")) :]
            return [(line_start, line_start, f"{indent}{ACCELERATOR_GUARD},{eol}")]
        start = lines.start(anchor)
        return [(start, start, f"{ACCELERATOR_GUARD}, ")]
    return None  # onlyCUDA comes from elsewhere (star import, alias): leave it


class _Swap(ast.NodeTransformer):
    """torch.cuda.<fn> -> its equivalent, where it has one."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        equivalent = CUDA_EQUIVALENTS.get(node.attr)
        if dotted_name(node.value) == "torch.cuda" and equivalent:
            return ast.parse(equivalent, mode="eval").body
        return node


def normaliser(names: set[str]) -> Callable[[ast.AST], ast.AST]:
    """The AST version of the edit, applied to an original test for the inventory check."""

    def normalise(fn: ast.AST) -> ast.AST:
        if not isinstance(fn, FUNCTION_TYPES) or fn.name not in names:
            return fn
        fn = copy.deepcopy(fn)
        dec = _only_cuda(fn)
        if isinstance(dec, ast.Name):
            dec.id = ACCELERATOR_GUARD
        elif isinstance(dec, ast.Attribute):
            dec.attr = ACCELERATOR_GUARD
        fn.body = [_Swap().visit(s) for s in fn.body]
        return fn

    return normalise


def cuda_to_accelerator(text: str, tree: ast.Module, diags: Sequence[ClassDiagnosis]) -> Step:
    lines = Lines(text)
    nodes = class_nodes(tree)
    edits: list[SpanEdit] = []
    moves: list[Move] = []
    converted: set[str] = set()
    name_form = False
    for diag in diags:
        if NAME not in diag.advice:
            continue
        node = nodes[diag.line]
        fns = {s.lineno: s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        after = tuple(d for d in diag.devices if d != "cpu")
        for t in diag.tests:
            if not convertible(t):
                continue
            fn = fns[t.line]
            dec = _only_cuda(fn)
            if dec is None:  # a guard spelled through a call or subscript: left as it is
                continue
            if isinstance(dec, ast.Name):
                edits.append((lines.start(dec), lines.end(dec), ACCELERATOR_GUARD))
                name_form = True
            else:
                edits.append((lines.end(dec.value), lines.end(dec), "." + ACCELERATOR_GUARD))
            for attr in _cuda_attrs(fn):
                equivalent = CUDA_EQUIVALENTS[attr.attr]
                assert equivalent is not None  # a convertible test's every torch.cuda use has one
                edits.append((lines.start(attr), lines.end(attr), equivalent))
            converted.add(t.name)
            moves.append(
                Move(
                    transform=NAME,
                    test=t.name,
                    old_class=diag.name,
                    new_class=diag.name,
                    old_instantiated=True,
                    new_instantiated=True,
                    before=t.devices,
                    after=after,
                )
            )
    if not edits:
        return Step(text)
    if name_form:
        uses = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "onlyCUDA")
        left = uses - sum(1 for e in edits if e[2] == ACCELERATOR_GUARD and lines.text[e[0] : e[1]] == "onlyCUDA")
        imports = _import_edit(tree, lines, still_used=left > 0)
        if imports is None:
            return Step(text)
        edits += imports
    return Step(
        apply_spans(text, edits), moves=moves, normalise=normaliser(converted), imports=("onlyCUDA", ACCELERATOR_GUARD)
    )
