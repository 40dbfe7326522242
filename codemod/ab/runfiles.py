"""Running the files: every selected file in every arm on the pool, and the arm results.

Each (file, arm) pair is one job on the run's slots (``filerun`` runs it); the
orchestration waits for the arms it needs next (A and B before the diagnostic
arms); the arm results gather the file runs in job order, with each arm's error
and its reproduction command.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait

from codemod.ab import repro as _repro
from codemod.ab import shard as _shard
from codemod.ab.arms import ArmSpec
from codemod.ab.filerun import ArmRunner, FileRun
from codemod.ab.model import ArmResult
from codemod.ab.notices import Notice
from codemod.ab.options import RunOptions
from codemod.ab.slots import SlotPool
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


def start_files(
    pool: SlotPool,
    runners: dict[str, ArmRunner],
    pieces: list[_shard.Piece],
    files_by_arm: dict[str, dict[str, list[str]]],
    say,
) -> list[tuple[str, str, Future]]:
    """Queue every piece in every arm that has its file: (arm name, file, its
    future), in job order: each file in A and B side by side (they run under
    the same conditions), then the diagnostic arms' files."""
    jobs: list[tuple[str, str, Future]] = []
    for arms in ([n for n in runners if n in ("A", "B")], [n for n in runners if n not in ("A", "B")]):
        for piece in pieces:
            f = piece.file
            for name in arms:
                args = files_by_arm[name].get(f)
                if args is not None:
                    jobs.append((name, f, pool.submit(_progress_wrap, runners[name], f, args, say, piece)))
    return jobs


def finished(
    jobs: list[tuple[str, str, Future]], arms: Iterable[str], stop: threading.Event
) -> list[tuple[str, str, FileRun]]:
    """Wait for the jobs of `arms`: (arm name, file, run), in job order."""
    names = set(arms)
    mine = [(name, f, fut) for name, f, fut in jobs if name in names]
    wait_all([fut for _, _, fut in mine], stop)
    return [(name, f, fut.result()) for name, f, fut in mine]


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
