"""Plain text and source code cut into chunks: paragraphs, then lines, then tokens."""

from __future__ import annotations

import re

from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.tokens import TokenCounter

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
