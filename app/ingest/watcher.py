"""Watched folders: changes on disk, settled into one re-scan per collection.

``FolderWatcher`` asks the operating system (watchdog: inotify, FSEvents,
ReadDirectoryChangesW) for changes under each watched collection's folders. A
change marks its collection; once nothing more has changed for ``quiet_s`` (or,
in an endless burst, ``max_wait_s`` after the first change) the collection is
handed to ``on_settled`` once — a burst of 500 writes is one re-scan, not 500.
The re-scan itself is the ordinary ingest (new, changed, renamed and deleted
files, with the one owner of document state); this module only says when.

A folder that disappears (a drive unplugged), or shows nothing (an empty mount
point: :func:`app.ingest.folder_presence.not_there`), is not watched; a check every
``recheck_s`` notices it going and coming back, watches it again and marks its
collection, so what changed meanwhile is picked up, and tells ``on_presence`` which
collections' folders went or came. Hidden files (any path part starting with a dot,
like editors' swap files) are ignored, as the scan ignores them. ``on_settled`` and
``on_presence`` are called on the watcher's own thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from app.ingest.folder_presence import not_there

log = logging.getLogger(__name__)

QUIET_S = 1.5  # a collection is re-scanned once its folders were quiet this long
MAX_WAIT_S = 10.0  # … or this long after the first change of an endless burst
RECHECK_S = 5.0  # how often folders that were not there are looked for again
TICK_S = 0.2


class Timing(TypedDict, total=False):
    """The watcher's timing, when not its defaults (tests make it short)."""

    quiet_s: float
    max_wait_s: float
    recheck_s: float


@dataclass
class _Pending:
    first: float
    last: float


class FolderWatcher:
    """Watches folders per collection; ``on_settled(collection)`` after each settled burst."""

    def __init__(
        self,
        on_settled: Callable[[str], None],
        *,
        quiet_s: float = QUIET_S,
        max_wait_s: float = MAX_WAIT_S,
        recheck_s: float = RECHECK_S,
        on_presence: Callable[[list[str]], None] | None = None,
    ) -> None:
        from watchdog.observers import Observer

        self._on_settled = on_settled
        self._on_presence = on_presence  # the collections whose folders went away or came back
        self.quiet_s, self.max_wait_s, self.recheck_s = quiet_s, max_wait_s, recheck_s
        self._observer: Any = Observer()
        self._observer.daemon = True
        self._lock = threading.Lock()
        self._roots: dict[str, list[Path]] = {}  # collection → its folders and files
        self._watches: dict[Path, Any] = {}  # watched folder → watchdog's handle
        # roots that were not there (or showed nothing) at the last look
        self._missing: set[Path] = set()
        self._pending: dict[str, _Pending] = {}
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="fathom-watch", daemon=True)
        self.settled_batches = (
            0  # how many times on_settled was called (for tests and the terminal)
        )

    # -- what is watched ------------------------------------------------------------

    def start(self) -> None:
        self._observer.start()
        self._ticker.start()

    def watch(self, collection: str, roots: Iterable[Path]) -> None:
        """Watch ``roots`` (folders, recursively, or single files) for ``collection``."""
        with self._lock:
            self._roots[collection] = [Path(r) for r in roots]
            self._refresh_watches()

    def unwatch(self, collection: str) -> None:
        with self._lock:
            self._roots.pop(collection, None)
            self._pending.pop(collection, None)
            self._refresh_watches()

    def watched(self) -> list[str]:
        with self._lock:
            return sorted(self._roots)

    def close(self) -> None:
        self._stop.set()
        self._observer.stop()
        if self._observer.is_alive():
            self._observer.join(timeout=5)
        if self._ticker.is_alive():
            self._ticker.join(timeout=5)

    def _refresh_watches(self) -> None:
        """Schedule a watch for every root's folder that exists and is not watched yet (lock held)."""
        from watchdog.events import FileSystemEventHandler

        wanted: dict[Path, bool] = {}  # folder → recursive
        self._missing = set()
        for roots in self._roots.values():
            for root in roots:
                if not_there(
                    root
                ):  # an empty mount point too: a drive mounted on it later is watched anew
                    self._missing.add(root)
                elif root.is_dir():
                    wanted[root] = True
                else:
                    wanted.setdefault(root.parent, False)
        for folder in list(self._watches):
            if folder not in wanted or not folder.exists():
                try:
                    self._observer.unschedule(self._watches.pop(folder))
                except (KeyError, ValueError, OSError):
                    self._watches.pop(folder, None)
        handler = FileSystemEventHandler()
        handler.on_any_event = self._on_event  # type: ignore[method-assign]
        for folder, recursive in wanted.items():
            if folder in self._watches:
                continue
            try:
                self._watches[folder] = self._observer.schedule(
                    handler, str(folder), recursive=recursive
                )
            except OSError as exc:  # gone between the look and the watch, or no permission
                log.info("cannot watch %s: %s", folder, exc)
                self._missing.add(folder)

    # -- changes ----------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return  # read, not changed
        if event.is_directory and event.event_type == "modified":
            return  # a folder's time changed: its files' own events say what
        paths = [event.src_path, getattr(event, "dest_path", "")]
        now = time.monotonic()
        with self._lock:
            for collection, roots in self._roots.items():
                if any(p and _concerns(os.fsdecode(p), roots) for p in paths):
                    pending = self._pending.get(collection)
                    if pending is None:
                        self._pending[collection] = _Pending(now, now)
                    else:
                        pending.last = now

    def _tick(self) -> None:
        last_recheck = time.monotonic()
        while not self._stop.wait(TICK_S):
            now = time.monotonic()
            if now - last_recheck >= self.recheck_s:
                last_recheck = now
                self._recheck(now)
            with self._lock:
                due = [
                    name
                    for name, p in self._pending.items()
                    if now - p.last >= self.quiet_s or now - p.first >= self.max_wait_s
                ]
                for name in due:
                    del self._pending[name]
            for name in due:
                self.settled_batches += 1
                try:
                    self._on_settled(name)
                except Exception:  # the watcher goes on; the caller logs its own failures
                    log.exception("handling the changes of %s failed", name)

    def _recheck(self, now: float) -> None:
        """Folders that came back (or went away) since the last look: watched again, collection
        marked, ``on_presence`` told."""
        with self._lock:
            before = set(self._missing)
            self._refresh_watches()
            changed = before ^ self._missing
            moved = [
                name
                for name, roots in self._roots.items()
                if any(root in changed for root in roots)
            ]
            for collection in moved:
                self._pending.setdefault(collection, _Pending(now, now))
        if moved and self._on_presence is not None:
            try:
                self._on_presence(sorted(moved))
            except Exception:  # the watcher goes on
                log.exception("telling of the folders of %s failed", ", ".join(moved))


def _concerns(path: str, roots: list[Path]) -> bool:
    """Whether a changed path is one of the roots or under one, and not hidden."""
    changed = Path(path)
    for root in roots:
        if changed == root:
            return True
        try:
            inside = changed.relative_to(root)
        except ValueError:
            continue
        return not any(part.startswith(".") for part in inside.parts)
    return False
