"""Stopping an ingest midway leaves a consistent library that the next ingest completes."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path

from ingest_files import copy_subset, paths_in

from app.core.events import FileDone, IngestFinished
from app.core.models import DocumentStatus
from app.core.settings import Settings
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library

FILES = (
    "userGuide/manage-partitions.md",
    "userGuide/use-partition-key.md",
    "about/overview.md",
    "about/limitations.md",
    "fragments/installation_guide.md",
    "fragments/faq_normalize_embeddings.md",
)


async def test_stopping_midway_then_ingesting_again_completes(
    tmp_path: Path, shared_data: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    docs = tmp_path / "docs"
    copy_subset(shared_data, docs, FILES)
    library = Library.open(Settings(), paths_in(tmp_path / "home"), embedder=embedder)
    try:
        first_done = None
        async with aclosing(library.ingest([docs], "stop")) as events:
            async for event in events:
                if isinstance(event, FileDone) and event.status == "indexed":
                    first_done = event
                    break  # the user pressed Stop
        assert first_done is not None
        (run,) = library.catalog.runs("stop")
        assert run.status == "cancelled"
        docs_after_stop = await library.documents("stop")
        assert len([d for d in docs_after_stop if d.status is DocumentStatus.INDEXED]) < len(FILES)

        events_again = [e async for e in library.ingest([docs], "stop")]
        end = events_again[-1]
        assert isinstance(end, IngestFinished)
        assert end.indexed + end.unchanged == len(FILES) and end.failed == 0
        assert end.unchanged >= 1  # what was finished before the stop is kept
        final = await library.documents("stop")
        assert all(d.status is DocumentStatus.INDEXED for d in final) and len(final) == len(FILES)
        assert library.store.count("stop") == sum(d.chunk_count for d in final)
    finally:
        await library.aclose()
