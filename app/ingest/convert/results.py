"""What a conversion hands back: a document's chunk pieces, or (from a worker)
the sentence that says why there are none."""

from __future__ import annotations

from dataclasses import dataclass

from app.ingest.chunking.piece import ChunkPiece


@dataclass(frozen=True)
class ConvertedDocument:
    title: str
    pieces: tuple[ChunkPiece, ...]
    pages: int | None = None


@dataclass(frozen=True)
class ConvertOutcome:
    """A worker's answer: a document, or the sentence saying why not."""

    document: ConvertedDocument | None = None
    error: str = ""
