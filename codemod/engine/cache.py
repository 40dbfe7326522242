"""A content-addressed store of per-file results in the user's cache folder.

A key is a digest of everything a result depends on (`key(...)`: the caller names the parts,
for the codemod the file's bytes, the tool and every option: `file_results.py`); `get(key)` and
`put(key, payload)` read and write the bytes stored under it, `get_value` / `put_value` a record
of the tool's own types. The survey keeps its per-file results here too (`codemod/survey/run.py`),
under keys of its own.

The store is one SQLite file, `<user cache>/results/v2/results.sqlite3` (`codemod/util/cache_dir.py`).
A file per entry (the layout of `results/v1`, no longer read) cost a first check of 5,000 files
3-7 s of the kernel's time creating them on this project's machines; a row costs tens of
microseconds. `put` only collects an entry; `flush()` writes what was collected in one
transaction, so a run writes once (and every FLUSH_EVERY entries), and a worker process hands its
entries to the process that runs the pool (`pending()` / `adopt()`), the only one that writes.
Each row holds its key, the digest of the key and payload together, and the payload; SQLite's
locks let concurrent runs share the file (at worst they write the same entry twice). The digest is
keyed (HMAC-SHA256) with a secret of this store (`secret` beside the database: 32 random bytes,
this user's file, made once): an entry rewritten by hand, or by a test that found the folder,
does not verify without it, so only the tool's own writes are ever read (no test's environment
names this folder: the A/B arms get no `DECOUPLE_*` variable). A file that is not exactly one
this store wrote (another user's file, a link, another program's database, a row whose payload
does not match its digest, a record of a type the tool does not define) is ignored, never
trusted, and the entry computed again; a file SQLite finds is not a database, or damaged, is
replaced. The store
is bounded: a flush that leaves more than `max_bytes` of payloads deletes the least recently used
entries. Every failure to read or write is a miss: the cache only ever saves work.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import hmac
import io
import os
import pickle
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from codemod.util.cache_dir import user_cache_dir

if TYPE_CHECKING:
    import sqlite3

DB_NAME = "results.sqlite3"
SECRET_NAME = "secret"
SECRET_BYTES = 32
APPLICATION_ID = 0x64637031  # "dcp1": the database is this store's, in this layout
MAX_BYTES = 256 * 1024 * 1024  # the payloads of the whole store; a PyTorch checkout's take a few MB
TRIM_TO = 0.75  # of max_bytes, so that trimming does not run again at the next flush
FLUSH_EVERY = 1024  # entries collected before they are written (a run's memory stays bounded)
_TOUCH_AFTER_S = 3600.0  # a hit refreshes the entry's time (least recently used) at most hourly
_LOCK_TIMEOUT_S = 30.0  # another run's transaction is waited for this long, then the entries dropped
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries ("
    "key TEXT PRIMARY KEY, digest TEXT NOT NULL, size INTEGER NOT NULL, used REAL NOT NULL, payload BLOB NOT NULL)"
)


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
        self._pending: dict[str, bytes] = {}  # key -> payload, collected by put
        self._touched: set[str] = set()  # hits whose time is to be refreshed
        self._db: sqlite3.Connection | None = None
        self._pid = 0  # the process the connection belongs to (a forked worker opens its own)
        self._secret = b""  # the store's secret, read with the connection
        self._unusable = False  # this process found the file unusable: every get is a miss

    @classmethod
    def open(cls, max_bytes: int = MAX_BYTES) -> Cache | None:
        """The store in the user's cache folder; None when it cannot be created or written."""
        folder = os.path.join(user_cache_dir(), "results", "v2")
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            return None
        return cls(folder, max_bytes) if os.access(folder, os.W_OK | os.X_OK) else None

    def __reduce__(self) -> tuple[type[Cache], tuple[str, int]]:
        """A worker started by spawning gets the folder and the bound, never a connection."""
        return (Cache, (self.folder, self.max_bytes))

    @property
    def path(self) -> str:
        return os.path.join(self.folder, DB_NAME)

    def get(self, key: str) -> bytes | None:
        if key in self._pending:
            return self._pending[key]
        db = self._connection()
        if db is None:
            return None
        try:
            row = db.execute("SELECT digest, used, payload FROM entries WHERE key = ?", (key,)).fetchone()
        except _errors():
            return None
        if row is None or not isinstance(row[2], bytes) or not isinstance(row[0], str):
            return None
        if not hmac.compare_digest(row[0], _digest(self._secret, key, row[2])):
            return None
        if not isinstance(row[1], float) or time.time() - row[1] > _TOUCH_AFTER_S:
            self._touched.add(key)
        return row[2]

    def put(self, key: str, payload: bytes) -> None:
        self._pending[key] = payload
        if len(self._pending) >= FLUSH_EVERY:  # (a worker hands its entries over after each file)
            self.flush()

    def pending(self) -> dict[str, bytes]:
        """The entries collected and not written, handed over (a worker gives them to its parent)."""
        taken, self._pending = self._pending, {}
        return taken

    def adopt(self, entries: dict[str, bytes]) -> None:
        """Entries a worker collected, to be written by this process."""
        for k, payload in entries.items():
            self.put(k, payload)

    def flush(self) -> None:
        """Write the entries collected and the hits' times in one transaction, then keep the
        store within max_bytes. On any failure (a lock held past the timeout, a full disk) the
        entries are dropped: the next run computes them again."""
        entries, touched = self.pending(), self._touched
        self._touched = set()
        if not entries and not touched:
            return
        db = self._connection()
        if db is None:
            return
        now = time.time()
        try:
            with _transaction(db):
                db.executemany(
                    "INSERT OR REPLACE INTO entries (key, digest, size, used, payload) VALUES (?, ?, ?, ?, ?)",
                    [(k, _digest(self._secret, k, p), len(p), now, p) for k, p in entries.items()],
                )
                db.executemany("UPDATE entries SET used = ? WHERE key = ?", [(now, k) for k in touched])
            if entries:
                self._trim(db)
        except _errors():
            return

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

    def _trim(self, db: sqlite3.Connection) -> None:
        """Delete the least recently used entries while the payloads exceed max_bytes (down to
        TRIM_TO of it)."""
        (total,) = db.execute("SELECT COALESCE(SUM(size), 0) FROM entries").fetchone()
        if total <= self.max_bytes:
            return
        doomed = []
        for k, size in db.execute("SELECT key, size FROM entries ORDER BY used, key").fetchall():
            if total <= self.max_bytes * TRIM_TO:
                break
            doomed.append((k,))
            total -= size
        with _transaction(db):
            db.executemany("DELETE FROM entries WHERE key = ?", doomed)

    def _connection(self) -> sqlite3.Connection | None:
        """This process's connection to the store (a forked worker never uses its parent's),
        None when the file is not one this store may use."""
        if self._pid == os.getpid():
            return self._db
        if self._db is not None:  # the parent's, inherited by a fork: SQLite forbids using it,
            _INHERITED.append(self._db)  # and closing it here could touch the parent's locks
        self._pid, self._db = os.getpid(), None
        if self._unusable:
            return None
        try:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
        except OSError:
            self._unusable = True
            return None
        secret = _secret(os.path.join(self.folder, SECRET_NAME))
        if secret is None:
            self._unusable = True
            return None
        self._secret = secret
        for attempt in range(2):
            state = _file_state(self.path)
            if state is _FileState.FOREIGN:
                break
            try:
                self._db = _connect(self.path)
                return self._db
            except _NotOurs:
                break
            except _errors() as e:
                if state is not _FileState.OURS or attempt or not _unreadable(e):
                    break  # (locked past the timeout, an I/O error: a miss for this run, the file kept)
                _unlink(self.path)  # our own file, which SQLite cannot read: start it again
                _unlink(self.path + "-journal")
        self._unusable = True
        return None


class _FileState(enum.Enum):
    MISSING = "missing"
    OURS = "ours"  # a regular file of this user
    FOREIGN = "foreign"  # a link, another kind of file, another user's


def _file_state(path: str) -> _FileState:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return _FileState.MISSING
    except OSError:
        return _FileState.FOREIGN
    getuid = getattr(os, "getuid", None)
    mine = getuid is None or st.st_uid == getuid()
    return _FileState.OURS if stat.S_ISREG(st.st_mode) and mine else _FileState.FOREIGN


class _NotOurs(Exception):
    """A database of another program (or of another layout of this store)."""


def _connect(path: str) -> sqlite3.Connection:
    import sqlite3  # here: a run without the cache never loads it

    db = sqlite3.connect(path, timeout=_LOCK_TIMEOUT_S, isolation_level=None)
    try:
        (app,) = db.execute("PRAGMA application_id").fetchone()
        if app != APPLICATION_ID:
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if app != 0 or tables:
                raise _NotOurs(path)
            with _transaction(db):  # a new file: this store's from now on
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(_SCHEMA)
        db.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        db.close()
        raise
    return db


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One transaction (the connection commits each statement on its own otherwise), holding
    the write lock from its start so that two runs never interleave their writes."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _unreadable(e: BaseException) -> bool:
    """Not a database, or a damaged one (not a lock nor an I/O error: those pass)."""
    import sqlite3

    return isinstance(e, sqlite3.DatabaseError) and not isinstance(e, sqlite3.OperationalError)


def _errors() -> tuple[type[BaseException], ...]:
    """What a read or write of the store may raise: a miss, never the run's failure."""
    import sqlite3

    return (sqlite3.Error, OSError)


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


# Connections a forked worker inherited: kept, never used nor closed (see Cache._connection).
_INHERITED: list[Any] = []

# (module, name) -> (the record type, its module): what find_class allowed once (in a cached
# check, every entry names the same half-dozen types).
_RECORD_TYPES: dict[tuple[str, str], tuple[type, Any]] = {}


def _digest(secret: bytes, key: str, payload: bytes) -> str:
    """Of the key and the payload, keyed with the store's secret: a row's payload copied under
    another key does not match, nor one written by anyone without the secret."""
    return hmac.new(secret, key.encode() + b"\n" + payload, hashlib.sha256).hexdigest()


def _secret(path: str) -> bytes | None:
    """The store's secret, made when there is none; None when the file is not one this store
    made (a link, another user's, another length): the store is not used then."""
    for _ in range(2):
        if _file_state(path) is _FileState.MISSING:
            _make_secret(path)
        if _file_state(path) is not _FileState.OURS:
            return None
        try:
            with open(path, "rb") as fh:
                data = fh.read(SECRET_BYTES + 1)
        except FileNotFoundError:
            continue  # (deleted meanwhile: made again)
        except OSError:
            return None
        return data if len(data) == SECRET_BYTES else None
    return None


def _make_secret(path: str) -> None:
    """Write the secret whole under a name of its own, then link it into place: a concurrent run
    reads either no file or the whole one that won."""
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, os.urandom(SECRET_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # another run made it first: theirs is read
        except OSError:  # a file system without hard links
            os.replace(temp, path)
    except OSError:
        pass  # (the folder cannot be written: _secret says)
    finally:
        _unlink(temp)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
