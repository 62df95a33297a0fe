"""Room on the disk before a write: indexing stops with a sentence while some space is
left, instead of Milvus failing mid-write on a full disk (it retried for minutes, then
raised an RPC error) and SQLite with it.

A write needs :data:`MIN_FREE_BYTES` left over (Milvus Lite flushes and compacts
segments in files beside its database, SQLite keeps a journal, and the system needs
some too) plus :data:`BYTES_PER_CHUNK` for each chunk it adds."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from app.core.errors import StoreError

MIN_FREE_BYTES = 256 * 1024 * 1024
# a chunk on disk: its text and metadata, a 384-float vector, its BM25 postings and index
# entries (about 4 KB measured on the Milvus docs), with room for compaction's copies
BYTES_PER_CHUNK = 16 * 1024


class DiskFull(StoreError):
    """The disk that holds the library has too little space left for the next write."""


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:,.0f} MB"


def free_bytes(folder: Path) -> int:
    return shutil.disk_usage(folder).free


def room_problem(folders: Iterable[Path], chunks: int = 0) -> DiskFull | None:
    """The error to raise when a write of ``chunks`` chunks would leave one of these
    folders' disks with less than :data:`MIN_FREE_BYTES`; None when there is room."""
    needed = MIN_FREE_BYTES + chunks * BYTES_PER_CHUNK
    for folder in dict.fromkeys(folders):
        free = free_bytes(folder)
        if free < needed:
            return DiskFull(
                f"The disk that holds the library ({folder}) has only {_mb(free)} free, so indexing "
                "stopped before filling it. What was indexed is kept.",
                f"Free some space (Fathom leaves {_mb(MIN_FREE_BYTES)} free for the search index), "
                "then index again: it goes on where it stopped.",
            )
    return None


def ensure_room(folders: Iterable[Path], chunks: int = 0) -> None:
    """Raise :class:`DiskFull` unless a write of ``chunks`` chunks fits (see :func:`room_problem`)."""
    problem = room_problem(folders, chunks)
    if problem is not None:
        raise problem
