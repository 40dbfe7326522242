"""A content-addressed store of per-file results in the user's cache folder.

A key is a digest of everything a result depends on (`key(...)`: the caller names the parts,
for the codemod the file's bytes, the tool and every option: `file_results.py`); `get(key)` and
`put(key, payload)` read and write the bytes stored under it, `get_value` / `put_value` a record
of the tool's own types. The survey keeps its per-file results here too (`codemod/survey/run.py`),
under keys of its own.

The store sits in `<user cache>/results/v1/` (`codemod/util/cache_dir.py`), one file per entry
in 256 folders. An entry holds a header (the format, its own key, the digest of its payload)
and the payload. It is written to a temporary file in its folder and renamed into place, so a
reader sees a whole entry or none and concurrent runs at worst write the same entry twice. An
entry that is not exactly one this store wrote for that key (another user's file, another
format or key, a payload whose digest does not match, a record of a type the tool does not
define) is ignored, never trusted. The store is bounded: after a run that wrote entries,
`trim()` deletes the least recently used ones beyond `max_bytes`. Every failure to read or
write is a miss: the cache only ever saves work.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import io
import os
import pickle
import sys
import tempfile
import time
from typing import Any

from codemod.util.cache_dir import user_cache_dir

FORMAT = b"decouple-cache 1"
MAX_BYTES = 256 * 1024 * 1024  # the whole store; a PyTorch checkout's entries take a few MB
TRIM_TO = 0.75  # of max_bytes, so that trimming does not run again at the next entry
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # anything larger is not an entry of ours
_TOUCH_AFTER_S = 3600.0  # a hit refreshes the entry's time (least recently used) at most hourly
_TEMP_PREFIX = ".tmp-"
_STALE_TEMP_S = 3600.0  # a temporary file this old was left by a run that died


def key(*parts: bytes | str) -> str:
    """The digest of `parts` (each length-prefixed, so no two lists of parts collide)."""
    digest = hashlib.sha256()  # the fastest of hashlib's here (SHA extensions): 17 MB in 27 ms
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class Cache:
    def __init__(self, folder: str, max_bytes: int = MAX_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.written = 0  # entries this process wrote (trim() only runs after writes)

    @classmethod
    def open(cls, max_bytes: int = MAX_BYTES) -> Cache | None:
        """The store in the user's cache folder; None when it cannot be created or written."""
        folder = os.path.join(user_cache_dir(), "results", "v1")
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            return None
        return cls(folder, max_bytes) if os.access(folder, os.W_OK | os.X_OK) else None

    def _path(self, key: str) -> str:
        return os.path.join(self.folder, key[:2], key[2:])

    def get(self, key: str) -> bytes | None:
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if not _ours(st) or st.st_size > MAX_ENTRY_BYTES:
                    return None
                data = f.read()
        except (OSError, ValueError):
            return None
        magic, _, rest = data.partition(b"\n")
        stored_key, _, rest = rest.partition(b"\n")
        digest, _, payload = rest.partition(b"\n")
        if magic != FORMAT or stored_key != key.encode() or digest != _digest(payload).encode():
            return None
        if time.time() - st.st_mtime > _TOUCH_AFTER_S:
            try:
                os.utime(path)
            except OSError:
                pass
        return payload

    def put(self, key: str, payload: bytes) -> None:
        path = self._path(key)
        entry = b"\n".join((FORMAT, key.encode(), _digest(payload).encode(), payload))
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=os.path.dirname(path))
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(entry)
            os.replace(tmp, path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return
        self.written += 1

    def get_value(self, key: str) -> Any | None:
        """The record stored under `key` by put_value, or None."""
        payload = self.get(key)
        if payload is None:
            return None
        try:
            return _RecordUnpickler(payload).load()
        except Exception:  # a payload of ours never fails to load: anything else is a miss
            return None

    def put_value(self, key: str, value: Any) -> None:
        """Store a record made of builtin values and the dataclasses and enums of the tool."""
        self.put(key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def trim(self) -> None:
        """Delete the least recently used entries while the store holds more than max_bytes
        (down to TRIM_TO of it), and temporary files that a dead run left behind."""
        entries: list[tuple[float, int, str]] = []
        now = time.time()
        try:
            shards = [e.path for e in os.scandir(self.folder) if e.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for shard in shards:
            try:
                listing = list(os.scandir(shard))
            except OSError:
                continue
            for e in listing:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if e.name.startswith(_TEMP_PREFIX):
                    if now - st.st_mtime > _STALE_TEMP_S:
                        _unlink(e.path)
                    continue
                entries.append((st.st_mtime, st.st_size, e.path))
        total = sum(size for _, size, _ in entries)
        if total <= self.max_bytes:
            return
        for _, size, path in sorted(entries):
            if total <= self.max_bytes * TRIM_TO:
                break
            _unlink(path)
            total -= size


class _RecordUnpickler(pickle.Unpickler):
    """Loads only builtin values and the dataclasses and enums of modules of the tool that this
    process has already imported: a payload naming anything else (a function, a module to
    import) is refused, whoever wrote it."""

    def __init__(self, payload: bytes) -> None:
        super().__init__(io.BytesIO(payload))

    def find_class(self, module: str, name: str) -> Any:
        found = _RECORD_TYPES.get((module, name))
        if found is not None and sys.modules.get(module) is found[1]:
            return found[0]
        loaded = sys.modules.get(module)
        if module.partition(".")[0] in ("codemod", "transforms") and loaded is not None and "." not in name:
            record = getattr(loaded, name, None)
            if isinstance(record, type) and (dataclasses.is_dataclass(record) or issubclass(record, enum.Enum)):
                _RECORD_TYPES[(module, name)] = (record, loaded)
                return record
        raise pickle.UnpicklingError(f"not a record of the tool: {module}.{name}")


# (module, name) -> (the record type, its module): what find_class allowed once (in a cached
# check, every entry names the same half-dozen types).
_RECORD_TYPES: dict[tuple[str, str], tuple[type, Any]] = {}


def _digest(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def _ours(st: os.stat_result) -> bool:
    """Written by this user (where files have owners)."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or st.st_uid == getuid()


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
