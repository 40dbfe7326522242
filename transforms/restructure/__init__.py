"""Restructuring transforms: opt-in, deterministic fixes for classes no label fits.

`transform` holds the registry of steps and the `Restructure` transform that runs them;
`call_args`, `cuda` and `split` are the steps, `verify` checks each step's output,
`model` is what a step produces (test moves, the node-id map) and `textedit` the span
edits they are written with.
"""

from transforms.restructure.model import map_document
from transforms.restructure.transform import (
    COULD_WIDEN,
    REGISTRY,
    Restructure,
    Selection,
    moves_from_findings,
    parse_selection,
    widenings_from_findings,
)
from transforms.restructure.verify import RestructureCheckError

__all__ = [
    "COULD_WIDEN",
    "REGISTRY",
    "Restructure",
    "RestructureCheckError",
    "Selection",
    "map_document",
    "moves_from_findings",
    "parse_selection",
    "widenings_from_findings",
]
