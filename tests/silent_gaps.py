"""How long a research run goes without showing the user anything new.

A user sees a run move through: the status line's text (``PhaseChanged``), a
report token (``ReportDelta``) and the research tree (a node inserted or its
state changed: a round, a sub-query, its hits, a judgement, a reflection, a
plan step, the report node, a checked citation, the table, the end).
Bookkeeping that changes no text a user reads is not counted: token totals
(``UsageUpdated``), the evidence counter (``EvidenceAdded``) and the model's
hidden reasoning (``ReasoningDelta``, shown only when a node is opened).

The silent gap is the longest time between two consecutive visible events,
by their timestamps (``Event.ts``, taken when the engine made them). While a
model reads its prompt it shows nothing; the status line then says how long
it has waited (``PhaseChanged.waited_s``, about once a second). Those
keep-alive lines count as visible; ``progress_only=True`` leaves them out,
which gives the longest wait for real progress (one model call's silence). Used by
``tests/bench/bench_ui.py`` (the figure in README) and by the real-model tests,
Qt-free.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from app.core import events as ev

INVISIBLE: tuple[type[ev.Event], ...] = (ev.UsageUpdated, ev.EvidenceAdded, ev.ReasoningDelta)


def is_visible(event: ev.Event, *, progress_only: bool = False) -> bool:
    """Whether ``event`` changes something the user reads (see the module)."""
    if progress_only and isinstance(event, ev.PhaseChanged) and event.waited_s > 0:
        return False
    return isinstance(event, ev.ResearchEvent) and not isinstance(event, INVISIBLE)


def describe(event: ev.Event) -> str:
    """The event in a few words, for a gap's report."""
    text = getattr(event, "text", None) or getattr(event, "message", None) or ""
    if isinstance(event, ev.ReportDelta):
        text = ""
    return f"{event.kind}({str(text)[:50]!r})" if text else event.kind


@dataclass(frozen=True)
class Gap:
    """The longest silence of a run: its length and the events on either side."""

    seconds: float
    before: str
    after: str

    def __str__(self) -> str:
        return f"{self.seconds:.2f} s (after {self.before}, before {self.after})"


def longest_gap(events: Sequence[ev.Event], *, progress_only: bool = False) -> Gap:
    """The longest time between consecutive visible events of one run."""
    shown = [e for e in events if is_visible(e, progress_only=progress_only)]
    best = Gap(0.0, "", "")
    for previous, event in itertools.pairwise(shown):
        seconds = event.ts - previous.ts
        if seconds > best.seconds:
            best = Gap(seconds, describe(previous), describe(event))
    return best
