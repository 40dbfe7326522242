"""The codemod's per-file results through the cache (`cache.py`): their key and their entry.

A file's result is a function of exactly what `process.process_file` is given: the file's bytes,
the transforms (every field of every transform, whatever options they carry), the mode and
`staged`; its path only where a transform reads it (`reads_path`: torch_load matches discovered
call sites by path), the name diff headers show only in diff mode. The key is the digest of all of
it plus the tool itself (`tool_fingerprint`: its version, its source, the Python and LibCST that
run it). So the same bytes under another name (a fresh clone, another work tree, a renamed file)
are found, and the result is given the file's own path. The options are read off the transform
objects generically (`canonical`), so a new option is part of the key without anyone listing it;
a value `canonical` cannot spell fails loudly.

What may be taken from the cache: any result but a failure (unreadable files, internal errors
are recomputed and reported afresh), and never a file `apply` would write: a written output is
verified when it is made, every time. `apply` shares the entries of `apply --check` (the two
modes give the same result for a file with nothing to write).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from codemod.engine import cache as store
from codemod.engine.cache import Cache
from codemod.engine.result import CHANGED, FAILED, FileResult, Mode
from codemod.util.files import RawSource, SourceError, read_bytes
from transforms.core.base import Transform

_PACKAGES = ("codemod", "transforms")


@functools.cache
def tool_fingerprint() -> str:
    """What the results depend on besides the inputs: this tool's source (an editable install
    changes without a new version), the Python that parses (its `ast`) and LibCST's version
    (which verifies every output)."""
    parts: list[bytes | str] = [sys.version, sys.implementation.cache_tag or ""]
    for package in _PACKAGES:
        for root in importlib.import_module(package).__path__:
            parts += [item for path in _python_files(root) for item in (os.path.relpath(path, root), _read(path))]
    spec = importlib.util.find_spec("libcst")  # found, not imported
    if spec is not None and spec.origin:
        parts.append(_read(os.path.join(os.path.dirname(spec.origin), "_version.py")))
    return store.key(*parts)


def _python_files(root: str) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".py")]
    return found


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def canonical(value: Any) -> str:
    """An exact, deterministic spelling of an option value (dataclasses and plain objects by
    their class and every attribute). TypeError for anything else: a value the key cannot
    spell must not be left out of it."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{_name(value)}.{value.name}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}[{', '.join(canonical(v) for v in value)}]"
    if isinstance(value, (set, frozenset)):
        return f"{type(value).__name__}{{{', '.join(sorted(canonical(v) for v in value))}}}"
    if isinstance(value, dict):  # in order: an option's order may matter
        return "{" + ", ".join(f"{canonical(k)}: {canonical(v)}" for k, v in value.items()) + "}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(f"{f.name}={canonical(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{_name(value)}({fields})"
    if hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
        return f"{_name(value)}({', '.join(f'{k}={canonical(v)}' for k, v in sorted(vars(value).items()))})"
    raise TypeError(f"cannot key the option value {value!r} ({type(value).__name__})")


def _name(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


@dataclass(frozen=True)
class ResultKeys:
    """The key of each file's result, for one set of `process_file`'s other arguments."""

    options: str  # the digest of the transforms, the mode and `staged`
    mode: Mode
    staged: bool
    # `apply`: the digests under which an output's result is kept (`store_output`)
    outputs: tuple[str, ...] = ()
    by_path: bool = True  # a transform reads the path: it is part of the key
    by_display: bool = True  # the result shows the display name (a diff's headers)

    @classmethod
    def of(cls, transforms: Sequence[Transform], mode: Mode, staged: bool) -> ResultKeys:
        spelled = canonical([canonical(t) for t in transforms])
        by_path = any(getattr(t, "reads_path", True) for t in transforms)  # unknown: assume it does
        by_display = by_path or mode == Mode.DIFF

        def options(of_mode: Mode) -> str:
            return store.key(tool_fingerprint(), "file-result", spelled, of_mode, str(staged))

        # `apply` and `apply --check` give the same result for a file with nothing to write; what
        # reads a file `apply` wrote next is `apply --check` or `lint` (the pre-commit hooks)
        if mode == Mode.WRITE:
            outputs = (options(Mode.CHECK), options(Mode.LINT))
            return cls(options(Mode.CHECK), mode, staged, outputs, by_path, by_display)
        return cls(options(mode), mode, staged, (), by_path, by_display)

    def key(self, path: str, display: str, raw: RawSource) -> str:
        names = ([path] if self.by_path else []) + ([display] if self.by_display else [])
        return store.key(self.options, *names, raw.data)


def cached(cache: Cache, keys: ResultKeys, path: str, display: str) -> FileResult | None:
    """The result of `path` from the cache, if it holds one that may be used."""
    try:
        raw = read_bytes(path)
    except SourceError:
        return None  # the run reports it
    return lookup(cache, keys, path, display, raw)


def lookup(cache: Cache, keys: ResultKeys, path: str, display: str, raw: RawSource) -> FileResult | None:
    entry = cache.get_value(keys.key(path, display, raw))
    if not isinstance(entry, _Entry) or not isinstance(entry.result, FileResult):
        return None
    result = entry.result
    if result.path != path:
        if keys.by_path:
            return None
        result = _renamed(result, path)
    if keys.mode == Mode.WRITE and result.status == CHANGED:
        return None  # a file to write is processed and verified afresh
    original, replacement = entry.original, entry.replacement
    if original is _Ref.SOURCE:
        try:
            original = raw.decode().text
        except SourceError:
            return None
    if replacement is _Ref.ORIGINAL:
        replacement = original
    if isinstance(original, _Ref) or isinstance(replacement, _Ref):
        return None
    if original is not None or replacement is not None:
        result.original, result.replacement = original, replacement  # the entry's own, just loaded
    return result


def _renamed(result: FileResult, path: str) -> FileResult:
    """A result of the same bytes under another name, given `path` (the engine sets every
    finding's path to the file's)."""
    findings = [replace(f, path=path) if f.path == result.path else f for f in result.findings]
    return replace(result, path=path, findings=findings)


def store_result(cache: Cache, keys: ResultKeys, raw: RawSource, result: FileResult, display: str, text: str) -> None:
    """Keep `result` (computed from `raw`, decoded as `text`) for the next run, if it may be reused."""
    if result.status == FAILED or (keys.mode == Mode.WRITE and result.status == CHANGED):
        return
    # The whole texts (lint, staged runs) mostly equal the source: the entry refers to it then.
    original: str | _Ref | None = _Ref.SOURCE if result.original == text else result.original
    replacement: str | _Ref | None = result.replacement
    if replacement is not None and replacement == result.original:
        replacement = _Ref.ORIGINAL
    entry = _Entry(result=replace(result, original=None, replacement=None), original=original, replacement=replacement)
    cache.put_value(keys.key(result.path, display, raw), entry)


def store_output(cache: Cache, keys: ResultKeys, data: bytes, text: str, result: FileResult, display: str) -> None:
    """Keep the result of an output `apply` writes or stages (`data`, decoded `text`; the result
    its verification computed) for the runs that read such a file next (`keys.outputs`)."""
    raw = RawSource(data=data, mtime_ns=0, size=len(data))
    for options in keys.outputs:
        store_result(cache, replace(keys, options=options), raw, result, display, text)


class _Ref(enum.Enum):
    """A text an entry refers to instead of holding it."""

    SOURCE = "source"  # the file's decoded source
    ORIGINAL = "original"  # the same as the entry's `original`


@dataclass(frozen=True)
class _Entry:
    result: FileResult  # without its texts
    original: str | _Ref | None
    replacement: str | _Ref | None
