"""Probe the target interpreter: which torch (if any) will run the tests.

The tool never imports torch itself; it asks the interpreter the user points at
(``--python PATH``, default: the one running ``decouple``), in a subprocess, or reads torch's
files in this process when that interpreter is this one and no import is asked for.  Every failure mode
(missing path, not a Python, torch not importable, probe timeout) becomes a
`TargetInfo` with ``torch_version is None`` and a human `reason`; so does an interpreter the
tool cannot use (codemod/util/target_python.py), with the version it reported.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass

from codemod.util import target_python
from codemod.util.jsonfile import JSONInputError, loads

# What the probe finds out, as a function that both sides run: the target interpreter in a
# subprocess (any --python, and every import of torch), and this process when the target is this
# interpreter and only torch's files are read (the subprocess would cost 40-60 ms: a fifth of a
# one-file `apply --check`).
_FACTS = (
    target_python.FACTS
    + r"""
import json, os

def torch_facts(mode):
    out = python_facts()
    out["executable"] = sys.executable
    try:
        if mode == "import":
            import torch
            out["torch"] = torch.__version__
            root = os.path.dirname(torch.__file__)
        else:
            # Source-only: locate the package and read its files; importing torch takes seconds.
            import importlib.util
            spec = importlib.util.find_spec("torch")
            if spec is None or not spec.submodule_search_locations:
                raise ModuleNotFoundError("No module named 'torch'")
            root = list(spec.submodule_search_locations)[0]
            with open(os.path.join(root, "version.py"), encoding="utf-8") as f:
                scope = {}
                exec(compile(f.read(), "version.py", "exec"), scope)
            out["torch"] = str(scope["__version__"])
        out["torch_file"] = root
        # Read, not import: torch.testing._internal.common_utils takes seconds to import.
        cu = os.path.join(root, "testing", "_internal", "common_utils.py")
        try:
            with open(cu, encoding="utf-8") as f:
                out["hw_classification"] = "class HardwareClassification(" in f.read()
        except OSError:
            out["hw_classification"] = None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # ImportError, OSError from a broken wheel, SystemExit, ...
        out["torch"] = None
        out["error"] = "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
    return out
"""
)
_PROBE = (
    _FACTS
    + r"""
sys.stdout.write("\n@@DECOUPLE@@" + json.dumps(torch_facts(sys.argv[1])) + "\n")
"""
)


@dataclass(kw_only=True)
class TargetInfo:
    python: str  # as given / resolved
    executable: str = ""  # sys.executable reported by a target the tool can use ("": none answered, or it is refused)
    python_version: str = ""
    torch_version_str: str | None = None  # e.g. "2.14.1+cu130"
    torch_version: tuple[int, int] | None = None
    reason: str = ""  # why there is no usable torch
    has_hw_classification: bool | None = None  # the enum exists in its common_utils

    @property
    def ok(self) -> bool:
        return self.torch_version is not None

    def to_json(self) -> dict:
        d = asdict(self)
        d["torch_version"] = list(self.torch_version) if self.torch_version else None
        return d


def parse_version(text: str | None) -> tuple[int, int] | None:
    """``"2.14.1+cu130"`` -> ``(2, 14)``; None for anything unparsable."""
    if not text:
        return None
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def probe(python: str | None = None, timeout: float = 120.0, import_torch: bool = True) -> TargetInfo:
    """Run a tiny script in `python` and report its torch version or why there is none.

    `import_torch=False` only reads torch's files (version.py, common_utils.py): fast
    enough to run before every `apply`, but blind to a torch that fails to import; with
    `python` None (this interpreter) it reads them in this process."""
    if python is None and not import_torch:
        return _info(TargetInfo(python=sys.executable), _facts_here())
    python = python or sys.executable
    info = TargetInfo(python=python)
    if os.sep in python or (os.altsep and os.altsep in python):
        if not os.path.exists(python):
            info.reason = f"target interpreter {python!r} does not exist"
            return info
        if not os.access(python, os.X_OK):
            info.reason = f"target interpreter {python!r} is not executable"
            return info
    env = dict(os.environ)
    try:
        proc = subprocess.run(
            [python, "-c", _PROBE, "import" if import_torch else "source"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        info.reason = f"target interpreter {python!r} not found"
        return info
    except PermissionError:
        info.reason = f"target interpreter {python!r} is not executable"
        return info
    except subprocess.TimeoutExpired:
        info.reason = f"probing {python!r} timed out after {timeout:.0f}s (importing torch hangs?)"
        return info
    except OSError as exc:
        info.reason = f"cannot run {python!r}: {exc}"
        return info
    marker = proc.stdout.rfind("@@DECOUPLE@@")
    if marker < 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        info.reason = f"{python!r} is not a working Python interpreter (exit {proc.returncode}: {tail[0]})"
        return info
    try:
        data = loads(proc.stdout[marker + len("@@DECOUPLE@@") :].strip().splitlines()[0], "the probe's answer")
    except (JSONInputError, IndexError):
        data = None
    if not isinstance(data, dict):
        info.reason = f"unreadable probe output from {python!r}"
        return info
    return _info(info, data)


def _facts_here() -> dict:
    """`torch_facts("source")` run in this process, looking for torch where `python -c` would:
    the current folder first (a PyTorch checkout's own torch/), unless PYTHONSAFEPATH says not."""
    scope: dict = {}
    exec(compile(_FACTS, "<decouple target probe>", "exec"), scope)
    saved = sys.path[:]
    # sys.path[0] is the folder of decouple's own script, unless Python >= 3.11 ran it with safe_path
    rest = sys.path if getattr(sys.flags, "safe_path", False) else sys.path[1:]
    try:
        here = [] if os.environ.get("PYTHONSAFEPATH") else [os.getcwd()]
    except OSError:  # the current folder was removed: `python -c` finds nothing there either
        here = []
    sys.path[:] = here + rest
    try:
        return scope["torch_facts"]("source")
    finally:
        sys.path[:] = saved


def _info(info: TargetInfo, data: dict) -> TargetInfo:
    """`info` completed from the facts the probe found."""
    python = info.python
    info.python_version = str(data.get("python") or "")
    refused = target_python.refusal(data)
    if refused:
        info.reason = f"target interpreter {python!r} is {refused}"
        return info
    info.executable = data.get("executable") or ""
    info.torch_version_str = data.get("torch")
    if info.torch_version_str is None:
        info.reason = (
            f"torch cannot be imported by {info.executable or python} "
            f"({data.get('error') or 'unknown error'}); pass --python pointing at the "
            "interpreter of your PyTorch environment"
        )
        return info
    info.has_hw_classification = data.get("hw_classification")
    info.torch_version = parse_version(info.torch_version_str)
    if info.torch_version is None:
        info.reason = f"unrecognised torch version {info.torch_version_str!r}"
    return info
