"""Docling documents cut into chunks that follow their structure: Docling's
``HybridChunker`` with the embedder's own tokenizer (no transformers, no hub).
Each chunk keeps its heading path and its page (:mod:`.page_numbers`).

Tables are written as compact Markdown tables, cut between rows with the header
repeated (:mod:`.tables`); HTML left in text and cells is dropped first
(:mod:`.inline_html`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.core.serial_import import serial_import
from app.ingest.chunking.inline_html import drop_inline_html_from_document
from app.ingest.chunking.page_numbers import page_of
from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.tables import split_markdown_table, tidy_markdown_table
from app.ingest.chunking.tokens import TokenCounter

if TYPE_CHECKING:
    from docling_core.types.doc.document import DoclingDocument


def make_docling_tokenizer(counter: TokenCounter, max_tokens: int) -> Any:
    """The embedder's tokenizer behind docling-core's ``BaseTokenizer`` interface."""
    with serial_import("docling_core.transforms.chunker.tokenizer.base"):
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


def _markdown_tables_provider() -> Any:
    """Docling's chunking serializer with tables as compact Markdown tables (its
    default writes "row, column = value" triplets)."""
    with serial_import("docling_core.types.doc.base"):
        from docling_core.transforms.chunker.hierarchical_chunker import (
            ChunkingDocSerializer,
            ChunkingSerializerProvider,
        )
        from docling_core.transforms.serializer.markdown import (
            MarkdownParams,
            MarkdownTableSerializer,
        )
        from docling_core.types.doc.base import ImageRefMode

    class _Tables(MarkdownTableSerializer):
        def serialize(self, **kwargs: Any) -> Any:
            result = super().serialize(**kwargs)
            return result.model_copy(update={"text": tidy_markdown_table(result.text)})

    class _Provider(ChunkingSerializerProvider):
        def get_serializer(self, doc: Any) -> Any:
            params = MarkdownParams(
                image_mode=ImageRefMode.PLACEHOLDER,
                image_placeholder="",
                escape_underscores=False,
                escape_html=False,
                compact_tables=True,
            )
            return ChunkingDocSerializer(doc=doc, table_serializer=_Tables(), params=params)

    return _Provider()


class DoclingChunker:
    """Docling's HybridChunker (structure first, then token-bounded) with our tokenizer.

    Oversized items are split by :meth:`TokenCounter.split` instead of ``semchunk``
    (not installed); an oversized table is cut between rows by
    :func:`split_markdown_table` (header repeated; a row too wide for a chunk
    becomes a plain "column: value" line).
    """

    def __init__(self, counter: TokenCounter, max_tokens: int) -> None:
        with serial_import("docling_core.types.doc.items.table.table"):
            from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
            from docling_core.types.doc.items.table.table import TableItem

        class _Chunker(HybridChunker):
            def segment(
                self, doc_chunk: Any, available_length: int, doc_serializer: Any
            ) -> list[str]:
                items = doc_chunk.meta.doc_items
                if len(items) == 1 and isinstance(items[0], TableItem):
                    return split_markdown_table(doc_chunk.text, counter, available_length)
                return counter.split(doc_chunk.text, available_length)

        self.counter = counter
        self.max_tokens = max_tokens
        self._chunker = _Chunker(
            tokenizer=make_docling_tokenizer(counter, max_tokens),
            repeat_table_header=False,
            merge_peers=True,
            serializer_provider=_markdown_tables_provider(),
        )

    def chunk(self, document: DoclingDocument) -> list[ChunkPiece]:
        """The document's chunks; HTML left in its text and cells is removed first (in place)."""
        drop_inline_html_from_document(document)
        pieces: list[ChunkPiece] = []
        for chunk in self._chunker.chunk(document):
            text = chunk.text.strip()
            if not text:
                continue
            headings = tuple(
                h.strip() for h in (getattr(chunk.meta, "headings", None) or ()) if h and h.strip()
            )
            embed_text = self._chunker.contextualize(chunk)
            # non-additive tokenization at joins
            if self.counter.count(embed_text) > self.max_tokens:
                embed_text = self.counter.split(embed_text, self.max_tokens)[0]
            pieces.append(
                ChunkPiece(text=text, embed_text=embed_text, headings=headings, page=page_of(chunk))
            )
        return pieces
