"""Environment facts, run as a script under the *target* interpreter.

Standalone (stdlib only; torch when importable).  Prints one JSON object on
stdout whose keys are the fields of codemod.ab.result.model.Environment.  Every
torch fact is guarded: a missing torch or a broken backend gives None fields
and a note in ``probe_error``, never a crash.

Also a pytest plugin (``-p decouple_ab_probe``), for runs where no warm interpreter can be
forked: a process of its own would import torch and the backend once more beside the two
arms (1.4 s of CPU, on a machine whose cores the arms fill), so an arm's test process
answers instead, after its tests: ``pytest_unconfigure`` writes the JSON object to the file
``DECOUPLE_AB_PROBE`` names, what the facts of a process of its own would be (the
variables as the process started, the quantized engine as the first test started); the
plugin takes that variable out of ``os.environ`` when pytest imports it, before any
conftest.py or test module, so a test does not see it.  The runner asks a process of its
own when no test process answered (none imported torch, a test left a device function
replaced, the answer crashed or hung).
"""

from __future__ import annotations

import faulthandler
import json
import os
import platform
import sys
import warnings

_KNOWN_BACKENDS = (
    "torch_npu",
    "torch-npu",
    "torch_mlu",
    "intel_extension_for_pytorch",
    "torch_xla",
    "torch_directml",
    "habana_torch_plugin",
    "torch_musa",
    "torch_gcu",
)


def _first_line(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}"
    lines = [x for x in text.splitlines() if x.strip()]
    return (lines[0] if lines else type(err).__name__)[:300]


def _backends() -> dict:
    out: dict = {}
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - python < 3.8
        return out
    try:
        eps = metadata.entry_points()
        group = eps.select(group="torch.backends") if hasattr(eps, "select") else eps.get("torch.backends", [])  # type: ignore[arg-type]
        for ep in group:
            dist = getattr(ep, "dist", None)
            name = getattr(dist, "name", None) or ep.name
            version = getattr(dist, "version", None) or "?"
            out[name] = version
    except Exception:
        pass
    for name in _KNOWN_BACKENDS:
        try:
            out.setdefault(name.replace("-", "_"), metadata.version(name))
        except Exception:
            pass
    return out


# CPU features the quantized engines depend on (fbgemm/x86: AVX2, AVX-512, VNNI, AMX;
# qnnpack/onednn on Arm: NEON/ASIMD, dot product, SVE, i8mm, bf16).
QUANT_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512dq",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx_vnni",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "neon",
    "asimd",
    "asimddp",
    "asimdhp",
    "sve",
    "sve2",
    "i8mm",
    "bf16",
)


def cpu_facts(cpuinfo: str = "", machine: str = "") -> dict:
    """CPU model, the quantization-relevant ISA flags and the core counts.

    Linux: /proc/cpuinfo (`model name` on x86, `flags`; `Features` and `CPU part` on Arm);
    macOS: sysctl. Each fact is left out when it cannot be read."""
    facts: dict = {"cpu_count": os.cpu_count()}
    try:
        facts["cpu_usable"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    if not cpuinfo and os.path.exists("/proc/cpuinfo"):
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read(1 << 20)
        except OSError:
            cpuinfo = ""
    fields: dict = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key and key not in fields:
            fields[key] = value.strip()
    model = fields.get("model name") or fields.get("hardware") or fields.get("cpu model") or ""
    if not model and "cpu implementer" in fields:
        model = f"implementer {fields['cpu implementer']}, part {fields.get('cpu part', '?')}"
    flags = set((fields.get("flags") or fields.get("features") or "").split())
    if not cpuinfo and sys.platform == "darwin":  # pragma: no cover - macOS only
        import subprocess

        for _key, name in (("model", "machdep.cpu.brand_string"),):
            try:
                out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5)
                if out.returncode == 0:
                    model = out.stdout.strip()
            except (OSError, subprocess.SubprocessError):
                pass
        if (machine or platform.machine()) in ("arm64", "aarch64"):
            flags.update({"neon", "asimd"})
    if model:
        facts["cpu_model"] = model
    facts["cpu_flags"] = [f for f in QUANT_FLAGS if f in flags]
    return facts


def probe(environ: dict | None = None) -> dict:
    variables = os.environ if environ is None else environ
    facts: dict = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "variables": {k: v for k, v in sorted(variables.items()) if k.startswith(("TORCH_", "PYTORCH_"))},
        "backends": _backends(),
    }
    try:
        facts.update(cpu_facts(machine=facts["machine"]))
    except Exception:  # a fact we cannot read is left out, never fatal
        pass
    errors = []
    try:
        import pytest  # noqa: F401

        facts["pytest_version"] = getattr(pytest, "__version__", None)
    except Exception as err:
        errors.append(f"pytest: {_first_line(err)}")
    try:
        import torch
    except Exception as err:
        if not isinstance(err, ModuleNotFoundError):
            errors.append(f"import torch: {_first_line(err)}")
        facts["probe_error"] = "; ".join(errors)
        return facts
    facts["torch_version"] = str(getattr(torch, "__version__", "")) or None
    try:
        facts["torch_git_version"] = torch.version.git_version
    except Exception:
        pass
    for probe_part in (_device_facts, _quantized_facts, _hw_classification_fact):
        probe_part(torch, facts, errors)
    if errors:
        facts["probe_error"] = "; ".join(errors)
    return facts


def _device_facts(torch, facts: dict, errors: list) -> None:
    """CUDA/ROCm, XPU, MPS and the current accelerator."""
    try:
        if torch.cuda.is_available():
            facts["cuda"] = torch.version.cuda or None
            facts["rocm"] = getattr(torch.version, "hip", None) or None
    except Exception as err:
        errors.append(f"cuda: {_first_line(err)}")
    try:
        facts["xpu"] = bool(hasattr(torch, "xpu") and torch.xpu.is_available())
    except Exception as err:
        errors.append(f"xpu: {_first_line(err)}")
    try:
        facts["mps"] = bool(torch.backends.mps.is_available())
    except Exception as err:
        errors.append(f"mps: {_first_line(err)}")
    try:
        acc = getattr(torch, "accelerator", None)
        if acc is not None and acc.is_available():
            dev = acc.current_accelerator()
            idx = acc.current_device_index() if hasattr(acc, "current_device_index") else None
            facts["accelerator"] = f"{dev.type}:{idx}" if idx is not None else str(dev)
    except Exception as err:
        errors.append(f"accelerator: {_first_line(err)}")


def _quantized_facts(torch, facts: dict, errors: list) -> None:
    """The quantized engine, the supported engines and a real prepack per engine (the
    list can claim an engine that cannot run on this CPU)."""
    try:
        q = torch.backends.quantized
        facts["quantized_engine"] = str(q.engine)
        engines = [str(e) for e in q.supported_engines]
        facts["supported_engines"] = engines
        prepack = {}
        original = q.engine
        for engine in engines:
            if engine == "none":
                continue
            try:
                q.engine = engine
                w = torch.quantize_per_tensor(torch.ones(4, 4), 0.1, 0, torch.qint8)
                torch.ops.quantized.linear_prepack(w, None)
                prepack[engine] = "ok"
            except Exception as err:
                prepack[engine] = _first_line(err)
        try:
            q.engine = original
        except Exception:
            pass
        facts["prepack"] = prepack
    except Exception as err:
        errors.append(f"quantized: {_first_line(err)}")


def _hw_classification_fact(torch, facts: dict, errors: list) -> None:
    try:
        # Read, not import: common_utils pulls in numpy, expecttest, ... (about a second).
        path = os.path.join(os.path.dirname(torch.__file__), "testing", "_internal", "common_utils.py")
        with open(path, encoding="utf-8") as f:
            facts["has_hw_classification"] = "class HardwareClassification(" in f.read()
    except Exception as err:
        errors.append(f"common_utils: {_first_line(err)}")


def guarded_probe(environ: dict | None = None) -> dict:
    """`probe()`, its prints sent to stderr and its warnings silenced: never raises."""
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return probe(environ)
    except BaseException as err:  # never die without a JSON answer
        return {"probe_error": f"probe crashed: {_first_line(err)}"}
    finally:
        sys.stdout = real_stdout


# As a plugin: where a test process answers, and from what.  The variables as the process started
# (`-p` plugins are imported before any conftest.py, which may set some); the quantized
# engine as the first test started (reading it has no side effect; a test may leave
# another one set).
_ANSWER_FILE = os.environ.pop("DECOUPLE_AB_PROBE", None)
_ENVIRON_AT_START = dict(os.environ)
_ENGINE_BEFORE_TESTS: list = []
# Seconds: the facts of an imported torch take milliseconds.  A device query that hangs
# ends the process (after its tests), and the runner asks a process of its own.
ANSWER_LIMIT = 60
# The functions the device facts call (owner, name): a test may leave one replaced.
_DEVICE_FUNCTIONS = (
    ("cuda", "is_available"),
    ("xpu", "is_available"),
    ("backends.mps", "is_available"),
    ("accelerator", "is_available"),
    ("accelerator", "current_accelerator"),
    ("accelerator", "current_device_index"),
)


def replaced_device_function(torch) -> str | None:
    """The first function the device facts call that a test left replaced (a mock started and
    never stopped; anything not of torch's or a backend's modules, ``torch*``), whose facts
    would be the replacement's."""
    mock = sys.modules.get("unittest.mock")  # no mock where it was never imported
    for owner, name in _DEVICE_FUNCTIONS:
        obj = torch
        for part in owner.split("."):
            obj = getattr(obj, part, None)
        fn = getattr(obj, name, None)
        if fn is None:
            continue
        # (an autospecced function carries its mock as `.mock`)
        mocked = mock is not None and (
            isinstance(fn, mock.NonCallableMock) or isinstance(getattr(fn, "mock", None), mock.NonCallableMock)
        )
        if mocked or not str(getattr(fn, "__module__", "")).startswith("torch"):
            return f"{owner}.{name}"
    return None


def pytest_runtest_logstart(nodeid, location) -> None:
    torch = sys.modules.get("torch")
    if not _ENGINE_BEFORE_TESTS and torch is not None:
        try:
            _ENGINE_BEFORE_TESTS.append(str(torch.backends.quantized.engine))
        except Exception:
            _ENGINE_BEFORE_TESTS.append(None)


def pytest_unconfigure(config) -> None:
    """Answer the probe in the file DECOUPLE_AB_PROBE names: once per arm (the first process
    to claim it), only where the tests imported torch and left its device functions alone."""
    out = _ANSWER_FILE
    torch = sys.modules.get("torch")
    if not out or torch is None or replaced_device_function(torch):
        return
    try:
        os.close(os.open(f"{out}.claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError:
        return  # claimed by another process of the arm
    try:
        faulthandler.dump_traceback_later(ANSWER_LIMIT, exit=True, file=2)  # the log
    except Exception:  # no fd 2 to write to: unbounded, as a process of its own would be
        pass
    try:
        facts = guarded_probe(_ENVIRON_AT_START)
    finally:
        faulthandler.cancel_dump_traceback_later()
    if _ENGINE_BEFORE_TESTS and _ENGINE_BEFORE_TESTS[0] is not None and "quantized_engine" in facts:
        facts["quantized_engine"] = _ENGINE_BEFORE_TESTS[0]
    partial = f"{out}.{os.getpid()}"
    try:
        with open(partial, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(facts, default=str) + "\n")
        os.replace(partial, out)  # whole or not at all
    except OSError:
        if os.path.exists(partial):
            os.unlink(partial)


def main() -> int:
    facts = guarded_probe()
    sys.stdout.write(json.dumps(facts, default=str) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
