"""Where a run is saved: :class:`RunRecorder` writes its events into the
history file (``app.store.research_runs.RunStore``) as they come, in small batches.

Events are buffered and written every few events or fractions of a second,
and always at the end; evidence rows are written as ``EvidenceAdded``
arrives, so a failed or cancelled run keeps what it found. A broken store
never breaks the run: at the first failure of any kind (SQLite, a disk that
is full, an event that cannot be serialised, any other error in the writer)
persistence stops with a logged warning, and :attr:`RunRecorder.failure` says
why, in words the engine passes on to the user.

The writes never run on the event loop (in the window, the GUI thread): one
writer thread per run owns its own connection to the history file and
performs them in the order they were asked for; :meth:`RunRecorder.aclose`
waits for the last of them, so a finished run is in the history when ``run``
returns.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from app.core.errors import StoreError
from app.core.events import EvidenceAdded, Failed, Finished, ResearchEvent, RunStarted
from app.core.models import Evidence
from app.store.research_runs import RunStore

log = logging.getLogger(__name__)

FLUSH_EVERY = 32
FLUSH_AFTER_S = 0.5


class HistoryWriter:
    """One thread with its own connection to the history file; store actions run
    there in submission order. After the first failure (any exception) it logs
    a warning and drops every later action."""

    def __init__(self, path: Path, run_id: str) -> None:
        self.path = path
        self.run_id = run_id
        self.failed = False
        self.error = ""  # why saving stopped
        self._store: RunStore | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fathom-history")

    def submit(self, action: Callable[[RunStore], object]) -> Future[None]:
        return self._executor.submit(self._run, action)

    def _run(self, action: Callable[[RunStore], object]) -> None:
        if self.failed:
            return
        try:
            if self._store is None:
                self._store = RunStore(self.path)
            action(self._store)
        except Exception as exc:  # whatever it is, the run goes on and the user is told
            self.error = describe_failure(exc)
            self.failed = True
            expected = isinstance(exc, (sqlite3.Error, StoreError, OSError))
            log.warning(
                "research run %s: could not save to the history (%s); not saving further",
                self.run_id,
                self.error,
                exc_info=None if expected else exc,
            )

    def _close_store(self) -> None:
        store, self._store = self._store, None
        if store is None:
            return
        try:
            store.close()
        except Exception as exc:  # the writes are done; a failed close loses nothing, but say so
            log.warning("research run %s: closing the history file failed (%s)", self.run_id, exc)

    def close(self) -> Future[None]:
        """Close the connection after the pending actions; the future is done when it is."""
        done = self._executor.submit(self._close_store)
        self._executor.shutdown(wait=False)
        return done


def describe_failure(exc: BaseException) -> str:
    """Why the history could not be written, in a few words a user can act on."""
    if isinstance(exc, StoreError):
        return str(exc)
    if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc).lower():
        return f"the disk is full ({exc})"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    if isinstance(exc, sqlite3.Error):
        return f"the history database failed: {exc}"
    if isinstance(exc, (TypeError, ValueError)):
        return f"an event could not be stored ({type(exc).__name__}: {exc})"
    return f"{type(exc).__name__}: {exc}"


class RunRecorder:
    """Records one run into the history file at ``path`` (None: record nothing)."""

    def __init__(self, path: Path | None, run_id: str) -> None:
        self.run_id = run_id
        self._writer = HistoryWriter(path, run_id) if path is not None else None
        self._events: list[ResearchEvent] = []
        self._evidence: list[Evidence] = []
        self._last_flush = time.monotonic()
        self._closed = False

    @property
    def saving(self) -> bool:
        """False once saving stopped (no store, or the store failed)."""
        return self._writer is not None and not self._writer.failed

    @property
    def failure(self) -> str:
        """Why saving stopped, when the store failed ("" while it works, or with no store)."""
        if self._writer is None or not self._writer.failed:
            return ""
        return self._writer.error or "the history could not be written"

    def start(self, event: RunStarted, *, thread_id: str = "") -> None:
        """Record the run's start; ``thread_id`` is the first run of the follow-up thread
        it belongs to ("" when it starts one)."""
        self._guard(
            lambda store: store.start_run(
                self.run_id,
                question=event.question,
                mode=event.mode,
                model=event.model,
                collections=event.collections,
                budget=event.budget,
                started_at=event.ts,
                thread_id=thread_id,
            )
        )
        self.record(event)

    def record(self, event: ResearchEvent) -> None:
        if not self.saving or self._closed:
            return
        self._events.append(event)
        if isinstance(event, EvidenceAdded):
            self._evidence.append(event.evidence)
        terminal = isinstance(event, (Finished, Failed))
        if (
            terminal
            or len(self._events) >= FLUSH_EVERY
            or time.monotonic() - self._last_flush > FLUSH_AFTER_S
        ):
            self.flush()
        if isinstance(event, Finished):
            report = event.report
            status = "cancelled" if event.stop_reason == "cancelled" else "finished"
            self._guard(lambda store: store.save_evidence(self.run_id, report.evidence))
            self._guard(
                lambda store: store.finish_run(
                    self.run_id,
                    status=status,
                    stop_reason=event.stop_reason,
                    report=report,
                    usage=event.usage,
                    elapsed_s=event.elapsed_s,
                )
            )
        elif isinstance(event, Failed):
            self._guard(
                lambda store: store.finish_run(
                    self.run_id,
                    status="failed",
                    message=event.message,
                    usage=event.usage,
                    elapsed_s=event.elapsed_s,
                )
            )

    def flush(self) -> None:
        events, self._events = self._events, []
        evidence, self._evidence = self._evidence, []
        self._last_flush = time.monotonic()
        if events:
            self._guard(lambda store: store.append_events(self.run_id, events))
        if evidence:
            self._guard(lambda store: store.save_evidence(self.run_id, evidence))

    async def drained(self) -> None:
        """Wait (off the loop) until every write asked for so far is done."""
        if self._writer is not None and not self._writer.failed:
            await asyncio.wrap_future(self._writer.submit(lambda store: None))

    async def aclose(self) -> None:
        """Write what is buffered, then wait (off the loop) until every write is done."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        if self._writer is not None:
            await asyncio.wrap_future(self._writer.close())

    def _guard(self, action: Callable[[RunStore], object]) -> None:
        if self._writer is not None and not self._writer.failed:
            self._writer.submit(action)
