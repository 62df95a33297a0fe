"""What an SQLite error on opening the catalog or the history means to a person.

Only a file SQLite cannot read as a database is damaged; a full disk, a folder that may
not be written, or a file another program holds are said as what they are, and never
with the advice to move the file away (that would lose the library for nothing)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from app.core.errors import StoreError
from app.store.disk_room import MIN_FREE_BYTES, DiskFull, free_bytes

_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_DISK = ("SQLITE_FULL", "SQLITE_IOERR")
_NOT_WRITABLE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")


def open_error(what: str, path: Path, exc: sqlite3.Error, damaged_hint: str) -> StoreError:
    """The error to raise when ``what`` ("The catalog") at ``path`` failed to open with ``exc``."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(_DAMAGED):
        return StoreError(f"{what} {path} is damaged ({exc}).", damaged_hint)
    folder = path.parent
    free = _free(folder) if name.startswith(_DISK) else MIN_FREE_BYTES
    if free < MIN_FREE_BYTES:
        return DiskFull(
            f"The disk that holds the library ({folder}) is full ({free / 1024 / 1024:,.0f} MB free), "
            f"so {what[0].lower() + what[1:]} {path} cannot be opened. Nothing is lost.",
            "Free some space, then open Fathom again.",
        )
    if name.startswith(_NOT_WRITABLE):
        return StoreError(
            f"{what} {path} cannot be opened for writing ({exc}).",
            f"Check that you may write to {folder} and that no other program holds the file. Nothing is lost.",
        )
    return StoreError(
        f"{what} {path} could not be opened ({exc}).", "Nothing was changed; try again."
    )


def _free(folder: Path) -> int:
    try:
        return free_bytes(folder)
    except OSError:
        return MIN_FREE_BYTES  # cannot tell: not said to be full
