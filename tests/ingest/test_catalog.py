"""The catalog in SQLite: collections with counts, documents, roots, runs."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from app.core.errors import CollectionNotFound
from app.core.models import Document, DocumentStatus, IngestCounts
from app.store.catalog import Catalog


def _doc(n: int, status: DocumentStatus = DocumentStatus.INDEXED, chunks: int = 3) -> Document:
    return Document(
        doc_id=f"d{n}",
        collection="c",
        path=f"/docs/{n}.md",
        status=status,
        chunk_count=chunks,
        content_hash=f"h{n}",
    )


def test_collections_count_only_indexed_documents(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.create_collection("c", "about cats", "model-x", 384)
    catalog.save_documents(
        [
            _doc(1),
            _doc(2, chunks=5),
            _doc(3, DocumentStatus.FAILED, 0),
            _doc(4, DocumentStatus.PENDING, 0),
        ]
    )
    (collection,) = catalog.collections()
    assert (
        collection.name,
        collection.description,
        collection.embedding_model,
        collection.dimension,
    ) == (
        "c",
        "about cats",
        "model-x",
        384,
    )
    assert (collection.documents, collection.chunks) == (2, 8)
    assert [d.doc_id for d in catalog.documents_with_status(DocumentStatus.PENDING)] == ["d4"]
    catalog.close()
    # the file is in WAL mode and survives a reopen
    reopened = Catalog(tmp_path / "catalog.sqlite")
    assert reopened.require_collection("c").chunks == 8
    mode = sqlite3.connect(tmp_path / "catalog.sqlite").execute("pragma journal_mode").fetchone()[0]
    assert mode == "wal"
    reopened.delete_collection("c")
    assert reopened.documents("c") == []
    with pytest.raises(CollectionNotFound, match="no collection named 'c'"):
        reopened.require_collection("c")


def test_writes_from_many_threads_all_land(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.create_collection("c")
    errors: list[BaseException] = []

    def write(start: int) -> None:
        try:
            for n in range(start, start + 50):
                catalog.save_documents([_doc(n)])
                catalog.documents("c")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i * 100,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert catalog.require_collection("c").documents == 200


def test_runs_left_running_are_marked_interrupted(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    done = catalog.start_run("c")
    catalog.finish_run(done, "finished", IngestCounts(indexed=3, chunks=9))
    catalog.start_run("c")  # never finished: the process died
    assert catalog.mark_interrupted_runs() == 1
    runs = catalog.runs("c")
    assert [(r.status, r.indexed, r.chunks) for r in runs] == [
        ("interrupted", 0, 0),
        ("finished", 3, 9),
    ]
