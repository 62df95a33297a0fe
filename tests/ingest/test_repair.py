"""What a crash leaves half-done is found on open and redone by the next ingest."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from ingest_files import paths_in

from app.cli import main
from app.core.errors import StoreError
from app.core.events import IngestFinished
from app.core.ids import chunk_ids_of
from app.core.models import Document, DocumentStatus
from app.core.settings import Settings
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library
from app.store.catalog import Catalog
from app.store.vectors import VectorStore


async def test_open_repairs_pending_and_lost_chunks(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(
        "Alpha.\n\n" + "The albatross glides for hours. " * 60, encoding="utf-8"
    )
    (docs / "b.txt").write_text(
        "Beta.\n\n" + "The bittern booms in the reeds. " * 60, encoding="utf-8"
    )
    paths = paths_in(tmp_path / "home")

    library = Library.open(Settings(), paths, embedder=embedder)
    try:
        [_ async for _ in library.ingest([docs], "birds")]
        before = {d.path: d for d in await library.documents("birds")}
        a, b = before[str(docs / "a.txt")], before[str(docs / "b.txt")]
        assert a.chunk_count > 1 and b.chunk_count > 1
        # A crash after a's chunks reached Milvus but before it was marked indexed ...
        library.catalog.save_documents([replace(a, status=DocumentStatus.PENDING)])
        # ... and, in an ingest that never finished, writes of b that Milvus lost.
        library.catalog.start_run("birds")
        library.store.delete_document("birds", b.doc_id)
    finally:
        await library.aclose()

    library = Library.open(Settings(), paths, embedder=embedder)
    try:
        after = {d.path: d for d in await library.documents("birds")}
        assert after[a.path].status is DocumentStatus.PENDING and after[a.path].chunk_count == 0
        assert library.store.document_chunk_ids("birds", a.doc_id) == []  # partial chunks gone
        assert after[b.path].status is DocumentStatus.PENDING  # found by the count check
        assert library.catalog.runs("birds")[0].status == "interrupted"
        assert library.store.count("birds") == 0

        events = [e async for e in library.ingest([docs], "birds")]
        end = events[-1]
        assert isinstance(end, IngestFinished) and end.indexed == 2
        redone = {d.path: d for d in await library.documents("birds")}
        assert {p: d.chunk_count for p, d in redone.items()} == {
            p: d.chunk_count for p, d in before.items()
        }
        assert library.store.count("birds") == a.chunk_count + b.chunk_count
    finally:
        await library.aclose()


async def test_a_store_failure_stops_the_ingest_with_its_sentence(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(3):
        (docs / f"note{n}.txt").write_text(f"Note {n} about the heron colony.\n", encoding="utf-8")
    library = Library.open(Settings(), paths_in(tmp_path / "home"), embedder=embedder)
    try:

        def full_disk(*args: object, **kwargs: object) -> None:
            raise StoreError("The vector store could not write: the disk is full.")

        monkeypatch.setattr(library.store, "insert", full_disk)
        with pytest.raises(StoreError, match="the disk is full"):
            [_ async for _ in library.ingest([docs], "herons")]  # fails, does not hang
        statuses = {d.status for d in await library.documents("herons")}
        assert DocumentStatus.INDEXED not in statuses
        assert library.catalog.runs("herons")[0].status == "failed"
    finally:
        await library.aclose()


# -- `fathom repair`: drift between the catalog and the search index, found and fixed --------


def _corpus(folder: Path, shared_data: Path) -> Path:
    folder.mkdir()
    for rel in (
        "about/limitations.md",
        "fragments/faq_normalize_embeddings.md",
        "about/comparison.md",
    ):
        source = shared_data / "milvus-docs" / rel
        (folder / source.name).write_bytes(source.read_bytes())
    return folder


def _repair_json(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, dict[str, object]]:
    status = main(["repair", "--json", *flags])
    return status, json.loads(capsys.readouterr().out)


def _store_and_docs(home: Path) -> tuple[VectorStore, dict[str, Document]]:
    """The raw store and catalog of a closed library, to damage them as a bug or a disk could."""
    paths = paths_in(home)
    catalog = Catalog(paths.catalog_file)
    try:
        docs = {Path(d.path).name: d for d in catalog.documents("kb")}
    finally:
        catalog.close()
    return VectorStore(str(paths.milvus_file)), docs


def test_repair_on_a_consistent_library_says_so(
    tmp_path: Path, shared_data: Path, fathom_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _corpus(tmp_path / "docs", shared_data)
    assert main(["ingest", str(docs), "-c", "kb"]) == 0
    capsys.readouterr()
    assert main(["repair"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("The library is consistent: 1 collection, 3 indexed documents and ")
    status, report = _repair_json(capsys)
    assert status == 0 and report["consistent"] is True and report["fixed"] is False
    assert report["found"]["drift"] == []  # type: ignore[index]


def test_repair_reembeds_missing_chunks_and_deletes_orphans(
    tmp_path: Path, shared_data: Path, fathom_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _corpus(tmp_path / "docs", shared_data)
    assert main(["ingest", str(docs), "-c", "kb"]) == 0
    store, listed = _store_and_docs(fathom_home)
    limitations, comparison = listed["limitations.md"], listed["comparison.md"]
    try:
        before = {
            c.chunk_id: c.text
            for c in store.get_chunks("kb", sorted(chunk_ids_of(limitations.doc_id, 20)))
        }
        lost = sorted(before)[2:5]
        store.delete_chunks("kb", lost)  # three passages of limitations.md vanish
        stray = store.get_chunks("kb", [f"{comparison.doc_id}:00000"])[0]
        vector = np.ones((1, 384), np.float32)
        store.insert(
            "kb", [replace(stray, chunk_id=f"{comparison.doc_id}:00999", chunk_no=999)], vector
        )
        orphan = "feedfacefeedfacefeedface"
        store.insert("kb", [replace(stray, chunk_id=f"{orphan}:00000", doc_id=orphan)], vector)
        store.ensure_collection(
            "left behind", 384, "all-MiniLM-L6-v2-onnx-int8"
        )  # a collection nobody lists
    finally:
        store.close()
    capsys.readouterr()

    status, report = _repair_json(capsys, "--check")
    assert status == 1 and report["consistent"] is False
    drift = {(d["kind"], Path(d["path"]).name, d["count"]) for d in report["found"]["drift"]}  # type: ignore[index]
    assert drift == {
        ("missing_chunks", "limitations.md", 3),
        ("extra_chunks", "comparison.md", 1),
        ("orphan_chunks", "", 1),
        ("orphan_collection", "", 0),
    }
    assert main(["repair", "--check"]) == 1
    words = capsys.readouterr().out
    assert (
        "limitations.md ('kb'): 3 of its " in words
        and "passages are missing from the search index" in words
    )
    assert (
        "'left behind': the search index holds this collection, but the library does not list it."
        in words
    )

    assert main(["repair"]) == 0
    out = capsys.readouterr().out
    assert "Repaired. The library is consistent" in out

    store, listed = _store_and_docs(fathom_home)
    try:
        assert store.list_collections() == ["kb"]
        assert "feedfacefeedfacefeedface" not in store.chunk_ids_by_document("kb")
        again = listed["limitations.md"]
        assert again.status.value == "indexed"
        now = {
            c.chunk_id: c.text
            for c in store.get_chunks("kb", sorted(chunk_ids_of(again.doc_id, again.chunk_count)))
        }
        assert now == before  # the same passages, embedded again from the file
        assert store.chunk_ids_by_document("kb")[comparison.doc_id] == chunk_ids_of(
            comparison.doc_id, comparison.chunk_count
        )
    finally:
        store.close()
    lost_text = before[lost[0]]
    query = " ".join(lost_text.split()[:25])
    assert main(["search", query, "-c", "kb", "--json"]) == 0
    assert lost[0] in {hit["chunk_id"] for hit in json.loads(capsys.readouterr().out)}


def test_repair_rebuilds_a_lost_index_and_reports_a_vanished_file(
    tmp_path: Path, shared_data: Path, fathom_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _corpus(tmp_path / "docs", shared_data)
    assert main(["ingest", str(docs), "-c", "kb"]) == 0
    store, listed = _store_and_docs(fathom_home)
    try:
        expected = {name: d.chunk_count for name, d in listed.items()}
        store.drop_collection("kb")  # the whole search index of the collection is gone
    finally:
        store.close()
    (docs / "comparison.md").unlink()  # and one of its files left the disk meanwhile
    capsys.readouterr()

    assert main(["repair"]) == 0
    store, listed = _store_and_docs(fathom_home)
    try:
        assert {n: d.chunk_count for n, d in listed.items() if d.status.value == "indexed"} == {
            n: c for n, c in expected.items() if n != "comparison.md"
        }
        gone = listed["comparison.md"]
        assert gone.status.value == "skipped" and gone.error == "The path does not exist."
        assert sum(len(ids) for ids in store.chunk_ids_by_document("kb").values()) == sum(
            c for n, c in expected.items() if n != "comparison.md"
        )
    finally:
        store.close()


def test_a_research_run_cut_short_by_a_crash_is_marked_interrupted_at_the_next_start(
    fathom_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.core.paths import app_paths
    from app.store.research_runs import RunStore

    runs = RunStore.open(app_paths().ensure())
    try:
        runs.start_run(
            "r-killed", question="What are Milvus' limits?", mode="deep"
        )  # the process died here
    finally:
        runs.close()
    assert main(["repair", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["recovered_at_open"] == "1 research run that was cut short is marked interrupted"
    runs = RunStore.open(app_paths().ensure())
    try:
        summary = runs.get_run("r-killed")
        assert summary is not None and summary.status == "interrupted"
    finally:
        runs.close()
    assert main(["history"]) == 0
    assert "interrupted" in capsys.readouterr().out
