"""Running the files: every selected file in every arm on the pool, and the arm results.

Each (file, arm) pair is one job on the run's thread pool (``filerun`` runs it);
the arm results gather the file runs in job order, with each arm's error and its
reproduction command.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from codemod.ab import repro as _repro
from codemod.ab import shard as _shard
from codemod.ab.arms import ArmSpec
from codemod.ab.filerun import ArmRunner, FileRun
from codemod.ab.model import ArmResult
from codemod.ab.notices import Notice
from codemod.ab.options import RunOptions
from codemod.ab.sources import Sources


def wait_all(futures: list[Future], stop: threading.Event) -> None:
    """Wait for every future; the first exception sets `stop` and is raised."""
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
        for f in done:
            exc = f.exception()
            if exc is not None:
                stop.set()
                raise exc


def run_files(
    pool: ThreadPoolExecutor,
    runners: dict[str, ArmRunner],
    pieces: list[_shard.Piece],
    files_by_arm: dict[str, dict[str, list[str]]],
    stop: threading.Event,
    say,
) -> list[tuple[str, str, FileRun]]:
    """Every piece in every arm that has its file: (arm name, file, run), in job order."""
    jobs: list[Future] = []
    job_meta: list[tuple[str, str]] = []
    for piece in pieces:
        f = piece.file
        for name in runners:
            args = files_by_arm[name].get(f)
            if args is None:
                continue
            jobs.append(pool.submit(_progress_wrap, runners[name], f, args, say, piece))
            job_meta.append((name, f))
    wait_all(jobs, stop)
    return [(name, f, fut.result()) for fut, (name, f) in zip(jobs, job_meta, strict=False)]


def arm_results(
    specs: dict[str, ArmSpec],
    runs: list[tuple[str, str, FileRun]],
    arm_errors: dict[str, str],
    files_by_arm: dict[str, dict[str, list[str]]],
    all_files: list[str],
    sources: Sources,
    opts: RunOptions,
    warnings: list[Notice],
) -> dict[str, ArmResult]:
    """The result of each arm, in arm order; records the files' durations in `opts`
    and the runs' notes in `warnings`."""
    out: dict[str, ArmResult] = {}
    for name, spec in specs.items():
        out[name] = ArmResult(
            name=name,
            label=spec.label,
            root=str(spec.root),
            source=spec.source,
            env_added=dict(spec.env_added),
            extra_args=list(spec.extra_args),
        )
    for name, f, fr in runs:
        ar = out[name]
        ar.outcomes.update(fr.outcomes)
        ar.collection_errors.update(fr.collection_errors)
        ar.collection_skips.update(fr.collection_skips)
        ar.crashes.extend(fr.crashes)
        ar.duration += fr.duration
        if name in ("A", "B"):
            opts.file_durations[f] = max(opts.file_durations.get(f, 0.0), fr.duration)
        warnings.extend(fr.notes)
    for name, spec in specs.items():
        ar = out[name]
        if name in arm_errors:
            ar.ran, ar.error = False, arm_errors[name]
        run_files = [x for f in all_files for x in files_by_arm[name].get(f, [])]
        ar.command = _repro.repro_command(
            spec,
            opts.python,
            run_files,
            prefix=spec.materialise_note,
            cd=(
                '"$D"'
                if spec.materialise_note
                else str(sources.arms["A" if name == "A" or spec.based_on == "A" else "B"].root)
            ),
            cd_raw=bool(spec.materialise_note),
        )
    return out


def _progress_wrap(runner: ArmRunner, f: str, args: list[str], say, piece: _shard.Piece) -> FileRun:
    fr = runner.run_file(f, args, only=set(piece.only) if piece.only is not None else None, deselect=piece.deselect)
    counts: dict[str, int] = {}
    for o in fr.outcomes.values():
        counts[o.outcome] = counts.get(o.outcome, 0) + 1
    bits = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    if fr.collection_errors:
        bits = (bits + ", " if bits else "") + f"{len(fr.collection_errors)} collection error(s)"
    say(f"[{runner.spec.name}] {f}: {bits or 'no tests'} ({fr.duration:.1f}s)")
    return fr
