"""The catalog: which collections exist, which files each holds and in what state.

SQLite through sqlite-utils, in WAL mode, at ``AppPaths.catalog_file``. The
research-run tables of ``app/store/research_runs.py`` share the file; the tables
here are ``collections``, ``documents``, ``ingest_roots`` and ``ingest_runs``.

One connection guarded by a lock, so any thread may call any method.

One job, not split: the library's own record — its collections, their files,
the folders they came from and the ingests that ran over them — behind that one
connection and lock, so that removing a document or a collection, which touches
several of these tables, commits as one.

The catalog only stores state; the order in which a document's state and its
chunks in Milvus change together (what makes a crash recoverable) is kept by
``app/store/ledger.py``, the only writer of document rows and collection
removals.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

import sqlite_utils

from app.core.collection_names import no_such_collection
from app.core.errors import CollectionNotFound
from app.core.models import Collection, Document, DocumentStatus, IngestCounts
from app.store.sqlite_errors import open_error

_COLLECTIONS = "collections"
_DOCUMENTS = "documents"
_ROOTS = "ingest_roots"
_RUNS = "ingest_runs"

DAMAGED_HINT = "Move it away to start an empty catalog; the documents will need to be added again."
ACTIVE = "active"  # a collection in use
REMOVING = (
    "removing"  # a collection being removed: hidden, and its removal is finished at the next start
)
IngestRunStatus = Literal["running", "finished", "cancelled", "failed", "interrupted"]
COUNT_NAMES = tuple(f.name for f in fields(IngestCounts))  # an ingest run's count columns


@dataclass(frozen=True, kw_only=True)
class IngestRun(IngestCounts):
    run_id: int
    collection: str
    started: float
    finished: float | None
    status: IngestRunStatus


class Catalog:
    """Collections, documents, ingest roots and ingest runs in SQLite."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """``read_only``: opened without writing anything (no table created, no lock
        needed), so ``fathom collections`` works while a window holds the data dir."""
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            if read_only:
                conn = sqlite3.connect(
                    path.absolute().as_uri() + "?mode=ro",
                    uri=True,
                    check_same_thread=False,
                    timeout=10.0,
                )
            else:
                conn = sqlite3.connect(str(path), check_same_thread=False, timeout=10.0)
        except sqlite3.Error as exc:
            raise open_error("The catalog", path, exc, DAMAGED_HINT) from exc
        self._lock = threading.RLock()
        self._conn = conn
        self.db = sqlite_utils.Database(conn)
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            if read_only:
                conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")  # a damaged file says so now
                return
            self.db.enable_wal()
            conn.execute("PRAGMA synchronous = NORMAL")
            self._create_tables()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise open_error("The catalog", path, exc, DAMAGED_HINT) from exc

    def _create_tables(self) -> None:
        db = self.db
        with self._lock, self._conn:
            db.table(_COLLECTIONS).create(
                {
                    "name": str,
                    "description": str,
                    "embedding_model": str,
                    "dimension": int,
                    "created": float,
                    "updated": float,
                },
                pk="name",
                not_null={"name"},
                defaults={"description": "", "embedding_model": "", "dimension": 0},
                if_not_exists=True,
            )
            # catalogs written before removal was marked
            if "state" not in db.table(_COLLECTIONS).columns_dict:
                db.table(_COLLECTIONS).add_column("state", str, not_null_default=ACTIVE)
            # catalogs written before watched folders
            if "watched" not in db.table(_COLLECTIONS).columns_dict:
                db.table(_COLLECTIONS).add_column("watched", int, not_null_default=1)
            db.table(_DOCUMENTS).create(
                {
                    "doc_id": str,
                    "collection": str,
                    "path": str,
                    "content_hash": str,
                    "size": int,
                    "mtime": float,
                    "status": str,
                    "error": str,
                    "chunk_count": int,
                    "title": str,
                    "updated": float,
                },
                pk="doc_id",
                not_null={"doc_id", "collection", "path", "status"},
                defaults={
                    "content_hash": "",
                    "error": "",
                    "chunk_count": 0,
                    "title": "",
                    "size": 0,
                },
                if_not_exists=True,
            )
            db.table(_DOCUMENTS).create_index(
                ["collection", "path"], unique=True, if_not_exists=True
            )
            db.table(_DOCUMENTS).create_index(["collection", "status"], if_not_exists=True)
            db.table(_DOCUMENTS).create_index(["collection", "content_hash"], if_not_exists=True)
            db.table(_ROOTS).create(
                {"collection": str, "path": str, "added": float},
                pk=("collection", "path"),
                if_not_exists=True,
            )
            db.table(_RUNS).create(
                {
                    "run_id": int,
                    "collection": str,
                    "started": float,
                    "finished": float,
                    "status": str,
                    "indexed": int,
                    "unchanged": int,
                    "skipped": int,
                    "failed": int,
                    "removed": int,
                    "chunks": int,
                },
                pk="run_id",
                if_not_exists=True,
            )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Several writes as one (rolled back together on error)."""
        with self._lock, self._conn:
            yield

    @classmethod
    def open_read_only(cls, path: Path) -> Catalog | None:
        """The catalog opened read-only (no lock taken, nothing written); None when there is
        none yet (no file, or no collection ever made). StoreError when it cannot be read."""
        if not path.exists():
            return None
        catalog = cls(path, read_only=True)
        if not catalog.db.table(_COLLECTIONS).exists():
            catalog.close()
            return None
        return catalog

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- collections ------------------------------------------------------------

    def collection(self, name: str) -> Collection | None:
        """The collection named ``name``; None if there is none (or it is being removed)."""
        with self._lock:
            rows = list(
                self.db.query(
                    f"select * from {_COLLECTIONS} where name = ? and state = ?", [name, ACTIVE]
                )
            )
            if not rows:
                return None
            return self._collection_from_row(rows[0])

    def require_collection(self, name: str) -> Collection:
        found = self.collection(name)
        if found is None:
            known = [c.name for c in self.collections()]
            raise CollectionNotFound(no_such_collection([name], known))
        return found

    def collections(self) -> list[Collection]:
        with self._lock:
            return [
                self._collection_from_row(row)
                for row in self.db.query(
                    f"select * from {_COLLECTIONS} where state = ? order by name collate nocase",
                    [ACTIVE],
                )
            ]

    def removing_collections(self) -> list[str]:
        """Collections marked for removal whose removal has not finished."""
        with self._lock:
            return [
                row["name"]
                for row in self.db.query(
                    f"select name from {_COLLECTIONS} where state = ? order by name", [REMOVING]
                )
            ]

    def mark_collection_removing(self, name: str) -> None:
        with self.transaction():
            self._conn.execute(
                f"update {_COLLECTIONS} set state = ?, updated = ? where name = ?",
                [REMOVING, time.time(), name],
            )

    def _collection_from_row(self, row: dict[str, Any]) -> Collection:
        counts = next(
            iter(
                self.db.query(
                    f"select count(*) as documents, coalesce(sum(chunk_count), 0) as chunks "
                    f"from {_DOCUMENTS} where collection = ? and status = ?",
                    [row["name"], DocumentStatus.INDEXED.value],
                )
            )
        )
        return Collection(
            name=row["name"],
            description=row["description"] or "",
            embedding_model=row["embedding_model"] or "",
            dimension=int(row["dimension"] or 0),
            documents=int(counts["documents"]),
            chunks=int(counts["chunks"]),
            watched=bool(row.get("watched", 1)),
        )

    def create_collection(
        self, name: str, description: str = "", embedding_model: str = "", dimension: int = 0
    ) -> Collection:
        now = time.time()
        with self.transaction():
            self.db.table(_COLLECTIONS).insert(
                {
                    "name": name,
                    "description": description,
                    "embedding_model": embedding_model,
                    "dimension": dimension,
                    "created": now,
                    "updated": now,
                    "state": ACTIVE,
                },
                ignore=True,
            )
        return self.require_collection(name)

    def set_description(self, name: str, description: str) -> None:
        self.require_collection(name)
        with self.transaction():
            self.db.table(_COLLECTIONS).update(
                name, {"description": description, "updated": time.time()}
            )

    def set_watched(self, name: str, watched: bool) -> None:
        """Whether the collection's folders are followed (changes indexed without asking)."""
        self.require_collection(name)
        with self.transaction():
            self.db.table(_COLLECTIONS).update(
                name, {"watched": int(watched), "updated": time.time()}
            )

    def set_embedding(self, name: str, embedding_model: str, dimension: int) -> None:
        self.require_collection(name)
        with self.transaction():
            self.db.table(_COLLECTIONS).update(
                name,
                {
                    "embedding_model": embedding_model,
                    "dimension": dimension,
                    "updated": time.time(),
                },
            )

    def reset_collection(self, name: str, embedding_model: str, dimension: int) -> None:
        """For a re-index: every document with chunks becomes pending (chunk count 0) and the
        collection records its new embedding model, in one transaction."""
        self.require_collection(name)
        now = time.time()
        with self.transaction():
            self._conn.execute(
                f"update {_DOCUMENTS} set status = ?, chunk_count = 0, updated = ? "
                "where collection = ? and status in (?, ?, ?)",
                [
                    DocumentStatus.PENDING.value,
                    now,
                    name,
                    DocumentStatus.INDEXED.value,
                    DocumentStatus.WRITING.value,
                    DocumentStatus.PENDING.value,
                ],
            )
            self.db.table(_COLLECTIONS).update(
                name, {"embedding_model": embedding_model, "dimension": dimension, "updated": now}
            )

    def delete_collection(self, name: str) -> None:
        with self.transaction():
            self._conn.execute(f"delete from {_DOCUMENTS} where collection = ?", [name])
            self._conn.execute(f"delete from {_ROOTS} where collection = ?", [name])
            self._conn.execute(f"delete from {_COLLECTIONS} where name = ?", [name])

    # -- documents --------------------------------------------------------------

    def documents(
        self, collection: str, statuses: Iterable[DocumentStatus] | None = None
    ) -> list[Document]:
        sql = f"select * from {_DOCUMENTS} where collection = ?"
        params: list[Any] = [collection]
        if statuses is not None:
            wanted = [s.value for s in statuses]
            sql += f" and status in ({', '.join('?' for _ in wanted)})"
            params += wanted
        sql += " order by path"
        with self._lock:
            return [_document_from_row(row) for row in self.db.query(sql, params)]

    def document_rows(self, collection: str) -> list[tuple[str, str, str, int, str]]:
        """``(doc_id, path, status, chunk_count, error)`` of every document of ``collection``,
        in the order of :meth:`documents` (by path): a list of 10,000 documents in a few
        milliseconds, for a window that only shows them (no :class:`Document` built)."""
        with self._lock:
            return self._conn.execute(
                f"select doc_id, path, status, coalesce(chunk_count, 0), coalesce(error, '') "
                f"from {_DOCUMENTS} where collection = ? order by path",
                [collection],
            ).fetchall()

    def document(self, doc_id: str) -> Document | None:
        with self._lock:
            rows = list(self.db.query(f"select * from {_DOCUMENTS} where doc_id = ?", [doc_id]))
        return _document_from_row(rows[0]) if rows else None

    def documents_by_id(self, doc_ids: Sequence[str]) -> dict[str, Document]:
        found: dict[str, Document] = {}
        ids = list(dict.fromkeys(doc_ids))
        with self._lock:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                sql = f"select * from {_DOCUMENTS} where doc_id in ({', '.join('?' for _ in part)})"
                for row in self.db.query(sql, part):
                    found[row["doc_id"]] = _document_from_row(row)
        return found

    def documents_with_status(self, *statuses: DocumentStatus) -> list[Document]:
        """Documents of every collection in one of these states."""
        wanted = [s.value for s in statuses]
        with self._lock:
            return [
                _document_from_row(row)
                for row in self.db.query(
                    f"select * from {_DOCUMENTS} where status in ({', '.join('?' for _ in wanted)}) "
                    "order by collection, path",
                    wanted,
                )
            ]

    def save_documents(self, documents: Sequence[Document]) -> None:
        """Insert or replace these documents, all in one transaction."""
        if not documents:
            return
        now = time.time()
        with self.transaction():
            self.db.table(_DOCUMENTS).upsert_all(
                [_document_to_row(d, now) for d in documents], pk="doc_id"
            )

    def delete_documents(
        self, doc_ids: Sequence[str], *, roots: Sequence[tuple[str, str]] = ()
    ) -> None:
        """Delete these documents and these ``(collection, path)`` ingest roots, in one transaction."""
        with self.transaction():
            for doc_id in doc_ids:
                self._conn.execute(f"delete from {_DOCUMENTS} where doc_id = ?", [doc_id])
            for collection, path in roots:
                self._conn.execute(
                    f"delete from {_ROOTS} where collection = ? and path = ?", [collection, path]
                )

    # -- ingest roots (what a re-scan walks again) --------------------------------

    def add_roots(self, collection: str, paths: Sequence[str]) -> None:
        now = time.time()
        with self.transaction():
            self.db.table(_ROOTS).upsert_all(
                [{"collection": collection, "path": p, "added": now} for p in paths],
                pk=("collection", "path"),
            )

    def roots(self, collection: str) -> list[str]:
        with self._lock:
            return [
                row["path"]
                for row in self.db.query(
                    f"select path from {_ROOTS} where collection = ? order by path", [collection]
                )
            ]

    # -- ingest runs --------------------------------------------------------------

    def start_run(self, collection: str) -> int:
        with self.transaction():
            table = self.db.table(_RUNS)
            table.insert({"collection": collection, "started": time.time(), "status": "running"})
            return int(table.last_pk or 0)

    def finish_run(self, run_id: int, status: str, counts: IngestCounts) -> None:
        with self.transaction():
            self.db.table(_RUNS).update(
                run_id, {"finished": time.time(), "status": status, **asdict(counts)}
            )

    def interrupted_collections(self) -> set[str]:
        """Collections whose ingest was still 'running' (cut short by a crash or a kill);
        those runs are marked 'interrupted'."""
        with self._lock:
            names = {
                row["collection"]
                for row in self.db.query(
                    f"select distinct collection from {_RUNS} where status = 'running'"
                )
            }
        self.mark_interrupted_runs()
        return names

    def mark_interrupted_runs(self) -> int:
        """Runs still 'running' at start were cut short by a crash or a kill."""
        with self.transaction():
            cursor = self._conn.execute(
                f"update {_RUNS} set status = 'interrupted' where status = 'running'",
            )
            return int(cursor.rowcount)

    def runs(self, collection: str | None = None, limit: int = 20) -> list[IngestRun]:
        sql = f"select * from {_RUNS}"
        params: list[Any] = []
        if collection is not None:
            sql += " where collection = ?"
            params.append(collection)
        sql += " order by run_id desc limit ?"
        params.append(limit)
        with self._lock:
            return [
                IngestRun(
                    run_id=row["run_id"],
                    collection=row["collection"],
                    started=row["started"],
                    finished=row["finished"],
                    status=row["status"],
                    **{name: row[name] or 0 for name in COUNT_NAMES},
                )
                for row in self.db.query(sql, params)
            ]


def _document_to_row(doc: Document, now: float) -> dict[str, Any]:
    return {
        "doc_id": doc.doc_id,
        "collection": doc.collection,
        "path": doc.path,
        "content_hash": doc.content_hash,
        "size": doc.size,
        "mtime": doc.mtime,
        "status": doc.status.value,
        "error": doc.error,
        "chunk_count": doc.chunk_count,
        "title": doc.title,
        "updated": now,
    }


def _document_from_row(row: dict[str, Any]) -> Document:
    return Document(
        doc_id=row["doc_id"],
        collection=row["collection"],
        path=row["path"],
        content_hash=row["content_hash"] or "",
        size=int(row["size"] or 0),
        mtime=float(row["mtime"] or 0.0),
        status=DocumentStatus(row["status"]),
        error=row["error"] or "",
        chunk_count=int(row["chunk_count"] or 0),
        title=row["title"] or "",
    )
