"""A large collection's dense vectors copied in memory (app.store.dense_cache), on real
Milvus Lite files with real embeddings: searched in place of Milvus' scan once full,
with Milvus' results, and kept in step with every write, even those made while it fills."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from store_corpus import PARTITIONS_DOC, build_chunks

from app.core.models import Chunk
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.store import dense_cache
from app.store.dense_cache import DenseCache
from app.store.milvus_connection import lite_major_version
from app.store.vectors import SearchMode, VectorStore, milvus_name

COLLECTION = "copied"
MNAME = milvus_name(COLLECTION)
MODES: tuple[SearchMode, ...] = ("dense", "hybrid")
NATIVE = lite_major_version() < 3
QUERIES = [
    "how do I create a partition",
    "the split between the Catholic Church and the Eastern Orthodox churches in 1054",
    "peer-reviewed journal of mathematical physics",
    "who composed the opera",
]


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="module")
def corpus(shared_data: Path, embedder: OnnxMiniLMEmbedder) -> tuple[list[Chunk], np.ndarray]:
    chunks = build_chunks(shared_data, COLLECTION)
    return chunks, embedder.embed([c.text for c in chunks])


@pytest.fixture(autouse=True)
def small_collections_are_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dense_cache, "MIN_ROWS", 50)
    monkeypatch.setattr("app.store.vectors.COPY_PAGE", 16)  # several pages per fill


@pytest.fixture
def library(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder, corpus: tuple[list[Chunk], np.ndarray]
) -> str:
    """A closed Milvus Lite file holding the corpus (102 chunks)."""
    uri = str(tmp_path / "milvus.db")
    with VectorStore(uri) as store:
        store.ensure_collection(COLLECTION, embedder.dimension, embedder.model_name)
        store.insert(COLLECTION, *corpus)
    return uri


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many searches the copies answered (the real search, counted)."""
    calls: list[int] = []
    real = DenseCache.search

    def counted(self: DenseCache, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        calls.append(len(vectors))
        return real(self, vectors, k)

    monkeypatch.setattr(DenseCache, "search", counted)
    return calls


def _copy(store: VectorStore) -> DenseCache:
    assert store.count(COLLECTION) >= 50  # loads it, and so starts the copy
    copy = store._copy(MNAME)
    assert copy is not None, "the collection was not copied"
    assert copy.wait_ready(60), "the copy was not filled within a minute"
    return copy


def _ids(results: list[list[Any]]) -> list[list[str]]:
    return [[hit.chunk.chunk_id for hit in hits] for hits in results]


def _exact_top(rows: dict[str, np.ndarray], query_vectors: np.ndarray, k: int) -> list[list[str]]:
    ids = list(rows)
    matrix = np.stack([rows[i] for i in ids])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    scores = np.asarray(query_vectors) @ matrix.T
    return [[ids[j] for j in np.argsort(-row, kind="stable")[:k]] for row in scores]


def test_a_reopened_collection_is_searched_from_its_copy_with_milvus_results(
    library: str,
    embedder: OnnxMiniLMEmbedder,
    corpus: tuple[list[Chunk], np.ndarray],
    searches: list[int],
) -> None:
    chunks, vectors = corpus
    query_vectors = embedder.embed(QUERIES)
    with VectorStore(library) as store:
        copy = _copy(store)
        assert copy.chunk_ids() == {c.chunk_id for c in chunks}
        by_copy = {
            mode: store.search(COLLECTION, QUERIES, query_vectors, mode=mode, top_k=8)
            for mode in ("dense", "hybrid")
        }
        assert searches == [len(QUERIES), len(QUERIES)]
        # a filtered search is Milvus', and so, with the copy forgotten, is every search
        store.search(
            COLLECTION, QUERIES, query_vectors, mode="dense", top_k=8, doc_ids=[PARTITIONS_DOC]
        )
        assert len(searches) == 2
        dense_cache.drop(store._copies or {}, MNAME)
        by_milvus = {
            mode: store.search(COLLECTION, QUERIES, query_vectors, mode=mode, top_k=8)
            for mode in ("dense", "hybrid")
        }
        assert len(searches) == 2

    exact = _exact_top(
        dict(zip((c.chunk_id for c in chunks), vectors, strict=True)), query_vectors, 8
    )
    assert _ids(by_copy["dense"]) == exact
    # on 3.x the copy answers BM25 too, with statistics of the whole collection rather than
    # 3.x's per segment (tests/store/test_keyword_copy.py): its hybrid lists are its own
    for mode in MODES if NATIVE else ("dense",):
        assert _ids(by_copy[mode]) == _ids(by_milvus[mode]), mode
        for copied, scanned in zip(by_copy[mode], by_milvus[mode], strict=True):
            assert [h.chunk for h in copied] == [h.chunk for h in scanned]
            assert [h.score for h in copied] == pytest.approx([h.score for h in scanned], abs=2e-3)
            assert all(h.query == s.query for h, s in zip(copied, scanned, strict=True))


def test_writes_made_while_the_copy_fills_are_in_it_once_full(
    library: str,
    embedder: OnnxMiniLMEmbedder,
    corpus: tuple[list[Chunk], np.ndarray],
    searches: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chunks, vectors = corpus
    first_page_read, go_on = threading.Event(), threading.Event()
    real_pages = VectorStore._copy_pages

    def paused(self: VectorStore, mname: str, dimension: int, texts: bool) -> Iterator[Any]:
        for number, page in enumerate(real_pages(self, mname, dimension, texts)):
            if number == 1:  # one page in: let the test write, then read the rest
                first_page_read.set()
                assert go_on.wait(60)
            yield page

    monkeypatch.setattr(VectorStore, "_copy_pages", paused)
    query_vectors = embedder.embed(QUERIES)
    with VectorStore(library) as store:
        store.count(COLLECTION)  # loads it, and so starts the copy
        assert first_page_read.wait(60)
        copy = store._copy(MNAME)
        assert copy is not None and not copy.ready
        # until it is full, Milvus answers
        assert store.search(COLLECTION, QUERIES, query_vectors, mode="hybrid", top_k=5)[0]
        assert searches == []

        # a new document; one read on the first page and changed; a document and some chunks gone
        added = [
            Chunk(f"harbour:{i}", "harbour", COLLECTION, "/notes/harbour.md", text, chunk_no=i)
            for i, text in enumerate(
                ["The tide tables live in a green ledger.", "Pilots board at the outer buoy."]
            )
        ]
        store.insert(COLLECTION, added, embedder.embed([c.text for c in added]))
        changed = chunks[1]  # page 0 of the copy has been read
        changed_vector = embedder.embed(["a passage that now says something else entirely"])[0]
        store.insert(COLLECTION, [changed], changed_vector[None, :])
        store.delete_document(COLLECTION, "musique-3")
        gone = [chunks[0].chunk_id, chunks[-1].chunk_id, "no-such-chunk"]  # one read, one not yet
        store.delete_chunks(COLLECTION, gone)
        go_on.set()
        copy = _copy(store)

        expected = {c.chunk_id: v for c, v in zip(chunks, vectors, strict=True)}
        expected |= {
            c.chunk_id: v
            for c, v in zip(added, embedder.embed([c.text for c in added]), strict=True)
        }
        expected[changed.chunk_id] = changed_vector
        for chunk in chunks:
            if chunk.doc_id == "musique-3" or chunk.chunk_id in gone:
                del expected[chunk.chunk_id]
        milvus_ids = {
            cid for ids in store.chunk_ids_by_document(COLLECTION).values() for cid in ids
        }
        assert copy.chunk_ids() == set(expected) == milvus_ids
        for chunk_id, vector in expected.items():
            unit = vector / np.linalg.norm(vector)
            assert copy.vector(chunk_id) == pytest.approx(unit, abs=1e-3), chunk_id

        found = store.search(COLLECTION, QUERIES, query_vectors, mode="dense", top_k=10)
        assert searches == [len(QUERIES)]
        assert _ids(found) == _exact_top(expected, query_vectors, 10)
        (ledger,) = store.search(
            COLLECTION, ["green ledger tide tables"], None, mode="bm25", top_k=1
        )
        (hybrid,) = store.search(
            COLLECTION,
            ["green ledger tide tables"],
            embedder.embed(["green ledger tide tables"]),
            top_k=3,
        )
        assert ledger[0].chunk.chunk_id == hybrid[0].chunk.chunk_id == "harbour:0"


def test_a_dropped_collection_forgets_its_copy_and_closing_stops_a_fill(
    library: str, embedder: OnnxMiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with VectorStore(library) as store:
        _copy(store)
        store.drop_collection(COLLECTION)
        assert store._copy(MNAME) is None
        store.ensure_collection(
            COLLECTION, embedder.dimension, embedder.model_name
        )  # empty: not copied
        assert store._copy(MNAME) is None
        assert store.search(COLLECTION, QUERIES[:1], embedder.embed(QUERIES[:1]), mode="dense") == [
            []
        ]

    pages_read: list[int] = []
    started = threading.Event()
    real_pages = VectorStore._copy_pages

    def slow(self: VectorStore, mname: str, dimension: int, texts: bool) -> Iterator[Any]:
        copy = self._copy(mname)
        assert copy is not None
        for page in real_pages(self, mname, dimension, texts):
            pages_read.append(len(page[0]))
            started.set()
            copy.cancelled.wait(60)  # a page that takes until the store closes
            yield page

    uri = str(Path(library).parent / "second.db")
    chunks = [
        Chunk(
            f"d{i // 10}:{i % 10}",
            f"d{i // 10}",
            COLLECTION,
            f"/d{i // 10}.txt",
            f"note number {i}",
        )
        for i in range(60)
    ]
    with VectorStore(uri) as store:
        store.ensure_collection(COLLECTION, embedder.dimension, embedder.model_name)
        store.insert(COLLECTION, chunks, embedder.embed([c.text for c in chunks]))
    monkeypatch.setattr(VectorStore, "_copy_pages", slow)
    store = VectorStore(uri)
    assert store.count(COLLECTION) == 60
    assert started.wait(60)
    copy = store._copy(MNAME)
    assert copy is not None
    assert copy is not None and copy.filler is not None
    store.close()  # while the fill is inside its first page: it stops, and close waits for it
    assert not copy.filler.is_alive()
    assert copy.cancelled.is_set() and not copy.ready  # never full, and no further page read
    assert pages_read == [16]


def test_a_collection_past_one_query_of_rows_is_read_and_copied_whole(tmp_path: Path) -> None:
    """One Milvus query returns at most 16384 rows (the native Milvus Lite stops there
    without a word): the ids read for Repair and for the copy must be all of them."""
    rows, per_doc, dimension = 17_000, 10, 384
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((rows, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chunks = [
        Chunk(
            f"d{i // per_doc}:{i % per_doc}",
            f"d{i // per_doc}",
            COLLECTION,
            "/d.txt",
            f"row {i}",
            chunk_no=i % per_doc,
        )
        for i in range(rows)
    ]
    uri = str(tmp_path / "milvus.db")
    with VectorStore(uri) as store:
        store.ensure_collection(COLLECTION, dimension, "random-unit-vectors")
        for start in range(0, rows, 2000):
            store.insert(COLLECTION, chunks[start : start + 2000], vectors[start : start + 2000])
    queries = vectors[[3, 9_000, 16_999]] + 0.5 * rng.standard_normal((3, dimension)).astype(
        np.float32
    )
    with VectorStore(uri) as store:
        assert store.count(COLLECTION) == rows
        assert store.doc_ids(COLLECTION) == {f"d{d}" for d in range(rows // per_doc)}
        by_document = store.chunk_ids_by_document(COLLECTION)
        assert sum(len(ids) for ids in by_document.values()) == rows
        copy = _copy(store)
        assert len(copy) == rows
        found = store.search(COLLECTION, ["a", "b", "c"], queries, mode="dense", top_k=10)
    exact = _exact_top(dict(zip((c.chunk_id for c in chunks), vectors, strict=True)), queries, 10)
    assert _ids(found) == exact


def test_closing_while_the_ids_are_read_stops_the_fill_there(
    library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A million ids take a minute to read: closing the store must not wait for them
    (nor close the connection under the reader, which Milvus logs as an error)."""
    real = VectorStore._query_all
    first_rows_read, read_after_close = threading.Event(), []

    def watched(
        self: VectorStore, mname: str, expr: str, fields: list[str] | None = None
    ) -> Iterator[Any]:
        filling = threading.current_thread().name.startswith("fathom-dense-copy")
        copy = self._copy(mname)
        for number, row in enumerate(real(self, mname, expr, fields)):
            if filling and copy is not None:
                if number == 2:
                    first_rows_read.set()
                    assert copy.cancelled.wait(60)
                elif copy.cancelled.is_set():
                    read_after_close.append(number)
            yield row

    monkeypatch.setattr(VectorStore, "_query_all", watched)
    store = VectorStore(library)
    assert store.count(COLLECTION) > 50  # loads it, and so starts the copy
    assert first_rows_read.wait(60)
    copy = store._copy(MNAME)
    assert copy is not None and copy.filler is not None
    store.close()
    assert not copy.filler.is_alive() and not copy.ready
    assert len(read_after_close) <= 1, (
        f"{len(read_after_close)} ids were read after the store closed"
    )
