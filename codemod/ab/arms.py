"""An arm's spec and its sanitised environment: what each arm runs with.

Every arm (A, B, each diagnostic arm) gets the same environment: the variables
in ``UNSET_VARS`` removed, ``FIXED_VARS`` set, its own bytecode prefix and temp
dir (``PER_ARM_VARS``), the capture plugin on ``PYTHONPATH``, and the pytest
arguments ``PYTEST_ARGS``.  Where an arm's root comes from is ``materialise``;
which files it runs is ``testfiles``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from codemod.ab.notices import Notice

# Variables unset in every arm (and recorded in ABResult.env_unset).
UNSET_VARS = (
    "CI",
    "PYTORCH_RETRY_TEST_CASES",
    "PYTORCH_OVERRIDE_FLAKY_SIGNAL",
    "PYTORCH_TEST_RERUN_DISABLED_TESTS",
    "DISABLED_TESTS_FILE",
    "SLOW_TESTS_FILE",
    "PYTEST_ADDOPTS",  # may carry -x, --lf, --reruns, -p randomly ...
    # Bytecode goes to the per-arm PYTHONPYCACHEPREFIX (in the decouple cache,
    # see pycache_root; never the user's tree).  With PYTHONDONTWRITEBYTECODE=1 on top, every
    # process would recompile everything it imports (import torch: 3.4 s ->
    # 7.7 s measured), because a prefix hides the __pycache__ directories.
    "PYTHONDONTWRITEBYTECODE",
)


def pycache_root() -> Path | None:
    """Where the arms keep bytecode across runs, one prefix per arm name.

    A PYTHONPYCACHEPREFIX hides the __pycache__ folders of site-packages, so a fresh
    prefix per run recompiles pytest and torch in every arm (seconds each). Keeping
    one prefix per arm name (A, B, each diagnostic) in the user's cache keeps the arms
    apart while installed code compiles once; the entries for a run's temporary roots
    are deleted when the run ends (`forget_run_pycache`). None when no writable cache.
    """
    base = os.environ.get("DECOUPLE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "decouple"
    )
    root = Path(base) / "pycache"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return root if os.access(root, os.W_OK) else None


def forget_run_pycache(prefix: Path, work: Path) -> None:
    """Delete the bytecode a run left under `prefix` for files below its temp dir `work`."""
    shutil.rmtree(prefix / str(work.resolve()).lstrip(os.sep), ignore_errors=True)


# Variables set in every arm (recorded in ABResult.env_set; PYTHONPYCACHEPREFIX
# is per arm, see pycache_root).
FIXED_VARS = {
    "PYTORCH_PRINT_REPRO_ON_FAILURE": "0",
    "PYTHONHASHSEED": "0",
}
# --maxfail=0 comes after the ini ``addopts`` on the command line and so
# overrides ``-x`` / ``--exitfirst`` / ``--maxfail=N`` there (same dest, last
# wins), without dropping the legitimate options ``-o addopts=`` would drop
# (``--import-mode``, ``-p plugin``, ``-m`` expressions...).
PYTEST_ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly", "--continue-on-collection-errors", "--maxfail=0")


class ArmError(Exception):
    """An arm cannot be prepared (bad ref, missing path...)."""


@dataclass
class ArmSpec:
    name: str
    label: str
    source: str
    root: Path  # temporary root where the arm runs
    workdir: Path  # per-arm scratch (events, logs, pycache)
    env: dict[str, str] = field(default_factory=dict)  # complete child environment
    env_added: dict[str, str] = field(default_factory=dict)  # --env + --diag variables
    extra_args: list[str] = field(default_factory=list)
    based_on: str | None = None  # for diagnostic arms
    materialise_note: str = ""  # how to rebuild the root by hand


# The variables whose value is the arm's own (the rest of an arm's environment
# is the same in every arm, apart from a diagnostic arm's variables).
TEMP_VARS = ("TMPDIR", "TEMP", "TMP")
PER_ARM_VARS = ("PYTHONPYCACHEPREFIX", *TEMP_VARS)


def sanitised_env(
    base: dict[str, str], added: dict[str, str], pycache: Path, plugin_dir: Path, tmpdir: Path | None = None
) -> dict[str, str]:
    env = {k: v for k, v in base.items() if k not in UNSET_VARS and not k.startswith("DECOUPLE_AB_")}
    env.update(FIXED_VARS)
    env.update(added)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    if tmpdir is not None:
        # per-arm temp dir (inside the arm's temp root): the arms' temp files
        # cannot collide, and it goes away with the run
        for k in TEMP_VARS:
            env[k] = str(tmpdir)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(plugin_dir) + (os.pathsep + old if old else "")
    return env


def pythonpath_warnings(base: dict[str, str], user_roots: Iterable[Path]) -> list[Notice]:
    out = []
    entries = [e for e in base.get("PYTHONPATH", "").split(os.pathsep) if e]
    for root in user_roots:
        r = str(root.resolve())
        for e in entries:
            er = os.path.realpath(e)
            if er == r or er.startswith(r + os.sep):
                out.append(Notice("pythonpath-into-tree", {"entry": e, "root": str(root)}))
    return out


def safe_arg(arg: str) -> str:
    """A path or node id as a pytest argument: `-k_test.py` would be read as an option."""
    return "./" + arg if arg.startswith("-") else arg
