"""Rebuild typed dataclasses from JSON, checking every value against the type hints.

A result file may come from another machine (a CI shard running the PR's code): nothing of
it is trusted. `build` walks the dataclass's type hints (dataclasses, enums, Optional,
Literal, lists, dicts, scalars) and raises a `SchemaError` naming the field for the first
value that does not fit; unknown keys are ignored (never read).
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, fields, is_dataclass
from enum import Enum
from typing import Any, Literal, Optional, get_args, get_origin, get_type_hints


class SchemaError(ValueError):
    """A result that does not match the model: `field` is where (``arms[0].source``)."""

    def __init__(self, where: str, message: str):
        super().__init__(f"wrong shape: field {where}: {message}" if where else f"wrong shape: {message}")
        self.field = where


def kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


_SCALARS = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}


def _scalar(tp: type, value: Any, where: str) -> Any:
    ok = (
        isinstance(value, tp) and not (tp is int and isinstance(value, bool))
        if tp is not float
        else isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    )
    if not ok:
        shown = json.dumps(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        got = "a number that is not finite" if isinstance(value, float) else kind(value)
        raise SchemaError(where, f"expected {_SCALARS[tp]}, got {got} ({shown})")
    return float(value) if tp is float else value


def build(tp: Any, value: Any, where: str) -> Any:
    """Rebuild nested dataclasses (and enum members) from their asdict() form, checking every
    value's type; `where` names the field in errors. Unknown keys are ignored (never read)."""
    origin = get_origin(tp)
    if origin is Optional or (origin is not None and type(None) in get_args(tp)):
        if value is None:
            return None
        inner = [a for a in get_args(tp) if a is not type(None)][0]
        return build(inner, value, where)
    if origin is Literal:
        if value not in get_args(tp) or not isinstance(value, str):
            raise SchemaError(where, f"{value!r} is not one of {list(get_args(tp))}")
        return value
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(_scalar(str, value, where))
        except ValueError:
            raise SchemaError(where, f"{value!r} is not one of {[m.value for m in tp]}") from None
    if isinstance(tp, type) and is_dataclass(tp):
        if not isinstance(value, dict):
            raise SchemaError(where, f"expected an object ({tp.__name__}), got {kind(value)}")
        hints = get_type_hints(tp)
        known = {f.name: f for f in fields(tp)}
        missing = [
            name
            for name, f in known.items()
            if name not in value and f.default is MISSING and f.default_factory is MISSING
        ]
        if missing:
            raise SchemaError(_join(where, missing[0]), "missing")
        return tp(**{name: build(hints[name], value[name], _join(where, name)) for name in known if name in value})
    if origin is list:
        if not isinstance(value, list):
            raise SchemaError(where, f"expected a list, got {kind(value)}")
        (item,) = get_args(tp)
        return [build(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(where, f"expected an object, got {kind(value)}")
        key, item = get_args(tp)
        return {
            build(key, k, f"{where} key {k!r}"): build(item, v, f"{where}[{json.dumps(k)}]") for k, v in value.items()
        }
    if tp in _SCALARS:
        return _scalar(tp, value, where)
    raise SchemaError(where, f"no rule for {tp!r}")  # a model type this reader does not know: a bug


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name
