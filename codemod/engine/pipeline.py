"""One `classify`, `lint` or `apply` run: from the files asked for to a RunResult.

The selection (files, folders, the allowlist, exclude patterns, standard input), the engine over
every file, the checkout's linter judging the would-be outputs before anything is written, and the
allowlist's graduation. The CLI builds a `CodemodRun` from its options and the configuration and
prints the result; nothing here prints.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from codemod.engine import linter_gate, rules_choice
from codemod.engine.cache import Cache
from codemod.engine.discovery import (
    DEFAULT_EXCLUDES,
    Allowlist,
    Discovered,
    DiscoveryError,
    EmptyAllowlist,
    diff_name,
    discover,
    graduate,
    named_few,
    read_allowlist,
    stale_warning,
)
from codemod.engine.file_results import ResultKeys
from codemod.engine.process import process_raw, run_files, write_staged
from codemod.engine.result import FAILED, FileResult, Mode, RulesChoice, RunResult
from codemod.util.files import MAX_SOURCE_BYTES, RawSource, SourceError
from transforms.core.base import Transform
from transforms.core.words import plural
from transforms.rules.generations import generation

STDIN = "-"  # the path that reads one file from standard input
# The allowlist upstream's linter reads, beside it, relative to the checkout's root.
CHECKOUT_ALLOWLIST = os.path.join(os.path.dirname(linter_gate.LINTER_REL), linter_gate.ALLOWLIST_NAME)
# Below this many files a run is quick: no progress bar.
PROGRESS_MIN_FILES = 50

Progress = Callable[[Iterable[FileResult], int], Iterable[FileResult]]


class UsageError(Exception):
    """The invocation itself is wrong (the CLI reports it as a usage error, exit 2)."""


class RunError(Exception):
    """Bad input, or a linter gate that cannot judge: nothing was written (exit 2)."""


@dataclass(frozen=True, kw_only=True)
class CodemodRun:
    mode: Mode
    transforms: Sequence[Transform]  # in the order they run on a file
    paths: Sequence[str] = ()  # files and folders; `-` alone: standard input
    allowlist: str | None = None  # the upstream allowlist whose files are taken too
    excludes: Sequence[str] = DEFAULT_EXCLUDES  # gitignore patterns (see exclude_patterns)
    jobs: int | None = None  # worker processes (None: all cores)
    gate: str = "off"  # the linter gate: auto | off | PATH
    rules: str = rules_choice.AUTO  # the generation of the linter's rules: auto | a generation's name
    gate_python: str = sys.executable  # the interpreter the gate's linter runs under
    graduate: bool = False  # remove the allowlist entries of files that end up fully classified (check: say which)
    strict: bool = False  # manual work fails --check/--diff too
    stdin_name: str | None = None  # the name standard input goes by in messages
    progress: Progress | None = None  # wraps the results of a run of many files
    cache: bool = False  # reuse and keep per-file results in the user's cache folder (cache.py)


@dataclass(frozen=True, kw_only=True)
class Selected:
    found: Discovered
    allowlist: Allowlist | None
    stale: list[str]  # allowlist entries whose file is gone, as the allowlist spells them
    missing: list[str]  # named paths that do not exist (lint reports them; the others refuse)


def run(req: CodemodRun) -> RunResult:
    """Raises UsageError and RunError (nothing written then)."""
    if STDIN in req.paths:
        if len(req.paths) > 1 or req.allowlist:
            raise UsageError("`-` (standard input) must be the only path")
        return _stdin_run(req)
    if req.stdin_name:
        raise UsageError("--stdin-filename goes with `-` as the path")
    try:
        selection = select(req.paths, req.allowlist, req.excludes, missing_ok=req.mode == Mode.LINT)
    except DiscoveryError as e:
        raise RunError(str(e)) from None
    return run_selected(req, selection)


def run_selected(req: CodemodRun, selection: Selected) -> RunResult:
    """`run` on a selection already made (`select`; the survey runs the engine twice over parts
    of one selection). Raises UsageError and RunError."""
    files = selection.found.files
    cache = Cache.open() if req.cache else None
    linters, ungated = _resolve_gate(req.gate, files)
    choice = _choose_rules(req.rules, req.gate, files, linters)
    transforms = rules_choice.with_rules(req.transforms, choice.name)
    if req.mode == Mode.WRITE and _set_names(transforms):
        # Check the --set names on a look-only pass (up to the labels), before any file is written.
        upto = next(i for i, t in enumerate(transforms) if hasattr(t, "per_class")) + 1
        _check_set_names(transforms, run_files(files, transforms[:upto], Mode.CLASSIFY, req.jobs, cache=cache))
    root = selection.allowlist.root if selection.allowlist is not None else None
    results = run_files(
        files,
        transforms,
        req.mode,
        req.jobs,
        req.progress if len(files) > PROGRESS_MIN_FILES else None,
        display=lambda p: diff_name(p, root),
        staged=bool(linters),
        cache=cache,
    )
    _check_set_names(transforms, results)
    results += [FileResult(path=p, status=FAILED, reason="no such file or folder") for p in selection.missing]
    result = RunResult(mode=req.mode, files=results, strict=req.strict, generation=_named(choice, transforms))
    if req.gate != "off":
        _gate(result, req.gate, linters, ungated, req.gate_python, choice)
    if selection.stale:
        result.stale = selection.stale
        result.warnings.append(stale_warning(result.stale))
    if selection.found.excluded:
        result.warnings.append(f"{plural(len(selection.found.excluded), 'file')} excluded by glob")
    # lint judges as upstream's linter does, which skips what the checkout's allowlist names
    result.on_allowlist = on_allowlist(files, selection.allowlist, checkout=req.mode == Mode.LINT)
    if req.graduate and selection.allowlist is not None:
        write = req.mode == Mode.WRITE  # --check --graduate says which entries would go
        result.graduated = graduate(selection.allowlist, set(result.graduable()), write=write)
    return result


def on_allowlist(paths: Sequence[str], allowlist: Allowlist | None, checkout: bool) -> list[str]:
    """The paths an allowlist names: `allowlist` (the selection's); else, with `checkout`, the
    checkout's own, the one its linter reads (tools/linter/adapters/test_linter_allowlist.json
    of the nearest folder above the file that has one, entries relative to that folder).
    Raises RunError when that allowlist cannot be read."""
    if allowlist is not None:
        listed = {os.path.abspath(os.path.join(allowlist.root, e)) for e in allowlist.entries}
        return [p for p in paths if os.path.abspath(p) in listed]
    if not checkout:
        return []
    found: dict[str, tuple[str, frozenset[str]] | None] = {}
    named = []
    for path in paths:
        full = os.path.abspath(path)
        listing = _checkout_allowlist(os.path.dirname(full), found)
        if listing is not None and os.path.relpath(full, listing[0]).replace(os.sep, "/") in listing[1]:
            named.append(path)
    return named


def _checkout_allowlist(
    folder: str, found: dict[str, tuple[str, frozenset[str]] | None]
) -> tuple[str, frozenset[str]] | None:
    """(the checkout's root, its allowlist's entries) for a file in `folder`, or None; `found`
    remembers each folder's answer."""
    if folder in found:
        return found[folder]
    candidate = os.path.join(folder, CHECKOUT_ALLOWLIST)
    parent = os.path.dirname(folder)
    if os.path.isfile(candidate):
        try:
            answer: tuple[str, frozenset[str]] | None = (folder, frozenset(read_allowlist(candidate).entries))
        except DiscoveryError as e:
            raise RunError(f"the checkout's allowlist: {e}") from None
    else:
        answer = None if parent == folder else _checkout_allowlist(parent, found)
    found[folder] = answer
    return answer


def select(
    paths: Sequence[str], allowlist_path: str | None, excludes: Sequence[str], missing_ok: bool = False
) -> Selected:
    """The files named, found in the folders named and listed in the allowlist, minus the
    excluded ones. Raises UsageError (nothing named), EmptyAllowlist (nothing to do) and
    DiscoveryError."""
    allowlist = None
    wanted = list(paths)
    stale: list[str] = []
    if allowlist_path:
        allowlist = read_allowlist(allowlist_path)
        if not allowlist.entries and not paths:
            raise EmptyAllowlist(f"nothing to do: the allowlist {allowlist_path} is empty")
        listing = allowlist.listing()
        if listing.outside:  # the allowlist is data (a checkout's file): it names files of its repository only
            raise DiscoveryError(
                f"allowlist {allowlist_path}: {named_few(listing.outside)}: outside the repository {allowlist.root}; "
                "nothing was read or written"
            )
        wanted += listing.present
        stale = listing.stale  # an entry whose file is gone is stale, not a usage error
    elif not wanted:
        raise UsageError("name at least one file or folder, or --from-allowlist PATH")
    missing = [p for p in paths if not os.path.exists(p)]
    if missing and not missing_ok:
        raise DiscoveryError(f"no such file or folder: {', '.join(missing)}")
    absent = set(missing)
    wanted = [p for p in wanted if p not in absent]
    return Selected(found=discover(wanted, list(excludes)), allowlist=allowlist, stale=stale, missing=missing)


def _stdin_run(req: CodemodRun) -> RunResult:
    """`-`: one file read from standard input, named `stdin_name` in messages (never written).
    The gate judges its would-be output as it judges a file's, at that name's place in the mirror."""
    name = req.stdin_name or "<stdin>"
    data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)  # bounded, as for files
    raw = RawSource(data=data, mtime_ns=0, size=len(data))
    try:
        if len(data) > MAX_SOURCE_BYTES:
            raise SourceError(f"too large: more than {MAX_SOURCE_BYTES:,} bytes on standard input; not processed")
        src = raw.decode()
    except SourceError as e:
        return RunResult(mode=req.mode, files=[FileResult(path=name, status=FAILED, reason=str(e))], strict=req.strict)
    linters, ungated = _resolve_gate(req.gate, [name])
    choice = _choose_rules(req.rules, req.gate, [name], linters)
    transforms = rules_choice.with_rules(req.transforms, choice.name)
    staged = bool(linters)
    cache = Cache.open() if req.cache else None
    keys = ResultKeys.of(transforms, req.mode, staged) if cache is not None else None
    processed = process_raw(name, raw, transforms, req.mode, name, staged, cache, keys)
    if cache is not None:
        cache.flush()
    result = RunResult(mode=req.mode, files=[processed], strict=req.strict, generation=_named(choice, transforms))
    result.on_allowlist = on_allowlist([name], None, checkout=req.mode == Mode.LINT)
    if req.gate != "off":
        # A file of that name on disk is not what was read: the gate encodes as standard input was.
        _gate(result, req.gate, linters, ungated, req.gate_python, choice, encodings={name: src.encoding})
    return result


def _set_names(transforms: Sequence[Transform]) -> tuple[str, ...]:
    """The classes --set names (the label transform's overrides)."""
    overrides = next((t.per_class for t in transforms if hasattr(t, "per_class")), ())
    return tuple(name for name, _ in overrides)


def _check_set_names(transforms: Sequence[Transform], results: list[FileResult]) -> None:
    """--set naming a class no selected file defines (after any restructuring) is an error (exit 2)."""
    seen = {x.cls for f in results for x in f.findings if x.cls}
    unknown = [name for name in _set_names(transforms) if name not in seen]
    if unknown:
        raise RunError(f"--set {', '.join(unknown)}: no test class of that name in the selected files; nothing written")


def _resolve_gate(gate: str, files: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    try:
        return linter_gate.resolve(gate, files)
    except linter_gate.GateError as e:
        raise RunError(f"linter gate: {e}") from None


def _choose_rules(setting: str, gate: str, files: list[str], linters: dict[str, list[str]]) -> RulesChoice:
    """rules_choice.choose_for; raises RunError."""
    try:
        return rules_choice.choose_for(setting, gate, files, linters)
    except rules_choice.RulesError as e:
        raise RunError(str(e)) from None


def _named(choice: RulesChoice, transforms: Sequence[Transform]) -> RulesChoice | None:
    """The choice a result names: the run's, when a transform applied the rules."""
    return choice if rules_choice.follows_rules(transforms) else None


def _gate(
    result: RunResult,
    setting: str,
    linters: dict[str, list[str]],
    ungated: list[str],
    python: str,
    choice: RulesChoice,
    encodings: dict[str, str] | None = None,
) -> None:
    """Judge the staged outputs with the checkout's linter, then write what it accepts."""
    try:
        linter_gate.gate_run(result, setting, linters, ungated, python, generation(choice.name), encodings)
    except linter_gate.GateError as e:
        raise RunError(f"linter gate: {e} (nothing was written)") from None
    if not linters:
        return  # nothing was staged: the engine wrote as usual
    for f in result.files:
        if result.mode == Mode.WRITE:
            write_staged(f)
        if result.mode != Mode.LINT or f.replacement == f.original:
            f.original = f.replacement = None  # lint keeps the texts of files it would change
