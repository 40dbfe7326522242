"""What a PR body must not carry: the paths of the machine that made it.

A reviewer pastes the body as it is, so the target interpreter, the A/B run's temporary roots, the
site-packages folder and the home folder are written the way any checkout would read them:
`<venv>/bin/python` (or `python`), paths relative to the repository, `<site-packages>/...`, `~`.
What is left that still looks like a path of this machine (under /tmp, /home, ...) keeps only
its last part.
"""

from __future__ import annotations

import os
import re

from codemod.ab.result.model import ABResult

# Folders whose contents belong to one machine or user, never to a checkout.
_LOCAL = re.compile(r"(?<![\w.~<>/-])/(?:tmp|home|Users|root|work|var/folders|private|opt)/[^\s`'\"()\[\],;|]*")
_SITE = re.compile(r"(?<![\w.~<>-])/[^\s`'\"()\[\],;|]*?/(?:site|dist)-packages/")
_SYSTEM_PREFIXES = ("/usr", "/usr/local", "/bin", "/")


def interpreter(path: str) -> str:
    """How a PR names the interpreter at `path`: a virtual environment's as `<venv>/bin/NAME`,
    anything else by its name."""
    name = os.path.basename(path.rstrip("/")) or "python"
    folder = os.path.dirname(path)
    if os.path.basename(folder) == "bin" and os.path.dirname(folder) not in _SYSTEM_PREFIXES:
        return f"<venv>/bin/{name}"
    return name


def _replacements(result: ABResult | None) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    if result is not None:
        for path in {result.python, result.environment.executable} - {""}:
            pairs.append((path, interpreter(path)))
        for arm in result.arms:
            if arm.root:
                pairs.append((arm.root.rstrip("/") + "/", ""))
                pairs.append((arm.root.rstrip("/"), "."))
    home = os.path.expanduser("~")
    if home not in ("", "/", "~"):
        pairs.append((home.rstrip("/") + "/", "~/"))
    return sorted(pairs, key=lambda p: -len(p[0]))  # the longest first: a root inside the home folder


def redact(text: str, result: ABResult | None) -> str:
    """`text` without the local paths `result` records, nor any other of this machine's."""
    for old, new in _replacements(result):
        text = text.replace(old, new)
    text = _SITE.sub("<site-packages>/", text)
    return _LOCAL.sub(lambda m: "…/" + os.path.basename(m.group().rstrip("/")), text)
