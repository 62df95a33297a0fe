"""The vector store on real Milvus Lite files, with real embeddings of real text."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from store_corpus import PARTITIONS_DOC, build_chunks

from app.core.errors import CollectionNotFound, EmbeddingMismatch
from app.core.models import Chunk
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.store.vectors import VectorStore, milvus_name

COLLECTION = "Milvus notes"
SCHISM_QUERY = "the split between the Catholic Church and the Eastern Orthodox churches in 1054"
PARTITION_QUERY = "how do I create a partition"


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="module")
def corpus(shared_data: Path, embedder: OnnxMiniLMEmbedder) -> tuple[list[Chunk], np.ndarray]:
    chunks = build_chunks(shared_data, COLLECTION)
    return chunks, embedder.embed([c.text for c in chunks])


@pytest.fixture(scope="module")
def db_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("milvus") / "milvus.db")


@pytest.fixture(scope="module")
def store(
    db_uri: str, corpus: tuple[list[Chunk], np.ndarray], embedder: OnnxMiniLMEmbedder
) -> Iterator[VectorStore]:
    chunks, vectors = corpus
    with VectorStore(db_uri) as vs:
        vs.ensure_collection(COLLECTION, embedder.dimension, embedder.model_name)
        vs.insert(COLLECTION, chunks, vectors)
        yield vs


def _ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.chunk.chunk_id for h in hits]


def _schism_id(chunks: list[Chunk]) -> str:
    return next(c.chunk_id for c in chunks if c.title == "East–West Schism")


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_a_known_passage_is_found_by_every_mode(
    store: VectorStore,
    embedder: OnnxMiniLMEmbedder,
    corpus: tuple[list[Chunk], np.ndarray],
    mode: str,
) -> None:
    queries = [SCHISM_QUERY, PARTITION_QUERY]
    results = store.search(COLLECTION, queries, embedder.embed(queries), mode=mode, top_k=5)  # type: ignore[arg-type]

    assert len(results) == 2
    schism, partition = results
    assert schism[0].chunk.chunk_id == _schism_id(corpus[0])
    assert partition[0].chunk.doc_id == PARTITIONS_DOC
    for hits, query in zip(results, queries, strict=True):
        assert len(hits) == 5
        assert all(h.query == query for h in hits)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_many_queries_in_one_call_match_one_query_per_call(
    store: VectorStore, embedder: OnnxMiniLMEmbedder
) -> None:
    queries = [
        SCHISM_QUERY,
        PARTITION_QUERY,
        "peer-reviewed journal of mathematical physics",
        "list partitions",
    ]
    vectors = embedder.embed(queries)
    batched = store.search(COLLECTION, queries, vectors, top_k=4)
    one_by_one = [
        store.search(COLLECTION, [q], vectors[i : i + 1], top_k=4)[0] for i, q in enumerate(queries)
    ]

    assert [_ids(hits) for hits in batched] == [_ids(hits) for hits in one_by_one]
    assert len({tuple(_ids(hits)) for hits in batched}) == len(
        queries
    )  # each query got its own answer


def test_hybrid_is_the_reciprocal_rank_fusion_of_dense_and_bm25(
    store: VectorStore, embedder: OnnxMiniLMEmbedder
) -> None:
    """Whoever fuses (Milvus, or Fathom where the engine fuses a batch wrongly), a hybrid
    result is RRF (k=60, ranks from 1) over the dense and BM25 lists, each 20 long."""
    queries = [SCHISM_QUERY, PARTITION_QUERY, "peer-reviewed journal of mathematical physics"]
    vectors = embedder.embed(queries)
    hybrid = store.search(COLLECTION, queries, vectors, mode="hybrid", top_k=5, candidates=20)
    dense = store.search(COLLECTION, queries, vectors, mode="dense", top_k=20)
    bm25 = store.search(COLLECTION, queries, vectors, mode="bm25", top_k=20)

    for fused, by_dense, by_bm25 in zip(hybrid, dense, bm25, strict=True):
        expected: dict[str, float] = {}
        for hits in (by_dense, by_bm25):
            for rank, hit in enumerate(hits, start=1):
                expected[hit.chunk.chunk_id] = expected.get(hit.chunk.chunk_id, 0.0) + 1 / (
                    60 + rank
                )
        assert [h.score for h in fused] == pytest.approx(
            sorted(expected.values(), reverse=True)[:5], rel=1e-4
        )
        assert all(h.score == pytest.approx(expected[h.chunk.chunk_id], rel=1e-4) for h in fused)


def test_filters_by_document_and_by_path_prefix(
    store: VectorStore, embedder: OnnxMiniLMEmbedder, corpus: tuple[list[Chunk], np.ndarray]
) -> None:
    vector = embedder.embed([PARTITION_QUERY])
    only_musique = store.search(
        COLLECTION, [PARTITION_QUERY], vector, doc_ids=["musique-1", "musique-2"], top_k=30
    )[0]
    assert only_musique and {h.chunk.doc_id for h in only_musique} <= {"musique-1", "musique-2"}
    assert len(only_musique) == 20  # both documents' ten chunks, nothing else

    by_path = store.search(
        COLLECTION, [PARTITION_QUERY], vector, path_prefix="/corpus/musique/musique-3", top_k=30
    )[0]
    assert {h.chunk.doc_id for h in by_path} == {"musique-3"}

    milvus_page = str(Path(corpus[0][0].path).parent)
    docs = store.search(
        COLLECTION, [PARTITION_QUERY], None, mode="bm25", path_prefix=milvus_page, top_k=30
    )[0]
    assert docs and {h.chunk.doc_id for h in docs} == {PARTITIONS_DOC}

    assert store.search(COLLECTION, [PARTITION_QUERY], vector, doc_ids=[]) == [[]]


def test_chunks_round_trip_with_their_metadata(
    store: VectorStore, corpus: tuple[list[Chunk], np.ndarray]
) -> None:
    chunks = corpus[0]
    wanted = [chunks[15].chunk_id, chunks[0].chunk_id, "no-such-chunk"]
    got = store.get_chunks(COLLECTION, wanted)
    assert got == [chunks[15], chunks[0]]  # asked order, missing ids left out, page None kept
    assert got[1].page is None and got[0].page == chunks[15].page
    assert store.count(COLLECTION) == len(chunks)
    assert sorted(store.document_chunk_ids(COLLECTION, "musique-0")) == [
        f"musique-0:{i}" for i in range(10)
    ]


def test_reopening_the_file_finds_the_same_chunks(
    db_uri: str,
    store: VectorStore,
    embedder: OnnxMiniLMEmbedder,
    corpus: tuple[list[Chunk], np.ndarray],
) -> None:
    other = Path(db_uri).parent / "reopen.db"
    chunks, vectors = corpus
    with VectorStore(str(other)) as first:
        first.ensure_collection("reopened", embedder.dimension, embedder.model_name)
        first.insert("reopened", chunks[:30], vectors[:30])
    with VectorStore(str(other)) as second:  # a fresh server reads the files back
        assert second.count("reopened") == 30
        hits = second.search(
            "reopened", [PARTITION_QUERY], embedder.embed([PARTITION_QUERY]), top_k=3
        )[0]
        assert hits[0].chunk.doc_id == PARTITIONS_DOC
        assert second.collection_model("reopened") == (embedder.model_name, embedder.dimension)


def test_deleting_a_document_removes_all_its_chunks(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder, corpus: tuple[list[Chunk], np.ndarray]
) -> None:
    chunks, vectors = corpus
    with VectorStore(str(tmp_path / "milvus.db")) as vs:
        vs.ensure_collection("c", embedder.dimension, embedder.model_name)
        vs.insert("c", chunks, vectors)
        vs.delete_document("c", PARTITIONS_DOC)

        partition_chunks = sum(c.doc_id == PARTITIONS_DOC for c in chunks)
        assert vs.count("c") == len(chunks) - partition_chunks
        assert vs.document_chunk_ids("c", PARTITIONS_DOC) == []
        for mode in ("dense", "bm25", "hybrid"):
            hits = vs.search(
                "c", [PARTITION_QUERY], embedder.embed([PARTITION_QUERY]), mode=mode, top_k=20
            )[0]  # type: ignore[arg-type]
            assert PARTITIONS_DOC not in {h.chunk.doc_id for h in hits}, mode
        # meaning search still answers from what is left (keyword search may find no word of the query)
        for mode in ("dense", "hybrid"):
            hits = vs.search(
                "c", [PARTITION_QUERY], embedder.embed([PARTITION_QUERY]), mode=mode, top_k=20
            )[0]  # type: ignore[arg-type]
            assert len(hits) == min(20, len(chunks) - partition_chunks), mode


def test_inserting_the_same_chunks_again_does_not_duplicate_them(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder, corpus: tuple[list[Chunk], np.ndarray]
) -> None:
    chunks, vectors = corpus
    with VectorStore(str(tmp_path / "milvus.db")) as vs:
        vs.ensure_collection("c", embedder.dimension, embedder.model_name)
        vs.insert("c", chunks[:20], vectors[:20])
        vs.insert("c", chunks[:20], vectors[:20])  # a crashed ingest redoing a document
        assert vs.count("c") == 20


def test_another_embedding_model_is_refused_with_a_way_out(tmp_path: Path) -> None:
    uri = str(tmp_path / "milvus.db")
    with VectorStore(uri) as vs:
        vs.ensure_collection("Team notes", 384, "all-MiniLM-L6-v2-onnx-int8")
    with VectorStore(uri) as vs, pytest.raises(EmbeddingMismatch) as caught:
        vs.ensure_collection("Team notes", 768, "ollama:nomic-embed-text")
    assert str(caught.value) == (
        "Collection 'Team notes' was built with all-MiniLM-L6-v2-onnx-int8 (384 dims); "
        "the current embedding model is ollama:nomic-embed-text (768 dims). "
        "Re-index it (Re-index in the library's menu, or `fathom reindex --collection 'Team notes'`) "
        "— or switch the embedding model back in Settings."
    )


def test_any_collection_name_works_and_is_listed_as_given(tmp_path: Path) -> None:
    names = ["Research notes — 2024", "研究ノート", "a/b:c", "Research notes 2024"]
    with VectorStore(str(tmp_path / "milvus.db")) as vs:
        for name in names:
            vs.ensure_collection(name, 4, "m")
            vs.insert(
                name, [Chunk("x", "d", name, "/p", f"text of {name}")], [[1.0, 0.0, 0.0, 0.0]]
            )
        assert vs.list_collections() == sorted(names)
        assert len({milvus_name(n) for n in names}) == len(names)
        assert all(vs.count(n) == 1 for n in names)
        assert vs.get_chunks("研究ノート", ["x"])[0].text == "text of 研究ノート"
        vs.drop_collection("a/b:c")
        assert not vs.has_collection("a/b:c")
        with pytest.raises(CollectionNotFound):
            vs.count("a/b:c")


def test_a_file_name_that_is_not_utf8_is_stored_not_refused(tmp_path: Path) -> None:
    odd = "/docs/caf\udce9.txt"  # os.fsdecode(b"/docs/caf\xe9.txt")
    with VectorStore(str(tmp_path / "milvus.db")) as vs:
        vs.ensure_collection("c", 4, "m")
        vs.insert("c", [Chunk("x", "d", "c", odd, "some text")], [[0.0, 1.0, 0.0, 0.0]])
        [chunk] = vs.get_chunks("c", ["x"])
        assert chunk.path == "/docs/caf\\udce9.txt"
        assert (
            vs.search("c", ["text"], None, mode="bm25", path_prefix=odd[:8])[0][0].chunk.chunk_id
            == "x"
        )


def test_worker_threads_can_search_while_another_inserts(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder, corpus: tuple[list[Chunk], np.ndarray]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    chunks, vectors = corpus
    query = embedder.embed([SCHISM_QUERY])
    with VectorStore(str(tmp_path / "milvus.db")) as vs:
        vs.ensure_collection("c", embedder.dimension, embedder.model_name)
        vs.insert("c", chunks[:60], vectors[:60])

        def search(_: int) -> str:
            return vs.search("c", [SCHISM_QUERY], query, top_k=1)[0][0].chunk.chunk_id

        def insert(start: int) -> None:
            vs.insert("c", chunks[start : start + 14], vectors[start : start + 14])

        with ThreadPoolExecutor(max_workers=4) as pool:
            searches = [pool.submit(search, i) for i in range(6)]
            inserts = [pool.submit(insert, s) for s in (60, 74, 88)]
            found = {f.result(timeout=120) for f in searches}
            for f in inserts:
                f.result(timeout=120)
        assert found == {_schism_id(chunks)}
        assert vs.count("c") == len(chunks)


def test_an_empty_collection_and_empty_queries_answer_nothing(tmp_path: Path) -> None:
    with VectorStore(str(tmp_path / "milvus.db")) as vs:
        vs.ensure_collection("c", 4, "m")
        assert vs.search("c", ["anything"], [[1.0, 0.0, 0.0, 0.0]]) == [[]]
        assert vs.search("c", [], None) == []
        assert vs.count("c") == 0 and vs.get_chunks("c", []) == []


LITE_MAJOR = int(version("milvus-lite").split(".")[0])


@pytest.mark.skipif(
    LITE_MAJOR < 3, reason="Milvus Lite 2.x keeps its indexes in its own store, not in .idx files"
)
def test_a_search_index_cut_short_by_a_kill_is_rebuilt_from_the_rows(
    tmp_path: Path, corpus: tuple[list[Chunk], np.ndarray], embedder: OnnxMiniLMEmbedder
) -> None:
    """Milvus Lite writes an index file in place; a process killed while it writes one
    leaves it cut short and the collection could not be loaded ("No data left in file").
    The index is derived from the rows: the next open rebuilds it and loses nothing."""
    chunks, vectors = corpus
    uri = str(tmp_path / "milvus.db")
    with VectorStore(uri) as vs:
        vs.ensure_collection(COLLECTION, embedder.dimension, embedder.model_name)
        vs.insert(COLLECTION, chunks, vectors)
        vs.flush(COLLECTION)
    index_files = sorted((tmp_path / "milvus.db").rglob("*.dense.*.idx"))
    assert index_files, (
        "Milvus Lite wrote no dense index file: the test no longer reproduces the cut"
    )
    for index_file in index_files:
        with index_file.open("r+b") as handle:
            handle.truncate(index_file.stat().st_size // 3)
    with VectorStore(uri) as reopened:
        assert reopened.count(COLLECTION) == len(chunks)
        hits = reopened.search(
            COLLECTION, [SCHISM_QUERY], embedder.embed([SCHISM_QUERY]), mode="dense", top_k=3
        )
        assert _schism_id(chunks) in _ids(hits[0])
        assert reopened.indexes_rebuilt == [milvus_name(COLLECTION)]
    with VectorStore(uri) as again:  # the rebuilt index is whole: no second rebuild
        assert again.count(COLLECTION) == len(chunks) and again.indexes_rebuilt == []


def test_two_stores_on_one_file_close_one_at_a_time(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    """Stores of one Milvus Lite file in one process share its server and connection:
    opening the second must not drop the first's lock (the native server stops when its
    lock goes), and closing one leaves the other working."""
    uri = str(tmp_path / "milvus.db")
    first = VectorStore(uri)
    first.ensure_collection(COLLECTION, embedder.dimension, embedder.model_name)
    chunk = Chunk(
        "harbour-0",
        "harbour",
        COLLECTION,
        "/notes/harbour.md",
        "The tide tables live in a green ledger.",
    )
    first.insert(COLLECTION, [chunk], embedder.embed([chunk.text]))
    first.flush(COLLECTION)
    second = VectorStore(uri, timeout=30)
    try:
        assert second.count(COLLECTION) == 1
        first.close()
        (hits,) = second.search(COLLECTION, ["green ledger"], None, mode="bm25", top_k=1)
        assert [h.chunk.chunk_id for h in hits] == ["harbour-0"]
    finally:
        first.close()
        second.close()
    with VectorStore(uri, timeout=30) as reopened:
        assert reopened.count(COLLECTION) == 1
