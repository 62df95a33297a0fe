"""Plain text and source code cut into chunks: paragraphs, then lines, then tokens."""

from __future__ import annotations

import re

from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.tokens import TokenCounter

_BLANK_LINES = re.compile(r"\n[ \t]*\n+")
# A line longer than this is cut (at a space where there is one) before it is counted:
# tokenizing a 50 MB line at once took the converter past 5 GB (issue 33). A chunk's
# limit in tokens is far below it (256 tokens: about 1.5 KB of text).
LONG_LINE = 8192


def chunk_plain_text(text: str, counter: TokenCounter, max_tokens: int) -> list[ChunkPiece]:
    """Plain text and source code: paragraphs (blank-line blocks) packed up to the
    limit; a block too long is cut at lines, a line too long at words."""
    blocks = [
        b.strip("\n") for b in _BLANK_LINES.split(text.replace("\r\n", "\n").replace("\r", "\n"))
    ]
    units: list[str] = []
    for block in blocks:
        if not block.strip():
            continue
        if len(block) <= LONG_LINE and counter.count(block) <= max_tokens:
            units.append(block)
            continue
        lines = [part for line in block.split("\n") for part in _cut_long(line)]
        for line_group in _pack(lines, counter, max_tokens, "\n"):
            if counter.count(line_group) <= max_tokens:
                units.append(line_group)
            else:
                units.extend(counter.split(line_group, max_tokens))
    pieces = []
    for packed in _pack(units, counter, max_tokens, "\n\n"):
        for part in (
            [packed] if counter.count(packed) <= max_tokens else counter.split(packed, max_tokens)
        ):
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


def _cut_long(line: str) -> list[str]:
    """``line`` in parts of at most LONG_LINE characters, each cut after a space where
    the part has one."""
    parts = []
    while len(line) > LONG_LINE:
        cut = line.rfind(" ", LONG_LINE // 2, LONG_LINE) + 1 or LONG_LINE
        parts.append(line[:cut])
        line = line[cut:]
    parts.append(line)
    return parts
