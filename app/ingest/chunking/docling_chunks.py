"""Docling documents cut into chunks that follow their structure: Docling's
``HybridChunker`` with the embedder's own tokenizer (no transformers, no hub).
Each chunk keeps its heading path and its page (:mod:`.page_numbers`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.ingest.chunking.page_numbers import page_of
from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.tokens import TokenCounter

if TYPE_CHECKING:
    from docling_core.types.doc.document import DoclingDocument


def make_docling_tokenizer(counter: TokenCounter, max_tokens: int) -> Any:
    """The embedder's tokenizer behind docling-core's ``BaseTokenizer`` interface."""
    from docling_core.transforms.chunker.tokenizer.base import BaseTokenizer
    from pydantic import ConfigDict

    class LocalTokenizer(BaseTokenizer):
        model_config = ConfigDict(arbitrary_types_allowed=True)

        counter: Any
        max_tokens: int

        def count_tokens(self, text: str) -> int:
            return int(self.counter.count(text))

        def get_max_tokens(self) -> int:
            return self.max_tokens

        def get_tokenizer(self) -> Any:
            return self.counter.tokenizer

    return LocalTokenizer(counter=counter, max_tokens=max_tokens)


class DoclingChunker:
    """Docling's HybridChunker (structure first, then token-bounded) with our tokenizer.

    Oversized items are split by :meth:`TokenCounter.split` instead of ``semchunk``
    (not installed), tables included: one encode per item rather than one per row.
    """

    def __init__(self, counter: TokenCounter, max_tokens: int) -> None:
        from docling_core.transforms.chunker.hybrid_chunker import HybridChunker

        class _Chunker(HybridChunker):
            def segment(self, doc_chunk: Any, available_length: int, doc_serializer: Any) -> list[str]:
                return counter.split(doc_chunk.text, available_length)

        self.counter = counter
        self.max_tokens = max_tokens
        self._chunker = _Chunker(
            tokenizer=make_docling_tokenizer(counter, max_tokens),
            repeat_table_header=False,
            merge_peers=True,
        )

    def chunk(self, document: DoclingDocument) -> list[ChunkPiece]:
        pieces: list[ChunkPiece] = []
        for chunk in self._chunker.chunk(document):
            text = chunk.text.strip()
            if not text:
                continue
            headings = tuple(h.strip() for h in (getattr(chunk.meta, "headings", None) or ()) if h and h.strip())
            embed_text = self._chunker.contextualize(chunk)
            if self.counter.count(embed_text) > self.max_tokens:  # non-additive tokenization at joins
                embed_text = self.counter.split(embed_text, self.max_tokens)[0]
            pieces.append(ChunkPiece(text=text, embed_text=embed_text, headings=headings, page=page_of(chunk)))
        return pieces
