"""The background of an A/B run in the reports: where each arm's files come from, what
changed between the arms, and what the runner set and warned about."""

from __future__ import annotations

from codemod.ab.result.diff import DeviceNarrowing, InstantiationChange
from codemod.ab.result.model import ABResult
from codemod.report.ab.fmt import Fmt


def background_items(result: ABResult, f: Fmt) -> list[str]:
    a, b = result.arm("A"), result.arm("B")
    items = [
        f.say(
            "bg.intro",
            a=arm_description(a, result, f) if a else f.say("unknown"),
            b=arm_description(b, result, f) if b else f.say("unknown"),
        )
    ]
    if result.paths:
        items.append(f.say("bg.paths", paths=f.codes(result.paths)))
    if result.base_ref:
        items.append(f.say("bg.base_ref", ref=f.code(result.base_ref)))
    if result.started or result.duration:
        items.append(
            f.say(
                "bg.started",
                started=f.code(result.started or "?"),
                duration=f.say("seconds", s=f"{result.duration:.1f}"),
            )
        )
    if result.python:
        items.append(f.say("bg.python", python=f.code(result.python)))
    if result.shard:
        items.append(f.say("bg.shard", shard=f.code(result.shard)))
    items.append(
        f.say("bg.tool", tool=f.code(result.tool_version or "?"), norm=f.code(result.normaliser_version or "?"))
    )
    if result.mapping:
        items.append(
            f.say(
                "bg.mapping",
                pairs=f.sep().join(f"{f.code(old)} → {f.code(new)}" for old, new in result.mapping.items()),
            )
        )
    return items


def change_rows(result: ABResult, f: Fmt) -> list[tuple[str, str, str, str]]:
    """(file, class, labels written, torch.load edits) per class the diff touches, and one
    row per file for torch.load edits outside classes; formatted with `f`."""
    changes = result.changes
    rows = []
    for fc in changes.files if changes else []:
        for cc in fc.classes:
            labels = f.codes(cc.labels)
            if cc.removed_labels and not cc.labels:
                labels = f.say("changes.label_removed", labels=f.codes(cc.removed_labels))
            elif cc.removed_labels:
                labels = f.say("changes.label_replaced", old=f.codes(cc.removed_labels), new=f.codes(cc.labels))
            rows.append((f.code(fc.path), f.code(cc.name), labels, f.codes(cc.torch_load)))
        if fc.torch_load:
            rows.append((f.code(fc.path), f.say("changes.module_level"), "", f.codes(fc.torch_load)))
    return rows


def change_notes(result: ABResult, f: Fmt) -> list[str]:
    """Sentences under the table: imports added, files with no recognised edit, errors."""
    changes = result.changes
    if changes is None:
        return []
    if changes.error:
        return [f.say("changes.error", error=f.code(changes.error))]
    notes = []
    for fc in changes.files:
        notes += [_instantiation_note(fc.path, inst, f) for inst in fc.instantiations]
        notes += [_narrowing_note(fc.path, n, f) for n in fc.narrowed]
        if fc.moves:
            moves = [
                f.say("changes.move", test=f.code(m.test), old=f.code(m.old_class), new=f.code(m.new_class))
                for m in fc.moves
            ]
            notes.append(f.say("changes.moved", file=f.code(fc.path), moves=f.sep().join(moves)))
    imports = sorted({i for fc in changes.files for i in fc.imports})
    if imports:
        notes.append(f.say("changes.imports", imports=f.codes(imports)))
    extended = sorted({i for fc in changes.files for i in fc.imports_extended})
    if extended:
        notes.append(f.say("changes.imports_extended", imports=f.codes(extended)))
    plain = [
        fc.path
        for fc in changes.files
        if not (fc.classes or fc.torch_load or fc.instantiations or fc.moves or fc.imports_extended or fc.narrowed)
    ]
    if plain:
        notes.append(f.say("changes.other", files=f.codes(plain)))
    if not changes.files:
        notes.append(f.say("changes.none", ref=f.code(changes.ref)))
    return notes


def _narrowing_note(path: str, n: DeviceNarrowing, f: Fmt) -> str:
    """A class (or test) B runs on fewer devices, and the --map entry that explains it, if any."""
    said = f.say(
        "changes.narrowed",
        what=f.code(f"{n.cls}.{n.test}" if n.test else n.cls),
        file=f.code(path),
        before=f.code(n.before or "-"),
        after=f.code(n.after or "-"),
        devices=f.codes(n.devices),
    )
    return said + (f.say("changes.narrowed_mapped", option=f.code("--map"), entry=f.code(n.mapped)) if n.mapped else "")


def _instantiation_note(path: str, inst: InstantiationChange, f: Fmt) -> str:
    """One class's instantiate options in A and B and the devices they make it for."""
    unknown = f.say("changes.devices_unknown")
    args = {
        "cls": f.code(inst.cls),
        "file": f.code(path),
        "before": f.code(inst.before),
        "after": f.code(inst.after),
        "was": f.codes(inst.devices_before) or unknown,
        "now": f.codes(inst.devices_after) or unknown,
    }
    if not inst.before:
        return f.say("changes.inst_added", **args)
    if not inst.after:
        return f.say("changes.inst_removed", **args)
    widened = f.say("changes.inst_widened", devices=f.codes(inst.widened)) if inst.widened else ""
    return f.say("changes.inst", **args) + widened


def arm_description(arm, result: ABResult, f: Fmt) -> str:
    """Where an arm's files come from, in `f`'s language (never the runner's English label)."""
    diag = next((d for d in result.diagnostics if d.name == arm.name), None)
    if diag is not None:
        return f.say(
            "arm.diag",
            base=f.text(diag.based_on),
            vars=f.pairs(diag.variables) if diag.variables else f.say("diag.no_vars"),
        )
    source = arm.source or ""
    if source.startswith("git:"):
        return f.say("arm.git", ref=f.code(source[4:]))
    if source == "worktree":
        # the files run were a commit (a refactor's branch): not "uncommitted changes included"
        return f.say("arm.worktree_commit", commit=f.code(arm.commit[:12])) if arm.commit else f.say("arm.worktree")
    if source.startswith("dir:"):
        return f.say("arm.dir", path=f.code(source[4:]))
    return f.text(arm.label)


def runner_warnings(result: ABResult, f: Fmt) -> list[str]:
    """Non-fatal problems the runner recorded, in the report's language (a blank legacy
    warning says nothing: it is left out)."""
    return [shown for shown in (w.render(f.lang, f.text, f.code) for w in result.warnings) if shown]


def runner_env_items(result: ABResult, f: Fmt) -> list[str]:
    items = []
    if result.env_unset:
        items.append(f.say("bg.unset", names=f.codes(result.env_unset)))
    if result.env_set:
        # the runner's "<per-arm ...>" placeholders: a value of its own in every arm
        fixed = {k: v for k, v in result.env_set.items() if not v.startswith("<")}
        per_arm = [k for k, v in result.env_set.items() if v.startswith("<")]
        if fixed:
            items.append(f.say("bg.set", pairs=f.pairs(fixed)))
        if per_arm:
            items.append(f.say("bg.per_arm", names=f.codes(per_arm)))
    if not items:
        items.append(f.say("bg.env_unchanged"))
    return items
