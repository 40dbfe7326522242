"""The survey pipeline: from the files asked for to a Survey.

1. The selection, as `apply` makes it (files, folders, the allowlist, the excludes), and the
   generation of the linter's rules `apply` would apply to it (`--rules`, chosen over the whole
   selection: the cache may answer for part of it).
2. Each file is read once as bytes: its digest (with everything else its result depends on:
   the tool's fingerprint as the codemod's keys have it, the options, the generation, the linter
   that judges it) is its key in the engine's store of per-file results (`codemod/engine/cache.py`).
3. The files the cache does not know go through the engine as `apply` runs them (the same
   transforms under that generation, the linter gate on the would-be outputs; CLASSIFY mode:
   nothing is written and the outputs are not re-verified, which changes no status): labels
   alone, then, for the files labels alone do not finish and restructuring can touch (the
   transform's own triage, under that generation too), with `--restructure auto` in front.
   When `--torch-load` was not asked, the torch.load census (an `ast` count that edits
   nothing) runs beside the labels for the facts.
4. Per file, a FileSurvey (`analysis`), stored as its JSON; then the batches and the history.

Nothing here prints; the CLI passes a progress wrapper and reads the run's statistics.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from codemod.engine import cache as store
from codemod.engine import file_results, linter_gate, pipeline, rules_choice
from codemod.engine.cache import Cache
from codemod.engine.discovery import Discovered, DiscoveryError, excluded_by, relative_to_root, repo_root
from codemod.engine.pipeline import CodemodRun
from codemod.engine.result import FAILED, FileResult, GateSummary, Mode, RulesChoice
from codemod.survey import analysis, worktree
from codemod.survey.batches import plan_batches
from codemod.survey.history import HistoryError, allowlist_history
from codemod.survey.model import Excluded, FileSurvey, Survey, SurveyFormatError
from codemod.util.files import MAX_SOURCE_BYTES, SourceError, decode_source
from codemod.util.jsonfile import JSONInputError, loads
from transforms.core.base import Transform
from transforms.restructure import Restructure
from transforms.torch_load.analysis.modes import Mode as LoadMode

OWNER_PREFIX = b"# Owner(s):"
# The first part of every survey key: the engine's store also holds the codemod's results, whose
# keys begin with the tool's fingerprint (`codemod/engine/file_results.py`); a survey's never meet them.
CACHE_NAMESPACE = "survey-v2"

# (a label for the bar, the results, how many) -> the results, shown as they come.
Progress = Callable[[str], Callable[[Iterable[FileResult], int], Iterable[FileResult]]]


class SurveyError(Exception):
    """Bad input (a missing path, an unreadable allowlist), a linter gate that cannot judge,
    or a history git cannot tell: the survey stops (exit 2)."""


@dataclass(frozen=True, kw_only=True)
class SurveyRequest:
    paths: Sequence[str] = ()
    allowlist: str | None = None
    excludes: Sequence[str] = ()
    jobs: int | None = None
    # The transforms `apply` runs (labels alone; --torch-load if asked, else the torch.load census).
    labels: Sequence[Transform]
    restructured: Sequence[Transform]  # ... with `--restructure auto` in front
    torch_load_mode: LoadMode  # --torch-load, else what the census's calls would need (auto)
    gate: str = "off"  # auto | off | PATH
    rules: str = rules_choice.AUTO  # the generation of the linter's rules: auto | a generation's name
    gate_python: str
    group_size: int = 5
    git_history: bool = False
    # Every other option the per-file results depend on, as JSON: part of each cache key (with
    # the generation of the rules applied, which `rules` only asks for).
    fingerprint: dict[str, Any] = field(default_factory=dict)
    cache: Cache | None = None  # the engine's store of per-file results (None: --no-cache)
    progress: Progress | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # recorded in the survey's JSON


@dataclass(kw_only=True)
class SurveyRun:
    survey: Survey
    analysed: int = 0  # files the engine looked at (the others came from the cache)
    cached: int = 0
    # the gate's runs, by the pass that ran it: labels alone, then --restructure auto
    gate: dict[str, GateSummary] = field(default_factory=dict)


@dataclass(kw_only=True)
class _Entry:
    """One selected file on its way through the survey."""

    path: str  # as the engine takes it
    rel: str
    owners: tuple[str, ...]
    digest: str | None  # None: unreadable (the engine says why; never cached)
    key: str = ""


def owners_of(data: bytes) -> tuple[str, ...]:
    """The `# Owner(s): ["module: nn", ...]` header (the first such comment of the file's head)."""
    for raw in data[:4096].splitlines()[:20]:
        line = raw.strip()
        if not line.startswith(OWNER_PREFIX):
            continue
        value = line[len(OWNER_PREFIX) :].decode("utf-8", "replace").strip()
        try:
            parsed = loads(value.replace("'", '"'), "the owners")
        except JSONInputError:
            return (value,) if value else ()
        if isinstance(parsed, str):
            parsed = [parsed]
        if isinstance(parsed, list):
            return tuple(str(o).strip() for o in parsed if str(o).strip())
        return (value,)
    return ()


def _read(path: str) -> bytes | None:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block
            return None
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return None
    return data


def _relative(path: str, root: str) -> str:
    rel = os.path.relpath(os.path.abspath(path), root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return relative_to_root(path)
    return rel.replace(os.sep, "/")


def _linter_digests(gate: str, paths: list[str]) -> tuple[dict[str, str], list[str]]:
    """Per path, the digest of the linter that judges it ("" when none does), and the linters."""
    try:
        groups, _ = linter_gate.resolve(gate, paths)
    except linter_gate.GateError as e:
        raise SurveyError(f"linter gate: {e}") from None
    digests: dict[str, str] = {}
    for linter, judged in groups.items():
        with open(linter, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        digests.update(dict.fromkeys(judged, digest))
    return {p: digests.get(p, "") for p in paths}, sorted(groups)


def _choose_rules(req: SurveyRequest, paths: list[str]) -> RulesChoice:
    """The generation of the rules for the whole selection, chosen as `apply` chooses it for the
    same files (the gate's linters; with the gate off, the checkouts' own, found as `auto` finds
    them): the engine then applies it to every file it analyses, whichever the cache left."""
    try:
        return rules_choice.choose_for(req.rules, req.gate, paths)
    except rules_choice.RulesError as e:
        raise SurveyError(str(e)) from None


def _entries(paths: list[str], root: str, req: SurveyRequest, tool: str, rules: str) -> tuple[list[_Entry], list[str]]:
    """`rules`: the generation applied (part of every key: a result of one generation is never
    served for another)."""
    linters, used = _linter_digests(req.gate, paths)
    base = json.dumps([tool, req.fingerprint, rules, os.path.realpath(root), req.gate_python], sort_keys=True)
    entries = []
    for path in paths:
        data = _read(path)
        rel = _relative(path, root)
        entry = _Entry(path=path, rel=rel, owners=owners_of(data or b""), digest=None)
        if data is not None and len(data) <= MAX_SOURCE_BYTES:
            entry.digest = hashlib.sha256(data).hexdigest()
            entry.key = store.key(CACHE_NAMESPACE, base, rel, entry.digest, linters[path])
        entries.append(entry)
    return entries, used


def _engine(req: SurveyRequest, paths: list[str], transforms_: Sequence[Transform], rules: str, label: str):
    progress = req.progress(label) if req.progress else None
    request = CodemodRun(
        mode=Mode.CLASSIFY,
        transforms=transforms_,
        paths=paths,
        jobs=req.jobs,
        gate=req.gate,
        rules=rules,  # the selection's generation, whatever part of it the cache answered
        gate_python=req.gate_python,
        progress=progress,
    )
    # The files of the survey's own selection (made once: excluded, deduplicated, sorted).
    part = pipeline.Selected(found=Discovered(files=sorted(paths)), allowlist=None, stale=[], missing=[])
    try:
        run = pipeline.run_selected(request, part)
    except (pipeline.UsageError, pipeline.RunError) as e:
        raise SurveyError(str(e)) from None
    return {os.path.normpath(r.path): r for r in run.files}, run.linter_gate


def _analyse(req: SurveyRequest, todo: list[_Entry], rules: str, out: SurveyRun) -> list[FileSurvey]:
    """`rules`: the generation of the rules every transform (and the triage) applies."""
    paths = [os.path.normpath(e.path) for e in todo]
    labels, gate = _engine(req, paths, req.labels, rules, "survey: labels")
    if gate is not None:
        out.gate["labels"] = gate
    # The triage below is the transform's under that generation, as the engine will run it.
    restructured_transforms = rules_choice.with_rules(req.restructured, rules)
    restructure = next(t for t in restructured_transforms if isinstance(t, Restructure))
    second = [p for p in paths if labels[p].status != FAILED and not labels[p].doable and _triaged(restructure, p)]
    restructured: dict[str, FileResult] = {}
    if second:
        restructured, gate = _engine(req, second, restructured_transforms, rules, "survey: --restructure auto")
        if gate is not None:
            out.gate["--restructure auto"] = gate
    surveys = []
    for p, e in zip(paths, todo, strict=True):
        surveys.append(
            analysis.file_survey(
                path=e.rel,
                directory=os.path.dirname(e.rel).replace(os.sep, "/") or ".",
                owners=e.owners,
                labels=labels[p],
                restructured=restructured.get(p),
                torch_load=analysis.torch_load_facts(labels[p].findings, req.torch_load_mode),
            )
        )
    return surveys


def _triaged(restructure: Restructure, path: str) -> bool:
    """The restructuring's own triage of the file (read again: only the unfinished files are)."""
    data = _read(path)
    try:
        return data is not None and restructure.triage(decode_source(data).text)
    except SourceError:
        return False  # the engine refused it already


def _still_the_same(entry: _Entry) -> bool:
    """The file has the bytes it was keyed by (nobody edited it while the engine ran)."""
    data = _read(entry.path)
    return data is not None and hashlib.sha256(data).hexdigest() == entry.digest


def _from_cache(cache: Cache | None, entry: _Entry) -> FileSurvey | None:
    """An entry holds a FileSurvey's JSON (the survey's own spelling, checked on the way in)."""
    if cache is None or not entry.key:
        return None
    payload = cache.get(entry.key)
    if payload is None:
        return None
    try:
        return FileSurvey.from_json(json.loads(payload))
    except (KeyError, TypeError, ValueError, SurveyFormatError):
        return None  # not a survey of ours: recompute


def _to_cache(cache: Cache, entry: _Entry, survey: FileSurvey) -> None:
    cache.put(entry.key, json.dumps(survey.to_json(), separators=(",", ":")).encode())


def _surveys(
    req: SurveyRequest, entries: list[_Entry], listed: set[str] | None, rules: str, out: SurveyRun
) -> list[FileSurvey]:
    """Every entry's survey: from the cache when it knows the key, else from the engine under
    the generation `rules` (and then stored). `listed`: the allowlist's entries (None: no allowlist)."""
    known: dict[str, FileSurvey] = {}
    for entry in entries:
        hit = _from_cache(req.cache, entry)
        if hit is not None:
            known[entry.path] = hit
    todo = [entry for entry in entries if entry.path not in known]
    if todo:
        for entry, fresh in zip(todo, _analyse(req, todo, rules, out), strict=True):
            known[entry.path] = fresh
            if req.cache is not None and entry.key and _still_the_same(entry):
                _to_cache(req.cache, entry, fresh)
        if req.cache is not None:
            req.cache.flush()  # the surveys kept, as the engine writes its entries after a run
    out.analysed, out.cached = len(todo), len(entries) - len(todo)
    # On the allowlist or not is the selection's fact, not the file's: never from the cache.
    surveys = [replace(s, allowlisted=None if listed is None else s.path in listed) for s in known.values()]
    return sorted(surveys, key=lambda f: f.path)


def run(req: SurveyRequest) -> SurveyRun:
    """Raises SurveyError."""
    try:
        selection = pipeline.select(req.paths, req.allowlist, req.excludes)
    except (pipeline.UsageError, DiscoveryError) as e:
        raise SurveyError(str(e)) from None
    allowlist = selection.allowlist
    root = allowlist.root if allowlist is not None else repo_root(os.getcwd())
    choice = _choose_rules(req, selection.found.files)
    entries, linters = _entries(selection.found.files, root, req, file_results.tool_fingerprint(), choice.name)
    allowlist_rel = _relative(allowlist.path, root) if allowlist is not None else None
    linters_rel = sorted({_relative(p, root) for p in [*linters, *choice.linters]})
    # What the survey reads, against the commit (asked of git while the engine runs).
    read = [e.rel for e in entries] + linters_rel + ([allowlist_rel] if allowlist_rel else [])
    query = worktree.UncommittedQuery(root, read)
    survey = Survey(
        root=root,
        allowlist=allowlist_rel,
        commit=None,
        group_size=req.group_size,
        settings=req.settings | {"linters": [_relative(p, root) for p in linters]},
        generation=replace(choice, linters=tuple(_relative(p, root) for p in choice.linters)),
    )
    out = SurveyRun(survey=survey)
    listed = set(allowlist.entries) if allowlist is not None else None
    survey.files = _surveys(req, entries, listed, choice.name, out)
    state = query.finish()
    survey.commit, survey.uncommitted = state.commit, state.uncommitted
    if state.uncommitted:
        survey.warnings.append(uncommitted_warning(state.uncommitted))
    patterns = list(req.excludes)
    survey.excluded = [
        Excluded(path=_relative(p, root), pattern=excluded_by(relative_to_root(p), patterns) or "")
        for p in selection.found.excluded
    ]
    survey.stale = sorted(selection.stale)
    survey.batches = plan_batches(survey.files, req.group_size)
    if req.git_history:
        if survey.allowlist is None:
            raise SurveyError("--git-history needs an allowlist (--from-allowlist, or the checkout's own)")
        try:
            survey.history = allowlist_history(root, survey.allowlist)
        except HistoryError as e:
            raise SurveyError(str(e)) from None
    return out


SHOWN_UNCOMMITTED = 5  # files a warning names


def uncommitted_warning(paths: list[str]) -> str:
    shown = ", ".join(paths[:SHOWN_UNCOMMITTED]) + (
        f" (+{len(paths) - SHOWN_UNCOMMITTED} more)" if len(paths) > SHOWN_UNCOMMITTED else ""
    )
    return (
        f"surveyed the work tree: uncommitted changes in {len(paths)} of the files read ({shown}); "
        "`decouple refactor --batches` plans from the commit, so commit or stash them for the two to agree"
    )
