"""Keeping collections in step with their folders: each settled burst of changes is one
re-scan of its collection (the ordinary ingest), one collection at a time.

``keep_in_step`` catches up first (a re-scan of each collection: what changed while
Fathom was closed, and an ingest a quit cut short), then waits for the watcher.
``stop`` ends it after the re-scan in progress; events go to ``on_event``. A re-scan
that fails (any error of the ingest) goes to ``on_failed`` and the others go on: the
collection is still watched, and tried again on its next change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Unpack

from app.core.events import IngestEvent
from app.ingest.library import Library
from app.ingest.watcher import FolderWatcher, Timing

log = logging.getLogger(__name__)


async def keep_in_step(
    library: Library,
    collections: Sequence[str],
    on_event: Callable[[IngestEvent], None],
    stop: asyncio.Event,
    *,
    on_watching: Callable[[FolderWatcher], None] | None = None,
    on_failed: Callable[[str, Exception], None] | None = None,
    **timing: Unpack[Timing],
) -> int:
    """Re-scan ``collections`` now and whenever their folders change, until ``stop``;
    returns how many re-scans ran to the end. ``on_failed(collection, error)``: a re-scan
    that failed (logged when None). ``timing``: the watcher's quiet_s / max_wait_s / recheck_s."""
    loop = asyncio.get_running_loop()
    due: asyncio.Queue[str] = asyncio.Queue()

    def settled(name: str) -> None:  # on the watcher's thread
        loop.call_soon_threadsafe(due.put_nowait, name)

    watcher = FolderWatcher(settled, **timing)
    for name in collections:
        watcher.watch(name, await library.roots(name))
        due.put_nowait(name)  # catch up with what changed while nobody watched
    watcher.start()
    if on_watching is not None:
        on_watching(watcher)
    rescans = 0
    try:
        while not stop.is_set():
            first = await _next(due, stop)
            if first is None:
                break
            queued = {first}
            while not due.empty():  # several settled while the last re-scan ran: once each
                queued.add(due.get_nowait())
            for collection in sorted(queued):
                if await _rescan(library, collection, on_event, on_failed):
                    rescans += 1
    finally:
        await asyncio.to_thread(watcher.close)
    return rescans


async def _rescan(
    library: Library,
    collection: str,
    on_event: Callable[[IngestEvent], None],
    on_failed: Callable[[str, Exception], None] | None,
) -> bool:
    """One re-scan, its events to ``on_event``; False when it failed (said to ``on_failed``)."""
    try:
        async with contextlib.aclosing(library.rescan(collection)) as events:
            async for event in events:
                on_event(event)
    except Exception as exc:  # one collection's failure leaves the others watched
        log.warning("re-scanning %s failed", collection, exc_info=exc)
        if on_failed is not None:
            on_failed(collection, exc)
        return False
    return True


async def _next(due: asyncio.Queue[str], stop: asyncio.Event) -> str | None:
    """The next collection due, or None once ``stop`` is set."""
    getting = asyncio.ensure_future(due.get())
    stopping = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait({getting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (getting, stopping):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if getting in done:
        return getting.result()
    return None
