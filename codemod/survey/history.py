"""The allowlist's burndown: its size at each commit that changed it, read from git.

Two git processes whatever the length of the history: `git log` lists the commits that touched
the file (oldest first), `git cat-file --batch` reads the file at each of them.
"""

from __future__ import annotations

import os
import subprocess

from codemod.survey.model import HistoryPoint
from codemod.util.jsonfile import JSONInputError, loads

_TIMEOUT = 300  # seconds per git call; upstream's history of the file is a few hundred commits


class HistoryError(Exception):
    """git cannot tell the allowlist's history (not a repository, git missing, ...)."""


def _git(root: str, args: list[str], stdin: bytes | None = None) -> bytes:
    try:
        proc = subprocess.run(
            ["git", "-C", root, *args], input=stdin, capture_output=True, timeout=_TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise HistoryError("--git-history needs git, which is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise HistoryError(f"git {args[0]} took more than {_TIMEOUT} s") from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise HistoryError(f"git {args[0]} failed: {message[-1] if message else proc.returncode}")
    return proc.stdout


def _entries(blob: bytes) -> list[str] | None:
    try:
        data = loads(blob, "the allowlist")
    except JSONInputError:
        return None
    if not isinstance(data, list) or not all(isinstance(e, str) for e in data):
        return None
    return data


def _blobs(root: str, specs: list[str]) -> list[bytes | None]:
    """The contents of `commit:path` for each spec, in order (None: no such file there)."""
    out = _git(root, ["cat-file", "--batch"], stdin="".join(s + "\n" for s in specs).encode())
    blobs: list[bytes | None] = []
    pos = 0
    for _ in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) != 3 or header[1] != b"blob":  # "<spec> missing" (deleted, or a folder)
            blobs.append(None)
            continue
        size = int(header[2])
        blobs.append(out[pos : pos + size])
        pos += size + 1  # the content is followed by a newline
    return blobs


def allowlist_history(root: str, allowlist: str) -> list[HistoryPoint]:
    """`allowlist` is relative to `root`, the repository's top folder. Raises HistoryError."""
    rel = allowlist.replace(os.sep, "/")
    log = _git(root, ["log", "--reverse", "--format=%H %cI", "--", rel]).decode("utf-8", "replace")
    commits = [line.split(" ", 1) for line in log.splitlines() if line.strip()]
    if not commits:
        raise HistoryError(f"git has no commit that changed {rel}")
    points: list[HistoryPoint] = []
    previous: set[str] | None = None
    for (sha, date), blob in zip(commits, _blobs(root, [f"{sha}:{rel}" for sha, _ in commits]), strict=True):
        entries = None if blob is None else _entries(blob)
        if entries is None:
            points.append(HistoryPoint(commit=sha, date=date, entries=None))
            continue
        now, before = set(entries), previous if previous is not None else set()
        points.append(
            HistoryPoint(
                commit=sha, date=date, entries=len(entries), added=len(now - before), removed=len(before - now)
            )
        )
        previous = now
    return points
