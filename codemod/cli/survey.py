"""`decouple survey`: the whole campaign at a glance (read-only).

The transforms are built by the same builder as `apply`'s and `refactor`'s (labels alone, and
with `--restructure auto` in front), so the survey's status of a file is what those commands
then do with it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import click

from codemod.cli.options import (
    EditChoice,
    LabelChoice,
    Selection,
    build,
    fail,
    globals_option,
    interpreter_path,
    linter_option,
    load_config,
    nothing_to_do,
    rules_option,
    selection_options,
    torch_load_option,
)
from codemod.cli.transform_setup import SetupError, build_transforms
from codemod.engine.cache import Cache
from codemod.engine.discovery import EmptyAllowlist, repo_root
from codemod.engine.linter_gate import ALLOWLIST_NAME, LINTER_REL
from codemod.engine.result import FileResult
from codemod.report.survey import html as survey_html
from codemod.report.survey import markdown as survey_markdown
from codemod.report.survey import text as survey_text
from codemod.survey import run as survey_run
from codemod.survey.model import Survey
from transforms.torch_load import TorchLoad
from transforms.torch_load.analysis.modes import Mode as LoadMode
from transforms.torch_load.analysis.triage import TorchLoadCensus

STDOUT = "-"


@dataclass(frozen=True, kw_only=True)
class AnalysisChoice:
    """Every option the per-file analysis depends on (all of it goes into the cache key; of
    `rules`, the generation it comes to)."""

    torch_load: str | None
    globals_file: str | None
    python: str | None  # the target interpreter: the torch.load probe and the gate's linter
    linter: str | None
    rules: str | None  # auto | a generation's name; None: [tool.decouple] rules, else auto


@dataclass(frozen=True, kw_only=True)
class SurveyOptions:
    selection: Selection
    analysis: AnalysisChoice
    git_history: bool
    group_size: int
    json_out: str | None
    markdown_out: str | None
    html_out: str | None
    no_cache: bool
    quiet: bool


def _progress(label: str):
    def wrap(results: Iterable[FileResult], total: int) -> Iterator[FileResult]:
        with click.progressbar(results, length=total, label=label, file=sys.stderr) as bar:
            yield from bar

    return wrap


def _default_allowlist(sel: Selection, cfg) -> str | None:
    """--from-allowlist; else [tool.decouple] allowlist, else the checkout's own, when no path is named."""
    if sel.allowlist or sel.paths:
        return sel.allowlist
    if cfg.allowlist:
        return cfg.allowlist
    candidate = os.path.join(repo_root(os.getcwd()), os.path.dirname(LINTER_REL), ALLOWLIST_NAME)
    if not os.path.isfile(candidate):
        raise click.UsageError(f"name files or folders, or --from-allowlist PATH (no allowlist at {candidate})")
    return candidate


def _file_digest(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        fail(f"cannot read --globals {path}: {e.strerror or e}")


def _write(path: str, text: str) -> None:
    if path == STDOUT:
        click.echo(text, nl=not text.endswith("\n"))
        return
    tmp = f"{path}.decouple-tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)  # a report is whole or absent, never half written
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        fail(f"cannot write {path}: {e.strerror or e}")


def _request(opts: SurveyOptions, cfg) -> tuple[survey_run.SurveyRequest, list[str]]:
    a = opts.analysis
    python = a.python or cfg.python
    edits = EditChoice(torch_load=a.torch_load, globals_file=a.globals_file, explain=False, restructure_names=None)
    labels = LabelChoice(classification=None, per_class=(), force=False)
    try:
        alone = build_transforms(labels, edits, label=True, python=python)
        restructured = build_transforms(
            labels, dataclasses.replace(edits, restructure_names="auto"), label=True, python=python
        )
    except SetupError as e:
        fail(str(e))
    torch = next((t for t in alone.transforms if isinstance(t, TorchLoad)), None)
    # The generation `rules` comes to is keyed by the survey run (`auto` may mean either).
    fingerprint = {k: v for k, v in dataclasses.asdict(a).items() if k != "rules"} | {
        "globals_digest": _file_digest(a.globals_file),
        "torch_version": list(torch.options.torch_version or ()) if torch else None,
    }
    gate = a.linter or cfg.linter or "auto"
    sel = opts.selection
    request = survey_run.SurveyRequest(
        paths=sel.paths,
        allowlist=_default_allowlist(sel, cfg),
        excludes=sel.excludes.patterns(cfg),
        jobs=sel.jobs or cfg.jobs,
        # Without --torch-load, the census counts the calls (and edits nothing).
        labels=alone.transforms if a.torch_load else [*alone.transforms, TorchLoadCensus()],
        restructured=restructured.transforms,
        torch_load_mode=LoadMode(a.torch_load or LoadMode.AUTO),
        gate=gate,
        rules=a.rules or cfg.rules or "auto",
        gate_python=python or sys.executable,
        group_size=opts.group_size,
        git_history=opts.git_history,
        fingerprint=fingerprint,
        cache=None if opts.no_cache else Cache.open(),
        progress=None if opts.quiet or not sys.stderr.isatty() else _progress,
        settings={
            "torch_load": a.torch_load or "not asked (calls counted)",
            "restructure": "auto",
            "linter": gate,
        },
    )
    return request, alone.warnings


@click.command()
@selection_options
@click.option("--git-history", is_flag=True, help="Also the allowlist's size at every commit that changed it.")
@click.option(
    "--group-size",
    type=click.IntRange(1),
    default=5,
    show_default=True,
    help="Suggested batches: up to K ready files per PR.",
)
@click.option("--json", "json_out", metavar="FILE", help="Write the survey as JSON (`-`: standard output).")
@click.option("--markdown", "markdown_out", metavar="FILE", help="Write the survey as Markdown (`-`: stdout).")
@click.option("--html", "html_out", metavar="FILE", help="Write the self-contained HTML dashboard (`-`: stdout).")
@torch_load_option
@globals_option
@click.option(
    "--python",
    "python",
    metavar="PATH",
    callback=interpreter_path,
    help="Target interpreter (default: [tool.decouple] python, else this one): probed for its torch "
    "with --torch-load, and runs the linter gate.",
)
@linter_option
@rules_option
@click.option("--no-cache", is_flag=True, help="Analyse every file again (the cache is not read nor written).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar, no summary: only the outputs asked for.")
def survey(**params: Any) -> None:
    """The campaign at a glance: every allowlisted file (default: the checkout's allowlist, else
    the PATHS) through the same analysis as `apply`, under the same generation of the linter's
    rules (--rules): ready (labels alone make the linter pass, or it passes already: graduate
    only), restructure (after --restructure auto, which never widens; a widening that would fit
    is proposed apart), manual (what and why), error; owners, folders, torch.load calls, and
    suggested PR batches (ready files, then restructure files). Reads the work tree and says
    whether it holds uncommitted changes. Reads only; writes the reports asked for.
    Exit: 0 done (or nothing to do: an empty allowlist); 2 usage error or bad input."""
    opts = build(SurveyOptions, params)
    cfg = load_config()
    request, warnings = _request(opts, cfg)
    try:
        outcome = survey_run.run(request)
    except survey_run.SurveyError as e:
        fail(str(e))
    except EmptyAllowlist as e:
        asked = opts.json_out or opts.markdown_out or opts.html_out
        nothing_to_do(f"{e}; no report written" if asked else str(e))
    result: Survey = outcome.survey
    result.warnings += warnings
    outputs = (
        (opts.json_out, lambda: json.dumps(result.to_json(), indent=2) + "\n"),
        (opts.markdown_out, lambda: survey_markdown.render(result)),
        (opts.html_out, lambda: survey_html.render(result)),
    )
    for path, render in outputs:
        if path:
            _write(path, render())
    if not opts.quiet:
        to_stdout = STDOUT not in (opts.json_out, opts.markdown_out, opts.html_out)
        click.echo(survey_text.summary(result, outcome.cached, outcome.gate), nl=False, err=not to_stdout)
    sys.exit(0)
