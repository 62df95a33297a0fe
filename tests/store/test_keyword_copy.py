"""BM25 kept in memory beside a large collection's vectors where the engine is Milvus
Lite 3.x (app.store.keyword_copy): scored with the whole collection's statistics, as
the native engine does, not 3.x's per segment. Checked against BM25 computed here from
its formula, on the index alone and through a real Milvus Lite file."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from store_corpus import PARTITIONS_DOC, build_chunks

from app.core.models import Chunk
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.store import dense_cache
from app.store.bm25_analyzer import STOP_WORDS
from app.store.keyword_copy import MAX_RUNS, KeywordIndex, words
from app.store.milvus_connection import lite_major_version
from app.store.milvus_schema import BM25_B, BM25_K1
from app.store.vectors import VectorStore, milvus_name

COLLECTION = "keywords"
MNAME = milvus_name(COLLECTION)
NATIVE = lite_major_version() < 3
QUERIES = [
    "how do I create a partition",
    "load partitions into memory before you search",
    "the Eastern Orthodox churches in 1054",
    "journal of mathematical physics",
    "partition_name parameter",
]


def reference(texts: dict[str, str], query: str, k: int) -> list[tuple[str, float]]:
    """BM25 written out from its formula over every text (Milvus': idf = ln((N - df + 0.5)
    / (df + 0.5) + 1); a query word counts as often as it is repeated)."""
    stop = set(STOP_WORDS)

    def cut(text: str) -> list[str]:
        return [w for w in re.findall(r"[^\W_]+", text.lower()) if w not in stop]

    counts = {key: Counter(cut(text)) for key, text in texts.items()}
    average = sum(sum(c.values()) for c in counts.values()) / len(counts)
    scores: dict[str, float] = {}
    for word, times in Counter(cut(query)).items():
        df = sum(1 for c in counts.values() if word in c)
        if not df:
            continue
        idf = math.log((len(counts) - df + 0.5) / (df + 0.5) + 1)
        for key, c in counts.items():
            if word in c:
                tf, length = c[word], sum(c.values())
                norm = (
                    tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))
                )
                scores[key] = scores.get(key, 0.0) + times * idf * norm
    return sorted(scores.items(), key=lambda item: -item[1])[:k]


def _same(found: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [key for key, _ in found] == [key for key, _ in expected]
    assert [score for _, score in found] == pytest.approx(
        [score for _, score in expected], rel=1e-4
    )


def test_words_are_cut_as_the_native_engine_cuts_them() -> None:
    assert words("The partition_name of Love's 2.5 GB — Übermäßig, naïve!") == [
        "partition",
        "name",
        "love",
        "s",
        "2",
        "5",
        "gb",
        "übermäßig",
        "naïve",
    ]


def test_the_index_scores_as_bm25_over_what_is_left_after_writes_and_merges(
    shared_data: Path,
) -> None:
    chunks = build_chunks(shared_data, COLLECTION)
    index = KeywordIndex()
    alive: dict[str, str] = {}  # chunk id → text, as the collection holds it
    row_of: dict[str, int] = {}
    next_row = 0
    for step, start in enumerate(range(0, len(chunks), 8)):  # one run per write: merges happen
        batch = chunks[start : start + 8]
        if step % 3 == 2:  # a chunk rewritten (a new row) and one removed
            changed, removed = chunks[start - 8], chunks[start - 7]
            index.remove([row_of[changed.chunk_id], row_of.pop(removed.chunk_id)])
            del alive[removed.chunk_id]
            batch = [
                *batch,
                Chunk(
                    changed.chunk_id, changed.doc_id, COLLECTION, changed.path, "partition keys now"
                ),
            ]
        rows = list(range(next_row, next_row + len(batch)))
        next_row += len(batch)
        index.add(rows, [c.text for c in batch])
        for row, chunk in zip(rows, batch, strict=True):
            row_of[chunk.chunk_id] = row
            alive[chunk.chunk_id] = chunk.text
        chunk_of = {row: key for key, row in row_of.items()}
        for query, found in zip(QUERIES, index.search(QUERIES, 6), strict=True):
            _same([(chunk_of[row], score) for row, score in found], reference(alive, query, 6))
    assert len(index) == len(alive)
    assert len(index._runs) <= MAX_RUNS
    with pytest.raises(ValueError, match="already indexed"):
        index.add([row_of[chunks[-1].chunk_id]], ["again"])
    assert index.search(["the of and", "zzzz-unknown"], 5) == [
        [],
        [],
    ]  # stop words only; no such word


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture(autouse=True)
def small_collections_are_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dense_cache, "MIN_ROWS", 50)
    monkeypatch.setattr("app.store.vectors.COPY_PAGE", 16)


def test_a_large_collection_on_lite3_answers_bm25_from_the_copy(
    shared_data: Path, tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    chunks = build_chunks(shared_data, COLLECTION)
    vectors = embedder.embed([c.text for c in chunks])
    uri = str(tmp_path / "milvus.db")
    with VectorStore(uri) as store:
        store.ensure_collection(COLLECTION, embedder.dimension, embedder.model_name)
        for start in range(0, len(chunks), 20):  # several writes: 3.x keeps several segments
            store.insert(COLLECTION, chunks[start : start + 20], vectors[start : start + 20])
            store.flush(COLLECTION)
    texts = {c.chunk_id: c.text for c in chunks}
    query_vectors = embedder.embed(QUERIES)
    with VectorStore(uri) as store:
        assert store.count(COLLECTION) == len(chunks)
        copy = store._copy(MNAME)
        assert copy is not None and copy.wait_ready(60)
        if NATIVE:  # the native engine's BM25 is exact already: the copy keeps vectors only
            assert copy.keywords is None
            return
        assert copy.keywords is not None and len(copy.keywords) == len(chunks)
        found = store.search(COLLECTION, QUERIES, None, mode="bm25", top_k=8)
        for query, hits in zip(QUERIES, found, strict=True):
            _same([(h.chunk.chunk_id, h.score) for h in hits], reference(texts, query, 8))
            assert all(h.chunk.text == texts[h.chunk.chunk_id] and h.query == query for h in hits)

        # hybrid: reciprocal-rank fusion (k=60) of the exact dense list and this BM25 list
        hybrid = store.search(COLLECTION, QUERIES, query_vectors, mode="hybrid", top_k=5)
        matrix = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        for q, (query, hits) in enumerate(zip(QUERIES, hybrid, strict=True)):
            near = [
                chunks[j].chunk_id
                for j in np.argsort(-(matrix @ query_vectors[q]), kind="stable")[:20]
            ]
            by_words = [key for key, _ in reference(texts, query, 20)]
            fused: dict[str, float] = {}
            for ranked in (near, by_words):
                for rank, key in enumerate(ranked, start=1):
                    fused[key] = fused.get(key, 0.0) + 1 / (60 + rank)
            best = sorted(fused.items(), key=lambda item: -item[1])[:5]
            _same([(h.chunk.chunk_id, h.score) for h in hits], best)

        # kept in step with writes: a document gone, a chunk added, the statistics with them
        store.delete_document(COLLECTION, PARTITIONS_DOC)
        added = Chunk(
            "harbour:0",
            "harbour",
            COLLECTION,
            "/notes/harbour.md",
            "Partition the tide tables by harbour.",
        )
        store.insert(COLLECTION, [added], embedder.embed([added.text]))
        texts = {key: text for key, text in texts.items() if not key.startswith(PARTITIONS_DOC)}
        texts[added.chunk_id] = added.text
        found = store.search(COLLECTION, QUERIES, None, mode="bm25", top_k=8)
        for query, hits in zip(QUERIES, found, strict=True):
            _same([(h.chunk.chunk_id, h.score) for h in hits], reference(texts, query, 8))
        assert found[0][0].chunk.chunk_id == "harbour:0"
