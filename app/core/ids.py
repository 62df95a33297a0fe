"""How documents and chunks are named: stable ids, the same on every run.

A document's id is a hash of its collection and path, and a chunk's id is the
document id and the chunk's number, so redoing a document after a crash
writes exactly the ids an uninterrupted run would have.
"""

from __future__ import annotations

import hashlib


def make_doc_id(collection: str, path: str) -> str:
    """Stable id of a file in a collection: the same on every run."""
    digest = hashlib.sha256(
        f"{collection}\x00{path}".encode("utf-8", "surrogateescape")
    ).hexdigest()
    return digest[:24]


def make_chunk_id(doc_id: str, chunk_no: int) -> str:
    return f"{doc_id}:{chunk_no:05d}"


def doc_id_of_chunk(chunk_id: str) -> str:
    return chunk_id.split(":", 1)[0]


def chunk_ids_of(doc_id: str, chunk_count: int) -> set[str]:
    """The ids a document with ``chunk_count`` chunks has in the vector store."""
    return {make_chunk_id(doc_id, n) for n in range(chunk_count)}
