"""A library with many documents, made fast: the collections through the ledger (the
catalog row and an empty Milvus collection, with the embedding model the settings
name), the documents written straight into the catalog as indexed (no file is
converted, no chunk embedded). Enough for what the window shows of a library —
the list of collections and documents, their counts — not for searching it.

Used by ``tests/bench/bench_ui.py`` (10,000 documents) and the window tests."""

from __future__ import annotations

import hashlib

from app.core.models import Document, DocumentStatus
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.ingest.embedder import MINILM_DIMENSION, MINILM_MODEL
from app.ingest.library import Library

CHUNKS_PER_DOCUMENT = 3


def fill_library(settings: Settings, paths: AppPaths, collections: dict[str, int]) -> int:
    """Write ``collections`` (name: number of documents) into the data dir ``paths``;
    returns the number of documents written. The data dir must not be open elsewhere."""
    library = Library.open(settings, paths)
    try:
        written = 0
        for name, documents in collections.items():
            library.ledger.create_collection(
                name, f"{documents:,} made-up documents", MINILM_MODEL, MINILM_DIMENSION
            )
            batch = [made_up_document(name, i) for i in range(documents)]
            library.catalog.save_documents(batch)
            written += len(batch)
        return written
    finally:
        library._close_sync()


def made_up_document(collection: str, i: int) -> Document:
    path = f"/home/someone/archive/{collection}/{i // 100:03d}/report-{i:05d}.md"
    return Document(
        doc_id=hashlib.sha1(f"{collection}:{path}".encode()).hexdigest()[:16],
        collection=collection,
        path=path,
        content_hash=hashlib.sha1(path.encode()).hexdigest(),
        size=1000 + i,
        mtime=1.7e9,
        status=DocumentStatus.INDEXED,
        chunk_count=CHUNKS_PER_DOCUMENT,
        title=f"Report {i}",
    )
