"""The vector store on a real Milvus server: the embedded Milvus 2.3.5 standalone
(PyPI ``milvus``), started once for this module on 127.0.0.1, with real embeddings
of real text. A team's ``store.milvus_uri`` points at such a server.

Milvus 2.3 has no BM25 (it came in 2.5): the store makes its collections without the
keyword field, answers bm25 and hybrid searches by meaning, and says so once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from milvus_server import ServerUnavailable, milvus_server
from store_corpus import PARTITIONS_DOC, build_chunks

from app.core.errors import CollectionNotFound, EmbeddingMismatch, StoreError
from app.core.models import Chunk
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.store.milvus_schema import KEYWORD_FIELD, PROP_MODEL, PROP_NAME
from app.store.vectors import VectorStore, milvus_name

COLLECTION = "Team notes"
SCHISM_QUERY = "the split between the Catholic Church and the Eastern Orthodox churches in 1054"
PARTITION_QUERY = "how do I create a partition"
NOTE = (
    "This Milvus server (2.3.5) has no BM25 keyword search (it needs Milvus 2.5 or later): "
    "searching by meaning only."
)


@pytest.fixture(scope="module")
def server_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    started = time.perf_counter()
    try:
        with milvus_server(tmp_path_factory.mktemp("milvus-server")) as uri:
            logging.getLogger(__name__).info(
                "Milvus server up in %.1f s", time.perf_counter() - started
            )
            yield uri
    except ServerUnavailable as exc:
        pytest.skip(f"no Milvus server to test against: {exc}")


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="module")
def corpus(shared_data: Path, embedder: OnnxMiniLMEmbedder) -> tuple[list[Chunk], np.ndarray]:
    chunks = build_chunks(shared_data, COLLECTION)
    return chunks, embedder.embed([c.text for c in chunks])


@pytest.fixture(scope="module")
def store(
    server_uri: str, corpus: tuple[list[Chunk], np.ndarray], embedder: OnnxMiniLMEmbedder
) -> Iterator[VectorStore]:
    chunks, vectors = corpus
    with VectorStore(server_uri) as vs:
        vs.ensure_collection(COLLECTION, embedder.dimension, embedder.model_name)
        vs.insert(COLLECTION, chunks, vectors)
        yield vs


def _ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.chunk.chunk_id for h in hits]


def _schism_id(chunks: list[Chunk]) -> str:
    return next(c.chunk_id for c in chunks if c.title == "East–West Schism")


def test_an_older_server_is_recognised_and_said_so_once(
    server_uri: str, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="app.store.vectors"),
        VectorStore(server_uri) as vs,
    ):
        assert not vs.is_lite
        assert "2.3.5" in vs.server_version
        assert vs.keyword_search_available is False
        assert vs.search_note == NOTE
        vs.ensure_collection("said once", 4, "m")
        vs.insert(
            "said once", [Chunk("x", "d", "said once", "/p", "some text")], [[1.0, 0.0, 0.0, 0.0]]
        )
        for mode in ("bm25", "hybrid", "bm25"):
            assert _ids(vs.search("said once", ["text"], [[1.0, 0.0, 0.0, 0.0]], mode=mode)[0]) == [
                "x"
            ]  # type: ignore[arg-type]
        vs.drop_collection("said once")
    store_warnings = [r.getMessage() for r in caplog.records if r.name == "app.store.vectors"]
    assert store_warnings == [NOTE]


def test_a_collection_is_made_without_the_keyword_field_and_keeps_its_metadata(
    store: VectorStore, embedder: OnnxMiniLMEmbedder
) -> None:
    description = store._client.describe_collection(milvus_name(COLLECTION))
    assert KEYWORD_FIELD not in {field["name"] for field in description["fields"]}
    assert not description.get("functions")
    # Milvus 2.3 keeps collection properties: the metadata is read from them
    assert description["properties"][PROP_NAME] == COLLECTION
    assert description["properties"][PROP_MODEL] == embedder.model_name


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_a_known_passage_is_found_and_keyword_modes_search_by_meaning(
    store: VectorStore,
    embedder: OnnxMiniLMEmbedder,
    corpus: tuple[list[Chunk], np.ndarray],
    mode: str,
) -> None:
    queries = [SCHISM_QUERY, PARTITION_QUERY]
    vectors = embedder.embed(queries)
    results = store.search(COLLECTION, queries, vectors, mode=mode, top_k=5)  # type: ignore[arg-type]
    dense = store.search(COLLECTION, queries, vectors, mode="dense", top_k=5)

    schism, partition = results
    assert schism[0].chunk.chunk_id == _schism_id(corpus[0])
    assert partition[0].chunk.doc_id == PARTITIONS_DOC
    for hits, query in zip(results, queries, strict=True):
        assert len(hits) == 5 and all(h.query == query for h in hits)
        scores = [h.score for h in hits]
        assert (
            scores == sorted(scores, reverse=True) and 0 < scores[0] <= 1.0001
        )  # cosine similarity
    assert [_ids(hits) for hits in results] == [_ids(hits) for hits in dense]


def test_a_keyword_only_search_without_vectors_is_refused_with_the_reason(
    store: VectorStore,
) -> None:
    with pytest.raises(StoreError) as caught:
        store.search(COLLECTION, [PARTITION_QUERY], None, mode="bm25")
    assert caught.value.message.startswith(NOTE)
    assert caught.value.hint == "Search in hybrid or dense mode."


def test_filters_by_document_and_by_path_prefix(
    store: VectorStore, embedder: OnnxMiniLMEmbedder, corpus: tuple[list[Chunk], np.ndarray]
) -> None:
    vector = embedder.embed([PARTITION_QUERY])
    only_musique = store.search(
        COLLECTION, [PARTITION_QUERY], vector, doc_ids=["musique-1", "musique-2"], top_k=30
    )[0]
    assert {h.chunk.doc_id for h in only_musique} == {"musique-1", "musique-2"} and len(
        only_musique
    ) == 20

    by_path = store.search(
        COLLECTION, [PARTITION_QUERY], vector, path_prefix="/corpus/musique/musique-3", top_k=30
    )[0]
    assert {h.chunk.doc_id for h in by_path} == {"musique-3"} and len(by_path) == 10

    milvus_page = str(Path(corpus[0][0].path).parent)
    docs = store.search(
        COLLECTION, [PARTITION_QUERY], vector, mode="hybrid", path_prefix=milvus_page, top_k=30
    )[0]
    assert {h.chunk.doc_id for h in docs} == {PARTITIONS_DOC}


def test_chunks_round_trip_with_their_metadata(
    store: VectorStore, corpus: tuple[list[Chunk], np.ndarray]
) -> None:
    chunks = corpus[0]
    wanted = [chunks[15].chunk_id, chunks[0].chunk_id, "no-such-chunk"]
    assert store.get_chunks(COLLECTION, wanted) == [chunks[15], chunks[0]]
    assert store.count(COLLECTION) == len(chunks)
    assert sorted(store.document_chunk_ids(COLLECTION, "musique-0")) == [
        f"musique-0:{i}" for i in range(10)
    ]
    by_document = store.chunk_ids_by_document(COLLECTION)  # read with a query iterator on a server
    assert sum(len(ids) for ids in by_document.values()) == len(chunks)
    assert store.doc_ids(COLLECTION) == {c.doc_id for c in chunks}
    assert len(store.sample_chunks(COLLECTION, 8)) == 8


def test_a_new_store_on_the_same_server_finds_the_same_chunks(
    server_uri: str,
    store: VectorStore,
    embedder: OnnxMiniLMEmbedder,
    corpus: tuple[list[Chunk], np.ndarray],
) -> None:
    chunks = corpus[0]
    with VectorStore(server_uri) as other:  # a teammate's Fathom, while this one stays open
        assert COLLECTION in other.list_collections()
        assert other.collection_model(COLLECTION) == (embedder.model_name, embedder.dimension)
        assert other.count(COLLECTION) == len(chunks)
        hits = other.search(COLLECTION, [SCHISM_QUERY], embedder.embed([SCHISM_QUERY]), top_k=3)[0]
        assert hits[0].chunk.chunk_id == _schism_id(chunks)
        with pytest.raises(EmbeddingMismatch):
            other.ensure_collection(COLLECTION, 768, "ollama:nomic-embed-text")
    assert store.count(COLLECTION) == len(
        chunks
    )  # closing the other store left this one's connection open


def test_deleting_a_document_removes_all_its_chunks(
    server_uri: str, embedder: OnnxMiniLMEmbedder, corpus: tuple[list[Chunk], np.ndarray]
) -> None:
    chunks, vectors = corpus
    with VectorStore(server_uri) as vs:
        vs.ensure_collection("deleting", embedder.dimension, embedder.model_name)
        vs.insert("deleting", chunks, vectors)
        vs.insert(
            "deleting", chunks[:20], vectors[:20]
        )  # a crashed ingest redoing a document: no duplicates
        assert vs.count("deleting") == len(chunks)
        vs.delete_document("deleting", PARTITIONS_DOC)

        left = len(chunks) - sum(c.doc_id == PARTITIONS_DOC for c in chunks)
        assert vs.count("deleting") == left  # seen at once: collections are made Strong-consistent
        assert vs.document_chunk_ids("deleting", PARTITIONS_DOC) == []
        hits = vs.search(
            "deleting", [PARTITION_QUERY], embedder.embed([PARTITION_QUERY]), top_k=20
        )[0]
        assert PARTITIONS_DOC not in {h.chunk.doc_id for h in hits} and len(hits) == 20
        vs.delete_chunks("deleting", ["musique-0:0", "musique-0:1", "no-such-chunk"])
        assert vs.count("deleting") == left - 2
        vs.drop_collection("deleting")
        assert not vs.has_collection("deleting")
        with pytest.raises(CollectionNotFound):
            vs.count("deleting")


def test_any_collection_name_works_and_is_listed_as_given(server_uri: str) -> None:
    names = ["Research notes — 2024", "研究ノート", "a/b:c"]
    with VectorStore(server_uri) as vs:
        for name in names:
            vs.ensure_collection(name, 4, "m")
            vs.insert(
                name, [Chunk("x", "d", name, "/p", f"text of {name}")], [[1.0, 0.0, 0.0, 0.0]]
            )
        assert set(names) <= set(vs.list_collections())
        assert vs.get_chunks("研究ノート", ["x"])[0].text == "text of 研究ノート"
        assert vs.search("a/b:c", ["anything"], [[0.0, 1.0, 0.0, 0.0]])[0][0].chunk.chunk_id == "x"
        for name in names:
            vs.drop_collection(name)
        vs.ensure_collection("empty", 4, "m")
        assert vs.search("empty", ["anything"], [[1.0, 0.0, 0.0, 0.0]]) == [[]]
        vs.drop_collection("empty")


def test_more_rows_than_one_page_are_all_read(server_uri: str) -> None:
    """A server caps one query at 16,384 rows, so the store pages through them (1,000 a page)."""
    rows = 2_500
    chunks = [
        Chunk(f"d{i % 3}:{i}", f"d{i % 3}", "paged", "/p", f"row {i}", chunk_no=i)
        for i in range(rows)
    ]
    vectors = np.random.default_rng(0).standard_normal((rows, 4))
    with VectorStore(server_uri) as vs:
        vs.ensure_collection("paged", 4, "m")
        vs.insert("paged", chunks, vectors)
        assert len(vs.document_chunk_ids("paged", "d1")) == len(
            [c for c in chunks if c.doc_id == "d1"]
        )
        assert {doc: len(ids) for doc, ids in vs.chunk_ids_by_document("paged").items()} == {
            "d0": 834,
            "d1": 833,
            "d2": 833,
        }
        vs.drop_collection("paged")


def test_fathom_on_the_server_answers_a_keyword_search_by_meaning_and_says_why(
    server_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole path a team takes: settings point at the server, ingest, then a keyword
    search (what table mode also runs) is answered by meaning, with the note."""
    import dataclasses

    from app.cli import main
    from app.core.paths import app_paths
    from app.core.settings import Settings, StoreSettings, save_settings

    paths = app_paths().ensure()
    save_settings(
        dataclasses.replace(Settings(), store=StoreSettings(milvus_uri=server_uri)),
        paths.settings_file,
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "harbour.md").write_text(
        "The harbour office keeps its tide tables in a green ledger.\n", encoding="utf-8"
    )
    assert main(["ingest", str(docs), "--collection", "team harbour", "--quiet"]) == 0
    capsys.readouterr()

    assert (
        main(
            [
                "search",
                "where are the tide tables kept",
                "--collection",
                "team harbour",
                "--mode",
                "bm25",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    assert "harbour.md" in out
    assert NOTE in err
