"""Reads the research history off the GUI thread.

``RunStore`` is a SQLite connection, usable only from the thread that opened
it; this wrapper opens its own on one dedicated worker thread and runs every
call there (decoding the stored events included), so listing and replaying
runs never blocks the window.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from app.core.events import Event
from app.core.paths import AppPaths
from app.ui.tasks import run_blocking

if TYPE_CHECKING:
    from app.store.event_log import EventLog
    from app.store.research_runs import RunStore, RunSummary

T = TypeVar("T")


class HistoryStore:
    def __init__(self, paths: AppPaths) -> None:
        self._paths = paths
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fathom-history")
        self._store: RunStore | None = None

    def _open(self) -> RunStore:
        if self._store is None:
            from app.store.research_runs import RunStore

            self._store = RunStore.open(self._paths)
        return self._store

    async def _call(self, fn: Callable[[RunStore], T]) -> T:
        return await run_blocking(lambda: fn(self._open()), name="read the history", executor=self._executor)

    async def list_runs(self, limit: int = 200) -> list[RunSummary]:
        return await self._call(lambda store: store.list_runs(limit))

    async def load_events(self, run_id: str) -> list[Event]:
        return await self._call(lambda store: store.load_events(run_id))

    async def read_events(self, run_id: str) -> EventLog:
        """The run's readable events and what was skipped (for a replay that says so)."""
        return await self._call(lambda store: store.read_events(run_id))

    async def get_run(self, run_id: str) -> RunSummary | None:
        return await self._call(lambda store: store.get_run(run_id))

    async def delete_run(self, run_id: str) -> bool:
        return await self._call(lambda store: store.delete_run(run_id))

    async def aclose(self) -> None:
        def close(_: Any) -> None:
            if self._store is not None:
                self._store.close()
                self._store = None

        await run_blocking(close, None, name="close the history", executor=self._executor)
        self._executor.shutdown(wait=False)
