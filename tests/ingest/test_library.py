"""The library end to end: real files → Docling → chunks → MiniLM → Milvus Lite → search.

One ingest for the module (a spread of the Milvus docs, the Milvus PDF, and
DOCX/PPTX/XLSX/HTML/text files made here) that the tests only read; a test that
changes or deletes files ingests its own small folder, so the tests hold in any order.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio
from ingest_files import copy_subset, make_office_files, paths_in

from app.core.errors import EmbeddingMismatch, StoreLocked
from app.core.events import FileDone, IngestEvent, IngestFinished, IngestProgress, IngestStarted
from app.core.models import DocumentStatus
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.ingest.convert import Converter
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library
from app.store.vectors import milvus_name

pytestmark = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Ingested:
    library: Library
    docs: Path
    paths: AppPaths
    events: list[IngestEvent]
    files: list[Path]


async def collect(events: AsyncIterator[IngestEvent]) -> list[IngestEvent]:
    return [event async for event in events]


def finished(events: list[IngestEvent]) -> IngestFinished:
    last = events[-1]
    assert isinstance(last, IngestFinished)
    return last


def stored_vectors(
    library: Library, collection: str, chunk_ids: list[str]
) -> dict[str, np.ndarray]:
    """The dense vectors Milvus holds for these chunks, read from the store itself
    (no public method returns vectors: search results carry chunks and scores only)."""
    rows = library.store._client.get(
        milvus_name(collection), ids=chunk_ids, output_fields=["dense"]
    )
    return {str(row["chunk_id"]): np.asarray(row["dense"], dtype=np.float32) for row in rows}


def chunk_ids_of(library: Library, collection: str, doc_ids: list[str]) -> list[str]:
    return sorted(
        cid for doc_id in doc_ids for cid in library.store.document_chunk_ids(collection, doc_id)
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ingested(
    tmp_path_factory: pytest.TempPathFactory, shared_data: Path
) -> AsyncIterator[Ingested]:
    root = tmp_path_factory.mktemp("library")
    docs = root / "docs"
    files = copy_subset(shared_data, docs)
    files.append(
        Path(shutil.copyfile(shared_data / "pdf" / "WhatisMilvus.pdf", docs / "WhatisMilvus.pdf"))
    )
    files.extend(make_office_files(docs / "office").values())
    notes = docs / "notes.txt"
    notes.write_text(
        "Field notes.\n\nThe quokka colony moved to the eastern ridge.\n", encoding="utf-8"
    )
    files.append(notes)
    paths = paths_in(root / "home")
    library = Library.open(Settings(), paths)
    events = await collect(library.ingest([docs], "milvus", description="Milvus documentation"))
    yield Ingested(library=library, docs=docs, paths=paths, events=events, files=sorted(files))
    await library.aclose()


@pytest_asyncio.fixture(loop_scope="module")
async def small(
    tmp_path: Path, shared_data: Path, embedder: OnnxMiniLMEmbedder
) -> AsyncIterator[Ingested]:
    """A small library of its own, for the tests that change or delete files."""
    docs = tmp_path / "docs"
    files = copy_subset(shared_data, docs, ("userGuide/manage-partitions.md", "about/overview.md"))
    files.extend(make_office_files(docs / "office").values())
    notes = docs / "notes.txt"
    notes.write_text(
        "Field notes.\n\nThe quokka colony moved to the eastern ridge.\n", encoding="utf-8"
    )
    files.append(notes)
    paths = paths_in(tmp_path / "home")
    library = Library.open(Settings(), paths, embedder=embedder)
    try:
        events = await collect(library.ingest([docs], "milvus"))
        assert finished(events).indexed == len(files)
        yield Ingested(library=library, docs=docs, paths=paths, events=events, files=sorted(files))
    finally:
        await library.aclose()


async def test_every_file_gets_chunks(ingested: Ingested) -> None:
    done = {Path(e.path): e for e in ingested.events if isinstance(e, FileDone)}
    assert sorted(done) == ingested.files
    assert all(e.status == "indexed" and e.chunks > 0 for e in done.values()), done
    docs = await ingested.library.documents("milvus")
    assert sorted(Path(d.path) for d in docs) == ingested.files
    assert all(d.status is DocumentStatus.INDEXED and d.chunk_count > 0 for d in docs)
    (collection,) = await ingested.library.collections()
    assert collection.description == "Milvus documentation"
    assert collection.documents == len(ingested.files)
    assert collection.chunks == sum(d.chunk_count for d in docs) == finished(ingested.events).chunks
    assert ingested.library.store.count("milvus") == collection.chunks


async def test_events_tell_the_story_in_order(ingested: Ingested) -> None:
    events = ingested.events
    assert isinstance(events[0], IngestStarted) and events[0].total_files == len(ingested.files)
    progress = [e for e in events if isinstance(e, IngestProgress)]
    assert progress, "no progress events"
    assert progress[-1].done_files == progress[-1].total_files == len(ingested.files)
    assert [p.done_files for p in progress] == sorted(p.done_files for p in progress)
    assert len(progress) <= 2 * len(ingested.files) + 2  # throttled, not one per chunk
    end = finished(events)
    assert (end.indexed, end.failed, end.skipped, end.unchanged, end.removed) == (
        len(ingested.files),
        0,
        0,
        0,
        0,
    )


@pytest.mark.parametrize(
    ("mode", "query"),
    [
        ("dense", "How many partitions can one collection hold at most?"),
        ("bm25", "maximum 1,024 partitions"),
        ("hybrid", "how do I create a partition"),
    ],
)
async def test_a_known_passage_is_found_by_each_mode(
    ingested: Ingested, mode: str, query: str
) -> None:
    (hits,) = await ingested.library.search([query], collections=["milvus"], mode=mode, top_k=5)  # type: ignore[arg-type]
    assert hits, mode
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # the passage that answers: the guide's "Create Partitions" section, or its overview
    # that states the same limit ("a maximum of 1,024 partitions within a collection")
    found = [
        h
        for h in hits
        if h.chunk.path.endswith("manage-partitions.md")
        and ("Create Partitions" in h.chunk.headings or "1,024 partitions" in h.chunk.text)
    ]
    assert found, [(h.chunk.path, h.chunk.headings) for h in hits]
    assert found[0].chunk.title == "Manage Partitions"


async def test_many_queries_in_one_call_each_get_their_answer(ingested: Ingested) -> None:
    queries = [
        "zebrafish hatchery budget",
        "aurora borealis tundra",
        "Vermilion sprocket",
        "marmalade fog",
        "quokka",
    ]
    expected = ["report.docx", "slides.pptx", "parts.xlsx", "log.html", "notes.txt"]
    results = await ingested.library.search(queries, mode="hybrid", top_k=3)
    assert [Path(hits[0].chunk.path).name for hits in results] == expected
    assert all(hits[0].query == q for hits, q in zip(results, queries, strict=True))


async def test_pdf_hits_name_the_right_page(ingested: Ingested) -> None:
    from pypdf import PdfReader

    pdf = ingested.docs / "WhatisMilvus.pdf"
    pages = [re.sub(r"[^a-z0-9]", "", p.extract_text().lower()) for p in PdfReader(str(pdf)).pages]
    doc = next(d for d in await ingested.library.documents("milvus") if d.path == str(pdf))
    chunks = await ingested.library.get_chunks(
        [f"{doc.doc_id}:{n:05d}" for n in range(doc.chunk_count)]
    )
    assert len(chunks) == doc.chunk_count
    assert {c.page for c in chunks} == {1, 2, 3, 4}
    for chunk in chunks:
        assert chunk.page is not None
        assert re.sub(r"[^a-z0-9]", "", chunk.text.lower())[:40] in pages[chunk.page - 1]


async def test_every_chunk_is_stored_with_the_vector_of_its_own_text(
    ingested: Ingested, converter: Converter, embedder: OnnxMiniLMEmbedder
) -> None:
    """A vector filed under the wrong chunk would make meaning search return the wrong
    passage: each chunk's stored vector must be the embedding of that chunk's text."""
    library = ingested.library
    names = ("WhatisMilvus.pdf", "manage-partitions.md", "report.docx", "notes.txt")
    docs = [d for d in await library.documents("milvus") if Path(d.path).name in names]
    assert sorted(Path(d.path).name for d in docs) == sorted(names)
    for doc in docs:
        pieces = converter.convert(Path(doc.path)).pieces
        assert len(pieces) == doc.chunk_count, doc.path
        expected = embedder.embed([p.embed_text for p in pieces])
        ids = [f"{doc.doc_id}:{n:05d}" for n in range(doc.chunk_count)]
        stored = stored_vectors(library, "milvus", ids)
        assert sorted(stored) == ids, doc.path
        for n, chunk_id in enumerate(ids):
            assert float(stored[chunk_id] @ expected[n]) > 0.999, (doc.path, n)
        # and meaning search with a chunk's own vector finds that chunk first
        (hits,) = library.store.search(
            "milvus", [pieces[0].text], expected[:1], mode="dense", top_k=1
        )
        assert [h.chunk.chunk_id for h in hits] == [ids[0]], doc.path


async def test_get_chunks_keeps_the_order_asked_and_sample_spreads(ingested: Ingested) -> None:
    (hits,) = await ingested.library.search(["partition key"], top_k=4)
    ids = [h.chunk.chunk_id for h in hits][::-1]
    assert [c.chunk_id for c in await ingested.library.get_chunks([*ids, "nope:00000"])] == ids
    sample = await ingested.library.sample_chunks("milvus", 6)
    assert len(sample) == 6
    assert len({c.doc_id for c in sample}) == 6  # six different documents


async def test_a_second_fathom_on_the_same_data_is_refused(ingested: Ingested) -> None:
    with pytest.raises(StoreLocked, match="already open by another Fathom window"):
        Library.open(Settings(), ingested.paths)


async def test_reingest_unchanged_writes_nothing(ingested: Ingested) -> None:
    before = ingested.library.store.count("milvus")
    events = await collect(ingested.library.ingest([ingested.docs], "milvus"))
    end = finished(events)
    assert (end.indexed, end.unchanged, end.chunks) == (0, len(ingested.files), 0)
    assert not any(isinstance(e, FileDone) and e.status != "unchanged" for e in events)
    assert ingested.library.store.count("milvus") == before


async def test_a_changed_file_has_only_its_chunks_replaced(small: Ingested) -> None:
    library = small.library
    docs = {d.path: d for d in await library.documents("milvus")}
    notes = small.docs / "notes.txt"
    others = [d.doc_id for p, d in docs.items() if p != str(notes)]
    other_ids = chunk_ids_of(library, "milvus", others)
    vectors_before = stored_vectors(library, "milvus", other_ids)
    assert sorted(vectors_before) == other_ids
    notes.write_text(
        "Field notes.\n\nThe wombat burrow flooded after the storm.\n", encoding="utf-8"
    )

    end = finished(await collect(library.ingest([small.docs], "milvus")))

    assert (end.indexed, end.unchanged) == (1, len(small.files) - 1)
    assert chunk_ids_of(library, "milvus", others) == other_ids
    vectors_after = stored_vectors(library, "milvus", other_ids)
    assert sorted(vectors_after) == other_ids
    assert all(np.array_equal(vectors_after[cid], vectors_before[cid]) for cid in other_ids)
    (hits,) = await library.search(["wombat burrow"], mode="bm25", top_k=3)
    assert hits and hits[0].chunk.path == str(notes)
    (near,) = await library.search(
        ["a wombat's burrow was flooded by a storm"], mode="dense", top_k=1
    )
    assert near[0].chunk.path == str(notes)  # the new text has its new vector
    (stale,) = await library.search(["quokka colony"], mode="bm25", top_k=3)
    assert all("quokka" not in h.chunk.text for h in stale)
    assert library.store.count("milvus") == sum(
        d.chunk_count for d in await library.documents("milvus")
    )


async def test_a_deleted_file_is_removed_on_rescan(small: Ingested) -> None:
    library = small.library
    gone = small.docs / "office" / "slides.pptx"
    doc = next(d for d in await library.documents("milvus") if d.path == str(gone))
    (before,) = await library.search(["aurora borealis tundra"], mode="bm25", top_k=5)
    assert before and before[0].chunk.path == str(gone)  # found while the file is there
    gone.unlink()
    events = await collect(library.rescan("milvus"))
    removed = [e for e in events if isinstance(e, FileDone) and e.status == "removed"]
    assert [e.path for e in removed] == [str(gone)]
    assert library.store.document_chunk_ids("milvus", doc.doc_id) == []
    assert str(gone) not in {d.path for d in await library.documents("milvus")}
    (hits,) = await library.search(["aurora borealis tundra"], mode="bm25", top_k=5)
    assert all(h.chunk.path != str(gone) for h in hits)


async def test_a_rescan_that_finds_nothing_new_starts_no_converter(small: Ingested) -> None:
    """Starting the converter processes costs seconds of a core: the catch-up re-scans
    of watched folders at every start must not pay it when nothing changed."""
    library = small.library
    library._drop_converters()
    end = finished(await collect(library.rescan("milvus")))
    assert (end.indexed, end.unchanged) == (0, len(small.files))
    assert library._converters is None or not library._converters.started
    (small.docs / "notes.txt").write_text(
        "Field notes.\n\nThe numbat den is empty.\n", encoding="utf-8"
    )
    end = finished(await collect(library.rescan("milvus")))
    assert end.indexed == 1 and library._converters is not None and library._converters.started


class _OtherModel:
    """The real MiniLM, presented as another model (the only thing the check looks at)."""

    def __init__(self, inner: OnnxMiniLMEmbedder) -> None:
        self.inner = inner
        self.model_name = "some-other-embedding-model"
        self.dimension = 384
        self.max_tokens = inner.max_tokens
        self.tokenizer = inner.tokenizer

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed(texts)


async def test_an_embedding_model_mismatch_is_refused(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    paths = paths_in(tmp_path / "home")
    note = tmp_path / "note.txt"
    note.write_text("A short note about lighthouses.\n", encoding="utf-8")
    library = Library.open(Settings(), paths, embedder=embedder)
    try:
        await collect(library.ingest([note], "notes"))
    finally:
        await library.aclose()

    other = Library.open(Settings(), paths, embedder=_OtherModel(embedder))  # type: ignore[arg-type]
    try:
        with pytest.raises(EmbeddingMismatch) as caught:
            await collect(other.ingest([note], "notes"))
        message = str(caught.value)
        assert "was built with all-MiniLM-L6-v2-onnx-int8" in message
        assert "some-other-embedding-model" in message
        assert "fathom reindex --collection notes" in message
        with pytest.raises(EmbeddingMismatch):
            await other.search(["lighthouse"], collections=["notes"], mode="dense")
        (hits,) = await other.search(["lighthouses"], collections=["notes"], mode="bm25")
        assert hits  # keyword search needs no embeddings
    finally:
        await other.aclose()
