"""BM25 over a collection's chunk texts in memory, with statistics of the whole collection.

The pure-Python Milvus Lite 3.x (what Windows runs) scores BM25 segment by segment,
each with its own word statistics ("TODO: BM25 IDF accuracy" in its source), so at
100k chunks it returned only 0.80 of the exact BM25 top 10, and took ~21 ms a query.
There the in-memory copy of a large collection (:mod:`app.store.dense_cache`) also
keeps this index: the same words as the native engine's analyzer
(:func:`app.store.bm25_analyzer.words`), Milvus' BM25 formula with Fathom's k1 and b, and document frequencies,
lengths and the average length over every chunk of the collection.

Postings are numpy arrays in a few sorted runs (word id, row, term frequency); a
write adds a run, a search first merges small runs, and removed rows are masked (and
dropped when runs merge). Rows are the copy's labels, so the dense and keyword sides
of one chunk share a number. Not thread-safe by itself: the copy's keyword lock guards it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from app.store.bm25_analyzer import words
from app.store.milvus_schema import BM25_B, BM25_K1

MAX_RUNS = 8  # runs kept apart before a search merges them


class _Run:
    """Postings sorted by word id: rows ``rows[i]`` hold word ``word_ids[i]`` ``tf[i]`` times."""

    __slots__ = ("rows", "tf", "word_ids")

    def __init__(self, word_ids: np.ndarray, rows: np.ndarray, tf: np.ndarray) -> None:
        order = np.argsort(word_ids, kind="stable")
        self.word_ids = word_ids[order]
        self.rows = rows[order]
        self.tf = tf[order]

    def postings(self, word_id: int) -> tuple[np.ndarray, np.ndarray]:
        # bounds of this dtype: a Python tuple would make numpy cast the whole run to int64 first
        lo, hi = np.searchsorted(
            self.word_ids, np.array((word_id, word_id + 1), dtype=self.word_ids.dtype)
        )
        return self.rows[lo:hi], self.tf[lo:hi]


class KeywordIndex:
    """BM25 postings of chunk texts by row number (the copy's label)."""

    def __init__(self) -> None:
        self._word_id: dict[str, int] = {}
        self._runs: list[_Run] = []
        self._length = np.zeros(
            1024, dtype=np.float32
        )  # words per row; 0 for a row not (or no longer) here
        self._alive = np.zeros(1024, dtype=bool)
        self._rows = 0  # rows alive
        self._words = 0.0  # words in the rows alive
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # runs not sorted yet

    def __len__(self) -> int:
        return self._rows

    # -- writes -------------------------------------------------------------------

    def add(self, rows: Sequence[int], texts: Sequence[str]) -> None:
        """Index these texts under these (new) row numbers."""
        if not rows:
            return
        self._grow(max(rows) + 1)
        if self._alive[list(rows)].any():
            raise ValueError("a row is already indexed: rows are numbered afresh for each write")
        word_ids: list[int] = []
        row_of: list[int] = []
        tfs: list[int] = []
        for row, text in zip(rows, texts, strict=True):
            counts = Counter(words(text))
            length = sum(counts.values())
            for word, tf in counts.items():
                word_ids.append(self._word_id.setdefault(word, len(self._word_id)))
                row_of.append(row)
                tfs.append(tf)
            self._alive[row] = True
            self._length[row] = length
            self._rows += 1
            self._words += length
        self._pending.append(
            (
                np.array(word_ids, dtype=np.int32),
                np.array(row_of, dtype=np.int32),
                np.array(tfs, dtype=np.float32),
            )
        )

    def remove(self, rows: Sequence[int]) -> None:
        """Forget these rows (their postings stay, masked, until runs merge)."""
        for row in rows:
            if row < len(self._alive) and self._alive[row]:
                self._alive[row] = False
                self._rows -= 1
                self._words -= float(self._length[row])
                self._length[row] = 0.0

    def _grow(self, size: int) -> None:
        if size <= len(self._alive):
            return
        capacity = max(size, 2 * len(self._alive))
        self._alive = np.concatenate(
            [self._alive, np.zeros(capacity - len(self._alive), dtype=bool)]
        )
        self._length = np.concatenate(
            [self._length, np.zeros(capacity - len(self._length), dtype=np.float32)]
        )

    def _settle(self) -> None:
        """Sort pending postings into runs; merge runs past :data:`MAX_RUNS` (dropping removed rows)."""
        if self._pending:
            word_ids, rows, tf = (
                np.concatenate(parts) for parts in zip(*self._pending, strict=True)
            )
            self._pending = []
            self._runs.append(_Run(word_ids, rows, tf))
        if len(self._runs) > MAX_RUNS:
            word_ids = np.concatenate([run.word_ids for run in self._runs])
            rows = np.concatenate([run.rows for run in self._runs])
            tf = np.concatenate([run.tf for run in self._runs])
            keep = self._alive[rows]
            self._runs = [_Run(word_ids[keep], rows[keep], tf[keep])]

    # -- search -------------------------------------------------------------------

    def search(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """(row, BM25 score) of the ``k`` best rows for each query, best first; rows
        sharing no word with the query are not returned."""
        self._settle()
        found: list[list[tuple[int, float]]] = []
        average = self._words / self._rows if self._rows else 1.0
        for query in queries:
            scores = np.zeros(len(self._alive), dtype=np.float32)
            for word, times in Counter(words(query)).items():
                word_id = self._word_id.get(word)
                if word_id is None:
                    continue
                parts = [run.postings(word_id) for run in self._runs]
                rows = np.concatenate([p[0] for p in parts])
                tf = np.concatenate([p[1] for p in parts])
                alive = self._alive[rows]
                rows, tf = rows[alive], tf[alive]
                if not len(rows):
                    continue
                df = len(rows)
                idf = math.log((self._rows - df + 0.5) / (df + 0.5) + 1.0)
                norm = (
                    tf
                    * (BM25_K1 + 1)
                    / (tf + BM25_K1 * (1 - BM25_B + BM25_B * self._length[rows] / average))
                )
                scores[rows] += np.float32(times * idf) * norm  # a row is in one run once per word
            hit = np.flatnonzero(scores > 0)
            if len(hit) > k:
                hit = hit[np.argpartition(-scores[hit], k)[:k]]
            hit = hit[np.lexsort((hit, -scores[hit]))]  # best first; ties by row, as written
            found.append([(int(row), float(scores[row])) for row in hit])
        return found
