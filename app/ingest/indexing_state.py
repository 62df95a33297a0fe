"""A collection that is being indexed right now, and how much of it can be searched.

The library panel shows it on the collection's row ("Indexing — 12 of 40
documents") and a research run over it starts with a "partial" notice
(:mod:`app.research.scope_check`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IndexingState:
    collection: str
    searchable: int  # documents indexed so far (a search finds them)
    expected: int | None = (
        None  # documents once the indexing ends; None while the files are being listed
    )

    @classmethod
    def of(
        cls, collection: str, searchable: int, done_files: int, total_files: int | None
    ) -> IndexingState:
        """From the catalog's indexed count and the ingest's progress (files done of all)."""
        if total_files is None:
            return cls(collection, searchable)
        return cls(collection, searchable, searchable + max(0, total_files - done_files))

    def progress(self) -> str:
        """ "12 of 40 documents", or "12 documents so far" while the total is unknown."""
        if self.expected is None:
            return f"{self.searchable:,} document{'' if self.searchable == 1 else 's'} so far"
        return f"{self.searchable:,} of {self.expected:,} documents"

    def describe(self) -> str:
        """The collection's state, as its row in the library shows it."""
        return f"Indexing — {self.progress()}"

    def partial_sentence(self) -> str:
        """What a run over this collection is told."""
        searchable = (
            self.progress()
            if self.expected is None
            else f"{self.searchable:,} of {self.expected:,}"
        )
        return f"{self.collection} is still being indexed ({searchable} documents searchable)"
