"""The library's state and actions, without a widget: the catalog shown, the
one indexing (or re-index, re-scan, repair) that may run at a time, and what
it last reported.

Every call to the ``Library`` is awaited on the qasync loop (the Library runs
its blocking work in executors); looking at dropped paths on disk, and
turning the catalog into the panel's rows, go through
:func:`app.ui.tasks.run_blocking`. Refreshes run one at a time, and one asked
for while another reads is answered by the next read (never by an older one). Questions to the user go through
the ``confirm`` callable the view hands over; everything else it learns from
the signals.

A followed collection whose folders are not there (an unplugged drive, an empty
mount point) is listed in ``offline`` (``offlineChanged``), asked of the Library off
the loop whenever the folder follower says they may have gone or come back.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from app.core import collection_names
from app.core.errors import EmbeddingMismatch, FathomError
from app.core.events import IngestEvent, IngestFinished, IngestProgress, IngestStarted
from app.core.models import Collection
from app.ingest.folder_size import DropSize, drop_size
from app.ui.folder_follower import FolderFollower
from app.ui.formatting import count
from app.ui.library_model import CollectionRow, library_rows
from app.ui.tasks import TaskKeeper, run_blocking

if TYPE_CHECKING:
    from app.core.settings import Settings
    from app.ingest.indexing_state import IndexingState
    from app.ingest.library import Library
    from app.store.consistency import CheckResult

Confirm = Callable[[str, str, str], Awaitable[bool]]  # title, text, details -> yes
MESSAGE_MS = 8000
ROWS_WHILE_INDEXING_S = 3.0  # the collections' rows are read again this often while indexing


collection_name_for = collection_names.name_for  # the window and `fathom ingest` name alike


def _read_rows(library: Library, collections: list[Collection]) -> list[CollectionRow]:
    """The panel's rows of ``collections`` (in a worker thread: a large library's documents
    are listed as plain tuples by the catalog, in a few milliseconds; no Document is built)."""
    return library_rows(
        collections, {c.name: library.catalog.document_rows(c.name) for c in collections}
    )


def _split_existing(paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(the paths that exist, those that do not)."""
    found = [p for p in paths if p.exists()]
    return found, [p for p in paths if p not in found]


class LibraryController(QObject):
    catalogChanged = Signal(
        list, list
    )  # list[Collection], list[CollectionRow] (the rows the panel shows)
    busyChanged = Signal()  # the library arrived, or an indexing or repair started or ended
    progressStarted = Signal(str)  # what is being done, until the first event says how much
    ingestEvent = Signal(object)  # IngestEvent
    ingestFinished = Signal(object)  # IngestFinished
    stopping = Signal()  # Stop was pressed: said at once, before the indexing has stopped
    stopped = Signal(str, bool)  # what the stop means, whether the current line is cleared
    failed = Signal(str)
    repaired = Signal(object, object)  # CheckResult before, after
    statusMessage = Signal(
        str, int
    )  # a passing message, how long to show it (ms; 0: until replaced)
    indexingChanged = Signal(list)  # list[IndexingState]: the collections being indexed, how far
    offlineChanged = Signal(
        dict
    )  # dict[str, list[Path]]: followed collections → their folders not there

    def __init__(self, tasks: TaskKeeper, confirm: Confirm, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._tasks = tasks
        self._confirm = confirm
        self._library: Library | None = None
        self._ingest_task: asyncio.Task[Any] | None = None
        self.queued: list[tuple[list[Path], str | None]] = []  # paths added while an indexing ran
        self._rows_read_at = 0.0  # when the rows were last read while indexing (monotonic)
        self.collections: list[Collection] = []
        self.last_finished: IngestFinished | None = None
        self.last_progress: IngestProgress | None = None
        self.last_repair: tuple[CheckResult, CheckResult] | None = None
        self.indexing: list[
            IndexingState
        ] = []  # the collections being indexed now (empty when idle)
        self._indexing_task: asyncio.Task[Any] | None = None
        self._indexing_stale = False
        self._refreshing = asyncio.Lock()
        self._refresh_asked = 0  # refreshes asked for so far
        self._refresh_read = 0  # the last of them that a finished read answers
        self.offline: dict[str, list[Path]] = {}  # followed collections whose folders are not there
        # one look at the folders at a time: the last one asked answers last
        self._looking = asyncio.Lock()
        self.folders = FolderFollower(
            self.rescan, lambda: self.ingesting, self._look
        )  # watched folders

    # -- state ------------------------------------------------------------
    @property
    def library(self) -> Library | None:
        return self._library

    def start_following(self) -> None:
        """Follow the watched collections' folders (at start-up, once the library is open)."""
        if self._library is not None and not self.folders.following:
            self._tasks.start(self.folders.start(self._library), "watch the folders")

    async def stop_following(self) -> None:
        await self.folders.stop()

    def _look(self, names: list[str]) -> None:
        """Find out (off the loop) whether these collections' folders are there."""
        self._tasks.start(self._read_offline(names), "look for the folders")

    async def _read_offline(self, names: list[str]) -> None:
        async with self._looking:
            offline = dict(self.offline)
            for name in names:
                library = self._library
                roots = (
                    await library.offline_folders(name)
                    if library and self.folders.watches(name)
                    else []
                )
                if roots:
                    offline[name] = roots
                else:
                    offline.pop(name, None)
            if offline != self.offline:
                self.offline = offline
                self.offlineChanged.emit(dict(offline))

    async def set_watched(self, name: str, on: bool) -> None:
        """Follow (or stop following) collection ``name``'s folders; a collection turned on is re-scanned."""
        library = self._library
        if library is None:
            return
        await library.set_watched(name, on)
        if on:
            await self.folders.follow(library, name)
            self.folders.changed(name)
        else:
            await self.folders.unfollow(name)
        self._say(
            f"{name}: {'changes in its folders are indexed as they happen' if on else 'no longer followed'}."
        )
        await self.refresh()

    def set_library(self, library: Library | None) -> None:
        self._library = library
        if library is not None:
            notes = list(library.notices)  # these stay until replaced; the recovery passes
            if library.recovery:
                notes.append(
                    f"Finished what an interrupted run left undone: {library.recovery.summary()}."
                )
            if notes:
                self._say(" ".join(notes), 0 if library.notices else MESSAGE_MS)
            self._tasks.start(self.refresh(), "refresh the library")
        self.busyChanged.emit()

    @property
    def ingesting(self) -> bool:
        return self._ingest_task is not None and not self._ingest_task.done()

    @property
    def idle(self) -> bool:
        """The library is open and nothing is being indexed or repaired."""
        return self._library is not None and not self.ingesting

    @property
    def can_add(self) -> bool:
        """Folders and files can be added: now, or queued after the indexing under way."""
        return self._library is not None

    async def wait_until_idle(self) -> None:
        """Return once the indexing, re-index or repair in progress (if any) has ended."""
        task = self._ingest_task
        if task is not None and not task.done():
            await asyncio.wait([task])

    def _say(self, text: str, ms: int = MESSAGE_MS) -> None:
        self.statusMessage.emit(text, ms)

    async def use_settings(self, settings: Settings) -> None:
        """Hand new settings to the open library; when the embedding model changed,
        offer to re-index the collections built with the old one."""
        library = self._library
        if library is None:
            return
        if self.ingesting and settings.embedding != library.settings.embedding:
            self._say("The new embedding model is used once the indexing in progress ends.", 0)
        await self.wait_until_idle()
        following_was = library.settings.ingest.watch_folders
        await library.use_settings(settings)
        if settings.ingest.watch_folders != following_was:  # turned on or off in Settings
            if settings.ingest.watch_folders:
                self.start_following()
            else:
                await self.folders.stop()
        stale = await library.collections_needing_reindex()
        if not stale:
            return
        names = ", ".join(f"“{c.name}”" for c in stale)
        ok = await self._confirm(
            "Re-index collections",
            f"{count(len(stale), 'collection')} {'was' if len(stale) == 1 else 'were'} built with another "
            f"embedding model than {await library.embedding_model()}: {names}.",
            "They cannot be searched with the new model until they are re-indexed. Re-index them now? Every "
            "document is embedded again; your files are not touched. (Or do it later from a collection's "
            "right-click menu, or switch the embedding model back in Settings.)",
        )
        if ok:
            await self.reindex_all([c.name for c in stale])

    # -- catalog ----------------------------------------------------------
    async def refresh(self) -> None:
        """Read the catalog and show it: the reading and the building of the rows run in
        worker threads; the panel applies the rows a slice at a time."""
        self._refresh_asked += 1
        asked = self._refresh_asked
        async with self._refreshing:
            library = self._library
            # a read that began after the ask answered it
            if library is None or self._refresh_read >= asked:
                return
            reading = self._refresh_asked
            collections = await library.collections()
            rows = await run_blocking(_read_rows, library, collections, name="list the library")
            if library is not self._library:  # another library was handed over meanwhile
                return
            self._refresh_read = reading
            self.collections = collections
            self.catalogChanged.emit(collections, rows)

    async def set_description(self, name: str, description: str) -> None:
        if self._library is None:
            return
        await self._library.set_description(name, description.strip())
        self._say(f"Saved the description of {name}.")
        await self.refresh()

    async def remove_collection(self, name: str) -> None:
        if self._library is not None:
            await self._library.remove_collection(name)
            self._say(f"Removed the collection {name}.")

    async def remove_document(self, collection: str, doc_id: str, shown_name: str) -> None:
        if self._library is not None:
            await self._library.remove_document(collection, doc_id)
            self._say(f"Removed {shown_name}.")

    # -- indexing ---------------------------------------------------------
    def _start(self, work: Coroutine[Any, Any, None], name: str) -> None:
        self._ingest_task = self._tasks.start(work, name)
        self._ingest_task.add_done_callback(lambda _task: self._start_queued())
        self.busyChanged.emit()

    def _ended(self) -> None:
        self._ingest_task = None
        asyncio.get_running_loop().call_soon(self.folders.next)  # changes that came meanwhile
        self._indexing_stale = False
        if self.indexing:
            self.indexing = []
            self.indexingChanged.emit([])
        self.busyChanged.emit()
        self._tasks.start(self.refresh(), "refresh the library")

    def add_paths(self, paths: list[Path], collection: str | None = None) -> None:
        """Index dropped or chosen paths into ``collection`` (None: one named by
        :func:`collection_name_for`); while an indexing runs they are queued and indexed
        after it (a repair, a re-index: the same); ignored before the library is open."""
        if self._library is None or not paths:
            return
        if self.ingesting:
            self.queued.append((list(paths), collection))
            name = paths[0].name + (f" and {len(paths) - 1} more" if len(paths) > 1 else "")
            self._say(
                f"Queued {name}: indexed when the current indexing ends ({len(self.queued)} waiting)."
            )
            self.busyChanged.emit()
            return
        self._start(self._add(paths, collection), "indexing")

    def _start_queued(self) -> None:
        """The next queued paths, once nothing else runs."""
        if self.queued and not self.ingesting and self._library is not None:
            paths, collection = self.queued.pop(0)
            self._start(self._add(paths, collection), "indexing")

    async def _add(self, paths: list[Path], collection: str | None) -> None:
        found, missing = await run_blocking(
            _split_existing, paths, name="look at the paths to index"
        )
        if missing:
            self._say(f"Not found: {missing[0]}")
        if not found:
            self._ingest_task = None
            self.busyChanged.emit()
            return
        size = await run_blocking(drop_size, found, name="count the files to index")
        if size.worth_asking and not await self._confirm_large(found, size):
            self._say("Not indexed.")
            return
        if collection is None:
            collection = await run_blocking(collection_name_for, found, name="name the collection")
        await self._run_ingest(found, collection)
        library = self._library
        if library is not None and self.folders.following:
            watched = {c.name: c.watched for c in await library.collections()}
            if watched.get(collection):
                await self.folders.follow(library, collection)

    async def _confirm_large(self, paths: list[Path], size: DropSize) -> bool:
        """Ask before indexing a home folder, a disk or thousands of files, saying how many."""
        return await self._confirm(
            "Index all of it?",
            f"Index {size.what(paths)}? It holds {size.said()}.",
            "Indexing that many can take hours and fills the library with files you may not want "
            "searched. To index part of it, add its folders one by one.",
        )

    def rescan(self, collection: str, *, retry: bool = False) -> None:
        """Index new and changed files of ``collection``, drop deleted ones; ``retry``:
        read again the files the converter gave up on (past a limit, or crashing it)."""
        if self._library is not None and not self.ingesting:
            self._start(
                self._run_ingest([], collection, how="retry" if retry else "rescan"), "re-scan"
            )

    def reindex(self, collection: str) -> None:
        """Embed ``collection`` again with the embedding model now in Settings."""
        if self._library is not None and not self.ingesting:
            self._start(self._run_ingest([], collection, how="reindex"), "re-index")

    async def reindex_all(self, collections: Sequence[str]) -> None:
        """Re-index these collections one after another (each shows its progress)."""
        for name in collections:
            await self.wait_until_idle()
            self.reindex(name)
            await self.wait_until_idle()

    def stop_ingest(self, *, said: bool = True) -> None:
        """Stop the indexing under way (it resumes where it stopped next time) and drop the
        queued ones; ``said``: the panel says so at once (not while the window closes)."""
        dropped, self.queued = len(self.queued), []
        if dropped and said:
            self._say(f"Stopped; {count(dropped, 'queued folder')} not indexed.")
        if self.ingesting and self._ingest_task is not None:
            if said:
                self.stopping.emit()
            self._ingest_task.cancel()

    async def _run_ingest(self, paths: list[Path], collection: str, *, how: str = "ingest") -> None:
        library = self._library
        assert library is not None
        self._reset(f"Scanning for {collection}…")
        mismatch = False
        try:
            stream: Any
            if how in ("rescan", "retry"):
                stream = library.rescan(collection, retry=how == "retry")
            elif how == "reindex":
                stream = library.reindex(collection)
            else:
                stream = library.ingest(paths, collection)
            if inspect.isawaitable(stream):
                stream = await stream
            async for event in stream:
                self.on_ingest_event(event)
        except asyncio.CancelledError:
            self.stopped.emit("Stopped — indexing resumes where it stopped next time", True)
            raise
        except FathomError as exc:
            self._fail(str(exc))
            mismatch = isinstance(exc, EmbeddingMismatch)
        except (
            Exception
        ) as exc:  # a bug: the panel says it stopped, the task's error box and log say why
            self._fail(unexpected_stop(how, exc))
            raise
        finally:
            self._ended()
        if mismatch:
            await self.offer_reindex(collection)

    def _reset(self, doing: str) -> None:
        self.last_finished = None
        self.last_progress = None
        self.progressStarted.emit(doing)

    def _fail(self, message: str) -> None:
        self.failed.emit(message)
        self._say(message)

    def on_ingest_event(self, event: IngestEvent) -> None:
        if isinstance(event, IngestProgress):
            self.last_progress = event
        elif isinstance(event, IngestFinished):
            self.last_finished = event
        self.ingestEvent.emit(event)
        if isinstance(event, (IngestStarted, IngestProgress)):
            self._update_indexing()
        if (
            isinstance(event, IngestProgress)
            and time.monotonic() - self._rows_read_at >= ROWS_WHILE_INDEXING_S
        ):
            self._rows_read_at = time.monotonic()  # the rows' counts grow as documents are stored
            self._tasks.start(self.refresh(), "refresh the library")
        if isinstance(event, IngestFinished):
            self._say(finished_sentence(event))
            self.ingestFinished.emit(event)

    def _update_indexing(self) -> None:
        """Ask the library how far the indexing is (one question at a time: events that
        come while one is asked are answered by the next)."""
        if self._indexing_task is not None and not self._indexing_task.done():
            self._indexing_stale = True
            return
        self._indexing_task = self._tasks.start(self._read_indexing(), "read the indexing state")

    async def _read_indexing(self) -> None:
        library = self._library
        self._indexing_stale = True
        while self._indexing_stale and library is not None and self.ingesting:
            self._indexing_stale = False
            states = await library.indexing()
            if self.ingesting:  # an answer that arrives after the end is stale
                self.indexing = states
                self.indexingChanged.emit(states)

    async def offer_reindex(self, collection: str) -> None:
        """Ask, then re-index a collection built with another embedding model."""
        ok = await self._confirm(
            "Re-index collection",
            f"“{collection}” was built with another embedding model than the one in Settings.",
            "Re-index it now? Every document is embedded again with the current model; "
            "your files are not touched. (Or switch the embedding model back in Settings.)",
        )
        if ok:
            self.reindex(collection)

    # -- repair -----------------------------------------------------------
    def repair(self) -> None:
        """Compare the catalog with the search index and fix drift (in the background)."""
        if self._library is not None and not self.ingesting:
            self._start(self._run_repair(), "repair")

    async def _run_repair(self) -> None:
        library = self._library
        assert library is not None
        self._reset("Comparing the library with its search index…")
        try:
            before, after = await library.repair(on_event=self.on_ingest_event)
        except asyncio.CancelledError:
            self.stopped.emit("Stopped — run Repair again to finish", False)
            raise
        except FathomError as exc:
            self._fail(str(exc))
            return
        except Exception as exc:
            self._fail(unexpected_stop("repair", exc))
            raise
        finally:
            self._ended()
        self.last_repair = (before, after)
        self._say(after.summary())
        self.repaired.emit(before, after)


def unexpected_stop(how: str, exc: Exception) -> str:
    """What the progress panel says when an ingest, re-scan, re-index or repair ends on
    an error Fathom did not expect (a bug): what stopped, the error, and what is kept."""
    doing = {
        "ingest": "Indexing",
        "rescan": "The re-scan",
        "reindex": "The re-index",
        "repair": "The repair",
    }[how]
    return (
        f"{doing} stopped on an unexpected error ({type(exc).__name__}: {exc}). "
        "What was indexed before it is kept; try again."
    )


def finished_sentence(event: IngestFinished) -> str:
    """What an ingest or re-scan changed, for the status bar: "Indexed notes: 1 new or
    changed, 2 removed." (a watched folder's re-scan says what changed on disk)."""
    parts = [f"{event.indexed} new or changed"] if event.indexed else []
    if event.removed:
        parts.append(f"{event.removed} removed")
    if event.failed:
        parts.append(f"{event.failed} failed")
    return f"Indexed {event.collection}: {', '.join(parts) or 'nothing changed'}."
