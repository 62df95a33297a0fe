"""Cut documents into chunks that follow their structure and fit the embedder.

- :mod:`.tokens`: counting tokens as the embedder does; the per-chunk limit;
- :mod:`.docling_chunks`: Docling documents, by their structure (headings kept);
- :mod:`.tables`: tables as Markdown tables, cut between rows (plain rows when too wide);
- :mod:`.inline_html`: HTML tags and entities kept out of chunk text (code left as written);
- :mod:`.page_numbers`: the page a Docling chunk starts on;
- :mod:`.plain_text`: plain text and source code, by paragraphs, lines, tokens;
- :mod:`.piece`: what both produce, a chunk before it has an id.
"""

from app.ingest.chunking.docling_chunks import DoclingChunker, make_docling_tokenizer
from app.ingest.chunking.page_numbers import page_of
from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.plain_text import chunk_plain_text
from app.ingest.chunking.tokens import SPECIAL_TOKENS, TokenCounter, chunk_token_limit

__all__ = [
    "SPECIAL_TOKENS",
    "ChunkPiece",
    "DoclingChunker",
    "TokenCounter",
    "chunk_plain_text",
    "chunk_token_limit",
    "make_docling_tokenizer",
    "page_of",
]
