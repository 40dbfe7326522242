"""`repro.sh`: the A/B run's pytest commands, one per arm and file, as the runner ran them;
and the reports' reproduction section, which refers to it.

Written next to the reports, which refer to it instead of repeating the commands.
It names the git ref (not a temporary root): an arm from `git:REF` is rebuilt with
`git archive REF -- <the paths the run used> | tar -x` into a fresh directory that the
script removes again; the work tree and `dir:` arms run where they are. Each test
file runs in its own pytest process, with the environment the runner gave the arm
(its unset and fixed variables, the arm's own variables and arguments); `PYTHON`
overrides the interpreter.
"""

from __future__ import annotations

import shlex

from codemod.ab.model import PYTEST_ARGS, REPRO_VARS, ABResult, ArmResult

from .ab_background import arm_description
from .ab_fmt import Fmt

__all__ = ["REPRO_SCRIPT", "render", "files_of", "reproduction_intro", "reproduction_parts"]

# The script's name: the reports refer to it, and it is written next to them.
REPRO_SCRIPT = "repro.sh"


def files_of(result: ABResult, arm: ArmResult) -> dict[str, list[str]]:
    """Test file -> the pytest arguments that select it, as the runner passed them: the
    file, the node ids asked for in it, or, for an arm that ran only some tests of a file
    (a `--diagnose` arm reruns only the failing ones), those tests."""
    files = sorted({n.split("::")[0] for n in arm.outcomes} | set(arm.collection_errors) | set(arm.collection_skips))
    selectors = [p for p in result.paths if "::" in p]
    others = [a for a in result.arms if a.name in ("A", "B") and a is not arm]
    out = {}
    for f in files:
        chosen = [p for p in selectors if p.split("::")[0] == f]
        if not chosen and f not in arm.collection_errors:
            mine = sorted(n for n in arm.outcomes if n.split("::")[0] == f)
            if any(len([n for n in o.outcomes if n.split("::")[0] == f]) > len(mine) for o in others):
                chosen = mine
        out[f] = chosen or [f]
    return out


def _archive_paths(arm: ArmResult) -> list[str] | None:
    """The paths `git archive` extracted for a git arm, read from the runner's command
    (None when the command does not say; [] = the whole commit)."""
    cmd = arm.command or ""
    start = cmd.find(" archive ")
    end = cmd.find(" | tar", start)
    if start == -1 or end == -1:
        return None
    try:
        words = shlex.split(cmd[start + len(" archive ") : end])
    except ValueError:
        return None
    return words[words.index("--") + 1 :] if "--" in words else []


def _diag_base(result: ABResult, arm: ArmResult) -> str | None:
    d = next((d for d in result.diagnostics if d.name == arm.name), None)
    return d.based_on if d else None


def _env_words(result: ABResult, arm: ArmResult) -> list[str]:
    words = [f"-u {shlex.quote(v)}" for v in result.env_unset if v not in REPRO_VARS]
    fixed = {k: v for k, v in result.env_set.items() if not v.startswith("<")}  # "<per-arm ...>" placeholders
    fixed.update(REPRO_VARS)
    fixed.update(arm.env_added)
    words += [f"{k}={shlex.quote(v)}" for k, v in fixed.items()]
    return words


def _function(result: ABResult, arm: ArmResult) -> list[str]:
    name = arm.name
    source = arm.source or ""
    base = _diag_base(result, arm)
    lines = [f"arm_{_ident(name)}() {{"]
    if source.startswith("git:"):
        ref = source[4:]
        paths = _archive_paths(arm)
        spec = "" if not paths else " -- " + " ".join(shlex.quote(p) for p in paths)
        lines += [
            f"    # arm {name}: the files as committed at {ref}" + (f" (diagnostic, on arm {base})" if base else ""),
            "    local dir; dir=$(mktemp -d) || return 2",
            f'    git -C "$TOP" archive {shlex.quote(ref)}{spec} | tar -x -C "$dir" || {{ rm -rf "$dir"; return 2; }}',
            '    cd "$dir" || return 2',
        ]
        cleanup = '    cd "$TOP"; rm -rf "$dir"'
    elif source == "worktree":
        lines += [
            f"    # arm {name}: the work tree, uncommitted changes included"
            + (f" (diagnostic, on arm {base})" if base else ""),
            '    cd "$TOP" || return 2',
        ]
        cleanup = ""
    elif source.startswith("dir:"):
        lines += [
            f"    # arm {name}: directory {source[4:]}" + (f" (diagnostic, on arm {base})" if base else ""),
            f"    cd {shlex.quote(source[4:])} || return 2",
        ]
        cleanup = ""
    else:
        return [f"arm_{_ident(name)}() {{", f'    echo "arm {name}: unknown source {source}" >&2; return 2', "}"]
    env = " ".join(_env_words(result, arm))
    extra = "".join(" " + shlex.quote(a) for a in arm.extra_args)
    lines.append("    local status=0")
    for _f, args in files_of(result, arm).items():
        selected = " ".join(shlex.quote(a) for a in args)
        lines.append(f'    env {env} "$PYTHON" -m pytest {" ".join(PYTEST_ARGS)} {selected}{extra} || status=1')
    if cleanup:
        lines.append(cleanup)
    lines += ["    return $status", "}"]
    return lines


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def render(result: ABResult) -> str:
    """The script text (bash)."""
    arms = [a for a in result.arms if a.ran]
    names = " ".join(a.name for a in arms)
    out = [
        "#!/usr/bin/env bash",
        f"# Reproduces the A/B run started {result.started or '?'} (decouple {result.tool_version or '?'}, "
        f"verdict {result.verdict}).",
        "# Each arm's pytest commands as the runner ran them: one process per test file, the same",
        "# environment. Run it from anywhere inside the repository (or the compared directories):",
        "#   bash repro.sh            # every arm: " + names,
        "#   bash repro.sh A          # one arm",
        "#   PYTHON=/path/to/python bash repro.sh B",
        "set -u",
        f"PYTHON=${{PYTHON:-{shlex.quote(result.python or 'python')}}}",
        "TOP=$(git rev-parse --show-toplevel 2>/dev/null || pwd)",
        "",
    ]
    for arm in arms:
        out += _function(result, arm) + [""]
    out += [
        f'[ "$#" -gt 0 ] || set -- {names}',
        "status=0",
        'for arm in "$@"; do',
        '    case "$arm" in',
    ]
    out += [f"        {shlex.quote(a.name)}) arm_{_ident(a.name)} || status=1 ;;" for a in arms]
    out += [
        '        *) echo "unknown arm: $arm (arms: ' + names + ')" >&2; exit 2 ;;',
        "    esac",
        "done",
        "exit $status",
    ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# the reports' reproduction section, which refers to the script


def reproduction_intro(result: ABResult, f: Fmt) -> str:
    return f.say("repro.intro", script=f.code(REPRO_SCRIPT), python=f.code("PYTHON=/path/to/python"))


def reproduction_parts(result: ABResult, f: Fmt):
    """Per arm: the arm, its heading, the sentences that describe it, a warning when it did
    not run, and the command that reproduces it (`bash repro.sh NAME`), in `f`'s markup.
    Shared by the Markdown and HTML views."""
    diag_base = {d.name: d.based_on for d in result.diagnostics}
    for arm in result.arms:
        label = arm_description(arm, result, f)
        if arm.name in diag_base:
            label = f.say("paren", a=label, b=f.say("repro.diag", base=f.code(diag_base[arm.name])))
        notes = []
        if arm.env_added:
            notes.append(f.say("repro.env", pairs=f.pairs(arm.env_added)))
        if arm.extra_args:
            notes.append(f.say("repro.args", args=f.code(" ".join(arm.extra_args))))
        warning = None if arm.ran else f.say("repro.not_run", error=f.code(arm.error or "?"))
        command = f"bash {REPRO_SCRIPT} {arm.name}" if arm.ran else ""
        yield arm, f.say("repro.arm", arm=f.text(arm.name), label=label), notes, warning, command
