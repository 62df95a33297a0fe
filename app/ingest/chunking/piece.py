"""A chunk before it has an id: what both chunkers produce and the pipeline stores."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkPiece:
    """A chunk before it has an id: what is stored, what is embedded, where it was."""

    text: str  # the passage as shown and searched (BM25)
    embed_text: str  # heading path + text: what the embedder sees
    headings: tuple[str, ...] = ()
    page: int | None = None
    title: str = (
        ""  # this passage's own source title where it differs from the file's (a mail message)
    )
