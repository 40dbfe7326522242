"""Which target interpreters the tool can use, and the question that tells.

The target interpreter (`--python`) runs the tool's own code: the probes, the capture plugins
and the fork server of codemod/target/. That code needs CPython 3.9 (the fork server reads
`os.CLD_KILLED`, new in 3.9; the plugins import `typing.Literal`; on 3.8 every forked file
died, on 3.7 the server did not start). Both probes of a target, the codemod commands'
(codemod/engine/torch_probe.py) and the A/B runner's check (codemod/ab/execution/interpreter.py),
run `FACTS` in it and judge its answer with `refusal`: an older Python, or another
implementation, is refused with the version it reported (exit 2) before anything runs there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

MIN_PYTHON = (3, 9)


def absolute(python: str, cwd: str) -> str | None:
    """`--python` as a path that names the same interpreter from any folder (the linter gate runs
    in the checkout, the arms in their roots): a path made absolute against `cwd`, with abspath,
    not realpath (a venv's python is a link, and only the link makes it the venv); None for a bare
    name (`python3`), which PATH answers."""
    if os.sep in python or (os.altsep and os.altsep in python):
        return os.path.abspath(os.path.join(cwd, os.path.expanduser(python)))
    return None


# Python source that any Python (2.7 too) runs: `python_facts()` is the implementation and the
# version, which the probes put into their answers.
FACTS = r"""
import platform, sys

def python_facts():
    impl = getattr(sys, "implementation", None)
    name = impl.name if impl is not None else platform.python_implementation().lower()
    return {"implementation": name, "python": sys.version.split()[0], "version_info": list(sys.version_info[:3])}
"""

_SHOWN = {"cpython": "CPython", "pypy": "PyPy"}


def refusal(facts: Mapping[str, Any]) -> str | None:
    """Why the tool cannot use the interpreter whose `python_facts()` are `facts` (what it is,
    and what it should be: "<interpreter> is <refusal>"), or None."""
    implementation = str(facts.get("implementation") or "an unknown implementation")
    version = facts.get("version_info")
    said = f"{_SHOWN.get(implementation, implementation)} {facts.get('python') or '(no version)'}"
    wanted = f"decouple needs CPython {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer there"
    if (
        implementation == "cpython"
        and isinstance(version, list)
        and len(version) >= 2
        and all(type(v) is int for v in version[:2])
        and tuple(version[:2]) >= MIN_PYTHON
    ):
        return None
    return f"{said}; {wanted}"
