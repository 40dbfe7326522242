"""Reading JSON that comes from the user or from another machine: a file named by an option
(`--map-file`, `--globals`, `--durations`, `--batches`, `pr-body --ab`), the allowlist (from the
work tree or from a git commit), the results `ab merge` combines, a probe's answer.

Python's `json` recurses once per level of nesting, so a document nested a few thousand levels
deep (`[[[[...`) is a RecursionError, not a JSONDecodeError, and one nested 900 deep parses but
breaks the first code that walks it recursively (pickling it to a worker, writing it out).
`loads` here gives every input one limit, MAX_DEPTH: the parser's RecursionError is caught, and
a value it did build is measured (without recursion, over its lists and objects only) before
anyone sees it. Every way of not being JSON is a `JSONInputError` whose message names the input.
The tool's own protocol with the code it runs in the target interpreter (codemod/target/) is
not input and is read where it is spoken.
"""

from __future__ import annotations

import json
from typing import Any

# Far above any document the tool reads (an A/B result nests 8 deep, SARIF 12) and far below
# where Python's recursion limit (1,000 frames) would stop `json` or the code that walks a result.
MAX_DEPTH = 100


class JSONInputError(ValueError):
    """The input cannot be read, is not UTF-8, is not JSON, or nests deeper than MAX_DEPTH;
    the message names it (exit 2 wherever it is caught)."""


def nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` has lists or objects more than `limit` levels deep (a scalar is level 0).
    Iterative: it visits each list and object once and never recurses."""
    todo = [(value, 1)]
    while todo:
        item, level = todo.pop()
        if level > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        todo.extend((c, level + 1) for c in children if isinstance(c, (list, dict)))
    return False


def loads(data: str | bytes, name: str) -> Any:
    """The JSON value of `data` (bytes: UTF-8); JSONInputError naming `name` (e.g.
    "--map-file map.json") when it is not UTF-8, not JSON, or nests deeper than MAX_DEPTH."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as e:
        raise JSONInputError(f"{name} is not UTF-8: {e}") from None
    too_deep = JSONInputError(f"{name} nests deeper than {MAX_DEPTH} levels: not read")
    try:
        value = json.loads(text)
    except RecursionError:  # the parser's own limit, far deeper than ours
        raise too_deep from None
    except ValueError as e:  # JSONDecodeError, and a number of more than 4,300 digits
        raise JSONInputError(f"{name} is not JSON: {e}") from None
    if isinstance(value, (list, dict)) and nests_deeper_than(value, MAX_DEPTH):
        raise too_deep
    return value


def read_json(path: str, name: str) -> Any:
    """The JSON value of the file `path`; JSONInputError naming `name` when it cannot be
    read or `loads` refuses it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise JSONInputError(f"cannot read {name}: {e.strerror or e}") from None
    return loads(data, name)


def read_option_json(path: str, option: str) -> Any:
    """The JSON value of the file `path` named by `option`; JSONInputError (a ValueError)
    naming the option and the path."""
    return read_json(path, f"{option} {path}")
