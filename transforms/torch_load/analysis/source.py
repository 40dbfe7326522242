"""The file as the torch.load steps read it: its text, its LibCST tree and the metadata
they ask about (positions, qualified names, parents, scopes, expression contexts)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import cast

import libcst as cst
from libcst.metadata import (
    CodeRange,
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedName,
    QualifiedNameProvider,
    Scope,
    ScopeProvider,
)

from transforms.torch_load.analysis.text import SourceText


@dataclass(frozen=True)
class LoadSource:
    text: str
    path: str | None  # as the engine names the file (matched against discovery records), never opened
    module: cst.Module
    lines: SourceText
    positions: Mapping[cst.CSTNode, CodeRange]
    qualified_names: Mapping[cst.CSTNode, object]  # Collection[QualifiedName], or a lazy value giving one
    parents: Mapping[cst.CSTNode, cst.CSTNode]
    scopes: Mapping[cst.CSTNode, Scope | None]
    contexts: Mapping[cst.CSTNode, ExpressionContext | None]

    @classmethod
    def parse(cls, text: str, path: str | None) -> LoadSource:
        """Raises whatever LibCST raises for a file it cannot parse."""
        module = cst.parse_module(text)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        wrapper.resolve_many(
            [PositionProvider, QualifiedNameProvider, ParentNodeProvider, ScopeProvider, ExpressionContextProvider]
        )
        return cls(
            text=text,
            path=path,
            module=module,
            lines=SourceText(text),
            positions=wrapper.resolve(PositionProvider),
            qualified_names=wrapper.resolve(QualifiedNameProvider),
            parents=wrapper.resolve(ParentNodeProvider),
            scopes=wrapper.resolve(ScopeProvider),
            contexts=wrapper.resolve(ExpressionContextProvider),
        )

    @property
    def indent_unit(self) -> str:
        return self.module.default_indent

    @property
    def newline(self) -> str:
        return self.module.default_newline

    def pos(self, node: cst.CSTNode) -> CodeRange:
        return self.positions[node]

    def qnames(self, node: cst.CSTNode) -> set[str]:
        try:
            value = self.qualified_names[node]
        except KeyError:
            return set()
        if callable(value):  # computed lazily by LibCST
            value = value()
        return {q.name for q in cast(Collection[QualifiedName], value)}

    def is_stmt(self, node: cst.CSTNode) -> bool:
        """A statement of a block (a module's or an indented one)."""
        return isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
            self.parents.get(node), (cst.IndentedBlock, cst.Module)
        )

    def depth(self, node: cst.CSTNode) -> int:
        """How many statements (of a block) enclose `node`."""
        n = 0
        current: cst.CSTNode | None = node
        while current is not None:
            if self.is_stmt(current):
                n += 1
            current = self.parents.get(current)
        return n

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)
