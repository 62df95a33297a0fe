"""Typed events: what the research engine and the ingest pipeline report.

Each event is a frozen, keyword-only dataclass. Research events carry the
``run_id`` and the ids that place them in the research tree (``node_id`` and
``parent_id``); the window's tree is a pure function of the events seen, and
the same events are persisted so a finished run can be replayed exactly.

``event_to_dict`` / ``event_from_dict`` are the persisted form. Each stored
event carries the schema version it was written with (``"v"``; none before
version 1). Reading is strict for the versions this code knows: an unknown
type, a missing or extra field, or a value of the wrong type raises
:class:`EventDecodeError`, with a short reason, so a reader can skip that one
event and say so instead of failing the whole run. An event written by a newer
version is read leniently (fields it added are ignored) when it can be.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from app.core.codec import from_jsonable, to_jsonable
from app.core.models import (
    Budget,
    Citation,
    EntityTable,
    Evidence,
    Hit,
    IngestCounts,
    Report,
    Usage,
)

ROOT_NODE = "root"

# where a sub-query came from: the first decomposition, a gap found by reflection, a bridge
# between two hops, a plan's step, the question itself, an HDS turn, table mode
SubQueryOrigin = Literal["decompose", "gap", "bridge", "plan", "original", "hds", "table", "name"]
NoticeLevel = Literal["info", "warning"]
FileStatus = Literal[
    "indexed", "unchanged", "skipped", "failed", "removed"
]  # how a file of an ingest ended

# The version of the stored form. Raise it when a change would make older code
# misread a new event (a field renamed, a meaning changed), and teach
# ``event_from_dict`` to upgrade the older form. Adding an event type or an
# optional field needs no new version: older readers skip or ignore them.
SCHEMA_VERSION = 1
VERSION_KEY = "v"
TYPE_KEY = "type"

_EVENT_TYPES: dict[str, type[Event]] = {}


class EventDecodeError(ValueError):
    """A stored event that cannot be read; the message says why, in a few words."""


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event; ``ts`` is wall-clock seconds when it was made."""

    kind: ClassVar[str] = "event"
    ts: float = field(default_factory=time.time)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.kind = cls.__name__
        _EVENT_TYPES[cls.__name__] = cls


def event_to_dict(event: Event) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(event)
    data[TYPE_KEY] = event.kind
    data[VERSION_KEY] = SCHEMA_VERSION
    return data


def event_from_dict(data: Any) -> Event:
    """The event ``data`` describes; :class:`EventDecodeError` when it cannot be read."""
    if not isinstance(data, dict):
        raise EventDecodeError(f"not an event object ({type(data).__name__})")
    payload = dict(data)
    name = payload.pop(TYPE_KEY, None)
    version = payload.pop(VERSION_KEY, 0)
    if not isinstance(name, str):
        raise EventDecodeError("no event type")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise EventDecodeError(f"{name}: bad schema version {version!r}")
    cls = _EVENT_TYPES.get(name)
    if cls is None:
        raise EventDecodeError(f"unknown event type {name!r}")
    newer = version > SCHEMA_VERSION
    try:
        event: Event = from_jsonable(cls, payload, strict=not newer)
    except (TypeError, ValueError, KeyError) as exc:
        written = f" (written by a newer Fathom, schema {version})" if newer else ""
        raise EventDecodeError(f"{name}: {exc}{written}") from exc
    return event


# -- research ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ResearchEvent(Event):
    run_id: str


@dataclass(frozen=True, kw_only=True)
class RunStarted(ResearchEvent):
    question: str
    mode: str
    collections: tuple[str, ...] = ()
    budget: Budget = field(default_factory=Budget)
    model: str = ""
    follows: str = ""  # a follow-up question: the run it continues (its thread's latest run)


@dataclass(frozen=True, kw_only=True)
class RoundStarted(ResearchEvent):
    node_id: str
    round_no: int
    parent_id: str = ROOT_NODE


@dataclass(frozen=True, kw_only=True)
class PlanWritten(ResearchEvent):
    """A plan of steps (plan and table modes); each step later has its own node."""

    node_id: str
    steps: tuple[str, ...]
    parent_id: str = ROOT_NODE


@dataclass(frozen=True, kw_only=True)
class SubQueryPlanned(ResearchEvent):
    """A search to run: a decomposed sub-query, a gap query or a plan step."""

    node_id: str
    parent_id: str
    text: str
    collections: tuple[str, ...] = ()
    round_no: int = 0
    origin: SubQueryOrigin = "decompose"


@dataclass(frozen=True, kw_only=True)
class SearchFinished(ResearchEvent):
    node_id: str  # the sub-query's node
    hits: tuple[Hit, ...]
    search_mode: str = "hybrid"


@dataclass(frozen=True, kw_only=True)
class ChunkJudged(ResearchEvent):
    node_id: str  # the sub-query's node
    chunk_id: str
    relevant: bool
    score: float = 0.0
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class ReasoningDelta(ResearchEvent):
    """The model's thinking, shown collapsed under the node it belongs to."""

    node_id: str
    text: str


@dataclass(frozen=True, kw_only=True)
class Reflected(ResearchEvent):
    node_id: str
    parent_id: str
    summary: str
    gap_queries: tuple[str, ...] = ()
    done: bool = False


@dataclass(frozen=True, kw_only=True)
class StepFinished(ResearchEvent):
    """A plan step's finding, and whether the question is already answered."""

    node_id: str
    finding: str
    answered: bool = False


@dataclass(frozen=True, kw_only=True)
class EvidenceAdded(ResearchEvent):
    evidence: Evidence


@dataclass(frozen=True, kw_only=True)
class ReportStarted(ResearchEvent):
    pass


@dataclass(frozen=True, kw_only=True)
class ReportDelta(ResearchEvent):
    text: str


@dataclass(frozen=True, kw_only=True)
class CitationChecked(ResearchEvent):
    citation: Citation


@dataclass(frozen=True, kw_only=True)
class TableReady(ResearchEvent):
    table: EntityTable


@dataclass(frozen=True, kw_only=True)
class UsageUpdated(ResearchEvent):
    total: Usage


@dataclass(frozen=True, kw_only=True)
class Notice(ResearchEvent):
    """Something worth telling the user that does not stop the run."""

    message: str
    level: NoticeLevel = "info"
    node_id: str = ROOT_NODE


@dataclass(frozen=True, kw_only=True)
class PhaseChanged(ResearchEvent):
    """What the run is doing now, in words a user understands (the status line).

    ``phase`` names the step for code (``decompose``, ``search``, ``judge``, …);
    ``text`` says it in plain English ("Reading 12 passages"); ``done`` of
    ``total`` counts its progress where there is a count (``total`` 0: none).
    Sent when a phase starts (``done`` 0) and, a few times a second at most, as
    it advances (``done`` > 0: an update of the phase already announced, e.g.
    its count, or the words a model has written so far, said in ``text``);
    ``node_id`` is the tree node the phase works on. ``waited_s`` > 0: the same
    phase again, still waiting that many seconds on a model that shows nothing
    while it reads its prompt (sent about once a second while it lasts).
    """

    phase: str
    text: str
    done: int = 0
    total: int = 0
    node_id: str = ROOT_NODE
    waited_s: int = 0

    @property
    def line(self) -> str:
        """The status line: the text, with its count once one item is done ("Reading 12 passages — 5 of 12")
        and how long it has waited ("Deciding what is still missing (4 s)")."""
        line = self.text
        if self.total > 0 and self.done > 0:
            line = f"{line} — {min(self.done, self.total)} of {self.total}"
        return f"{line} ({self.waited_s} s)" if self.waited_s > 0 else line


@dataclass(frozen=True, kw_only=True)
class Finished(ResearchEvent):
    report: Report
    usage: Usage
    stop_reason: str  # "completed", "cancelled", or the budget exhausted ("max_rounds", ...)
    elapsed_s: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Failed(ResearchEvent):
    message: str
    usage: Usage = field(default_factory=Usage)
    elapsed_s: float = 0.0


# -- ingest ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class IngestEvent(Event):
    collection: str


@dataclass(frozen=True, kw_only=True)
class IngestStarted(IngestEvent):
    total_files: int


@dataclass(frozen=True, kw_only=True)
class FileStarted(IngestEvent):
    path: str


@dataclass(frozen=True, kw_only=True)
class FileDone(IngestEvent):
    path: str
    status: FileStatus
    chunks: int = 0
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class IngestProgress(IngestEvent):
    done_files: int
    total_files: int
    chunks: int
    current: str = ""
    files_per_s: float = 0.0
    eta_s: float | None = None
    ocr: str = ""  # while a long file is read: "tide.pdf: OCR, page 3 of 40", "inbox.mbox: message 1,200 of 9,000"

    @property
    def fraction(self) -> float:
        return 1.0 if self.total_files == 0 else self.done_files / self.total_files


@dataclass(frozen=True, kw_only=True)
class IngestFinished(IngestEvent, IngestCounts):
    elapsed_s: float
    failures: tuple[tuple[str, str], ...] = ()  # (path, reason)
