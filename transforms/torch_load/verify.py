"""Verification support: what the engine strips from both trees before comparing."""

from __future__ import annotations

import ast


def strip_tree(tree: ast.Module) -> ast.Module:
    """In place (the engine's contract): `weights_only=<constant>` on load calls,
    safe_globals with-items (blocks unwrapped), module-level `from x import ...`
    statements and `import torch` / `import builtins` are removed."""
    names = _AstNames(tree)
    _Stripper(names).visit(tree)
    # Module-level imports the transform may add or extend.
    body = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module != "__future__":
            continue
        if isinstance(stmt, ast.Import):
            stmt.names = [
                a for a in stmt.names if not (a.asname is None and a.name in ("torch", "builtins"))
            ]
            if not stmt.names:
                continue
        body.append(stmt)
    tree.body = body
    return tree


class _AstNames:
    """Module-wide (scope-insensitive) names for torch, torch.serialization, load, safe_globals."""

    def __init__(self, tree: ast.Module):
        self.torch = {"torch"}
        self.serialization: set[str] = set()
        self.load: set[str] = set()
        self.safe_globals: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "torch" and a.asname:
                        self.torch.add(a.asname)
                    if a.name == "torch.serialization" and a.asname:
                        self.serialization.add(a.asname)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                for a in node.names:
                    bound = a.asname or a.name
                    if node.module == "torch" and a.name == "serialization":
                        self.serialization.add(bound)
                    elif node.module in ("torch", "torch.serialization") and a.name == "load":
                        self.load.add(bound)
                    elif node.module == "torch.serialization" and a.name == "safe_globals":
                        self.safe_globals.add(bound)

    def _is(self, func: ast.expr, attr: str, direct: set[str]) -> bool:
        if isinstance(func, ast.Name):
            return func.id in direct
        if isinstance(func, ast.Attribute) and func.attr == attr:
            v = func.value
            if isinstance(v, ast.Name):
                return v.id in self.serialization or (attr == "load" and v.id in self.torch)
            if isinstance(v, ast.Attribute) and v.attr == "serialization":
                return isinstance(v.value, ast.Name) and v.value.id in self.torch
        return False

    def is_load(self, func: ast.expr) -> bool:
        return self._is(func, "load", self.load)

    def is_safe_globals(self, func: ast.expr) -> bool:
        return self._is(func, "safe_globals", self.safe_globals)


class _Stripper(ast.NodeTransformer):
    def __init__(self, names: _AstNames):
        self.names = names

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if self.names.is_load(node.func):
            node.keywords = [
                k for k in node.keywords
                if not (k.arg == "weights_only" and isinstance(k.value, ast.Constant)
                        and k.value.value in (None, True, False))
            ]
        return node

    def _unwrap(self, node):
        self.generic_visit(node)
        keep = [
            it for it in node.items
            if not (isinstance(it.context_expr, ast.Call)
                    and self.names.is_safe_globals(it.context_expr.func)
                    and it.optional_vars is None)
        ]
        if len(keep) == len(node.items):
            return node
        if keep:
            node.items = keep
            return node
        return node.body

    visit_With = _unwrap
    visit_AsyncWith = _unwrap
