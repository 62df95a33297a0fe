"""The window's watched folders: each settled change on disk becomes a re-scan of its
collection, run by the library controller when it is idle, one at a time, shown like
any indexing (the ingest list says what was added, changed and removed).

At start-up every watched collection is re-scanned once (what changed while Fathom
was closed; an ingest a quit cut short is finished). Collections added in the window
are followed from their first ingest on. ``app/ingest/watcher.py`` says when.

Whether a followed collection's folders are there is asked of ``look(names)`` (the
controller's) when following starts, when a collection is followed or no longer
followed, and each time the watcher's periodic look sees a folder go or come back.
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
    is the controller's; ``busy()`` says whether an indexing runs now; ``look(names)``
    finds out whether these collections' folders are there)."""

    def __init__(
        self,
        rescan: Callable[[str], None],
        busy: Callable[[], bool],
        look: Callable[[list[str]], None],
    ) -> None:
        self._rescan = rescan
        self._busy = busy
        self._look = look
        self._watcher: FolderWatcher | None = None
        self._starting = False
        self._recheck_s: float | None = None  # None: the watcher's own
        self._followed: set[str] = set()  # what the watcher watches (asked without its lock)
        self.due: list[str] = []

    @property
    def recheck_s(self) -> float | None:
        """How often the watcher looks for folders that went away or came back (None: its default)."""
        return self._recheck_s

    @recheck_s.setter
    def recheck_s(self, seconds: float | None) -> None:
        self._recheck_s = seconds
        if self._watcher is not None and seconds is not None:
            self._watcher.recheck_s = seconds

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

        def moved(
            names: list[str],
        ) -> None:  # on the watcher's thread: folders went away or came back
            loop.call_soon_threadsafe(self._look, names)

        followed = {
            c.name: await library.roots(c.name) for c in await library.collections() if c.watched
        }
        followed = {
            name: roots for name, roots in followed.items() if roots
        }  # made from no folder: nothing to follow

        def begin() -> (
            FolderWatcher
        ):  # adding the system's watches walks every folder: off the loop
            from app.ingest.watcher import FolderWatcher

            watcher = FolderWatcher(settled, on_presence=moved)
            if self._recheck_s is not None:
                watcher.recheck_s = self._recheck_s
            for name, roots in followed.items():
                watcher.watch(name, roots)
            watcher.start()
            return watcher

        self._watcher = await run_blocking(begin, name="start watching the folders")
        self._followed = set(followed)
        self.due.extend(
            name for name in followed if name not in self.due
        )  # catch up with what changed
        self._look(sorted(followed))
        self.next()

    async def follow(self, library: Library, name: str) -> None:
        """Follow ``name`` (a collection just added, or turned back on)."""
        if self._watcher is not None:
            roots = await library.roots(name)
            await run_blocking(self._watcher.watch, name, roots, name="watch the folders")
            self._followed.add(name)
            self._look([name])

    async def unfollow(self, name: str) -> None:
        self._followed.discard(name)
        if self._watcher is not None:  # dropping a watch looks at the other folders: off the loop
            await run_blocking(self._watcher.unwatch, name, name="stop watching the folders")
        if name in self.due:
            self.due.remove(name)
        self._look([name])

    def watches(self, name: str) -> bool:
        return self._watcher is not None and name in self._followed

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
        followed, self._followed = sorted(self._followed), set()
        if watcher is not None:
            await run_blocking(watcher.close, name="stop watching the folders")
        self._look(followed)
