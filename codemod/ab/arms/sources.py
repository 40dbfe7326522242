"""The arms: where A and B come from, each arm's spec and sanitised environment, its
prepared root, and the command that reproduces it.

With ``--base REF`` arm A is the commit (read from git objects) and arm B the work
tree, both of the repository enclosing the cwd; with ``--a-root``/``--b-root`` they
are two directories, and PATHS are relative to both (`resolve_sources`; bad input is a
``UsageError``).  A diagnostic arm is a copy of its base arm's root with its own
variables.  An arm that cannot be materialised keeps an empty root and its error (it
is reported as not run); a selected path must exist in at least one of A and B.

Every arm (A, B, each diagnostic arm) gets the same environment: the variables in
``UNSET_VARS`` removed and those `isolation` keeps from tests (git's, the tool's),
``FIXED_VARS`` set, git's ceiling at the run's root, its own bytecode prefix and temp dir
inside the run's root (``PER_ARM_VARS``), the capture plugin (and the start-up file that
reads the environment's own bytecode) on ``PYTHONPATH``, and the pytest arguments
``PYTEST_ARGS``.  The reproduction command repeats that environment as an ``env``
prefix, plus ``REPRO_VARS``; a git arm's root is rebuilt with ``git archive`` of the
resolved commit into a fresh directory (``git_archive_note``), a work-tree or
directory arm runs where it is.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from codemod.ab.arms import isolation, materialise, trees
from codemod.ab.arms.options import RunOptions, UsageError
from codemod.ab.result.model import PYTEST_ARGS, REPRO_VARS, BaseArm, safe_arg
from codemod.ab.result.notices import Notice
from transforms.core.strenum import StrEnum

# ---------------------------------------------------------------------------
# each arm's environment

# Variables unset in every arm (and recorded in ABResult.env_unset).
UNSET_VARS = (
    "CI",
    "PYTORCH_RETRY_TEST_CASES",
    "PYTORCH_OVERRIDE_FLAKY_SIGNAL",
    "PYTORCH_TEST_RERUN_DISABLED_TESTS",
    "DISABLED_TESTS_FILE",
    "SLOW_TESTS_FILE",
    "PYTEST_ADDOPTS",  # may carry -x, --lf, --reruns, -p randomly ...
    # Bytecode goes to the arm's own PYTHONPYCACHEPREFIX, private to the run (its work dir,
    # deleted with it), where the processes of the arm reuse it; the environment's own
    # bytecode is read where that prefix has none (codemod/target/bytecode.py).
    "PYTHONDONTWRITEBYTECODE",
)


# Variables set in every arm (recorded in ABResult.env_set; PYTHONPYCACHEPREFIX
# is per arm, see prepare_arms).
FIXED_VARS = {
    "PYTORCH_PRINT_REPRO_ON_FAILURE": "0",
    "PYTHONHASHSEED": "0",
}


@dataclass(kw_only=True)
class ArmSpec:
    name: str
    label: str
    source: str
    root: Path  # temporary root where the arm runs
    workdir: Path  # per-arm scratch (events, logs, pycache)
    env: dict[str, str] = field(default_factory=dict)  # complete child environment
    env_added: dict[str, str] = field(default_factory=dict)  # --env + --diag variables
    extra_args: list[str] = field(default_factory=list)
    based_on: BaseArm | None = None  # for diagnostic arms
    materialise_note: str = ""  # how to rebuild the root by hand
    commit: str = ""  # the commit the root's files are ("" = not a commit): ArmResult.commit
    tree: str = ""  # that commit's tree


# The variables whose value is the arm's own (the rest of an arm's environment
# is the same in every arm, apart from a diagnostic arm's variables).
TEMP_VARS = ("TMPDIR", "TEMP", "TMP")
# The folder a process runs in, as a shell would have set them after `cd ROOT`: inherited
# from the caller they would name the user's checkout, and a test writing to
# os.environ["PWD"] would write there.
CWD_VARS = ("PWD", "OLDPWD")
PER_ARM_VARS = ("PYTHONPYCACHEPREFIX", *TEMP_VARS, *CWD_VARS)


def sanitised_env(
    base: dict[str, str],
    added: dict[str, str],
    pycache: Path,
    plugin_dir: Path,
    tmpdir: Path | None = None,
    *,
    cwd: Path,
    run_root: Path | None = None,
) -> dict[str, str]:
    """The environment of a process run in `cwd` (an arm root): `PWD` and `OLDPWD` name
    `cwd` whatever the caller's (or `--env`) say; no variable that leads git to a repository
    or names the tool's state (`isolation`), and with `run_root` (the run's temporary root)
    git's search for a repository stops there."""
    env = {k: v for k, v in base.items() if k not in UNSET_VARS and not isolation.removed(k)}
    env.update(FIXED_VARS)
    if run_root is not None:
        env[isolation.CEILING_VAR] = isolation.ceiling(run_root)
    env.update(added)
    for k in CWD_VARS:
        env[k] = str(cwd)
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


# ---------------------------------------------------------------------------
# where the arms come from


class SourceKind(StrEnum):
    GIT = "git"  # a commit, read from git objects
    DIR = "dir"  # a work tree or directory, copied


@dataclass(kw_only=True)
class ArmSource:
    kind: SourceKind
    root: Path  # the repository or the directory
    label: str
    source: str  # as recorded in the result (git:REF, worktree, dir:PATH)


@dataclass(kw_only=True)
class Sources:
    arms: dict[str, ArmSource]  # "A" and "B"
    sel: trees.Selection
    commit: str  # the resolved commit of arm A ("" for two directories)
    user_roots: list[Path]  # the user's trees (never written)


def resolve_sources(opts: RunOptions, cwd: Path) -> Sources:
    """Arms A and B of a checked `opts` (`options.check_options`), the selection made
    relative to their roots."""
    try:
        if opts.base:
            return _git_sources(opts.base, opts.paths, cwd)
        assert opts.a_root and opts.b_root  # check_options: --base or both roots
        return _dir_sources(Path(opts.a_root).resolve(), Path(opts.b_root).resolve(), opts.paths)
    except trees.ArmError as err:
        raise UsageError(str(err)) from None


def _git_sources(base: str, paths: list[str], cwd: Path) -> Sources:
    repo = trees.git_toplevel(cwd)
    commit = trees.resolve_commit(repo, base)
    a = ArmSource(kind=SourceKind.GIT, root=repo, label=f"base {base} ({commit[:12]})", source=f"git:{base}")
    b = ArmSource(kind=SourceKind.DIR, root=repo, label="work tree", source="worktree")
    sel = trees.make_selection(paths, cwd, repo)
    return Sources(arms={"A": a, "B": b}, sel=sel, commit=commit, user_roots=[repo])


def _dir_sources(a_root: Path, b_root: Path, paths: list[str]) -> Sources:
    for root, flag in ((a_root, "--a-root"), (b_root, "--b-root")):
        if not root.is_dir():
            raise UsageError(f"{flag} {root} is not a directory")
    sel = trees.Selection(paths=[p.strip("/") for p in paths], common=trees.common_dir(paths))
    for p in sel.paths:
        if os.path.isabs(p.split("::")[0]) or ".." in Path(p.split("::")[0]).parts:
            raise UsageError(f"with --a-root/--b-root, PATHS must be relative to the roots: {p}")
    arms = {
        name: ArmSource(kind=SourceKind.DIR, root=root, label=f"directory {root}", source=f"dir:{root}")
        for name, root in (("A", a_root), ("B", b_root))
    }
    return Sources(arms=arms, sel=sel, commit="", user_roots=[a_root, b_root])


# ---------------------------------------------------------------------------
# the prepared arms


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
    say: Callable[[str], None],
) -> tuple[dict[str, ArmSpec], dict[str, str]]:
    """The arms' specs, in arm order (A, B, the diagnostic arms), and the errors of
    those that could not be materialised (arm name -> message)."""
    specs: dict[str, ArmSpec] = {}
    sel = sources.sel

    def make_spec(
        name: str, label: str, source: str, added: dict[str, str], based_on: BaseArm | None = None
    ) -> ArmSpec:
        wd = work / "arms" / _safe_name(name)
        (wd / "events").mkdir(parents=True)
        (wd / "logs").mkdir()
        (wd / "tmp").mkdir()
        pycache = wd / "pycache"  # private to the arm and the run: nothing a test writes there outlives it
        pycache.mkdir()
        spec = ArmSpec(
            name=name,
            label=label,
            source=source,
            root=wd / "root",
            workdir=wd,
            env_added=dict(added),
            based_on=based_on,
        )
        spec.env = sanitised_env(base_env, added, pycache, support, wd / "tmp", cwd=spec.root, run_root=work)
        spec.env["DECOUPLE_AB_FSYNC"] = str(opts.fsync)
        return spec

    arm_errors: dict[str, str] = {}
    for name in ("A", "B"):
        src = sources.arms[name]
        spec = make_spec(name, src.label, src.source, dict(arm_env))
        specs[name] = spec
        t = time.monotonic()
        try:
            if src.kind == SourceKind.GIT:
                used, fixes = materialise.materialise_git(src.root, sources.commit, sel, spec.root)
                _from_commit(spec, src.root, sources.commit, used)
                if _has_export_attributes(spec.root):
                    warnings.append(Notice("export-attributes", arm=name))
            else:
                # a directory named by --a-root/--b-root is in the work tree it lies in (a hook's
                # GIT_DIR names another); the work tree of --base is the one git found
                git_env = None if src.source == "worktree" else isolation.without_git_location(base_env)
                used, fixes = materialise.materialise_dir(src.root, sel, spec.root, git_env)
                head = clean_head(src.root, used) if src.source == "worktree" else None
                if head is not None:  # the work tree's files were exactly HEAD's
                    _from_commit(spec, src.root, head, present_at(src.root, head, used))
            for fix in fixes:
                code = "arm.symlink-copied" if fix.copied else "arm.symlink-left-out"
                warnings.append(Notice(code, {"path": fix.path, "target": fix.target}, arm=name))
        except materialise.TreeTooBig as err:
            raise UsageError(f"arm {name} ({src.label}): {err}") from None
        except (trees.ArmError, OSError) as err:
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
            materialise.clone_root(base.root, spec.root)
        spec.materialise_note, spec.commit, spec.tree = base.materialise_note, base.commit, base.tree
        specs[d.name] = spec

    # a selected path must exist in at least one arm (a path deleted in B or
    # new in B gives missing-in-b / added-in-b rows)
    for p in sel.plain_paths:
        if p and not any((specs[n].root / p).exists() for n in ("A", "B") if n not in arm_errors):
            raise UsageError(f"{p} exists in neither arm")
    return specs, arm_errors


# the commit an arm's files are


def tree_of(repo: Path, commit: str) -> str:
    return trees.run_git(["rev-parse", "--verify", "--quiet", f"{commit}^{{tree}}"], repo).stdout.strip()


def clean_head(repo: Path, paths: list[str]) -> str | None:
    """HEAD, when the work tree's `paths` (arm-relative, "" = everything) are exactly HEAD's:
    no staged, unstaged or untracked (not ignored) change among them; else None."""
    head = trees.run_git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], repo, check=False).stdout.strip()
    if not head:
        return None
    specs = [p or "." for p in paths]
    # --no-optional-locks: else status refreshes and rewrites the user's .git/index (taking index.lock)
    args = ["--literal-pathspecs", "--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all"]
    status = trees.run_git([*args, "--", *specs], repo, check=False)
    return head if status.returncode == 0 and not status.stdout.strip("\0") else None


def present_at(repo: Path, commit: str, paths: list[str]) -> list[str]:
    """The `paths` (files or folders) that `commit` has ("" = the whole commit)."""
    if "" in paths:
        return [""]
    listing = trees.run_git(["--literal-pathspecs", "ls-tree", "-z", "--name-only", commit, "--", *paths], repo).stdout
    there = set(listing.split("\0"))
    return [p for p in paths if p in there]


def _from_commit(spec: ArmSpec, repo: Path, commit: str, used: list[str]) -> None:
    """The arm's files are `commit`'s `used` paths: a reproduction rebuilds them from it."""
    spec.commit, spec.tree = commit, tree_of(repo, commit)
    spec.materialise_note = git_archive_note(repo, commit, used)


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


# ---------------------------------------------------------------------------
# the reproduction command


def git_archive_note(repo: Path, commit: str, used: list[str]) -> str:
    """The shell command that rebuilds a git arm's root in ``$D``: the resolved SHA (a
    branch may move), a fresh directory; the whole commit when the import root is the top."""
    paths = "" if "" in used else " --" + "".join(f" {shlex.quote(p)}" for p in used)
    git = f"git -C {shlex.quote(str(repo))} --literal-pathspecs"
    return f'D=$(mktemp -d) && {git} archive {commit}{paths} | tar -x -C "$D"'


def repro_command(
    spec: ArmSpec, python: str, args: list[str], prefix: str = "", cd: str | None = None, cd_raw: bool = False
) -> str:
    """`cd_raw`: `cd` is a shell expression (e.g. ``"$D"``), not a path to quote."""
    parts = []
    if prefix:
        parts.append(prefix)
    target = cd or str(spec.root)
    parts.append(f"cd {target if cd_raw else shlex.quote(target)}")
    env_bits = ["env"] + [f"-u {v}" for v in UNSET_VARS if v not in REPRO_VARS]
    env_bits += [f"{k}={shlex.quote(v)}" for k, v in {**FIXED_VARS, **REPRO_VARS}.items()]
    env_bits += [f"{k}={shlex.quote(v)}" for k, v in spec.env_added.items()]
    cmd = " ".join(
        env_bits
        + [shlex.quote(python), "-m", "pytest", *PYTEST_ARGS]
        + [shlex.quote(safe_arg(a)) for a in args]
        + [shlex.quote(a) for a in spec.extra_args]
    )
    parts.append(cmd)
    return " && ".join(parts)


def name_walked_dirs(specs: dict[str, ArmSpec], sel: trees.Selection, work: Path) -> None:
    """Tell every arm's capture plugin which selected paths are directories: pytest's walk of
    them leaves out what collect_ignore & co. name (the runner names files one by one).  One
    file for all arms, so the variable does not set their environments apart."""
    dirs = [p or "." for p in sel.paths if "::" not in p and any((s.root / p).is_dir() for s in specs.values())]
    if dirs:
        listed = work / "walked"
        listed.write_text("".join(d + "\n" for d in dirs), encoding="utf-8")
        for spec in specs.values():
            spec.env["DECOUPLE_AB_WALKED"] = str(listed)
