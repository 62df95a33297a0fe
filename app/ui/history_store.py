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
    from app.research.follow_up import Prior
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
        return await run_blocking(
            lambda: fn(self._open()), name="read the history", executor=self._executor
        )

    async def list_runs(self, limit: int = 200) -> list[RunSummary]:
        return await self._call(lambda store: store.list_runs(limit))

    async def load_events(self, run_id: str) -> list[Event]:
        return await self._call(lambda store: store.load_events(run_id))

    async def read_events(self, run_id: str) -> EventLog:
        """The run's readable events and what was skipped (for a replay that says so)."""
        return await self._call(lambda store: store.read_events(run_id))

    async def list_threads(self, limit: int = 200) -> list[RunSummary]:
        """One row per thread (a run and its follow-ups): its latest run."""
        return await self._call(lambda store: store.list_threads(limit))

    async def read_thread(self, run_id: str) -> list[EventLog]:
        """The events of every run of ``run_id``'s thread, oldest run first."""
        return await self._call(
            lambda store: [store.read_events(r.run_id) for r in store.thread_runs(run_id)]
        )

    async def load_prior(self, run_id: str) -> Prior:
        """What a follow-up of ``run_id`` starts from; FollowUpError says why there is none."""
        from app.research.follow_up import load_prior

        return await self._call(lambda store: load_prior(store, run_id))

    async def delete_thread(self, run_id: str) -> int:
        return await self._call(lambda store: store.delete_thread(run_id))

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
