"""Preparing the arms: a spec per arm (workdir, environment) and its materialised root.

Arms A and B are materialised from their sources; a diagnostic arm is a copy of
its base arm's root with its own variables.  An arm that cannot be materialised
keeps an empty root and its error (it is reported as not run); a selected path
must exist in at least one of A and B.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from codemod.ab import arms as _arms
from codemod.ab import materialise as _mat
from codemod.ab.notices import Notice
from codemod.ab.options import RunOptions
from codemod.ab.procs import UsageError
from codemod.ab.repro import git_archive_note
from codemod.ab.sources import Sources


def thread_vars(base_env: dict[str, str], user_env: dict[str, str], jobs: int) -> dict[str, str]:
    """Intra-op thread count for every arm, so that `jobs` parallel test
    processes do not each start one thread per core (torch reads
    OMP_NUM_THREADS).  Nothing when one process runs at a time or the user
    chose a count (in the environment or with --env)."""
    cores = os.cpu_count() or 1
    jobs = jobs or cores
    if jobs <= 1 or "OMP_NUM_THREADS" in base_env or "OMP_NUM_THREADS" in user_env:
        return {}
    return {"OMP_NUM_THREADS": str(max(1, cores // jobs))}


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def prepare_arms(
    opts: RunOptions,
    sources: Sources,
    work: Path,
    support: Path,
    base_env: dict[str, str],
    arm_env: dict[str, str],
    warnings: list[Notice],
    say,
) -> tuple[dict[str, _arms.ArmSpec], dict[str, str]]:
    """The arms' specs, in arm order (A, B, the diagnostic arms), and the errors of
    those that could not be materialised (arm name -> message)."""
    specs: dict[str, _arms.ArmSpec] = {}
    sel = sources.sel

    cache = _arms.pycache_root()

    def make_spec(name: str, label: str, source: str, added: dict[str, str], based_on=None) -> _arms.ArmSpec:
        wd = work / "arms" / _safe_name(name)
        (wd / "events").mkdir(parents=True)
        (wd / "logs").mkdir()
        (wd / "tmp").mkdir()
        pycache = cache / _safe_name(name) if cache is not None else wd / "pycache"
        pycache.mkdir(parents=True, exist_ok=True)
        spec = _arms.ArmSpec(
            name=name,
            label=label,
            source=source,
            root=wd / "root",
            workdir=wd,
            env_added=dict(added),
            based_on=based_on,
        )
        spec.env = _arms.sanitised_env(base_env, added, pycache, support, wd / "tmp")
        spec.env["DECOUPLE_AB_FSYNC"] = opts.fsync
        return spec

    arm_errors: dict[str, str] = {}
    for name in ("A", "B"):
        src = sources.arms[name]
        spec = make_spec(name, src.label, src.source, dict(arm_env))
        specs[name] = spec
        t = time.monotonic()
        try:
            if src.kind == "git":
                used = _mat.materialise_git(src.root, sources.commit, sel, spec.root)
                spec.materialise_note = git_archive_note(src.root, sources.commit, used)
                if _has_export_attributes(spec.root):
                    warnings.append(Notice("export-attributes", arm=name))
            else:
                _mat.materialise_dir(src.root, sel, spec.root)
        except (_arms.ArmError, OSError) as err:
            arm_errors[name] = str(err)
            spec.root.mkdir(parents=True, exist_ok=True)
        say(f"arm {name}: {src.label} materialised in {time.monotonic() - t:.2f}s")
    for d in opts.diags:
        base = specs[d.based_on]
        spec = make_spec(
            d.name, f"diagnostic {d.name} on {d.based_on}", base.source, {**arm_env, **d.variables}, based_on=d.based_on
        )
        if d.based_on in arm_errors:
            arm_errors[d.name] = arm_errors[d.based_on]
            spec.root.mkdir(parents=True, exist_ok=True)
        else:
            _mat.clone_root(base.root, spec.root)
        spec.materialise_note = base.materialise_note
        specs[d.name] = spec

    # a selected path must exist in at least one arm (a path deleted in B or
    # new in B gives missing-in-b / added-in-b rows)
    for p in sel.plain_paths:
        if p and not any((specs[n].root / p).exists() for n in ("A", "B") if n not in arm_errors):
            raise UsageError(f"{p} exists in neither arm")
    return specs, arm_errors


def _has_export_attributes(root: Path) -> bool:
    for dirpath, _dirnames, filenames in os.walk(root):
        if ".gitattributes" in filenames:
            try:
                text = Path(dirpath, ".gitattributes").read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if "export-ignore" in text or "export-subst" in text:
                return True
    return False
