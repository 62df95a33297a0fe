"""Control flow of a hybrid search answered by the in-memory copy: the BM25 side
(Milvus' call, or the copy's own keyword index on Milvus Lite 3.x) runs while the
copy's vectors are scanned, not after them (so a sub-query costs the longer of the
two). Fakes stand in for Milvus and the copy's scan here only to see the order of
calls; tests/store/test_dense_copy.py and test_keyword_copy.py prove the search
itself on real Milvus Lite files."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.store.dense_cache import DenseCache
from app.store.keyword_copy import KeywordIndex
from app.store.milvus_search import RRF_K, search_with_copy


class KeywordSide:
    """Milvus as the copy's hybrid search uses it: one BM25 search, one get by id."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.searched_from: str | None = None

    def search(
        self, mname: str, *, data: list[str], anns_field: str, **_: Any
    ) -> list[list[dict[str, Any]]]:
        assert anns_field != "dense", "the dense side must come from the copy"
        self.searched_from = threading.current_thread().name
        self.started.set()
        return [[{"id": "k1", "distance": -3.0, "entity": {"text": "keyword one"}}] for _ in data]

    def get(self, mname: str, *, ids: list[str], **_: Any) -> list[dict[str, Any]]:
        return [{"chunk_id": chunk_id, "text": f"text of {chunk_id}"} for chunk_id in ids]


class WaitingCopy:
    """A copy (of vectors only, as on the native engine) whose scan finishes only once
    the BM25 call has begun (or 10 s passed)."""

    keywords = None

    def __init__(self, keyword: KeywordSide) -> None:
        self.keyword = keyword
        self.saw_keyword_running: bool | None = None

    def search(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        self.saw_keyword_running = self.keyword.started.wait(timeout=10)
        return [[("d1", 0.9), ("k1", 0.8)] for _ in range(len(vectors))]


def test_the_bm25_call_runs_while_the_copy_is_scanned() -> None:
    keyword = KeywordSide()
    copy = WaitingCopy(keyword)
    hits = search_with_copy(
        keyword,
        "c_test",
        ["first question", "second question"],
        np.ones((2, 4), dtype=np.float32),
        copy,  # type: ignore[arg-type]
        mode="hybrid",
        top_k=2,
        candidates=None,
        timeout=None,
    )
    assert copy.saw_keyword_running is True, "the copy was scanned before Milvus was asked for BM25"
    assert keyword.searched_from != threading.current_thread().name
    # fused as Milvus does: k1 is in both lists (ranks 2 and 1), d1 in the dense list only
    assert [[(h.chunk.chunk_id, round(h.score, 6)) for h in row] for row in hits] == [
        [("k1", round(1 / (RRF_K + 2) + 1 / (RRF_K + 1), 6)), ("d1", round(1 / (RRF_K + 1), 6))]
    ] * 2
    assert [h.chunk.text for h in hits[0]] == ["keyword one", "text of d1"]
    assert [h.query for h in hits[1]] == ["second question"] * 2


class Rendezvous:
    """Two sides that each finish only once the other has begun (or 10 s passed)."""

    def __init__(self) -> None:
        self.dense_began = threading.Event()
        self.keyword_began = threading.Event()
        self.dense_saw_keyword: bool | None = None
        self.keyword_saw_dense: bool | None = None


class WaitingScan:
    """The copy's faiss index, whose scan (run under the copy's lock) waits for the keyword side."""

    def __init__(self, index: Any, meet: Rendezvous) -> None:
        self.index, self.meet = index, meet

    def search(self, vectors: np.ndarray, k: int) -> Any:
        self.meet.dense_began.set()
        self.meet.dense_saw_keyword = self.meet.keyword_began.wait(timeout=10)
        return self.index.search(vectors, k)


class WaitingKeywords(KeywordIndex):
    def __init__(self, meet: Rendezvous) -> None:
        super().__init__()
        self.meet = meet

    def search(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        self.meet.keyword_began.set()
        self.meet.keyword_saw_dense = self.meet.dense_began.wait(timeout=10)
        return super().search(queries, k)


def test_a_copy_keeping_bm25_searches_its_keywords_while_it_scans_the_vectors() -> None:
    """Milvus Lite 3.x: the copy answers both sides, at once (one lock for both would
    make each side wait for the other)."""
    meet = Rendezvous()
    copy = DenseCache(4, keywords=True)
    copy.keywords = WaitingKeywords(meet)
    copy.fill(
        [
            (
                ["a", "b"],
                ["d", "d"],
                np.eye(4, dtype=np.float32)[:2],
                ["apples and pears", "ships at sea"],
            )
        ]
    )
    copy._index = WaitingScan(copy._index, meet)  # type: ignore[assignment]
    hits = search_with_copy(
        KeywordSide(),
        "c_test",
        ["ships"],
        np.eye(4, dtype=np.float32)[:1],
        copy,
        mode="hybrid",
        top_k=2,
        candidates=None,
        timeout=None,
    )
    assert meet.dense_saw_keyword is True and meet.keyword_saw_dense is True
    # b is first in the keyword list and second in the dense one; a only first in the dense one
    assert [(h.chunk.chunk_id, round(h.score, 6)) for h in hits[0]] == [
        ("b", round(1 / (RRF_K + 1) + 1 / (RRF_K + 2), 6)),
        ("a", round(1 / (RRF_K + 1), 6)),
    ]
