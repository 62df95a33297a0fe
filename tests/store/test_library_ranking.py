"""Several collections searched as one library, on real Milvus Lite files with real
embeddings of real text: the word statistics stay those of the rows through every
kind of write, and two collections rank their rows as the exact ranking of all of them
would (cosine; BM25 with the statistics of every row; the two fused)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from store_corpus import build_chunks

from app.core.models import Chunk
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.store.bm25_analyzer import words
from app.store.milvus_search import rrf_rank
from app.store.vectors import VectorStore
from app.store.word_stats import LibraryWords, WordStats, bm25_score

QUERIES = [
    "how do I create a partition",
    "the split between the Catholic Church and the Eastern Orthodox churches in 1054",
    "Who performed the live EP Maiden Japan?",
    "load a partition into memory before searching it",
]


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="module")
def corpus(shared_data: Path, embedder: OnnxMiniLMEmbedder) -> tuple[list[Chunk], np.ndarray]:
    chunks = build_chunks(shared_data, "x", musique=150)
    return chunks, embedder.embed([c.text for c in chunks])


def in_collection(chunks: list[Chunk], name: str) -> list[Chunk]:
    return [dataclasses.replace(c, collection=name) for c in chunks]


def recounted(texts: list[str]) -> tuple[int, int, Counter[str]]:
    df: Counter[str] = Counter()
    for text in texts:
        df.update(set(words(text)))
    return len(texts), sum(len(words(t)) for t in texts), df


def stored_texts(store: VectorStore, name: str) -> list[str]:
    ids = sorted(i for ids in store.chunk_ids_by_document(name).values() for i in ids)
    return [c.text for c in store.get_chunks(name, ids)]


def same_as_rows(stats: WordStats, store: VectorStore, name: str) -> None:
    chunks, total, df = recounted(stored_texts(store, name))
    assert (stats.chunks, stats.words) == (chunks, total)
    assert stats.df == df


def test_word_statistics_follow_every_write(
    tmp_path: Path, corpus: tuple[list[Chunk], np.ndarray], embedder: OnnxMiniLMEmbedder
) -> None:
    chunks, vectors = corpus
    with VectorStore(str(tmp_path / "milvus.db")) as store:
        store.ensure_collection("notes", embedder.dimension, embedder.model_name)
        store.insert("notes", in_collection(chunks[:60], "notes"), vectors[:60])
        stats = store.word_stats("notes")  # a small collection is counted on the spot
        assert stats is not None and stats.chunks == 60
        same_as_rows(stats, store, "notes")
        store.insert("notes", in_collection(chunks[60:], "notes"), vectors[60:])  # new rows
        same_as_rows(stats, store, "notes")
        rewritten = [dataclasses.replace(c, text=c.text + " zymurgy quokka") for c in chunks[70:75]]
        store.insert(
            "notes", in_collection(rewritten, "notes"), vectors[70:75]
        )  # rows written again in place
        same_as_rows(stats, store, "notes")
        assert stats.df["quokka"] == 5
        store.delete_document("notes", chunks[0].doc_id)  # the Milvus page: 12 chunks
        store.delete_chunks("notes", [c.chunk_id for c in chunks[100:110]])
        same_as_rows(stats, store, "notes")
        assert stats.chunks == len(chunks) - 12 - 10
        store.drop_collection("notes")
        store.ensure_collection("notes", embedder.dimension, embedder.model_name)
        store.insert("notes", in_collection(chunks[:5], "notes"), vectors[:5])
        again = store.word_stats("notes")  # a collection dropped and made again is counted afresh
        assert again is not stats and again is not None and again.chunks == 5


def exact_ranking(
    chunks: list[Chunk],
    vectors: np.ndarray,
    query: str,
    query_vector: np.ndarray,
    mode: str,
    top_k: int,
) -> list[str]:
    """The exact ranking of ``chunks`` as one library: cosine, BM25 with the statistics
    of all of them, or the two fused by reciprocal rank (each ``max(2·top_k, 20)`` long)."""
    stats = WordStats()
    stats.fill([[c.text for c in chunks]])
    library = LibraryWords.of([stats], [query])
    cosine = (
        vectors @ query_vector / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query_vector))
    )
    by_meaning = [chunks[i].chunk_id for i in np.argsort(-cosine, kind="stable")]
    scores = [bm25_score(query, Counter(words(c.text)), library) for c in chunks]
    by_words = [
        chunks[i].chunk_id for i in np.argsort(-np.array(scores), kind="stable") if scores[i] > 0
    ]
    if mode == "dense":
        return by_meaning[:top_k]
    if mode == "bm25":
        return by_words[:top_k]
    pool = max(2 * top_k, 20)
    return [key for key, _ in rrf_rank([by_meaning[:pool], by_words[:pool]], top_k)]


def test_two_collections_rank_their_rows_as_the_exact_ranking_of_all_of_them(
    tmp_path: Path, corpus: tuple[list[Chunk], np.ndarray], embedder: OnnxMiniLMEmbedder
) -> None:
    chunks, vectors = corpus
    cut = 140  # the Milvus page and 128 paragraphs in one, 22 paragraphs in the other
    question_vectors = embedder.embed(QUERIES)
    with VectorStore(str(tmp_path / "milvus.db")) as store:
        for name, rows in (("big", slice(0, cut)), ("small", slice(cut, None))):
            store.ensure_collection(name, embedder.dimension, embedder.model_name)
            store.insert(name, in_collection(chunks[rows], name), vectors[rows])
        for mode in ("dense", "bm25", "hybrid"):
            as_one = store.search_library(
                ["big", "small"], QUERIES, question_vectors, mode=mode, top_k=8
            )  # type: ignore[arg-type]
            for query, vector, found in zip(QUERIES, question_vectors, as_one, strict=True):
                exact = exact_ranking(chunks, vectors, query, vector, mode, 8)
                got = [h.chunk.chunk_id for h in found]
                # a tie may fall either way: the same passages, and the first the same
                assert set(got) == set(exact) and got[0] == exact[0], (mode, query, got, exact)
        # each collection's own fused scores, merged, rank otherwise: the small one's first
        # hits tie with the big one's whatever they say
        each = [
            store.search(name, QUERIES, question_vectors, mode="hybrid", top_k=8)
            for name in ("big", "small")
        ]
        merged = [
            sorted((h for found in each for h in found[i]), key=lambda h: -h.score)[:8]
            for i in range(4)
        ]
        exact_hybrid = [
            exact_ranking(chunks, vectors, q, v, "hybrid", 8)
            for q, v in zip(QUERIES, question_vectors, strict=True)
        ]
        assert any(
            {h.chunk.chunk_id for h in m} != set(e)
            for m, e in zip(merged, exact_hybrid, strict=True)
        )
