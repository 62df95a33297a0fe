"""The evidence table of a run: relevant chunks numbered ``[1]``, ``[2]``, …

A chunk is registered once (de-duplicated by chunk id); its number is what
the report cites. The registry also keeps the full chunk text, which the
report writer and the citation check read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from app.core.models import Chunk, Evidence, EvidenceStatus, Hit

QUOTE_CHARS = 400


def quote_of(text: str, max_chars: int = QUOTE_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    return text[:max_chars].rsplit(" ", 1)[0] + " …"


class EvidenceRegistry:
    """Evidence by number and by chunk id."""

    def __init__(self) -> None:
        self._by_number: dict[int, Evidence] = {}
        self._by_chunk: dict[str, int] = {}
        self._chunks: dict[str, Chunk] = {}
        self._groups: dict[int, str] = {}  # what ``spread`` groups by, when not the sub-query
        self.carried_over = (
            0  # evidence 1..carried_over came from an earlier run (a follow-up's thread)
        )
        self._standing: dict[str, float] = {}  # chunk id -> its search standing (see note_ranks)

    def __len__(self) -> int:
        return len(self._by_number)

    def __contains__(self, number: object) -> bool:
        return number in self._by_number

    def add(self, chunk: Chunk, subquery: str) -> tuple[Evidence, bool]:
        """Register ``chunk``; returns its evidence and whether it is new."""
        number = self._by_chunk.get(chunk.chunk_id)
        if number is not None:
            return self._by_number[number], False
        number = max(self._by_number, default=0) + 1
        evidence = Evidence(
            number=number,
            chunk_id=chunk.chunk_id,
            subquery=subquery,
            quote=quote_of(chunk.text),
            path=chunk.path,
            page=chunk.page,
            collection=chunk.collection,
            title=chunk.title or chunk.heading_path,
        )
        self._by_number[number] = evidence
        self._by_chunk[chunk.chunk_id] = number
        self._chunks[chunk.chunk_id] = chunk
        return evidence, True

    def restore(self, evidence: Evidence, chunk: Chunk) -> None:
        """Take over an earlier run's evidence with its number (a follow-up: numbers
        1..n, in order, before anything is added); ``spread`` counts it as one group."""
        self._by_number[evidence.number] = evidence
        self._by_chunk[evidence.chunk_id] = evidence.number
        self._chunks[evidence.chunk_id] = chunk
        self._groups[evidence.number] = ""
        self.carried_over = max(self.carried_over, evidence.number)

    def note_ranks(self, hits: Sequence[Hit]) -> None:
        """Count one search's ranking (best first) into each chunk's standing: 1 for a
        first place, 1/2 for a second, … summed over every search of the run, so a
        passage that several searches put near the top stands above one that a
        single search put fifth (any chunk, evidence or not yet)."""
        for rank, hit in enumerate(hits):
            chunk_id = hit.chunk.chunk_id
            self._standing[chunk_id] = self._standing.get(chunk_id, 0.0) + 1.0 / (1 + rank)

    def standing(self, number: int) -> float:
        """The search standing of evidence ``number`` (0.0 when no search ranked it)."""
        evidence = self._by_number.get(number)
        return 0.0 if evidence is None else self._standing.get(evidence.chunk_id, 0.0)

    def get(self, number: int) -> Evidence | None:
        return self._by_number.get(number)

    def number_of(self, chunk_id: str) -> int | None:
        return self._by_chunk.get(chunk_id)

    def chunk(self, number: int) -> Chunk | None:
        evidence = self._by_number.get(number)
        return None if evidence is None else self._chunks.get(evidence.chunk_id)

    def text(self, number: int) -> str:
        chunk = self.chunk(number)
        return "" if chunk is None else chunk.text

    def set_status(self, number: int, status: EvidenceStatus) -> None:
        evidence = self._by_number.get(number)
        if evidence is not None:
            self._by_number[number] = dataclasses.replace(evidence, status=status)

    def all(self) -> tuple[Evidence, ...]:
        return tuple(self._by_number[n] for n in sorted(self._by_number))

    def numbers(self) -> list[int]:
        return sorted(self._by_number)

    def spread(self, limit: int) -> list[int]:
        """At most ``limit`` evidence numbers, taken in turn from each sub-query that
        found evidence (each one's first first), so a later hop's find is not crowded
        out by the first search's; in number order."""
        groups: dict[str, list[int]] = {}
        for number in self.numbers():
            group = self._groups.get(number, self._by_number[number].subquery)
            groups.setdefault(group, []).append(number)
        chosen: list[int] = []
        for rank in range(max((len(g) for g in groups.values()), default=0)):
            for numbers in groups.values():
                if rank < len(numbers) and len(chosen) < limit:
                    chosen.append(numbers[rank])
        return sorted(chosen)

    def chunks(self, numbers: Iterable[int] | None = None) -> list[tuple[int, Chunk]]:
        wanted = self.numbers() if numbers is None else numbers
        out = []
        for n in wanted:
            chunk = self.chunk(n)
            if chunk is not None:
                out.append((n, chunk))
        return out
