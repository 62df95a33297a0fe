"""One file on its way through the pipeline, and the catalog records it ends as:
a document with its chunks, or a document that says why it has none."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.core.ids import make_chunk_id, make_doc_id
from app.core.models import Chunk, Document, DocumentStatus
from app.ingest.convert.results import ConvertedDocument
from app.ingest.scan import ScannedFile
from app.store.ledger import DocumentWrite


@dataclass
class Job:
    """One file on its way through the pipeline."""

    file: ScannedFile
    path: str
    doc_id: str
    content_hash: str
    previous: Document | None
    converted: ConvertedDocument | None = None
    vectors: np.ndarray | None = None

    @property
    def piece_count(self) -> int:
        return len(self.converted.pieces) if self.converted else 0


def indexed_write(job: Job, collection: str) -> DocumentWrite:
    """What the ledger stores for a converted and embedded file."""
    assert job.converted is not None and job.vectors is not None
    return DocumentWrite(
        document=Document(
            doc_id=job.doc_id,
            collection=collection,
            path=job.path,
            content_hash=job.content_hash,
            size=job.file.size,
            mtime=job.file.mtime,
            status=DocumentStatus.INDEXED,
            title=job.converted.title,
            error=job.converted.note,  # shown beside the document: "3 of 5 pages read by OCR"
        ),
        previous=job.previous,
        chunks=chunks_of(job, collection),
        vectors=job.vectors,
    )


def chunks_of(job: Job, collection: str) -> list[Chunk]:
    """The file's chunk pieces as chunks, numbered in order (ids are stable)."""
    assert job.converted is not None
    title = job.converted.title
    return [
        Chunk(
            chunk_id=make_chunk_id(job.doc_id, n),
            doc_id=job.doc_id,
            collection=collection,
            path=job.path,
            text=piece.text,
            title=piece.title or title,
            headings=piece.headings,
            page=piece.page,
            chunk_no=n,
        )
        for n, piece in enumerate(job.converted.pieces)
    ]


def document_without_chunks(
    collection: str,
    path: str,
    status: DocumentStatus,
    reason: str,
    scanned_file: ScannedFile | None,
    content_hash: str,
) -> Document:
    """A skipped or failed file's record, with the reason."""
    return Document(
        doc_id=make_doc_id(collection, path),
        collection=collection,
        path=path,
        content_hash=content_hash,
        size=scanned_file.size if scanned_file else 0,
        mtime=scanned_file.mtime if scanned_file else 0.0,
        status=status,
        error=reason,
    )
