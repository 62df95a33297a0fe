"""The event stream of one research run: emit events, make node ids, post notices.

Every other part of a run (model calls, search, evidence, the report) emits
through one :class:`RunEvents`; the engine reads the stream.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from app.core.events import ROOT_NODE, Notice, ResearchEvent


class RunEvents:
    """Emits a run's events (to ``emit``, the engine's queue) and numbers its nodes."""

    def __init__(self, run_id: str, emit: Callable[[ResearchEvent], None]) -> None:
        self.run_id = run_id
        self._emit = emit
        self._ids = itertools.count(1)

    def emit(self, event: ResearchEvent) -> None:
        self._emit(event)

    def new_node_id(self, prefix: str = "n") -> str:
        return f"{prefix}{next(self._ids)}"

    def notice(self, message: str, *, level: str = "info", node_id: str = ROOT_NODE) -> None:
        self.emit(Notice(run_id=self.run_id, message=message, level=level, node_id=node_id))
