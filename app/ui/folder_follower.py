"""The window's watched folders: each settled change on disk becomes a re-scan of its
collection, run by the library controller when it is idle, one at a time, shown like
any indexing (the ingest list says what was added, changed and removed).

At start-up every watched collection is re-scanned once (what changed while Fathom
was closed; an ingest a quit cut short is finished). Collections added in the window
are followed from their first ingest on. ``app/ingest/watcher.py`` says when.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from app.ui.tasks import run_blocking

if TYPE_CHECKING:  # the engine's modules load after the window is shown
    from app.ingest.library import Library
    from app.ingest.watcher import FolderWatcher

log = logging.getLogger(__name__)


class FolderFollower:
    """Collections whose folders changed, waiting for their re-scan (``rescan(name)``
    is the controller's; ``busy()`` says whether an indexing runs now)."""

    def __init__(self, rescan: Callable[[str], None], busy: Callable[[], bool]) -> None:
        self._rescan = rescan
        self._busy = busy
        self._watcher: FolderWatcher | None = None
        self._starting = False
        self.due: list[str] = []

    @property
    def following(self) -> bool:
        return self._watcher is not None or self._starting

    async def start(self, library: Library) -> None:
        """Follow every watched collection, each re-scanned once now."""
        if self.following:
            return
        self._starting = True
        try:
            await self._start(library)
        finally:
            self._starting = False

    async def _start(self, library: Library) -> None:
        loop = asyncio.get_running_loop()

        def settled(name: str) -> None:  # on the watcher's thread
            loop.call_soon_threadsafe(self.changed, name)

        followed = {c.name: await library.roots(c.name) for c in await library.collections() if c.watched}
        followed = {name: roots for name, roots in followed.items() if roots}  # made from no folder: nothing to follow

        def begin() -> FolderWatcher:  # adding the system's watches walks every folder: off the loop
            from app.ingest.watcher import FolderWatcher

            watcher = FolderWatcher(settled)
            for name, roots in followed.items():
                watcher.watch(name, roots)
            watcher.start()
            return watcher

        self._watcher = await run_blocking(begin, name="start watching the folders")
        self.due.extend(name for name in followed if name not in self.due)  # catch up with what changed
        self.next()

    async def follow(self, library: Library, name: str) -> None:
        """Follow ``name`` (a collection just added, or turned back on)."""
        if self._watcher is not None:
            roots = await library.roots(name)
            await run_blocking(self._watcher.watch, name, roots, name="watch the folders")

    def unfollow(self, name: str) -> None:
        if self._watcher is not None:
            self._watcher.unwatch(name)
        if name in self.due:
            self.due.remove(name)

    def watches(self, name: str) -> bool:
        return self._watcher is not None and name in self._watcher.watched()

    def changed(self, name: str) -> None:
        if name not in self.due:
            self.due.append(name)
        self.next()

    def next(self) -> None:
        """Re-scan the next collection due, unless an indexing runs (then again when it ends)."""
        if self.due and not self._busy():
            self._rescan(self.due.pop(0))

    async def stop(self) -> None:
        watcher, self._watcher = self._watcher, None
        self.due.clear()
        if watcher is not None:
            await run_blocking(watcher.close, name="stop watching the folders")
