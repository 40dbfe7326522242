"""Reading sources exactly and writing them atomically.

Sources are read as bytes and decoded the way the interpreter would (PEP 263
cookie, BOM), without newline translation, so an edit can be written back
byte-for-byte outside the lines it touched.
"""

from __future__ import annotations

import io
import os
import signal
import stat
import tempfile
import tokenize
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# Above this size a file is not processed: LibCST (every output is verified with it) needs
# about 600 bytes of memory per byte of source; a whole run peaked at 900 MB for a 0.95 MB
# file. The largest test files in PyTorch are about 0.5 MB.
MAX_SOURCE_BYTES = 1024 * 1024


class SourceError(Exception):
    """A file that cannot be treated as Python source (binary, undecodable, unreadable)."""


@dataclass(frozen=True, kw_only=True)
class Source:
    text: str
    encoding: str  # as detected; "utf-8-sig" means the file starts with a BOM
    mtime_ns: int
    size: int


@dataclass(frozen=True, kw_only=True)
class RawSource:
    """A file's bytes as read, with the stat that `write_atomic(expect=...)` compares."""

    data: bytes
    mtime_ns: int
    size: int

    def decode(self) -> Source:
        return decode_source(self.data, self.mtime_ns, self.size)


def read_source(path: str) -> Source:
    return read_bytes(path).decode()


def read_bytes(path: str) -> RawSource:
    """The bytes of a regular file of at most MAX_SOURCE_BYTES (SourceError otherwise)."""
    try:
        # stat before open: opening a FIFO for reading would block until someone writes to it.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise SourceError("not a regular file")
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_size > MAX_SOURCE_BYTES:
                raise SourceError(
                    f"too large: {st.st_size:,} bytes (the limit is {MAX_SOURCE_BYTES:,}, to keep memory "
                    "bounded); not processed: label it by hand or split it"
                )
            data = f.read()
    except OSError as e:
        raise SourceError(f"unreadable: {e.strerror or e}") from None
    return RawSource(data=data, mtime_ns=st.st_mtime_ns, size=st.st_size)


def decode_source(data: bytes, mtime_ns: int = 0, size: int | None = None) -> Source:
    """Decode bytes as the interpreter would (for a file, or standard input)."""
    if b"\0" in data:
        raise SourceError("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as e:
        raise SourceError(f"cannot decode: {e}") from None
    return Source(text=text, encoding=encoding, mtime_ns=mtime_ns, size=len(data) if size is None else size)


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP wait (pending, delivered afterwards) while the body runs: a
    write in it is whole or undone when an interrupt lands, never half-done with its
    temporary file left behind. Without pthread_sigmask (Windows) nothing is held: the write is
    still atomic, only its cleanup on an interrupt is unguarded."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def write_atomic(path: str, data: bytes, *, expect: Source | None = None) -> None:
    """Replace `path` with `data` via a temporary file in the same folder and a rename.

    A symlink is written through: the temporary file goes next to the real target and is
    renamed onto it, so the link stays a link. The file mode is kept. With `expect`, refuse
    when the file changed on disk since it was read (someone else is editing it): better no
    edit than a lost one.
    """
    path = os.path.realpath(path)
    st = os.stat(path)
    if expect is not None and (st.st_mtime_ns, st.st_size) != (expect.mtime_ns, expect.size):
        raise OSError(f"{path} changed on disk while it was being processed; not written")
    folder = os.path.dirname(os.path.abspath(path))
    with signals_held():
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".decouple-tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, st.st_mode & 0o7777)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
