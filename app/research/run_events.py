"""The event stream of one research run: emit events, make node ids, post notices,
say what the run is doing (``phase``) and that it is still at it (``keep_alive``).

Every other part of a run (model calls, search, evidence, the report) emits
through one :class:`RunEvents`; the engine reads the stream.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from app.core.events import (
    ROOT_NODE,
    EvidenceAdded,
    Notice,
    NoticeLevel,
    PhaseChanged,
    ReasoningDelta,
    ResearchEvent,
    UsageUpdated,
)

# a phase's count is re-sent at most this often (its start and its last count always are)
PHASE_COUNT_INTERVAL_S = 0.25
# while a model call shows nothing (it reads its prompt), the status line says how long
# it has waited once the run has shown nothing new for this long, checked this often
KEEP_ALIVE_S = 1.0
KEEP_ALIVE_CHECK_S = 0.2
# events that change nothing a user reads (token totals, the evidence counter, reasoning shown collapsed)
UNSEEN = (UsageUpdated, EvidenceAdded, ReasoningDelta)


class RunEvents:
    """Emits a run's events (to ``emit``, the engine's queue) and numbers its nodes."""

    def __init__(
        self,
        run_id: str,
        emit: Callable[[ResearchEvent], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.run_id = run_id
        self._emit = emit
        self._ids = itertools.count(1)
        self._clock = clock
        self._phase: PhaseChanged | None = None  # the last one sent (without its wait)
        self._phase_at = 0.0
        self._seen_at = clock()  # when the user was last shown something new

    def emit(self, event: ResearchEvent) -> None:
        if not isinstance(event, UNSEEN):
            self._seen_at = self._clock()
        self._emit(event)

    def new_node_id(self, prefix: str = "n") -> str:
        return f"{prefix}{next(self._ids)}"

    def notice(
        self, message: str, *, level: NoticeLevel = "info", node_id: str = ROOT_NODE
    ) -> None:
        self.emit(Notice(run_id=self.run_id, message=message, level=level, node_id=node_id))

    def phase(
        self,
        phase: str,
        text: str,
        *,
        done: int = 0,
        total: int = 0,
        node_id: str = ROOT_NODE,
        update: bool = False,
    ) -> None:
        """Say what the run is doing now (``PhaseChanged``), unless it says so already.

        An ``update`` (a count advancing, see :meth:`count`) is sent only when
        :data:`PHASE_COUNT_INTERVAL_S` has passed since the last one, or when it is
        the last (``done == total``): a fast phase sends few events, never one per
        token. A phase's start is always sent."""
        last, now = self._phase, self._clock()
        if last is not None and (last.phase, last.text, last.done, last.total, last.node_id) == (
            phase,
            text,
            done,
            total,
            node_id,
        ):
            return
        if (
            update
            and not (total and done >= total)
            and now - self._phase_at < PHASE_COUNT_INTERVAL_S
        ):
            return
        event = PhaseChanged(
            run_id=self.run_id, phase=phase, text=text, done=done, total=total, node_id=node_id
        )
        self._phase, self._phase_at = event, now
        self.emit(event)

    def count(self, done: int) -> None:
        """Advance the current phase's count to ``done`` (an update: throttled)."""
        last = self._phase
        if last is not None:
            self.phase(
                last.phase,
                last.text,
                done=done,
                total=last.total,
                node_id=last.node_id,
                update=True,
            )

    @asynccontextmanager
    async def kept_alive(self) -> AsyncIterator[None]:
        """Run :meth:`keep_alive` beside the body (a model call, a search); it ends with it."""
        alive = asyncio.create_task(self.keep_alive(), name=f"keep-alive-{self.run_id}")
        try:
            yield
        finally:
            alive.cancel()
            await asyncio.wait({alive})  # a cancellation of the body itself still propagates

    async def keep_alive(self) -> None:
        """Until cancelled (it runs beside a model call or a search): each whole second
        of the wait in which the run has shown nothing new for about
        :data:`KEEP_ALIVE_S`, say the current phase again with how long this wait has
        lasted, so the status line never sits still while a model reads a long prompt."""
        started = self._clock()
        said = 0  # the last tick said: one a KEEP_ALIVE_S, so the line counts 1 s, 2 s, 3 s… without a skip
        while True:
            await asyncio.sleep(KEEP_ALIVE_CHECK_S)
            now = self._clock()
            tick = int((now - started) / KEEP_ALIVE_S)
            if (
                self._phase is None
                or tick <= said
                or now - self._seen_at < KEEP_ALIVE_S - KEEP_ALIVE_CHECK_S
            ):
                continue
            said = tick
            waited = max(1, round(now - started))
            self.emit(dataclasses.replace(self._phase, waited_s=waited, ts=time.time()))
