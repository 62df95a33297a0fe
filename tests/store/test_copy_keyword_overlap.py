"""Control flow of a hybrid search answered by the in-memory copy: Milvus' BM25 call
runs while the copy is scanned, not after it (so a sub-query costs the longer of the
two). Fakes stand in for Milvus and the copy here only to see the order of calls;
tests/store/test_dense_copy.py proves the search itself on real Milvus Lite files."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from app.store.milvus_search import RRF_K, search_with_copy


class KeywordSide:
    """Milvus as the copy's hybrid search uses it: one BM25 search, one get by id."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.searched_from: str | None = None

    def search(self, mname: str, *, data: list[str], anns_field: str, **_: Any) -> list[list[dict[str, Any]]]:
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
