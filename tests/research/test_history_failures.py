"""A history that cannot be written never breaks a run, and the user is told why,
whatever the failure: SQLite, the file system, an event that cannot be
serialised, any other error in the writer thread."""

from __future__ import annotations

import errno
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, make_chunk, verdicts

from app.core.events import EvidenceAdded, Finished, Notice, ResearchEvent
from app.core.paths import app_paths
from app.research.engine import ResearchEngine
from app.store.research_runs import RunStore

QUESTION = "What is Milvus?"
SCRIPT = {
    "decompose": {"sub_queries": ["Milvus features"]},
    "judge": {"relevant": [1]},
    "reflect": {"done": True, "summary": "", "gap_queries": []},
    "citation_check": verdicts(),
}
REPORT = "Milvus is an open-source vector database [1]."
UNSAVED = "cannot be saved to the history"


async def run(
    history: Path, library: MemoryLibrary | None = None, run_id: str = "r1"
) -> list[ResearchEvent]:
    model = ScriptedModel(SCRIPT, text=REPORT)
    engine = ResearchEngine(model, library or MemoryLibrary(list(MILVUS_CHUNKS)), history=history)
    return await collect(engine.run(QUESTION, run_id=run_id))


def warnings_of(events: list[ResearchEvent]) -> list[Notice]:
    return [e for e in events if isinstance(e, Notice) and UNSAVED in e.message]


def assert_told_once_and_run_finished(events: list[ResearchEvent], reason: str) -> Notice:
    final = events[-1]
    assert isinstance(final, Finished) and final.stop_reason == "completed"
    assert final.report.evidence  # the run itself was not harmed
    told = warnings_of(events)
    assert len(told) == 1, [e.message for e in events if isinstance(e, Notice)]
    assert told[0].level == "warning" and reason in told[0].message
    assert events.index(told[0]) < len(events) - 1  # before the end is told
    return told[0]


async def test_an_event_that_cannot_be_serialised_is_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a chunk whose page is a Decimal: JSON cannot store it; the writer thread meets it
    odd = make_chunk(
        "c9", "Milvus is an open-source vector database for similarity search.", page=Decimal(3)
    )  # type: ignore[arg-type]
    history = app_paths().ensure().catalog_file
    with caplog.at_level(logging.WARNING, logger="app.research.history_writer"):
        events = await run(history, MemoryLibrary([odd, *MILVUS_CHUNKS]))
    assert_told_once_and_run_finished(events, "Decimal is not JSON serializable")
    assert "could not save to the history" in caplog.text and "Decimal" in caplog.text
    saved = RunStore(history)
    try:
        summary = saved.get_run("r1")
        assert (
            summary is not None and summary.status == "running"
        )  # saving stopped at the failure, visibly
    finally:
        saved.close()


async def test_a_history_file_that_cannot_be_created_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the data folder should be")
    with caplog.at_level(logging.WARNING, logger="app.research.history_writer"):
        events = await run(blocker / "catalog.sqlite")
    notice = assert_told_once_and_run_finished(events, str(blocker))
    assert (
        "File exists" in notice.message or "Not a directory" in notice.message
    )  # the OSError, in words
    assert "could not save to the history" in caplog.text


async def test_a_full_disk_at_the_last_write_is_reported(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_space(self: RunStore, run_id: str, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(self.path))

    monkeypatch.setattr(RunStore, "finish_run", no_space)
    history = app_paths().ensure().catalog_file
    with caplog.at_level(logging.WARNING, logger="app.research.history_writer"):
        events = await run(history)
    assert_told_once_and_run_finished(events, "No space left on device")
    assert warnings_of(events)[0] is events[-2]  # the failure came last: told right before the end
    saved = RunStore(history)
    try:
        # what was written before the disk filled up is there
        assert [e.chunk_id for e in saved.load_evidence("r1")] == [
            e.evidence.chunk_id for e in events if isinstance(e, EvidenceAdded)
        ]
    finally:
        saved.close()


async def test_any_other_error_in_the_writer_is_reported(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    def broken(self: RunStore, run_id: str, evidence: Any) -> None:
        calls.append(len(evidence))
        raise RuntimeError("the writer tripped")

    monkeypatch.setattr(RunStore, "save_evidence", broken)
    with caplog.at_level(logging.WARNING, logger="app.research.history_writer"):
        events = await run(app_paths().ensure().catalog_file)
    assert_told_once_and_run_finished(events, "RuntimeError: the writer tripped")
    assert len(calls) == 1  # after the first failure nothing more is attempted
    assert "Traceback" in caplog.text  # an unexpected error is logged with where it came from


async def test_a_history_that_works_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="app.research.history_writer"):
        events = await run(app_paths().ensure().catalog_file)
    assert isinstance(events[-1], Finished) and warnings_of(events) == []
    assert caplog.text == ""
