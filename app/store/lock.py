"""One Fathom process per data dir.

The window and the CLI take this lock before they open the store, so a second
Fathom on the same data dir gets a sentence instead of a stack trace. The lock
is an OS file lock (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows):
the OS drops it when the holder closes it or dies, so a crash never leaves a
stale lock behind. The file keeps the holder's process id, for the curious.
:func:`is_locked_elsewhere` tries the same kind of lock on another file and lets
it go (how a Milvus Lite data dir held by another process is recognised).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from app.core.errors import StoreLocked
from app.core.paths import AppPaths

LOCKED_MESSAGE = "This library is already open by another Fathom window."
_holder_name: list[
    str
] = []  # what this process calls itself in its lock file ("'fathom ingest' in a terminal")


@contextlib.contextmanager
def holder_named(name: str) -> Iterator[None]:
    """While inside, a lock this process takes names it ``name``: another Fathom refused the
    library then says what holds it (a terminal ingest, not "another Fathom window")."""
    _holder_name.append(name)
    try:
        yield
    finally:
        _holder_name.pop()


def locked_message(paths: AppPaths) -> str:
    """Whose the lock is, as its holder named itself (the window does not: the usual case)."""
    try:
        lines = paths.lock_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return LOCKED_MESSAGE
    if len(lines) < 2 or not lines[1].strip():
        return LOCKED_MESSAGE
    return f"This library is already open by {lines[1].strip()[:80]} (process {lines[0].strip()})."


LOCKED_HINT = (
    "Close it (or wait for its ingest to finish) and try again; "
    "to run two at once, give the second its own data folder with FATHOM_HOME."
)


class InstanceLock:
    """A held lock on ``AppPaths.lock_file``; release with :meth:`close`."""

    def __init__(self, fd: int, path: str) -> None:
        self._fd: int | None = fd
        self.path = path

    @property
    def held(self) -> bool:
        return self._fd is not None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _unlock(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> InstanceLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def acquire_instance_lock(paths: AppPaths) -> InstanceLock:
    """Take the data dir's lock without waiting; raise StoreLocked if another process has it."""
    paths.data_dir.mkdir(parents=True, exist_ok=True)
    path = str(paths.lock_file)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(fd)
    except OSError:
        os.close(fd)
        raise StoreLocked(locked_message(paths), LOCKED_HINT) from None
    try:
        os.ftruncate(fd, 0)
        name = f"{_holder_name[-1]}\n" if _holder_name else ""
        os.write(fd, f"{os.getpid()}\n{name}".encode())
    except OSError:
        pass  # the pid is a courtesy; the lock itself is what counts
    return InstanceLock(fd, path)


def holder_pid(paths: AppPaths) -> int | None:
    """The process id the data dir's lock file names: its holder's, or the last one's
    (None when there is none to read)."""
    try:
        return int(paths.lock_file.read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def is_locked_elsewhere(path: str, *, record_lock: bool = False) -> bool:
    """True when another holder has an OS lock on the file at ``path`` (no file: False).

    ``record_lock``: the holder uses POSIX record locks (``fcntl.lockf``, as the native
    Milvus Lite does), which on Linux and macOS are separate from ``flock`` locks."""
    if not os.path.exists(path):
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        lock, unlock = (_lock_record, _unlock_record) if record_lock else (_lock, _unlock)
        try:
            lock(fd)
        except OSError:
            return True
        unlock(fd)
        return False
    finally:
        os.close(fd)


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        except OSError:
            pass

    _lock_record, _unlock_record = _lock, _unlock

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock_record(fd: int) -> None:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock_record(fd: int) -> None:
        fcntl.lockf(fd, fcntl.LOCK_UN)
