"""The batch engine: files in, FileResults out.

It owns everything a transform must not do: reading and decoding, triage,
process-level parallelism, verification of every output, diffs and atomic
writes. One file's failure never stops the run.
"""

from __future__ import annotations

import ast
import difflib
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Sequence

import libcst

from codemod.files import Source, SourceError, read_source, write_atomic
from codemod.result import ALREADY, CHANGED, FAILED, NEEDS_MANUAL, SKIPPED, UNCHANGED, FileResult
from transforms.base import Finding, Transform
from transforms.hw_edit import split_lines

# Rules whose presence means a class is labelled (or will be, once written).
_LABELLED = {"hw/label", "hw/already", "hw/already-disagrees", "hw/forced"}
_CLASS_RULES = _LABELLED | {"hw/needs-manual", "hw/invalid-label", "hw/refused"}


class VerificationError(Exception):
    """An output failed one of the checks run before anything is written."""


def _run_transforms(text: str, tree: ast.Module, transforms: Sequence[Transform]):
    findings: list[Finding] = []
    manual = 0
    for t in transforms:
        if not t.triage(text):
            continue
        result = t.run(text, tree)
        findings.extend(result.findings)
        manual += result.manual
        if result.text != text:
            text = result.text
            tree = ast.parse(text)
    return text, tree, findings, manual


def verify(old_tree: ast.Module, new_text: str, transforms: Sequence[Transform]) -> None:
    """The output parses (ast and LibCST), differs from the input only by what the
    transforms may add, and a second run changes nothing."""
    try:
        new_tree = ast.parse(new_text)
    except SyntaxError as e:
        raise VerificationError(f"output does not parse: {e}") from None
    try:
        libcst.parse_module(new_text)
    except libcst.ParserSyntaxError as e:
        raise VerificationError(f"output does not parse with LibCST: {e}") from None
    old_stripped, new_stripped = old_tree, new_tree
    for t in transforms:
        old_stripped, new_stripped = t.strip(old_stripped), t.strip(new_stripped)
    if ast.dump(old_stripped) != ast.dump(new_stripped):
        raise VerificationError("output differs from the input beyond the intended insertions")
    again, _, _, _ = _run_transforms(new_text, new_tree, transforms)
    if again != new_text:
        raise VerificationError("not idempotent: a second run would change the output again")


def unified_diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(split_lines(old), split_lines(new), f"a/{path}", f"b/{path}"))


def _bucket(findings: list[Finding], manual: int, changed: bool) -> tuple[str, str, bool]:
    classes = [f for f in findings if f.rule in _CLASS_RULES]
    fully = bool(classes) and all(f.rule in _LABELLED for f in classes)
    if changed:
        return CHANGED, "", fully
    if manual:
        return NEEDS_MANUAL, "", fully
    if classes and fully:
        return ALREADY, "", fully
    if not classes and not findings:
        return SKIPPED, "no test classes", fully
    return UNCHANGED, "", fully


def process_file(path: str, transforms: Sequence[Transform], mode: str) -> FileResult:
    """mode: classify (look only) | check | diff | write."""
    try:
        src: Source = read_source(path)
    except SourceError as e:
        return FileResult(path, FAILED, reason=str(e))
    if not any(t.triage(src.text) for t in transforms):
        return FileResult(path, SKIPPED, reason="no test classes")
    try:
        tree = ast.parse(src.text, filename=path)
    except (SyntaxError, ValueError) as e:
        where = f"line {e.lineno}: " if getattr(e, "lineno", None) else ""
        return FileResult(path, FAILED, reason=f"syntax error: {where}{getattr(e, 'msg', e)}")
    try:
        new_text, _, findings, manual = _run_transforms(src.text, tree, transforms)
        findings = [_with_path(f, path) for f in findings]
        changed = new_text != src.text
        status, reason, fully = _bucket(findings, manual, changed)
        result = FileResult(path, status, reason, findings, manual, fully_classified=fully)
        if not changed or mode == "classify":
            return result
        verify(tree, new_text, transforms)
        if mode == "diff":
            result.diff = unified_diff(path, src.text, new_text)
        if mode == "write":
            write_atomic(path, new_text.encode(src.encoding), expect=src)
            result.written = True
        return result
    except Exception as e:  # per-file isolation: report, never write, go on
        return FileResult(path, FAILED, reason=f"internal error: {type(e).__name__}: {e}")


def _with_path(f: Finding, path: str) -> Finding:
    from dataclasses import replace

    return replace(f, path=path)


# --- parallel driver ----------------------------------------------------------------------------

_worker_args: tuple = ()


def _init_worker(transforms, mode) -> None:
    global _worker_args
    _worker_args = (transforms, mode)


def _work(path: str) -> FileResult:
    return process_file(path, *_worker_args)


def run_files(
    paths: Sequence[str],
    transforms: Sequence[Transform],
    mode: str,
    jobs: int | None = None,
    progress: Callable[[Iterable[FileResult], int], Iterable[FileResult]] | None = None,
) -> list[FileResult]:
    """Process every path; results come back sorted by path whatever the parallelism."""
    jobs = jobs or os.cpu_count() or 1
    paths = sorted(paths)
    # A pool costs ~100 ms to start: not worth it for a handful of files.
    if jobs == 1 or len(paths) < 8:
        it: Iterable[FileResult] = (process_file(p, transforms, mode) for p in paths)
        results = list(progress(it, len(paths)) if progress else it)
    else:
        ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
        with ctx.Pool(jobs, initializer=_init_worker, initargs=(transforms, mode)) as pool:
            it = pool.imap_unordered(_work, paths, chunksize=max(1, min(16, len(paths) // (jobs * 8))))
            results = list(progress(it, len(paths)) if progress else it)
    results.sort(key=lambda r: r.path)
    return results
