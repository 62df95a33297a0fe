"""RunRecorder: persists a run's events as they come, in small batches.

Events are buffered and written every few events or fractions of a second,
and always at the end; evidence rows are written as ``EvidenceAdded``
arrives, so a failed or cancelled run keeps what it found. A broken store
never breaks the run: persistence stops with a logged warning.
"""

from __future__ import annotations

import logging
import sqlite3
import time

from app.core.errors import StoreError
from app.core.events import EvidenceAdded, Failed, Finished, ResearchEvent, RunStarted
from app.core.models import Evidence
from app.store.runs import RunStore

log = logging.getLogger(__name__)

FLUSH_EVERY = 32
FLUSH_AFTER_S = 0.5


class RunRecorder:
    def __init__(self, store: RunStore | None, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._events: list[ResearchEvent] = []
        self._evidence: list[Evidence] = []
        self._last_flush = time.monotonic()
        self._closed = False

    def start(self, event: RunStarted) -> None:
        self._guard(
            lambda store: store.start_run(
                self.run_id,
                question=event.question,
                mode=event.mode,
                model=event.model,
                collections=event.collections,
                budget=event.budget,
                started_at=event.ts,
            )
        )
        self.record(event)

    def record(self, event: ResearchEvent) -> None:
        if self.store is None or self._closed:
            return
        self._events.append(event)
        if isinstance(event, EvidenceAdded):
            self._evidence.append(event.evidence)
        terminal = isinstance(event, (Finished, Failed))
        if terminal or len(self._events) >= FLUSH_EVERY or time.monotonic() - self._last_flush > FLUSH_AFTER_S:
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
                    self.run_id, status="failed", message=event.message, usage=event.usage, elapsed_s=event.elapsed_s
                )
            )

    def flush(self) -> None:
        events, self._events = self._events, []
        evidence, self._evidence = self._evidence, []
        self._last_flush = time.monotonic()
        self._guard(lambda store: store.append_events(self.run_id, events))
        self._guard(lambda store: store.save_evidence(self.run_id, evidence))

    def close(self) -> None:
        if not self._closed:
            self.flush()
            self._closed = True

    def _guard(self, action: object) -> None:
        if self.store is None:
            return
        try:
            action(self.store)  # type: ignore[operator]
        except (sqlite3.Error, StoreError) as exc:
            log.warning("research run %s: could not save to the history (%s); not saving further", self.run_id, exc)
            self.store = None
