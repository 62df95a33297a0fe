"""Moving a search index written by Milvus Lite 3.x to the native Milvus Lite.

Milvus Lite 3.x (pure Python: what Fathom used before, and still uses on Windows)
keeps a database in a folder; the native engine (2.5, Linux and macOS) keeps it in
one file and cannot read the folder. Rather than converting and embedding every
document again, the rows (text, metadata and vectors) are read from 3.x's files
with pyarrow and written into a new native database:

    milvus.db                  3.x's folder, untouched until the new file is complete
    milvus.moving.db           the new native database while it is written
    milvus.db.lite3-backup     3.x's folder once the new file is in place (kept)

The folder per collection: ``schema.json`` (Fathom's name, embedding model and
dimension in its properties), ``manifest.json`` (the Parquet files in force) and,
per partition, ``data/*.parquet`` (rows, each with its write sequence ``_seq``) and
``delta/*.parquet`` (deleted primary keys with the ``_seq`` of the delete). A row is
moved when it is the newest version of its chunk id and no later delete removed it.
Rows only in 3.x's write-ahead log were never flushed, so no indexed document
relies on them (the Ledger marks a document indexed only once its chunks are
flushed); the library's recovery treats those documents as unfinished.

A crash leaves 3.x's folder in place (the move starts again from the beginning) or
the new file in place with the folder beside it; nothing is deleted.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.core.errors import StoreError, StoreLocked
from app.core.models import Chunk
from app.store.milvus_schema import (
    OUTPUT_FIELDS,
    PROP_DIM,
    PROP_MODEL,
    PROP_NAME,
    row_to_chunk,
)

log = logging.getLogger(__name__)

MOVING_SUFFIX = ".moving.db"  # in place of ".db": Milvus Lite opens only paths ending in .db
BACKUP_SUFFIX = ".lite3-backup"
ROW_FIELDS = tuple(OUTPUT_FIELDS)  # what a row of the vector store holds, vector aside
BATCH_ROWS = 2048


@dataclass
class MoveReport:
    """What a move did: collections and chunks moved, where 3.x's folder now is."""

    collections: dict[str, int] = field(default_factory=dict)  # Fathom name: chunks moved
    backup: str = ""
    seconds: float = 0.0

    @property
    def chunks(self) -> int:
        return sum(self.collections.values())

    def describe(self) -> str:
        return (
            f"Moved the search index to the native Milvus Lite: {self.chunks:,} chunks in "
            f"{len(self.collections)} collection{'' if len(self.collections) == 1 else 's'}, in {self.seconds:.1f} s, "
            "without embedding anything again. "
            f"The old index is kept at {self.backup}; delete it once Fathom works as before."
        )


@dataclass(frozen=True)
class Lite3Collection:
    """One collection in a Milvus Lite 3.x folder."""

    folder: Path
    name: str  # Fathom's name
    embedding_model: str
    dimension: int

    def data_files(self) -> list[Path]:
        return self._files("data_files")

    def delta_files(self) -> list[Path]:
        return self._files("delta_files")

    def _files(self, key: str) -> list[Path]:
        manifest = json.loads((self.folder / "manifest.json").read_text(encoding="utf-8"))
        return [
            self.folder / "partitions" / partition / rel
            for partition, files in sorted((manifest.get("partitions") or {}).items())
            for rel in files.get(key) or []
        ]


def is_lite3_folder(path: str) -> bool:
    """Whether ``path`` (a Milvus Lite database path) is a folder written by Milvus Lite 3.x."""
    return os.path.isdir(path)


def moving_path(path: str) -> str:
    """Where the native database is written before it takes ``path``'s place."""
    return path.removesuffix(".db") + MOVING_SUFFIX


def finish_interrupted_move(path: str) -> None:
    """A move cut short between its two renames: put the new file in place."""
    moving = moving_path(path)
    if not os.path.exists(path) and os.path.isfile(moving) and os.path.isdir(path + BACKUP_SUFFIX):
        os.replace(moving, path)
        log.info("finished moving the search index to the native Milvus Lite (%s)", path)


def lite3_collections(folder: str) -> list[Lite3Collection]:
    """The Fathom collections in 3.x's folder (others are left out, with a log line)."""
    found = []
    root = Path(folder) / "collections"
    for schema_file in sorted(root.glob("*/schema.json")):
        schema = json.loads(schema_file.read_text(encoding="utf-8"))
        props = {str(k): str(v) for k, v in (schema.get("properties") or {}).items()}
        if PROP_NAME not in props or not (schema_file.parent / "manifest.json").is_file():
            log.warning("not moving %s: not a Fathom collection", schema_file.parent.name)
            continue
        found.append(
            Lite3Collection(
                schema_file.parent,
                props[PROP_NAME],
                props.get(PROP_MODEL, ""),
                int(props.get(PROP_DIM, "0") or 0),
            )
        )
    return found


def live_rows(collection: Lite3Collection) -> Iterator[tuple[list[Chunk], list[list[float]]]]:
    """The rows in force (newest version of each chunk id, not deleted after it), in batches."""
    import pyarrow.parquet as pq

    newest: dict[str, int] = {}
    for path in collection.data_files():
        table = pq.read_table(path, columns=["chunk_id", "_seq"])
        for chunk_id, seq in zip(
            table.column("chunk_id").to_pylist(), table.column("_seq").to_pylist(), strict=True
        ):
            if seq > newest.get(chunk_id, -1):
                newest[chunk_id] = seq
    deleted: dict[str, int] = {}
    for path in collection.delta_files():
        table = pq.read_table(path, columns=["chunk_id", "_seq"])
        for chunk_id, seq in zip(
            table.column("chunk_id").to_pylist(), table.column("_seq").to_pylist(), strict=True
        ):
            deleted[chunk_id] = max(seq, deleted.get(chunk_id, -1))
    for path in collection.data_files():
        parquet = pq.ParquetFile(path)
        for batch in parquet.iter_batches(
            batch_size=BATCH_ROWS, columns=["_seq", *ROW_FIELDS, "dense"]
        ):
            rows = batch.to_pylist()
            keep = [
                row
                for row in rows
                if row["_seq"] == newest[row["chunk_id"]]
                and row["_seq"] > deleted.get(row["chunk_id"], -1)
            ]
            if keep:
                yield (
                    [row_to_chunk(_entity(row)) for row in keep],
                    [list(row["dense"]) for row in keep],
                )


def _entity(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row[name] for name in ROW_FIELDS}


def start_move(path: str) -> tuple[str, list[Lite3Collection]]:
    """Before a move: the path to write the native database at (a leftover of a move cut
    short is deleted) and the collections to move."""
    moving, backup = moving_path(path), path + BACKUP_SUFFIX
    if os.path.exists(backup):
        raise StoreError(
            f"The search index {path} was written by Milvus Lite 3.x, and {backup} is in the way of moving it.",
            f"Move {os.path.basename(backup)} somewhere else (or delete it if it is an old copy), then open "
            "Fathom again.",
        )
    if os.path.exists(moving):
        os.remove(moving)  # a move cut short before its end: start again
    collections = lite3_collections(path)
    log.info(
        "moving the search index %s to the native Milvus Lite (%d collections)",
        path,
        len(collections),
    )
    return moving, collections


def finish_move(path: str) -> str:
    """After the native database is written and closed: 3.x's folder aside, the new file
    in its place. Returns where the folder now is."""
    backup = path + BACKUP_SUFFIX
    os.replace(path, backup)
    os.replace(moving_path(path), path)
    return backup


def lite3_database_to_move(uri: str) -> str | None:
    """With the native Milvus Lite installed: the path of a 3.x database at ``uri`` to
    move into a native one (a move a crash cut short is finished first). None: nothing."""
    from app.store.lock import LOCKED_HINT, LOCKED_MESSAGE, is_locked_elsewhere
    from app.store.milvus_connection import is_server_uri, lite_major_version

    if is_server_uri(uri) or not 0 < lite_major_version() < 3:
        return None
    path = os.path.abspath(os.path.expanduser(uri))
    finish_interrupted_move(path)
    if not is_lite3_folder(path):
        return None
    if is_locked_elsewhere(os.path.join(path, "LOCK")):  # an older Fathom still has it open
        raise StoreLocked(LOCKED_MESSAGE, LOCKED_HINT)
    return path
