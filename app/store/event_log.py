"""A stored run's events, read one row at a time so a bad row costs one event.

``decode_rows`` turns the ``research_events`` rows of one run into an
:class:`EventLog`: the events that could be read, in order, and for each one
that could not (bad JSON, an unknown type, a missing or extra field, a value
of the wrong type) its position, type and the reason. A run is never
unopenable because of one event; the reader says how many were skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from app.core.events import (
    ROOT_NODE,
    Event,
    EventDecodeError,
    Notice,
    ResearchEvent,
    RunStarted,
    event_from_dict,
)

MAX_REASONS = 3  # distinct reasons quoted in the note


@dataclass(frozen=True)
class SkippedEvent:
    """One stored event that could not be read."""

    seq: int
    type: str
    reason: str


@dataclass(frozen=True)
class EventLog:
    """The readable events of one run, and the ones skipped.

    ``rebuilt`` names the events that were unreadable or missing and were
    rebuilt from the run's own summary row (its start, its end).
    """

    run_id: str
    events: tuple[Event, ...] = ()
    skipped: tuple[SkippedEvent, ...] = ()
    rebuilt: tuple[str, ...] = field(default=())

    @property
    def note(self) -> str:
        """A sentence for the user, or "" when every event was read."""
        if not self.skipped:
            return ""
        n = len(self.skipped)
        what = "1 event of this run" if n == 1 else f"{n} events of this run"
        verb = "was" if n == 1 else "were"
        reasons = list(dict.fromkeys(s.reason for s in self.skipped))
        shown = "; ".join(reasons[:MAX_REASONS]) + ("; …" if len(reasons) > MAX_REASONS else "")
        sentence = f"{what} could not be read and {verb} skipped ({shown})."
        if self.rebuilt:
            sentence += f" Rebuilt from the run's summary: {', '.join(self.rebuilt)}."
        return sentence

    def replay_events(self) -> list[ResearchEvent]:
        """The research events to show, with the note (a warning) right after the start."""
        events = [e for e in self.events if isinstance(e, ResearchEvent)]
        note = self.note
        if not note:
            return events
        at = next((i + 1 for i, e in enumerate(events) if isinstance(e, RunStarted)), 0)
        ts = events[at - 1].ts if at else 0.0
        notice = Notice(run_id=self.run_id, message=note, level="warning", node_id=ROOT_NODE, ts=ts)
        return [*events[:at], notice, *events[at:]]


def decode_rows(run_id: str, rows: Iterable[tuple[Any, Any, Any]]) -> EventLog:
    """``rows`` are (seq, type column, data column) in order."""
    events: list[Event] = []
    skipped: list[SkippedEvent] = []
    for seq, type_name, data in rows:
        try:
            events.append(_decode(data))
        except EventDecodeError as exc:
            skipped.append(SkippedEvent(_int(seq), str(type_name or "?"), str(exc)))
    return EventLog(run_id=run_id, events=tuple(events), skipped=tuple(skipped))


def _decode(data: Any) -> Event:
    if not isinstance(data, (str, bytes)):
        raise EventDecodeError("no event data")
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, absurd nesting
        raise EventDecodeError(f"bad JSON ({type(exc).__name__})") from exc
    try:
        return event_from_dict(parsed)
    except EventDecodeError:
        raise
    except Exception as exc:  # a constructor that refuses the values: still just this one event
        raise EventDecodeError(f"{type(exc).__name__}: {exc}") from exc


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1
