"""decouple A/B: the environment's own bytecode, read where the run's private prefix has none.

This file is standalone (stdlib only): the runner copies it into the run's private support
folder as ``sitecustomize.py``; that folder is first on every arm process's ``PYTHONPATH``, so
``site`` imports it when the interpreter starts, before anything else is imported (and then runs
the environment's own ``sitecustomize``, if there is one, as ``site`` would have).

Every arm process has ``PYTHONPYCACHEPREFIX`` set to a prefix private to its arm and its run
(deleted with the run): every bytecode file Python or pytest's assertion rewriting writes goes
there, and a test that writes one where ``importlib.util.cache_from_source`` says writes there
too, so nothing a test writes as bytecode outlives the run. But a prefix hides the
``__pycache__`` folders beside the installed sources: a fresh prefix would compile torch again in
every run. So where the prefix has no bytecode for a module, its loader reads the
``__pycache__`` file beside the source, as a plain interpreter would (validated against the
source as usual; never written: what is compiled goes to the prefix). The run's own files (the
arm roots, under the folder that holds this file's folder) never fall back: they are fresh copies.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib.machinery import SourceFileLoader

PYCACHE = "__pycache__"
# The run's temporary root (this file is RUN/support/sitecustomize.py), as given and resolved.
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_ROOTS = tuple({os.path.join(_here, ""), os.path.join(os.path.realpath(_here), "")})

_read = SourceFileLoader.get_data


def beside(source: str, bytecode: str) -> str | None:
    """Where a plain interpreter keeps the bytecode of `source`, when `bytecode` is the path the
    prefix gives it (None: not that, or a file of the run)."""
    if not sys.pycache_prefix or source.startswith(RUN_ROOTS):
        return None
    try:
        if bytecode != importlib.util.cache_from_source(source):
            return None
    except (NotImplementedError, ValueError):
        return None
    return os.path.join(os.path.dirname(source), PYCACHE, os.path.basename(bytecode))


def get_data(self: SourceFileLoader, path: str) -> bytes:
    try:
        return _read(self, path)
    except OSError:
        installed = beside(self.path, path)
        if installed is None:
            raise
        return _read(self, installed)


def _run_the_environments_own() -> None:
    """The `sitecustomize` this file stands in front of, if the environment has one."""
    mine = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    rest = [p for p in sys.path if os.path.realpath(p or os.curdir) != mine]
    spec = importlib.machinery.PathFinder.find_spec(__name__, rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[__name__] = module
    spec.loader.exec_module(module)


SourceFileLoader.get_data = get_data  # type: ignore[method-assign,assignment]
if __name__ == "sitecustomize":
    _run_the_environments_own()
