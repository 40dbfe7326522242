"""The batch engine: files in, FileResults out.

It owns everything a transform must not do: reading and decoding, triage,
process-level parallelism, verification of every output, diffs and atomic
writes. One file's failure never stops the run.
"""

from __future__ import annotations

import ast
import difflib
import gc
import itertools
import multiprocessing
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from codemod.engine import file_results
from codemod.engine.cache import Cache
from codemod.engine.file_results import ResultKeys
from codemod.engine.libcst_reading import touched_snippets
from codemod.engine.result import (
    ALREADY,
    CHANGED,
    FAILED,
    NEEDS_MANUAL,
    SKIPPED,
    UNCHANGED,
    FileResult,
    FileStatus,
    Mode,
)
from codemod.util import reaper
from codemod.util.files import RawSource, Source, SourceError, read_bytes, read_source, write_atomic
from transforms.core.analysis import labels_of_test_classes, may_have_test_class
from transforms.core.base import Finding, Severity, Transform
from transforms.core.source_lines import split_lines

# Decisions after which a class carries a label; the label passes the linter unless
# the finding lists violations (a forced value, an existing label that breaks its rules).
_LABELLED = {"hw/label", "hw/already", "hw/already-disagrees", "hw/forced"}
_CLASS_RULES = _LABELLED | {"hw/needs-manual", "hw/invalid-label", "hw/refused"}


def _linter_clean(findings: list[Finding], tested: bool) -> bool:
    """Every test class will carry a label the linter accepts, and nothing else in the
    file is an error (duplicate classes or instantiations): safe to graduate. `tested`: the
    parsed output has a test class (the linter's scan). A file without one that parses has
    nothing for the linter to check (upstream's `--regenerate` drops it): graduate only,
    whichever transforms ran; a file with one needs the label transform's word on each."""
    if any(f.severity == Severity.ERROR for f in findings):
        return False
    classes = [f for f in findings if f.rule in _CLASS_RULES]
    if not classes:
        return not tested
    return all(f.rule in _LABELLED and not f.data.get("violations") for f in classes)


class VerificationError(Exception):
    """An output failed one of the checks run before anything is written."""


def _run_transforms(text: str, tree: ast.Module, transforms: Sequence[Transform], path: str | None = None):
    findings: list[Finding] = []
    manual = 0
    for t in transforms:
        if not t.triage(text):
            continue
        result = t.run(text, tree, path)
        findings.extend(result.findings)
        manual += result.manual
        if result.text != text:
            text = result.text
            tree = result.tree if result.tree is not None else ast.parse(text)
    return text, tree, findings, manual


def verify(
    old_text: str,
    old_tree: ast.Module,
    new_text: str,
    new_tree: ast.Module,
    transforms: Sequence[Transform],
    path: str | None = None,
) -> tuple[list[Finding], list[Finding], int]:
    """The output parses (ast, and LibCST where it touched the input), differs from the input only
    by what the transforms may add, and a second run changes nothing. Raises VerificationError;
    returns the notes worth reporting, and the second run's findings and manual count (what
    a check of the output finds). Both trees are consumed (strip() works in place)."""
    import libcst  # late: only a file with an edit pays for LibCST's import (0.15 s)

    notes = []
    if not all(_libcst_reads(libcst, snippet) for snippet in touched_snippets(old_text, new_text, new_tree)):
        notes = _libcst_reads_whole(libcst, old_text, new_text)
    again, _, again_findings, again_manual = _run_transforms(new_text, new_tree, transforms, path)
    if again != new_text:
        raise VerificationError("not idempotent: a second run would change the output again")
    for t in transforms:
        baseline = getattr(t, "verified_baseline", None)
        if baseline is not None:  # a restructuring transform checks its own moves (test inventory)
            old_text = baseline(old_text, old_tree, path)  # and its output becomes the reference
            old_tree = ast.parse(old_text)
    for t in transforms:
        old_tree, new_tree = t.strip(old_tree), t.strip(new_tree)
    if not same_tree(old_tree, new_tree):
        raise VerificationError("output differs from the input beyond the intended insertions")
    return notes, again_findings, again_manual


def _libcst_reads(libcst: Any, text: str) -> bool:
    try:
        libcst.parse_module(text)
    except libcst.ParserSyntaxError:
        return False
    return True


def _libcst_reads_whole(libcst: Any, old_text: str, new_text: str) -> list[Finding]:
    """A touched statement LibCST cannot parse alone: judge by the whole files."""
    try:
        libcst.parse_module(new_text)
    except libcst.ParserSyntaxError as e:
        if _libcst_reads(libcst, old_text):
            raise VerificationError(f"output does not parse with LibCST: {e}") from None
        # LibCST lags behind CPython's grammar (the stdlib's test_grammar.py): not our edit.
        return [
            Finding(
                rule="engine/libcst-unparsable",
                message="LibCST cannot parse this file (nor the input); the output was verified with ast only",
                line=1,
            )
        ]
    return []


def same_tree(a: ast.AST, b: ast.AST) -> bool:
    """Structural equality of two ASTs, positions ignored (what ast.dump compares, 4x faster).
    Every output is compared with its input: the loop is kept free of generator expressions and
    attribute lookups (1.5x faster than with them). A pair of one object is equal without a look:
    most leaves of two parses are (identifiers are interned, `Load()` and None are shared), which
    saves a quarter of the walk."""
    stack: list[tuple[Any, Any]] = [(a, b)]
    pop, push = stack.pop, stack.append
    node = ast.AST
    while stack:
        x, y = pop()
        kind = type(x)
        if kind is not type(y):
            return False
        if kind is list:
            if len(x) != len(y):
                return False
            for u, v in zip(x, y):  # noqa: B905 - the lengths were just compared
                if u is not v:
                    push((u, v))
        elif isinstance(x, node):
            for f in kind._fields:
                u = getattr(x, f, None)
                v = getattr(y, f, None)
                if u is not v:
                    push((u, v))
        elif x != y:
            return False
    return True


def unified_diff(path: str, old: str, new: str) -> str:
    out = []
    for line in difflib.unified_diff(split_lines(old), split_lines(new), f"a/{path}", f"b/{path}"):
        out.append(line)
        if not line.endswith(("\n", "\r")):  # what `git apply` / `patch` expect
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def _bucket(findings: list[Finding], manual: int, changed: bool) -> tuple[FileStatus, str]:
    classes = [f for f in findings if f.rule in _CLASS_RULES]
    if changed:
        return CHANGED, ""
    if manual:
        return NEEDS_MANUAL, ""
    if classes and all(f.rule in _LABELLED for f in classes):
        return ALREADY, ""
    if not findings:
        return SKIPPED, "no test classes"
    return UNCHANGED, ""


def process_file(
    path: str,
    transforms: Sequence[Transform],
    mode: Mode,
    display: str | None = None,
    src: Source | None = None,
    staged: bool = False,
    on_output: Callable[[bytes, str, FileResult], None] | None = None,
) -> FileResult:
    """`display` is the name diff headers show (default: `path`). `src`: the source already read
    (standard input; `path` is then only its name, and mode is never write). `staged`: keep the
    input and the would-be output (`original`/`replacement`, also when equal) and write nothing,
    whatever the mode; `write_staged` writes later (the linter gate sits in between).
    `on_output(data, text, result)`: told of each verified output `apply` writes or stages, its
    bytes and text and the result a run on them gives (verification ran the transforms on them
    once more; with nothing left to change, every mode gives that result)."""
    try:
        with _collector_paused():
            return _process(path, transforms, mode, display or path, src, staged, on_output)
    except RecursionError as e:
        return FileResult(path=path, status=FAILED, reason=too_deep(e))
    except Exception as e:  # per-file isolation: report, never write, go on
        return FileResult(path=path, status=FAILED, reason=f"internal error: {type(e).__name__}: {e}")


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while one file is processed (and while run_files gathers the
    results). Its ast and LibCST trees are millions of objects without cycles (refcounting frees
    them), which each automatic collection walks again to find nothing: 15-20% of `apply`
    (measured on 150 CPython test files, most of it inside the LibCST parse that verifies each
    output). The few cycles a file leaves (an exception's traceback) are collected once the
    collector runs again: after the file in a worker, after the run in the process that called
    run_files."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def too_deep(e: RecursionError) -> str:
    """Name the cause of a RecursionError: the input nests deeper (a 3,000-branch elif, an
    expression of 100,000 terms) than Python's parser or a recursive analysis can follow."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != __file__]
    where = f" in {os.path.basename(frames[-1].filename)}:{frames[-1].lineno} ({frames[-1].name})" if frames else ""
    return f"too deeply nested for Python's parser/analysis (RecursionError{where}: {e}); not processed"


def _process(
    path: str,
    transforms: Sequence[Transform],
    mode: Mode,
    display: str,
    src: Source | None = None,
    staged: bool = False,
    on_output: Callable[[bytes, str, FileResult], None] | None = None,
) -> FileResult:
    if src is None:
        try:
            src = read_source(path)
        except SourceError as e:
            return FileResult(path=path, status=FAILED, reason=str(e))
    triaged = any(t.triage(src.text) for t in transforms)
    if not triaged and may_have_test_class(src.text):
        # No transform has anything to do, and the file may hold test classes: nothing to
        # look at, and no evidence that the linter accepts it (not graduated).
        return FileResult(path=path, status=SKIPPED, reason="no test classes")
    try:
        tree = ast.parse(src.text, filename=path)
    except (SyntaxError, ValueError) as e:
        lineno = getattr(e, "lineno", None)
        where = f"line {lineno}: " if lineno else ""
        return FileResult(path=path, status=FAILED, reason=f"syntax error: {where}{getattr(e, 'msg', e)}")
    if not triaged:  # certainly no test class, and it parses: the linter accepts it as it is
        result = FileResult(path=path, status=SKIPPED, reason="no test classes", fully_classified=True)
        if staged:  # the gate judges it too: graduation needs the checkout linter's word
            result.original = result.replacement = src.text
        return result
    new_text, new_tree, findings, manual = _run_transforms(src.text, tree, transforms, path)
    changed = new_text != src.text
    tested = bool(labels_of_test_classes(new_tree))  # before verification consumes the tree
    result = _result(path, findings, manual, changed, tested)
    if staged:
        result.original, result.replacement = src.text, new_text
    if not changed or mode == Mode.CLASSIFY:
        return result
    notes, again, again_manual = verify(src.text, tree, new_text, new_tree, transforms, path)
    result.findings += [_with_path(f, path) for f in notes]
    if mode == Mode.DIFF:
        result.diff = unified_diff(display, src.text, new_text)
    if mode == Mode.LINT:
        _offer_replacement(result, src, new_text)
    if mode == Mode.WRITE:
        data = new_text.encode(src.encoding)
        if on_output is not None:  # (a result of those bytes, whether or not the gate lets them be written)
            output = _result(path, again, again_manual, changed=False, tested=tested)
            if staged:
                output.original = output.replacement = new_text
            on_output(data, new_text, output)
        if not staged:
            write_atomic(path, data, expect=src)
            result.written = True
    return result


def _result(path: str, findings: list[Finding], manual: int, changed: bool, tested: bool) -> FileResult:
    findings = [_with_path(f, path) for f in findings]
    status, reason = _bucket(findings, manual, changed)
    return FileResult(
        path=path,
        status=status,
        reason=reason,
        findings=findings,
        manual=manual,
        fully_classified=_linter_clean(findings, tested),
    )


def _offer_replacement(result: FileResult, src: Source, new_text: str) -> None:
    """lintrunner writes `replacement` encoded as UTF-8: offer it only when that gives exactly
    the bytes `apply` writes (a BOM travels as U+FEFF); a file in another encoding gets a
    message instead of an autofix that would corrupt it."""
    try:
        result.original = src.text.encode(src.encoding).decode("utf-8")
        result.replacement = new_text.encode(src.encoding).decode("utf-8")
    except UnicodeError:
        result.original = result.replacement = None
        result.findings.append(
            Finding(
                rule="engine/no-autofix",
                message=f"no autofix offered: the file is encoded in {src.encoding}, which lintrunner's UTF-8 "
                f"replacement would corrupt; run `decouple apply` on it instead",
                line=1,
                severity=Severity.WARNING,
                path=result.path,
            )
        )


def write_staged(result: FileResult) -> None:
    """Write a staged result's output, unless the file changed on disk since it was read
    (then the result becomes a failure and nothing is written)."""
    if result.replacement is None or result.replacement == result.original:
        return
    try:
        src = read_source(result.path)
        if src.text != result.original:
            raise OSError(f"{result.path} changed on disk while it was being processed; not written")
        write_atomic(result.path, result.replacement.encode(src.encoding), expect=src)
        result.written = True
    except (OSError, SourceError) as e:
        result.status, result.reason = FAILED, f"not written: {e}"


def _with_path(f: Finding, path: str) -> Finding:
    return replace(f, path=path)


def process_raw(
    path: str,
    raw: RawSource,
    transforms: Sequence[Transform],
    mode: Mode,
    display: str,
    staged: bool = False,
    cache: Cache | None = None,
    keys: ResultKeys | None = None,
) -> FileResult:
    """process_file on bytes already read (a file's, standard input's), through `cache` when
    one is given (`keys`: of these transforms, mode and `staged`)."""
    if cache is not None and keys is not None:
        hit = file_results.lookup(cache, keys, path, display, raw)
        if hit is not None:
            return hit
    return _processed_and_kept(path, raw, transforms, mode, display, staged, cache, keys)


def _processed_and_kept(
    path: str,
    raw: RawSource,
    transforms: Sequence[Transform],
    mode: Mode,
    display: str,
    staged: bool,
    cache: Cache | None,
    keys: ResultKeys | None,
) -> FileResult:
    """process_file on `raw`, its result kept in `cache` (which was asked already)."""
    try:
        src = raw.decode()
    except SourceError as e:
        return FileResult(path=path, status=FAILED, reason=str(e))
    if cache is None or keys is None:
        return process_file(path, transforms, mode, display, src=src, staged=staged)

    def keep_output(data: bytes, text: str, output: FileResult) -> None:
        file_results.store_output(cache, keys, data, text, output, display)

    result = process_file(path, transforms, mode, display, src=src, staged=staged, on_output=keep_output)
    file_results.store_result(cache, keys, raw, result, display, src.text)
    return result


def _process_path(
    path: str,
    display: str,
    transforms: Sequence[Transform],
    mode: Mode,
    staged: bool,
    cache: Cache | None,
    keys: ResultKeys | None,
) -> FileResult:
    """A file run_files's lookup (_cached) did not find in the cache: processed, and kept."""
    if cache is None:
        return process_file(path, transforms, mode, display, staged=staged)
    try:
        raw = read_bytes(path)
    except SourceError:
        return process_file(path, transforms, mode, display, staged=staged)  # which reports it
    return _processed_and_kept(path, raw, transforms, mode, display, staged, cache, keys)


# --- parallel driver ----------------------------------------------------------------------------

_worker_args: tuple = ()


def _init_worker(
    transforms: Sequence[Transform],
    mode: Mode,
    staged: bool,
    cache: Cache | None,
    keys: ResultKeys | None,
    parent: int,
    collects: bool,
) -> None:
    global _worker_args
    _worker_args = (transforms, mode, staged, cache, keys)
    # Ctrl-C reaches the whole process group: the parent ends the pool (a worker mid-write
    # finishes the write first: write_atomic holds the signals), a worker says nothing. A
    # Ctrl-C that lands while the pool starts leaves the parent no pool to end: the workers
    # then end with the parent (they held its standard error open, and nothing stopped them).
    # The worker was forked with SIGINT blocked (_started_pool): a Ctrl-C of its first moments
    # is discarded here, not a KeyboardInterrupt traceback of multiprocessing's bootstrap.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if collects:  # forked while the parent's collector was paused (run_files): collect between files
        gc.enable()
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    reaper.end_with_parent(parent)


def _started_pool(ctx: Any, jobs: int, initargs: tuple) -> Any:
    """A pool whose workers are forked with SIGINT blocked (they ignore it once started); a
    Ctrl-C during the start reaches this process when the pool is up."""
    if not hasattr(signal, "pthread_sigmask"):
        return ctx.Pool(jobs, initializer=_init_worker, initargs=initargs)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return ctx.Pool(jobs, initializer=_init_worker, initargs=initargs)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _work(item: tuple[str, str]) -> bytes:
    """The file's result and the cache entries it made (the parent writes them: cache.py).
    Pickled here, so that a result that cannot cross the process boundary (a RecursionError
    while pickling it) is that file's failure, not the pool's."""
    path, display = item
    transforms, mode, staged, cache, keys = _worker_args
    result = _process_path(path, display, transforms, mode, staged, cache, keys)
    entries = cache.pending() if cache is not None else {}
    try:
        return pickle.dumps((result, entries))
    except RecursionError as e:
        return pickle.dumps((FileResult(path=path, status=FAILED, reason=too_deep(e)), {}))
    except Exception as e:
        failed = FileResult(path=path, status=FAILED, reason=f"internal error: result not transferable: {e}")
        return pickle.dumps((failed, {}))


def run_files(
    paths: Sequence[str],
    transforms: Sequence[Transform],
    mode: Mode,
    jobs: int | None = None,
    progress: Callable[[Iterable[FileResult], int], Iterable[FileResult]] | None = None,
    display: Callable[[str], str] | None = None,
    staged: bool = False,
    cache: Cache | None = None,
) -> list[FileResult]:
    """Process every path; results come back sorted by path whatever the parallelism.
    `display(path)` is the name diff headers show (default: the path itself); `staged`: see
    process_file. With `cache`, a file whose result the cache holds is only read and hashed
    (file_results.py says which results are reused); the others are processed and kept."""
    jobs = jobs or os.cpu_count() or 1
    items = [(p, display(p) if display else p) for p in sorted(paths)]
    keys = ResultKeys.of(transforms, mode, staged) if cache is not None else None
    missed: list[tuple[str, str]] = []
    collects = gc.isenabled()
    # The results gathered here are acyclic objects by the thousand (each file's findings, their
    # data), which every automatic collection walked again: with it, a cached check of 5,000
    # files spent 40% of its lookups collecting (0.9-1.1 s -> 0.6 s without).
    with _collector_paused():
        it = itertools.chain(
            _cached(items, cache, keys, missed),
            _computed(missed, transforms, mode, jobs, staged, cache, keys, collects),
        )
        results = list(progress(it, len(items)) if progress else it)
    if cache is not None:
        cache.flush()  # the entries of the files processed, the refreshed times of the hits
    results.sort(key=lambda r: r.path)
    return results


def _cached(
    items: list[tuple[str, str]], cache: Cache | None, keys: ResultKeys | None, missed: list[tuple[str, str]]
) -> Iterator[FileResult]:
    """The results the cache holds (looked up here, before any worker starts); the other items
    go to `missed`."""
    for item in items:
        hit = file_results.cached(cache, keys, *item) if cache is not None and keys is not None else None
        if hit is None:
            missed.append(item)
        else:
            yield hit


def _computed(
    items: list[tuple[str, str]],
    transforms: Sequence[Transform],
    mode: Mode,
    jobs: int,
    staged: bool,
    cache: Cache | None,
    keys: ResultKeys | None,
    collects: bool,
) -> Iterator[FileResult]:
    # A pool costs ~100 ms to start: not worth it for a handful of files.
    if jobs == 1 or len(items) < 8:
        for p, d in items:
            yield _process_path(p, d, transforms, mode, staged, cache, keys)
        return
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    with _started_pool(ctx, jobs, (transforms, mode, staged, cache, keys, os.getpid(), collects)) as pool:
        chunks = max(1, min(16, len(items) // (jobs * 8)))
        for data in pool.imap_unordered(_work, items, chunksize=chunks):
            result, entries = pickle.loads(data)
            if cache is not None and entries:
                cache.adopt(entries)
            yield result
