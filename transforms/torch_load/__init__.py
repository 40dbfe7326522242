"""Make every `torch.load` in a test file explicit about `weights_only`.

Since torch 2.6 ``torch.load`` defaults to ``weights_only=True``: a test that
saves a whole ``nn.Module`` (or anything else with non-allowlisted globals) and
loads it back with a bare ``torch.load`` fails with ``UnpicklingError``.  This
transform rewrites each resolved call in one of three modes:

``weights-only-false``
    add ``weights_only=False`` (the test trusts the file it wrote itself).
``safe-globals``
    wrap the enclosing statement in
    ``with torch.serialization.safe_globals([A, B]):`` using the globals that
    ``decouple discover-globals`` found for that call site, importing them.
``auto``
    ``safe-globals`` where discovery found only *safe* globals for the call
    (see transforms/torch_load/analysis/unsafe_globals.py), ``weights_only=False`` otherwise;
    a load that needs nothing (a state_dict) is left alone.

Design notes
------------
* ``ast`` triage first; LibCST (with qualified names) only for files that may
  contain a candidate.  Edits are applied to the *text* at LibCST positions, so
  everything the transform does not touch stays byte-identical (no formatter).
* Only calls whose callee resolves to torch.load and nothing else are rewritten;
  `load` that may also be a local `def load`/`load = ...` (or come from
  ``from torch import *``) gets a ``torch-load/unresolved`` finding (manual).
* Discovery call sites are matched by file (path suffix), by the stripped source
  line recorded by the plugin, then by the enclosing test function/class (the
  record's test ids), then by the position among calls with the same text, and by
  line number only as the last tie-breaker; this keeps a second run over the
  rewritten file a no-op although lines moved.
* A call already inside ``with ...safe_globals([...])`` is left alone when the
  block covers what discovery found (or discovery knows nothing about it); when
  entries are missing, an inner block with *only the missing* entries is added
  (never the same entry twice: nested blocks with the same entry remove it from
  the outer one on exit).
* A wrap planned for a compound statement (a load in a ``for``/``while``/``if``/
  ``with`` header) covers the loads in its body the same way: outer statements are
  planned first and inner blocks list only what the outer one lacks.
* Consecutive statements of one block that need the same entries share one
  ``with``.
* When the enclosing function rebinds a name the ``with`` line would use (``torch``,
  an imported module or class), the call falls back to ``weights_only=False``.
* Eagerly evaluated comprehensions (list/set/dict) are wrapped like any
  statement; lambdas, generator expressions, function headers (defaults,
  decorators, annotations), one-line function/class bodies, class headers and
  statements containing ``yield`` (also in the body of a compound statement, not in
  nested defs) fall back to ``weights_only=False``
  (``torch-load/fallback``).
* In ``safe-globals`` mode dangerous globals (``torch.ScriptObject``, ...) are
  still allowlisted as asked, with a ``torch-load/dangerous-global`` warning;
  ``auto`` writes ``weights_only=False`` for them instead.

The engine passes ``path=`` (relative or absolute) to :meth:`TorchLoad.run` so
call sites can be matched with discovery; without it all discovered call sites
are candidates (matched by source line).

Layout: ``source`` is the file with its LibCST metadata, ``calls`` finds the calls
(qualified names) and their sites, ``discovery`` indexes the discover-globals JSON,
``decide`` says what to do with a call and why, ``plan`` turns that into a typed plan per
call and per file (``keyword`` places ``weights_only``, ``imports`` names the globals and
places imports), ``edits`` applies a file's plan to its text, ``verify`` checks the output
against the plan; ``transform`` composes them.  ``unsafe_globals`` is the one list of
globals never to allowlist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from transforms.torch_load.analysis.discovery import Discovery, Evidence
from transforms.torch_load.analysis.modes import LOAD_NAMES, MODES, SAFE_GLOBALS_NAME, check_mode_supported

if TYPE_CHECKING:
    from transforms.torch_load.transform import TorchLoad


def __getattr__(name: str) -> Any:
    # TorchLoad on first use: the transform imports LibCST (0.15 s), which a command that only
    # names the modes (the command line's choices) must not pay for.
    if name == "TorchLoad":
        from transforms.torch_load.transform import TorchLoad

        return TorchLoad
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Discovery", "Evidence", "LOAD_NAMES", "MODES", "SAFE_GLOBALS_NAME", "TorchLoad", "check_mode_supported"]
