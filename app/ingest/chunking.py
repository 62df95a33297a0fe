"""Cut documents into chunks that follow their structure and fit the embedder.

Docling documents go through Docling's ``HybridChunker`` with a local
tokenizer (the embedder's ``tokenizers.Tokenizer``; no transformers, no hub).
Each chunk keeps its heading path and the page its first item sits on.
Plain text and source code are split by paragraphs, then lines, then tokens.

``max_tokens`` counts tokens *without* the model's special tokens; callers
pass the embedder's limit minus those (see :func:`chunk_token_limit`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docling_core.types.doc.document import DoclingDocument
    from tokenizers import Tokenizer

# [CLS] and [SEP] of BERT-style models such as all-MiniLM-L6-v2
SPECIAL_TOKENS = 2


def chunk_token_limit(model_max_tokens: int, setting_max_tokens: int) -> int:
    """Tokens a chunk's embedded text may have, leaving room for special tokens."""
    return max(16, min(model_max_tokens, setting_max_tokens) - SPECIAL_TOKENS)


@dataclass(frozen=True)
class ChunkPiece:
    """A chunk before it has an id: what is stored, what is embedded, where it was."""

    text: str  # the passage as shown and searched (BM25)
    embed_text: str  # heading path + text: what the embedder sees
    headings: tuple[str, ...] = ()
    page: int | None = None


class TokenCounter:
    """Counts tokens with a ``tokenizers.Tokenizer``; remembers recent answers
    (the hybrid chunker asks about the same strings many times)."""

    def __init__(self, tokenizer: Tokenizer, cache_size: int = 20_000) -> None:
        self.tokenizer = tokenizer
        self._cache: dict[str, int] = {}
        self._cache_size = cache_size

    def count(self, text: str) -> int:
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        n = len(self.tokenizer.encode(text, add_special_tokens=False).ids)
        if len(self._cache) >= self._cache_size:
            self._cache.clear()
        self._cache[text] = n
        return n

    def split(self, text: str, limit: int) -> list[str]:
        """Cut ``text`` into pieces of at most ``limit`` tokens, preferring to cut at
        a paragraph, line, sentence or word boundary (one encode of the whole text)."""
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        offsets = encoding.offsets
        n = len(offsets)
        pieces: list[str] = []
        i = 0
        while i < n:
            start = offsets[i][0]
            if n - i <= limit:
                pieces.append(text[start:])
                break
            hard = offsets[i + limit][0]
            window = text[start:hard]
            cut = hard
            for sep in ("\n\n", "\n", ". ", "; ", ", ", " "):
                k = window.rfind(sep)
                if k > len(window) // 3:
                    cut = start + k + len(sep)
                    break
            pieces.append(text[start:cut])
            j = i + 1
            while j < n and offsets[j][0] < cut:
                j += 1
            i = j
        out = [p.strip() for p in pieces]
        return [p for p in out if p]


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
            pieces.append(ChunkPiece(text=text, embed_text=embed_text, headings=headings, page=_page_of(chunk)))
        return pieces


def _page_of(chunk: Any) -> int | None:
    for item in chunk.meta.doc_items:
        for prov in getattr(item, "prov", None) or ():
            page = getattr(prov, "page_no", None)
            if isinstance(page, int) and page > 0:
                return page
    return None


_BLANK_LINES = re.compile(r"\n[ \t]*\n+")


def chunk_plain_text(text: str, counter: TokenCounter, max_tokens: int) -> list[ChunkPiece]:
    """Plain text and source code: paragraphs (blank-line blocks) packed up to the
    limit; a block too long is cut at lines, a line too long at words."""
    blocks = [b.strip("\n") for b in _BLANK_LINES.split(text.replace("\r\n", "\n").replace("\r", "\n"))]
    units: list[str] = []
    for block in blocks:
        if not block.strip():
            continue
        if counter.count(block) <= max_tokens:
            units.append(block)
            continue
        for line_group in _pack(block.split("\n"), counter, max_tokens, "\n"):
            if counter.count(line_group) <= max_tokens:
                units.append(line_group)
            else:
                units.extend(counter.split(line_group, max_tokens))
    pieces = []
    for packed in _pack(units, counter, max_tokens, "\n\n"):
        for part in [packed] if counter.count(packed) <= max_tokens else counter.split(packed, max_tokens):
            if part.strip():
                pieces.append(ChunkPiece(text=part.strip("\n"), embed_text=part.strip("\n")))
    return pieces


def _pack(units: list[str], counter: TokenCounter, max_tokens: int, joiner: str) -> list[str]:
    """Greedily join consecutive units while the result stays within the limit."""
    packed: list[str] = []
    current: list[str] = []
    used = 0
    for unit in units:
        n = counter.count(unit)
        if current and used + n > max_tokens:
            packed.append(joiner.join(current))
            current, used = [], 0
        current.append(unit)
        used += n
    if current:
        packed.append(joiner.join(current))
    return packed
