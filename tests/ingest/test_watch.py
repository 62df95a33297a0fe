"""Watched folders on a real filesystem: files created, edited, renamed and deleted are
searchable (or gone) without anyone pressing anything; a burst of 500 writes is a few
re-scans, not 500; a folder that vanishes (an unplugged drive) loses nothing and is
picked up again when it is back. The tests wait on the library's own events, never
on a sleep."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest
import pytest_asyncio
from ingest_files import paths_in

from app.commands.watch_report import WatchReport
from app.core.errors import CollectionNotFound
from app.core.events import IngestEvent, IngestFinished
from app.core.settings import Settings
from app.ingest.library import Library
from app.ingest.watch_loop import keep_in_step
from app.ingest.watcher import FolderWatcher

pytestmark = pytest.mark.asyncio

T = TypeVar("T")
TIMING = {"quiet_s": 0.4, "max_wait_s": 3.0, "recheck_s": 0.5}
WAIT_S = 120.0


@dataclass
class Watching:
    library: Library
    folder: Path
    finished: asyncio.Queue[IngestFinished] = field(default_factory=asyncio.Queue)
    watcher: FolderWatcher | None = None

    def on_event(self, event: IngestEvent) -> None:
        if isinstance(event, IngestFinished):
            self.finished.put_nowait(event)

    async def rescan_where(self, test: Callable[[IngestFinished], bool]) -> IngestFinished:
        """The next re-scan's summary that passes ``test`` (earlier ones are skipped)."""
        async with asyncio.timeout(WAIT_S):
            while True:
                event = await self.finished.get()
                if test(event):
                    return event

    async def found(self, word: str) -> list[str]:
        hits = (await self.library.search([word], collections=["notes"], mode="bm25", top_k=5))[0]
        return sorted({h.chunk.path for h in hits if word in h.chunk.text})


@pytest_asyncio.fixture
async def watching(tmp_path: Path) -> AsyncIterator[Watching]:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "harbour.txt").write_text(
        "The harbour wall was rebuilt in granite.\n", encoding="utf-8"
    )
    library = Library.open(Settings(), paths_in(tmp_path / "home"))
    state = Watching(library, folder)
    async for _ in library.ingest([folder], "notes"):
        pass
    stop = asyncio.Event()

    def started(watcher: FolderWatcher) -> None:
        state.watcher = watcher

    task = asyncio.create_task(
        keep_in_step(library, ["notes"], state.on_event, stop, on_watching=started, **TIMING)
    )
    try:
        await state.rescan_where(lambda e: e.unchanged == 1)  # the catch-up re-scan at start
        yield state
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, WAIT_S)
        await library.aclose()


async def test_created_edited_renamed_and_deleted_files_are_followed(watching: Watching) -> None:
    folder = watching.folder
    (folder / "birds.txt").write_text(
        "A marmoset escaped from the ship's cabin.\n", encoding="utf-8"
    )
    await watching.rescan_where(lambda e: e.indexed == 1)
    assert await watching.found("marmoset") == [str(folder / "birds.txt")]

    with (folder / "harbour.txt").open("a", encoding="utf-8") as handle:
        handle.write("\nA quokka was seen on the breakwater.\n")
    await watching.rescan_where(lambda e: e.indexed == 1)
    assert await watching.found("quokka") == [str(folder / "harbour.txt")]

    (folder / "birds.txt").rename(folder / "mammals.txt")
    await watching.rescan_where(lambda e: e.removed == 1)
    assert await watching.found("marmoset") == [str(folder / "mammals.txt")]

    (folder / "harbour.txt").unlink()
    await watching.rescan_where(lambda e: e.removed == 1)
    assert await watching.found("quokka") == []

    (folder / ".harbour.txt.swp").write_bytes(b"an editor's swap file")  # hidden: no re-scan for it
    (folder / "gulls.txt").write_text("Herring gulls nest on the roof.\n", encoding="utf-8")
    summary = await watching.rescan_where(lambda e: e.indexed == 1)
    assert summary.skipped == 1  # the scan lists the hidden file as skipped, as always


async def test_a_burst_of_500_writes_is_a_few_rescans(watching: Watching) -> None:
    burst = watching.folder  # the watched folder itself: every write is an event the watcher sees
    for n in range(500):
        (burst / f"entry-{n:03d}.txt").write_text(
            f"Logbook entry {n}: wind from the west, rope{n}.\n"
        )
    total = 0
    batches_before = watching.watcher.settled_batches if watching.watcher else 0
    while total < 500:
        total += (await watching.rescan_where(lambda e: e.indexed > 0)).indexed
    assert total == 500
    assert await watching.found("rope499") == [str(burst / "entry-499.txt")]
    assert watching.watcher is not None
    assert 1 <= watching.watcher.settled_batches - batches_before <= 4, (
        watching.watcher.settled_batches
    )


async def test_a_vanished_folder_keeps_its_documents_and_comes_back(
    watching: Watching, tmp_path: Path
) -> None:
    folder = watching.folder
    away = tmp_path / "unplugged"
    folder.rename(away)  # the drive is gone
    summary = await watching.rescan_where(lambda e: e.skipped == 1)
    assert summary.removed == 0
    assert summary.failures == () and await watching.found("granite") == [
        str(folder / "harbour.txt")
    ]
    docs = await watching.library.documents("notes")
    assert any(d.path == str(folder / "harbour.txt") and d.status.value == "indexed" for d in docs)

    away.rename(folder)  # plugged in again: noticed by the watcher's look, re-scanned
    back = await watching.rescan_where(lambda e: e.unchanged == 1)
    assert back.removed == 0 and await watching.found("granite") == [str(folder / "harbour.txt")]


async def _next_or_end(queue: asyncio.Queue[T], loop_task: asyncio.Task[int]) -> T:
    """The next item put in ``queue``; fails at once if the watch loop ends first."""
    async with asyncio.timeout(WAIT_S):
        getting = asyncio.ensure_future(queue.get())
        done, _ = await asyncio.wait({getting, loop_task}, return_when=asyncio.FIRST_COMPLETED)
        if getting not in done:
            getting.cancel()
            error = None if loop_task.cancelled() else loop_task.exception()
            raise AssertionError(f"the watch loop ended: {error!r}")
        return getting.result()


async def test_a_rescan_that_fails_is_said_and_every_collection_stays_watched(
    tmp_path: Path,
) -> None:
    """The logbook collection is removed behind the watcher's back, so its next re-scan raises
    (no such collection): the terminal says so for it, the notes are still followed, and the
    logbook too, once it exists again."""
    notes, logbook = tmp_path / "notes", tmp_path / "logbook"
    for folder, line in (
        (notes, "The harbour wall was rebuilt in granite."),
        (logbook, "Wind from the west."),
    ):
        folder.mkdir()
        (folder / "first.txt").write_text(line + "\n", encoding="utf-8")
    library = Library.open(Settings(), paths_in(tmp_path / "home"))
    for folder in (notes, logbook):
        async for _ in library.ingest([folder], folder.name):
            pass
    finished: asyncio.Queue[IngestFinished] = asyncio.Queue()
    failures: asyncio.Queue[tuple[str, Exception]] = asyncio.Queue()
    terminal = io.StringIO()
    report = WatchReport(terminal, quiet=True)

    def on_event(event: IngestEvent) -> None:
        report.show(event)
        if isinstance(event, IngestFinished):
            finished.put_nowait(event)

    def on_failed(collection: str, error: Exception) -> None:
        report.failed(collection, error)
        failures.put_nowait((collection, error))

    stop = asyncio.Event()
    task = asyncio.create_task(
        keep_in_step(library, ["logbook", "notes"], on_event, stop, on_failed=on_failed, **TIMING)
    )

    async def rescan_of(collection: str, indexed: int) -> IngestFinished:
        while True:
            event = await _next_or_end(finished, task)
            if event.collection == collection and event.indexed == indexed:
                return event

    try:
        caught_up = {(await _next_or_end(finished, task)).collection for _ in range(2)}
        assert caught_up == {"logbook", "notes"}
        await library.remove_collection("logbook")
        (logbook / "second.txt").write_text(
            "A pod of narwhals passed the breakwater.\n", encoding="utf-8"
        )
        name, error = await _next_or_end(failures, task)
        assert name == "logbook" and isinstance(error, CollectionNotFound)
        said = terminal.getvalue()
        assert (
            "Could not re-scan logbook: There is no collection named 'logbook' (collections: notes). "
            "Still watching it: it is tried again on its next change."
        ) in said

        (notes / "birds.txt").write_text(
            "A marmoset escaped from the ship's cabin.\n", encoding="utf-8"
        )
        await rescan_of("notes", indexed=1)  # the others go on

        async for _ in library.ingest(
            [logbook], "logbook"
        ):  # made again: its next change is followed
            pass
        (logbook / "third.txt").write_text("Herring gulls nest on the roof.\n", encoding="utf-8")
        await rescan_of("logbook", indexed=1)
        assert not task.done()
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, WAIT_S)
        await library.aclose()


async def test_the_terminal_says_an_offline_folder_once_and_again_when_it_is_back(
    tmp_path: Path,
) -> None:
    """Re-scans of a collection whose folder is away (real re-scans, as ``fathom watch``
    runs them): the folder is said to be offline once, not at every re-scan, and said
    back once it is."""
    folder, away = tmp_path / "notes", tmp_path / "unplugged"
    folder.mkdir()
    (folder / "harbour.txt").write_text(
        "The harbour wall was rebuilt in granite.\n", encoding="utf-8"
    )
    library = Library.open(Settings(), paths_in(tmp_path / "home"))
    terminal = io.StringIO()
    report = WatchReport(terminal)
    try:
        async for _ in library.ingest([folder], "notes"):
            pass
        folder.rename(away)
        for _ in range(3):
            async for event in library.rescan("notes"):
                report.show(event)
        said = terminal.getvalue()
        assert said.count(f"notes: The folder {folder} is not there") == 1, said
        assert "Its documents are kept and searchable" in said
        assert "Skipped:" not in said and "Nothing could be indexed" not in said, said

        away.rename(folder)
        for _ in range(2):
            async for event in library.rescan("notes"):
                report.show(event)
        said = terminal.getvalue()
        assert said.count(f"notes: the folder {folder} is back") == 1, said
        assert said.count("is not there") == 1
        assert said.count("Collection 'notes': 0 indexed (0 new chunks), 1 unchanged") == 2, said
    finally:
        await library.aclose()
