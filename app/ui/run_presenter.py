"""Shows one research run (live or replayed) in the tree, the report and the table.

Events are folded into the engine's ``TreeBuilder`` as they arrive (cheap);
the Qt model is brought up to date once per frame (``FRAME_MS``) from the
builder's tree, so a burst of events costs one diff, not one repaint each, and
a frame whose events changed no node (the ``TreeChange`` they gave is empty:
citation checks, a table) costs none.
Report deltas go to the report view, which re-renders on its own throttle.

A follow-up question (a run whose ``RunStarted.follows`` is set, fed after the
run it continues) does not clear what is shown: its tree grows as a branch, and
its report is shown after the earlier ones, as one thread
(:func:`app.research.follow_up.thread_markdown`). Replaying a thread is feeding
its runs' events in order.

What the run is doing now (``PhaseChanged``) is kept as ``phase`` for the
status line; it changes no tree, and a replayed run has none.
"""

from __future__ import annotations

import time
from typing import Literal

from PySide6.QtCore import QObject, QTimer, Signal

from app.core.events import (
    CitationChecked,
    EvidenceAdded,
    Failed,
    Finished,
    Notice,
    PhaseChanged,
    ReportDelta,
    ReportStarted,
    ResearchEvent,
    RunStarted,
    TableReady,
    UsageUpdated,
)
from app.core.models import Citation, EntityTable, Evidence, Report
from app.research.citations import first_cited, sentence_support, split_report
from app.research.follow_up import section_heading, thread_markdown
from app.research.tree import TreeBuilder
from app.ui.report_view import ReportView
from app.ui.table_view import EntityTableView
from app.ui.tree_adapter import to_view
from app.ui.tree_model import ResearchTreeModel

FRAME_MS = 50


RunState = Literal["idle", "running", "finished", "cancelled", "failed"]  # the run on show


class RunPresenter(QObject):
    """Feeds events to the views; ``finished`` carries the final event."""

    changed = Signal()  # status (tokens, state) changed
    finished = Signal(object)  # Finished | Failed
    noticed = Signal(str)
    tableReady = Signal()

    def __init__(
        self, model: ResearchTreeModel, report: ReportView, table: EntityTableView
    ) -> None:
        super().__init__(model)
        self.model = model
        self.report_view = report
        self.table_view = table
        self._timer = QTimer(self)
        self._timer.setInterval(FRAME_MS)
        self._timer.timeout.connect(self.flush)
        self.flush_count = 0
        self.reset()

    def reset(self) -> None:
        self._timer.stop()
        self.builder = TreeBuilder()
        self.events: list[ResearchEvent] = []
        self.run_id = ""
        self.question = ""
        self.mode = ""
        self.started_at: float | None = None
        self.started_monotonic: float | None = None
        self.tokens = 0
        self.calls = 0
        self.state: RunState = "idle"
        self.stop_reason = ""
        self.message = ""
        self.phase = ""  # what a live run is doing now, for the status line ("" when not known)
        self.elapsed_s: float | None = None
        self.evidence: dict[int, Evidence] = {}
        self.report: Report | None = None
        self.table: EntityTable | None = None
        self.steps: list[
            tuple[str, str, Report]
        ] = []  # the thread shown: (run id, question, report)
        self.asking = ""  # the question of the run being fed (a follow-up's own)
        self.following = False  # the run being fed is a follow-up of the thread shown
        self._dirty = False
        self.model.clear()
        self.report_view.clear_report()
        self.table_view.set_table(None)

    # -- feeding ----------------------------------------------------------
    def feed(self, event: ResearchEvent, *, live: bool = True) -> None:
        self.events.append(event)
        if not isinstance(event, (ReportDelta, PhaseChanged)):
            change = self.builder.apply(event)
            if change.inserted or change.updated:  # else the tree is as it was: no frame to redraw
                self._dirty = True
        if isinstance(event, RunStarted):
            self.following = bool(event.follows) and bool(self.steps)
            if self.following:  # the thread's title stays its first question
                self._next_in_thread()
            else:
                self.question = event.question
            self.run_id, self.mode, self.asking = event.run_id, event.mode, event.question
            self.started_at = event.ts
            self.started_monotonic = time.monotonic() if live else None
            self.state = "running"
            self.changed.emit()
        elif isinstance(event, PhaseChanged):
            if live:
                self.phase = event.line
                self.changed.emit()
        elif isinstance(event, ReportStarted):
            self.report_view.clear_report()
            if self.following:  # the earlier answers stay above the one being written
                earlier, _ = split_report(thread_markdown([(q, r) for _, q, r in self.steps]))
                self.report_view.append_markdown(
                    f"{earlier.rstrip()}\n\n{section_heading(self.asking)}\n\n"
                )
        elif isinstance(event, ReportDelta):
            self.report_view.append_markdown(event.text)
        elif isinstance(event, EvidenceAdded):
            self.evidence[event.evidence.number] = event.evidence
        elif isinstance(event, CitationChecked):
            c = event.citation
            self.report_view.mark_citation(c.number, c.supported, c.note, c.sentence)
        elif isinstance(event, TableReady):
            self._show_table(event.table)
        elif isinstance(event, UsageUpdated):
            self.tokens, self.calls = event.total.total_tokens, event.total.calls
            self.changed.emit()
        elif isinstance(event, Notice):
            self.noticed.emit(event.message)
        elif isinstance(event, Finished):
            self._on_finished(event)
        elif isinstance(event, Failed):
            self.state = "failed"
            self.message = event.message
            self.elapsed_s = event.elapsed_s
            self.tokens = event.usage.total_tokens or self.tokens
            if self.following:
                self._show_thread()
            self.flush()
            self.report_view.flush()
            self.changed.emit()
            self.finished.emit(event)
        if self._dirty and not self._timer.isActive():
            self._timer.start()

    def replay(self, events: list[ResearchEvent]) -> None:
        """Show a past run exactly as its events describe it."""
        self.reset()
        for event in events:
            self.feed(event, live=False)
        self.flush()
        self.report_view.flush()

    def _on_finished(self, event: Finished) -> None:
        self.state = "cancelled" if event.stop_reason == "cancelled" else "finished"
        self.stop_reason = event.stop_reason
        self.elapsed_s = event.elapsed_s
        self.tokens = event.usage.total_tokens or self.tokens
        self.calls = event.usage.calls or self.calls
        report = self.report = event.report
        if report.evidence:  # the report's numbering (cited sources first) replaces the run's
            self.evidence = {e.number: e for e in report.evidence}
        if self.following:
            self.steps.append((event.run_id, self.asking, report))
            self._show_thread()
        else:
            self.steps = [(event.run_id, self.asking, report)]
            self._show_report(report)
        if event.report.table is not None:
            self._show_table(event.report.table)
        self.flush()
        self.report_view.flush()
        self.changed.emit()
        self.finished.emit(event)

    def _next_in_thread(self) -> None:
        """A follow-up starts: the run's own counters start again; the thread stays."""
        self.tokens = self.calls = 0
        self.stop_reason = self.message = ""
        self.elapsed_s = None
        self.report = None

    def _show_thread(self) -> None:
        """The thread's answers as one report: each follow-up a section, one Sources list."""
        markdown = thread_markdown([(q, r) for _, q, r in self.steps])
        citations: list[Citation] = [c for _, _, r in self.steps for c in r.citations]
        cited = set(first_cited(markdown, self.evidence))
        self.report_view.show_finished(
            markdown,
            known=set(self.evidence),
            citations=citations,
            support=sentence_support(markdown, citations),
            consulted=[e for n, e in sorted(self.evidence.items()) if n not in cited],
        )

    def _show_report(self, report: Report) -> None:
        view = self.report_view
        markdown = report.markdown
        if not markdown.strip() and view.markdown_text().strip():
            markdown = view.markdown_text()
        cited = set(first_cited(markdown, self.evidence))
        view.show_finished(
            markdown,
            known=set(self.evidence),
            citations=report.citations,
            support=report.support or sentence_support(markdown, report.citations),
            consulted=[e for n, e in sorted(self.evidence.items()) if n not in cited],
            starter=report.provenance is not None and report.provenance.starter,
        )

    def _show_table(self, table: EntityTable) -> None:
        self.table = table
        self.table_view.set_table(table)
        self.tableReady.emit()

    # -- batching ---------------------------------------------------------
    def flush(self) -> None:
        if not self._dirty:
            self._timer.stop()
            return
        self._dirty = False
        self.model.apply(to_view(self.builder.root))
        self.flush_count += 1

    # -- status -----------------------------------------------------------
    def elapsed(self) -> float:
        if self.elapsed_s is not None:
            return self.elapsed_s
        if self.started_monotonic is not None:
            return time.monotonic() - self.started_monotonic
        return 0.0

    @property
    def running(self) -> bool:
        return self.state == "running"
