"""Numbered sentence markers (table mode's token-cheap extraction).

Each chunk is split into sentences and shown to the model as
``<1> First sentence. <2> Second sentence.``; the model answers with ranges of
marker numbers (``{"start": 1, "end": 2}``) instead of copying text, and the
text is cut back out of the chunk here. A range the chunk does not have is
clamped or dropped, so a confused model can never invent a quote.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n{2,}|\n(?=\s*[-*•#|])")
_MAX_SENTENCE_CHARS = 400


@dataclass(frozen=True)
class MarkedText:
    """A chunk split into sentences, and the text the model sees."""

    sentences: tuple[str, ...]
    text: str

    def span(self, start: int, end: int) -> str:
        """Sentences ``start``..``end`` (1-based, inclusive) joined back together."""
        return " ".join(self.sentences[start - 1 : end])


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``; over-long ones are cut at a word boundary."""
    pieces = [" ".join(part.split()) for part in _SENTENCE_END.split(text)]
    sentences: list[str] = []
    for piece in pieces:
        while len(piece) > _MAX_SENTENCE_CHARS:
            cut = piece.rfind(" ", 0, _MAX_SENTENCE_CHARS)
            cut = cut if cut > 0 else _MAX_SENTENCE_CHARS
            sentences.append(piece[:cut].strip())
            piece = piece[cut:].strip()
        if piece:
            sentences.append(piece)
    return sentences


def mark_sentences(text: str) -> MarkedText:
    """``<1> … <2> …``: the chunk with a number before each sentence."""
    sentences = tuple(split_sentences(text))
    marked = " ".join(f"<{i}> {s}" for i, s in enumerate(sentences, 1))
    return MarkedText(sentences=sentences, text=marked)


_RANGE_TEXT = re.compile(r"(\d+)\s*(?:-|–|to|\.\.)\s*(\d+)|(\d+)")


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("<[").rstrip(">]").isdigit():
        return int(value.strip().lstrip("<[").rstrip(">]"))
    return None


def _raw_ranges(value: Any) -> list[tuple[int, int]]:
    if isinstance(value, dict):
        start = _as_int(value.get("start"))
        end = _as_int(value.get("end", value.get("start")))
        if start is None:
            return []
        return [(start, end if end is not None else start)]
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and all(_as_int(v) is not None for v in value):
            a, b = (_as_int(v) for v in value)
            assert a is not None and b is not None
            return [(a, b)]
        out: list[tuple[int, int]] = []
        for item in value:
            out.extend(_raw_ranges(item))
        return out
    number = _as_int(value)
    if number is not None:
        return [(number, number)]
    if isinstance(value, str):
        ranges = []
        for match in _RANGE_TEXT.finditer(value):
            if match.group(3):
                ranges.append((int(match.group(3)), int(match.group(3))))
            else:
                ranges.append((int(match.group(1)), int(match.group(2))))
        return ranges
    return []


def parse_ranges(value: Any, n_sentences: int, *, max_span: int = 4) -> list[tuple[int, int]]:
    """Marker ranges from whatever the model wrote, made valid for ``n_sentences``.

    Accepts ``{"start": a, "end": b}``, ``[a, b]``, a number, ``"a-b"`` or lists of
    those. Reversed ranges are swapped, out-of-range ends clamped, ranges wholly
    outside dropped, spans longer than ``max_span`` cut, duplicates removed.
    """
    result: list[tuple[int, int]] = []
    for start, end in _raw_ranges(value):
        if start > end:
            start, end = end, start
        if end < 1 or start > n_sentences:
            continue
        start, end = max(start, 1), min(end, n_sentences)
        end = min(end, start + max_span - 1)
        if (start, end) not in result:
            result.append((start, end))
    return result


def quote_for(marked: MarkedText, ranges: Sequence[tuple[int, int]]) -> str:
    """The chunk's own text for the given ranges, joined with an ellipsis."""
    return " … ".join(marked.span(a, b) for a, b in ranges)
