"""Things derived from a store's collections (in-memory copies, word statistics), shared
by the stores open on one place (a Milvus Lite file or a server's URI), so that a write
through any of them keeps them right, and dropped with the last store.

Each thing may be filled by a background thread (``filler``) that stops when
``cancelled`` is set; releasing the last store cancels them and waits for their fillers,
so that none reads from a connection about to close.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar


class Derived(Protocol):
    cancelled: threading.Event
    filler: threading.Thread | None


T = TypeVar("T", bound=Derived)


@dataclass
class _Entry(Generic[T]):
    users: int = 0
    items: dict[str, T] = field(default_factory=dict)


class SharedByPlace(Generic[T]):
    """Milvus name → thing, per place, with a count of the stores using it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # also what a module takes to add a thing
        self._by_place: dict[str, _Entry[T]] = {}

    def acquire(self, place: str) -> dict[str, T]:
        """The things of ``place``, shared by the stores open on it; :meth:`release` when
        the store closes."""
        with self.lock:
            entry = self._by_place.setdefault(place, _Entry())
            entry.users += 1
            return entry.items

    def release(self, place: str, wait: float = 10.0) -> None:
        """A store on ``place`` closed; with the last, its things are dropped: fills under
        way stop after their page (waited for up to ``wait`` seconds)."""
        with self.lock:
            entry = self._by_place.get(place)
            if entry is None:
                return
            entry.users -= 1
            if entry.users > 0:
                return
            del self._by_place[place]
            dropped = list(entry.items.values())
            entry.items.clear()
        for item in dropped:
            item.cancelled.set()
        deadline = time.monotonic() + wait
        for item in dropped:
            if item.filler is not None and item.filler is not threading.current_thread():
                item.filler.join(max(0.0, deadline - time.monotonic()))

    def drop(self, items: dict[str, T], mname: str) -> None:
        """Collection ``mname`` is gone (or its thing out of date): forget it (a fill under way stops)."""
        with self.lock:
            item = items.pop(mname, None)
        if item is not None:
            item.cancelled.set()
