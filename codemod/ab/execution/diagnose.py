"""`decouple ab --diagnose`: run the experiments that confirm or refute each suspected cause.

Design: after the comparison, `codemod.ab.comparison.causes.analyse` matches every group of identical
failures against the cause table. Causes confirmed by a probe fact are judged at once.
For causes confirmed by a diagnostic arm, one more A/B run (the runner's own `run_ab`,
nothing else of it) reruns only the failing tests of those groups, with one diagnostic
arm per distinct experiment (`DiagSpec`: its variables, on A for failures in both arms,
on B for failures in B only). The diagnostic arms and their summaries are added to the
result; the analysis then reads them like any user `--diag` arm. Causes confirmed by an
import check run one `find_spec` per module under the target interpreter.

Bounded: at most MAX_EXPERIMENTS diagnostic arms, MAX_TESTS_PER_GROUP tests per group,
every test under the run's per-test timeout and every file under `budget` seconds.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Callable

from codemod.ab.arms.options import DiagSpec, RunOptions
from codemod.ab.comparison import causes as _causes
from codemod.ab.result.model import ABResult, BaseArm, CauseStatus, ExperimentKind
from transforms.core.words import plural

MAX_EXPERIMENTS = 3
MAX_TESTS_PER_GROUP = 20
DEFAULT_BUDGET = 600.0


def _import_checks(python: str, modules: list[str], env: dict | None = None) -> dict[str, bool]:
    """module -> importable in the target interpreter (find_spec, nothing imported)."""
    out: dict[str, bool] = {}
    for module in modules:
        code = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)"
        try:
            proc = subprocess.run(
                [python, "-c", code, module], capture_output=True, timeout=60, env=env, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if proc.returncode in (0, 1):
            out[module] = proc.returncode == 0
    return out


def plan(result: ABResult) -> list[tuple[_causes.Experiment, BaseArm, list[str]]]:
    """(experiment, base arm, node ids) for every diagnostic arm still to run, bounded."""
    wanted: dict[tuple[str, BaseArm], list[str]] = {}
    experiments: dict[tuple[str, BaseArm], tuple[_causes.Experiment, BaseArm]] = {}
    for f in _causes.analyse(result):
        if f.status != CauseStatus.SUSPECTED or f.experiment != ExperimentKind.DIAG:
            continue
        assert f.cause is not None and f.based_on  # a diag experiment names its cause and arm
        exp = _causes.BY_ID[f.cause].experiment
        key = (exp.name, f.based_on)
        experiments[key] = (exp, f.based_on)
        ids = wanted.setdefault(key, [])
        ids.extend(n for n in f.nodeids[:MAX_TESTS_PER_GROUP] if n not in ids)
    keys = list(wanted)[:MAX_EXPERIMENTS]
    return [(experiments[k][0], experiments[k][1], wanted[k]) for k in keys]


def diagnose(
    result: ABResult,
    opts: RunOptions,
    run_ab: Callable[[RunOptions], ABResult],
    budget: float = DEFAULT_BUDGET,
    say: Callable[[str], None] = lambda _m: None,
) -> ABResult:
    """Run the confirming experiments for `result` (produced with `opts`) and record
    the findings in `result.causes`. `run_ab` is the runner's (`codemod.ab.execution.run.run_ab`)."""
    todo = plan(result)
    if todo:
        specs: list[DiagSpec] = []
        paths: list[str] = []
        taken = {a.name for a in result.arms}
        for exp, base, nodeids in todo:
            name = f"diagnose-{exp.name}" + ("" if base == "A" else "-b")
            while name in taken:
                name += "x"
            taken.add(name)
            specs.append(DiagSpec(name=name, based_on=base, variables=dict(exp.variables)))
            paths.extend(n for n in nodeids if n not in paths)
        say(
            f"diagnose: rerunning {plural(len(paths), 'failing test')} with {plural(len(specs), 'diagnostic arm')}: "
            + ", ".join(
                f"{s.name} ({' '.join(f'{k}={v}' for k, v in s.variables.items())} on {s.based_on})" for s in specs
            )
        )
        second = run_ab(_second_run(opts, paths, specs, budget))
        for spec in specs:
            summary = next((d for d in second.diagnostics if d.name == spec.name), None)
            arm = second.arm(spec.name)
            if summary is None or arm is None:
                continue
            result.diagnostics.append(summary)
            result.arms.append(arm)
        # what the first run already said is not said twice
        new = [w for w in second.warnings if w not in result.warnings]
        result.warnings.extend(dataclasses.replace(w, diagnose=True) for w in new)
    modules = sorted(
        {
            f.evidence.get("module", "").split(".")[0]
            for f in _causes.analyse(result)
            if f.experiment == ExperimentKind.IMPORT and f.evidence.get("module")
        }
    )
    imports = _import_checks(result.python or opts.python, modules) if modules else {}
    result.causes = _causes.analyse(result, imports)
    return result


def _second_run(opts: RunOptions, paths: list[str], specs: list[DiagSpec], budget: float) -> RunOptions:
    """The options of the diagnosis run: the same arms and environment, only `paths`
    (node ids, relative to the repository top or the roots), the diagnostic arms, no
    confirmation reruns, every file bounded by `budget` seconds."""
    second = dataclasses.replace(
        opts,
        paths=list(paths),
        diags=list(specs),
        confirm=0,
        shard=None,
        label_filter=False,
        test_plan=False,
        file_timeout=min(x for x in (opts.file_timeout or budget, budget) if x),
    )
    cwd = opts.cwd or os.getcwd()
    if opts.base:
        return dataclasses.replace(second, cwd=_git_top(cwd))
    assert opts.a_root and opts.b_root  # check_options: --base or both roots
    a_root, b_root = (os.path.abspath(os.path.join(cwd, root)) for root in (opts.a_root, opts.b_root))
    return dataclasses.replace(second, a_root=a_root, b_root=b_root)


def _git_top(cwd: str) -> str:
    """Node ids are relative to the repository top: the diagnosis run starts there."""
    proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else cwd
