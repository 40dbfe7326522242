"""`repro.sh`: the A/B run's pytest commands, one per arm and file, as the runner ran them;
and the reports' reproduction section, which refers to it.

Written next to the reports, which refer to it instead of repeating the commands.
It names commits, never refs (a ref moves) nor a temporary root: an arm whose files were a
commit (a `git:REF` arm, or the work tree when it was clean) is rebuilt with
`git archive COMMIT -- <the paths the run used> | tar -x` into a fresh directory that the
script removes again; a work tree with uncommitted changes and `dir:` arms run where they
are. Every value from the result is quoted or, in a comment, escaped: a result merged from
CI shards comes from machines that ran the PR's code. Each test
file runs in its own pytest process, with the environment the runner gave the arm
(its unset and fixed variables, the arm's own variables and arguments); `PYTHON`
overrides the interpreter.
"""

from __future__ import annotations

import re
import shlex

from codemod.ab.result.model import OBJECT_ID, PYTEST_ARGS, REPRO_VARS, ABResult, ArmResult, safe_arg
from codemod.report.ab.background import arm_description
from codemod.report.ab.fmt import Fmt

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
    words += [shlex.quote(f"{k}={v}") for k, v in fixed.items()]
    return words


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")


def _comment(text: str) -> str:
    """A comment line: no newline (nor any control character) from the result ends it."""
    return "# " + _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _say(text: str) -> str:
    """A command that prints `text` on stderr, whatever it holds."""
    return f"printf '%s\\n' {shlex.quote(text)} >&2"


def _commit_of(arm: ArmResult) -> str:
    """The commit the arm's files are: recorded, or (a result from before it was) read from
    the runner's `git archive` command; "" when not known."""
    if arm.commit:
        return arm.commit
    words = (arm.command or "").split(" archive ", 1)[1:]
    sha = words[0].split(" ", 1)[0] if words else ""
    return sha if OBJECT_ID.fullmatch(sha) and sha else ""


def _root_lines(result: ABResult, arm: ArmResult) -> tuple[list[str], str] | None:
    """The lines that make the arm's root the current folder, and the cleanup; None when
    it cannot be rebuilt."""
    source = arm.source or ""
    base = _diag_base(result, arm)
    diag = f" (diagnostic, on arm {base})" if base else ""
    commit = _commit_of(arm)
    if commit and (source.startswith("git:") or source == "worktree"):
        paths = _archive_paths(arm)
        spec = "" if not paths else " -- " + " ".join(shlex.quote(p) for p in paths)
        what = "the files as committed" if source.startswith("git:") else "the work tree, which was the commit"
        lines = [
            "    "
            + _comment(f"arm {arm.name}: {what} {commit}" + (f" ({source})" if source != "worktree" else "") + diag),
            "    local dir; dir=$(mktemp -d) || return 2",
            f'    git -C "$TOP" --literal-pathspecs archive {commit}{spec} | tar -x -C "$dir"'
            ' || { rm -rf "$dir"; return 2; }',
            '    cd "$dir" || return 2',
        ]
        return lines, '    cd "$TOP"; rm -rf "$dir"'
    if source == "worktree":
        note = "the work tree as it is now (it had uncommitted changes, which the result does not record)"
        return ["    " + _comment(f"arm {arm.name}: {note}" + diag), '    cd "$TOP" || return 2'], ""
    if source.startswith("dir:"):
        return [
            "    " + _comment(f"arm {arm.name}: directory {source[4:]}" + diag),
            f"    cd {shlex.quote(source[4:])} || return 2",
        ], ""
    return None


def _function(result: ABResult, arm: ArmResult, ident: str) -> list[str]:
    found = _root_lines(result, arm)
    if found is None:
        why = (
            "the result does not record the commit it was read from"
            if (arm.source or "").startswith("git:")
            else f"unknown source {arm.source}"
        )
        return [f"{ident}() {{", "    " + _say(f"arm {arm.name}: {why}") + "; return 2", "}"]
    lines, cleanup = found
    lines = [f"{ident}() {{", *lines]
    env = " ".join(_env_words(result, arm))
    extra = "".join(" " + shlex.quote(a) for a in arm.extra_args)
    lines.append("    local status=0")
    files = files_of(result, arm)
    if not files:
        lines.append("    " + _say(f"arm {arm.name}: no test file ran in this arm"))
    for _f, args in files.items():
        selected = " ".join(shlex.quote(safe_arg(a)) for a in args)
        lines.append(f'    env {env} "$PYTHON" -m pytest {" ".join(PYTEST_ARGS)} {selected}{extra} || status=1')
    if cleanup:
        lines.append(cleanup)
    lines += ["    return $status", "}"]
    return lines


def _idents(arms: list[ArmResult]) -> list[str]:
    """One shell function name per arm, distinct even when two names differ only in
    characters a function name cannot hold."""
    out: list[str] = []
    for arm in arms:
        base = "arm_" + "".join(c if c.isascii() and c.isalnum() else "_" for c in arm.name)
        name, n = base, 2
        while name in out:
            name, n = f"{base}_{n}", n + 1
        out.append(name)
    return out


def render(result: ABResult) -> str:
    """The script text (bash). Every value from the result is quoted where it is a word
    and escaped where it is in a comment: a result may come from another machine."""
    arms = [a for a in result.arms if a.ran]
    idents = _idents(arms)
    names = " ".join(a.name for a in arms)
    out = [
        "#!/usr/bin/env bash",
        _comment(
            f"Reproduces the A/B run started {result.started or '?'} (decouple {result.tool_version or '?'}, "
            f"verdict {result.verdict})."
        ),
        "# Each arm's pytest commands as the runner ran them: one process per test file, the same",
        "# environment; an arm from a commit is rebuilt from that commit. Run it from anywhere inside",
        "# the repository (or the compared directories):",
        _comment("  bash repro.sh            # every arm: " + names),
        "#   bash repro.sh A          # one arm",
        "#   PYTHON=/path/to/python bash repro.sh B",
        "set -u",
        f'[ -n "${{PYTHON:-}}" ] || PYTHON={shlex.quote(result.python or "python")}',
        "TOP=$(git rev-parse --show-toplevel 2>/dev/null || pwd)",
        "",
    ]
    for arm, ident in zip(arms, idents, strict=True):
        out += _function(result, arm, ident) + [""]
    out += [
        '[ "$#" -gt 0 ] || set -- ' + " ".join(shlex.quote(a.name) for a in arms),
        "status=0",
        'for arm in "$@"; do',
        '    case "$arm" in',
    ]
    out += [f"        {shlex.quote(a.name)}) {ident} || status=1 ;;" for a, ident in zip(arms, idents, strict=True)]
    out += [
        f"        *) printf 'unknown arm: %s (arms: %s)\\n' \"$arm\" {shlex.quote(names)} >&2; exit 2 ;;",
        "    esac",
        "done",
        "exit $status",
    ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# the reports' reproduction section, which refers to the script


def reproduction_intro(result: ABResult, f: Fmt) -> str:
    return f.say(
        "repro.intro",
        script=f.code(REPRO_SCRIPT),
        fixed=f.pairs(REPRO_VARS),
        mktemp=f.code("mktemp -d"),
        python=f.code("PYTHON=/path/to/python"),
    )


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
