"""The environment of an A/B run in the reports: the probed facts of the target interpreter
and machine, and the quantized engines' prepack checks."""

from __future__ import annotations

from codemod.ab.result.model import Environment
from codemod.report.ab.fmt import Fmt


def environment_facts(env: Environment, f: Fmt) -> list[tuple[str, str]]:
    """(label, value) rows; values already formatted."""
    unknown = f.say("unknown")

    def val(v: str | None) -> str:
        return f.code(v) if v else unknown

    def version(v: str | None) -> str:
        return f.code(v) if v else f.say("env.not_available")

    def flag(v: bool | None) -> str:
        if v is None:
            return unknown
        return f.say("env.available") if v else f.say("env.not_available")

    rows = [
        (
            f.say("env.python"),
            f.say("env.value_with_exe", version=val(env.python), exe=f.code(env.executable))
            if env.executable
            else val(env.python),
        ),
        (f.say("env.platform"), val(env.platform)),
        (f.say("env.machine"), val(env.machine)),
        (f.say("env.cpu_model"), val(getattr(env, "cpu_model", None))),
        (
            f.say("env.cpu_flags"),
            f.codes(env.cpu_flags)
            if getattr(env, "cpu_flags", None)
            else (f.say("none") if getattr(env, "cpu_count", None) else unknown),
        ),
        (
            f.say("env.cores"),
            f.say("env.cores_value", n=env.cpu_count, usable=env.cpu_usable)
            if getattr(env, "cpu_usable", None) and env.cpu_usable != env.cpu_count
            else val(str(env.cpu_count) if getattr(env, "cpu_count", None) else None),
        ),
        (f.say("env.torch"), val(env.torch_version)),
        (f.say("env.torch_git"), val(env.torch_git_version)),
        (f.say("env.pytest"), val(getattr(env, "pytest_version", None))),
        (f.say("env.cuda"), version(env.cuda)),
        (f.say("env.rocm"), version(env.rocm)),
        (f.say("env.xpu"), flag(env.xpu)),
        (f.say("env.mps"), flag(env.mps)),
        (f.say("env.accelerator"), f.code(env.accelerator) if env.accelerator else f.say("none")),
        (f.say("env.backends"), f.pairs(env.backends) if env.backends else f.say("none")),
        (f.say("env.quantized_engine"), val(env.quantized_engine)),
        (f.say("env.supported_engines"), f.codes(env.supported_engines) if env.supported_engines else unknown),
    ]
    if env.has_hw_classification is None:
        hwc = unknown
    elif env.has_hw_classification:
        hwc = f.say("env.available")
    else:
        hwc = f.strong(f.say("env.hwc_missing"))
    rows.append((f.say("env.hwc"), hwc))
    if env.probe_error:
        rows.append((f.say("env.probe_error"), f.code(env.probe_error)))
    return rows


def prepack_rows(env: Environment, f: Fmt) -> list[tuple[str, str, str, bool]]:
    """(engine, listed, result, warn) per engine, supported engines first."""
    engines = list(env.supported_engines) + [e for e in env.prepack if e not in env.supported_engines]
    rows = []
    for engine in engines:
        if engine not in env.prepack:
            continue
        status = env.prepack[engine]
        listed = engine in env.supported_engines
        ok = status.strip().lower() == "ok"
        shown = f.say("env.prepack_ok") if ok else f.strong(f.say("env.prepack_failed", error=f.code(status)))
        rows.append((f.code(engine), f.say("yes") if listed else f.say("no"), shown, listed and not ok))
    return rows
