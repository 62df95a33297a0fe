"""A collection still being indexed is searched for what it holds so far, and the
run says so at its start: the real Library (Milvus Lite, real conversions, ONNX
embeddings) in the middle of an ingest, and the engine over the real starter model."""

from __future__ import annotations

import shutil
from contextlib import aclosing
from pathlib import Path
from typing import Any

from app.core.events import FileDone, IngestFinished, IngestStarted, Notice, RunStarted
from app.core.models import Scope
from app.core.paths import app_paths
from app.core.settings import Settings
from app.ingest.library import Library
from app.research.engine import ResearchEngine
from app.research.scope_check import partial_scope_notice

PAGES = ("comparison.md", "limitations.md", "milvus_adopters.md", "overview.md")


def _docs(shared_data: Path, folder: Path) -> Path:
    folder.mkdir()
    about = shared_data / "milvus-docs" / "about"
    for name in PAGES:
        shutil.copy(about / name, folder / name)
    (folder / "photo.png").write_bytes(b"\x89PNG")
    return folder


async def _first_events(run: Any, n: int) -> list[Any]:
    events = []
    async with aclosing(run) as stream:
        async for event in stream:
            events.append(event)
            if len(events) == n:
                break  # closing the run stops it: the model is not needed past its start
    return events


async def test_a_run_over_a_collection_being_indexed_says_it_is_partial(
    shared_data: Path, tmp_path: Path, starter_llm: Any
) -> None:
    docs = _docs(shared_data, tmp_path / "docs")
    library = Library.open(Settings(), app_paths().ensure())
    try:
        # a finished collection beside it: a run scoped to it alone is complete
        note = tmp_path / "note.txt"
        note.write_text("Kelp forests grow up to half a metre a day.\n", encoding="utf-8")
        async with aclosing(library.ingest([note], "notes")) as done_events:
            async for _ in done_events:
                pass
        assert await library.indexing() == []

        indexed_seen = 0
        async with aclosing(library.ingest([docs], "milvus")) as ingest:
            async for event in ingest:
                if isinstance(event, IngestStarted):
                    total = event.total_files
                    assert total == 5
                if isinstance(event, FileDone) and event.status == "indexed":
                    indexed_seen += 1
                if indexed_seen == 1 and isinstance(event, FileDone):
                    break  # the ingest waits here, half done: the run starts now
            (state,) = await library.indexing()
            catalog = await library.collection("milvus")
            assert state.collection == "milvus" and state.searchable == catalog.documents
            assert state.expected is not None and state.searchable < state.expected <= total
            assert (
                state.describe() == f"Indexing — {state.searchable} of {state.expected} documents"
            )

            engine = ResearchEngine(starter_llm, library)
            started, notice = await _first_events(engine.run("What is Milvus?", mode="quick"), 2)
            assert isinstance(started, RunStarted) and isinstance(notice, Notice)
            assert notice.level == "warning"
            assert notice.message == (
                f"Partial: milvus is still being indexed ({state.searchable} of {state.expected} documents "
                "searchable). This run searches only what is indexed so far."
            )
            only_notes = await partial_scope_notice(library, Scope(collections=("notes",)), "r")
            assert only_notes is None  # a scope without the collection being indexed is complete

            last = None
            async for event in ingest:  # let the ingest finish
                last = event
            assert isinstance(last, IngestFinished) and last.indexed == len(PAGES)
        assert await library.indexing() == []
        assert await partial_scope_notice(library, Scope(), "r") is None
    finally:
        await library.aclose()
