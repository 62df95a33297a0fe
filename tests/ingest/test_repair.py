"""What a crash leaves half-done is found on open and redone by the next ingest."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from ingest_files import paths_in

from app.core.errors import StoreError
from app.core.events import IngestFinished
from app.core.models import DocumentStatus
from app.core.settings import Settings
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library


async def test_open_repairs_pending_and_lost_chunks(tmp_path: Path, embedder: OnnxMiniLMEmbedder) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Alpha.\n\n" + "The albatross glides for hours. " * 60, encoding="utf-8")
    (docs / "b.txt").write_text("Beta.\n\n" + "The bittern booms in the reeds. " * 60, encoding="utf-8")
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
        assert {p: d.chunk_count for p, d in redone.items()} == {p: d.chunk_count for p, d in before.items()}
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
