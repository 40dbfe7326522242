"""Per-file results kept between runs, content-addressed: get and put a JSON value by key.

The key is the caller's (a digest of everything the value depends on); the cache only promises
that what `get` returns is what `put` stored under that very key. It lives in the user's cache
folder (`$DECOUPLE_CACHE_DIR`, else `$XDG_CACHE_HOME/decouple`, else `~/.cache/decouple`), one
small file per entry: written atomically (a temporary file renamed into place, so concurrent
runs never see half an entry), each entry carrying its own key (a corrupt, truncated or foreign
entry is a miss, never trusted), and bounded (the oldest entries go when there are too many).

Issue 21 adds the engine's per-file result cache with this same get/put shape; the survey then
uses that one instead.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

FORMAT = 1
MAX_ENTRIES = 20_000  # about 40 MB of survey records; a PyTorch checkout has ~1,200 allowlisted files


def cache_root() -> str:
    base = os.environ.get("DECOUPLE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "decouple"
    )
    return os.path.join(base, "results")


class ResultCache:
    """`namespace` keeps the values of different producers apart (e.g. "survey")."""

    def __init__(self, namespace: str, root: str | None = None, max_entries: int = MAX_ENTRIES):
        self.folder = os.path.join(root or cache_root(), f"{namespace}-v{FORMAT}")
        self.max_entries = max_entries
        self.hits = self.misses = 0
        self._written = 0

    def _path(self, key: str) -> str:
        return os.path.join(self.folder, key[:2], key + ".json")

    def get(self, key: str) -> Any | None:
        try:
            with open(self._path(key), encoding="utf-8") as f:
                entry = json.load(f)
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or "value" not in entry:
            self.misses += 1
            return None
        self.hits += 1
        try:
            os.utime(self._path(key))  # recently used: pruned last
        except OSError:
            pass
        return entry["value"]

    def put(self, key: str, value: Any) -> None:
        """Best effort: a cache that cannot be written is no cache, never an error."""
        path = self._path(key)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=os.path.dirname(path))
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"key": key, "value": value}, f, separators=(",", ":"))
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
        self._written += 1

    def prune(self) -> int:
        """Keep the `max_entries` most recently used entries; returns how many went.
        Only after a run that wrote something: a run of hits leaves the folder alone."""
        if not self._written:
            return 0
        entries: list[tuple[float, str]] = []
        try:
            for shard in os.scandir(self.folder):
                if shard.is_dir():
                    for e in os.scandir(shard.path):
                        if e.name.endswith(".json"):
                            entries.append((e.stat().st_mtime, e.path))
        except OSError:
            return 0
        if len(entries) <= self.max_entries:
            return 0
        entries.sort()
        gone = 0
        for _, path in entries[: len(entries) - self.max_entries]:
            try:
                os.unlink(path)
                gone += 1
            except OSError:
                pass
        return gone
