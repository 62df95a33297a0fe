"""The research run of one window, without the window: start and stop a run,
feed its events to the presenter, and the follow-on actions on what it left
(the history listed, a past run replayed or deleted, the report exported,
a cited source fetched).

The engine records each run itself (from its own writer thread); this object
reopens and deletes what it recorded. Everything here is awaited on the qasync
loop; blocking work (history reads, export writes) goes through
:func:`app.ui.tasks.run_blocking` or the history store's own thread. It needs
no window: it reports through signals, so tests drive it alone.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from app.core.errors import FathomError
from app.core.events import Failed, Finished, ResearchEvent, RunStarted
from app.core.models import Chunk, Evidence
from app.export.content import ReportContent
from app.export.exporter import export
from app.research.run_options import RunOptions
from app.ui.exporters import render_pdf
from app.ui.formatting import duration
from app.ui.run_presenter import RunPresenter
from app.ui.services import Services
from app.ui.tasks import TaskKeeper, run_blocking

if TYPE_CHECKING:
    from app.research.engine import ResearchEngine

log = logging.getLogger(__name__)

CONTEXT_CHUNKS = 2  # neighbouring chunks shown on each side in the source viewer
CLOCK_MS = 500  # how often the elapsed time of a running run is shown again

LOADING = "Loading the model…"
ADD_DOCUMENTS = "Drop a folder or files on the window, or use “Add folder…” in the Library."

_STATES = {
    "idle": "Ready",
    "running": "Running…",
    "finished": "Finished",
    "cancelled": "Stopped",
    "failed": "Failed",
}


class RunController(QObject):
    """One run at a time; the presenter shows it, the signals say what to tell the user."""

    runningChanged = Signal(bool)  # True when a run is started, False once it has ended
    stopping = Signal()  # Stop was asked for (once per run)
    stateText = Signal(str)  # what the run is doing, in a few words
    counters = Signal(str, str)  # tokens, elapsed time ("" when idle)
    problem = Signal(str)  # a problem to keep on screen (cannot run, the run failed)
    modelNotice = Signal(
        str, str
    )  # what to know of the model (the starter's roughness), the model it is of
    message = Signal(str, int)  # a passing status message and how long to show it (ms)
    modelName = Signal(str)
    historyChanged = Signal(list)  # list[RunSummary]
    runOpened = Signal(
        object
    )  # a past run is shown: its RunStarted (question, mode, scope, budget), or None

    def __init__(
        self,
        services: Services,
        presenter: RunPresenter,
        tasks: TaskKeeper,
        parent: QObject | None = None,
    ):
        super().__init__(parent)
        self.services = services
        self.presenter = presenter
        self.tasks = tasks
        self.run_options = RunOptions()  # engine options for every run (benchmarks, tests)
        self._run_task: asyncio.Task[Any] | None = None
        self._stopping = False  # Stop was asked for the current run
        self._engine: ResearchEngine | None = None
        self._run_id = ""  # the run the engine is running for this controller ("" when none)
        self._closing = False
        self._clock = QTimer(self)
        self._clock.setInterval(CLOCK_MS)
        self._clock.timeout.connect(self.update_status)
        presenter.changed.connect(self.update_status)

    # -- the run ----------------------------------------------------------
    @property
    def run_task(self) -> asyncio.Task[Any] | None:
        """The task of the current (or last) research run."""
        return self._run_task

    @property
    def running(self) -> bool:
        return self._run_task is not None and not self._run_task.done()

    def start(
        self, question: str, mode: str, scope: Any, budget: Any, follows: str = ""
    ) -> asyncio.Task[Any] | None:
        """Start a run (None while one runs); ``runningChanged(True)`` is emitted at once.
        ``follows``: the run it is a follow-up question of (the thread shown stays)."""
        if self.running:
            return None
        self.runningChanged.emit(True)  # at once, so a second click cannot start a second run
        self._stopping = False
        if not follows:
            self.presenter.reset()
        self._run_task = self.tasks.start(
            self._run(question, mode, scope, budget, follows), "research run"
        )
        return self._run_task

    async def _run(
        self, question: str, mode: str, scope: Any, budget: Any, follows: str = ""
    ) -> None:
        services = self.services
        self._clock.start()
        stream: AsyncIterator[ResearchEvent] | None = None
        prior = None
        try:
            if follows:
                try:
                    prior = await services.history.load_prior(follows)
                except FathomError as exc:
                    self.problem.emit(str(exc))
                    return
            if (
                empty := await self._nothing_to_search(scope)
            ) is not None:  # before any model loads
                self.problem.emit(f"Add documents first: {empty} {ADD_DOCUMENTS}")
                return
            self.stateText.emit(LOADING)
            try:
                engine = await services.engine()
            except Exception as exc:
                text = services.model_error or services.library_error or str(exc)
                self.problem.emit(f"Cannot run: {text}")
                self.stateText.emit("No model")
                return
            from app.research.engine import new_run_id

            self._engine = engine
            self._run_id = new_run_id()
            if services.model_notice:
                model = services.model
                self.modelNotice.emit(
                    services.model_notice,
                    str(getattr(model, "model_path", "") or getattr(model, "model_name", "")),
                )
            self.modelName.emit(getattr(services.model, "model_name", ""))
            stream = engine.run(
                question,
                mode=mode,
                scope=scope,
                budget=budget,
                run_id=self._run_id,
                options=self.run_options,
                follow_up=prior,
            )
            async for event in stream:
                self.presenter.feed(event)
                if isinstance(event, Failed):
                    self.problem.emit(event.message)
        finally:
            if stream is not None:
                await _closed(stream)  # when cut short, closing saves the run's end
            self._engine = None
            self._run_id = ""
            self._clock.stop()
            self.presenter.flush()
            self.runningChanged.emit(False)
            self.update_status()
            if not self._closing:
                self.tasks.start(self.refresh_history(), "refresh history")

    async def _nothing_to_search(self, scope: Any) -> str | None:
        """Why ``scope`` holds nothing to search (see :func:`app.research.engine.empty_scope_problem`),
        asked before the model loads; None when it can run (or the library is not open: then
        loading the engine says why)."""
        library = self.services.library
        if library is None:
            return None
        engine = await run_blocking(
            importlib.import_module, "app.research.engine", name="import the research engine"
        )
        problem: str | None = await engine.empty_scope_problem(library, scope)
        return problem

    def stop(self) -> asyncio.Task[Any] | None:
        """Ask the engine to stop the run (once); the run's task, which ends when the
        run has. A run still waiting for its model to load has found nothing yet:
        it is cancelled."""
        task = self._run_task
        if task is None or task.done():
            return None
        if not self._stopping:
            self._stopping = True
            self.stateText.emit("Stopping…")
            self.stopping.emit()
            if self._engine is not None and self._run_id:
                self._engine.stop(self._run_id)
            else:
                task.cancel()
        return task

    async def stop_run(self) -> None:
        """Stop the current run and return once it has ended: the engine's work is
        over, what it found is saved and shown."""
        task = self.stop()
        if task is not None:
            await asyncio.wait({task})

    def close(self) -> None:
        """The window is closing: no more follow-on work after the run ends."""
        self._closing = True

    def update_status(self) -> None:
        """The status line: what a running run is doing now (its phase, or Stopping…),
        else the run's state; then the counters."""
        shown = self.presenter
        if self.running and shown.state in ("idle", "running"):
            doing = (shown.phase or _STATES["running"]) if shown.state == "running" else LOADING
            self.stateText.emit("Stopping…" if self._stopping else doing)
        elif shown.state != "idle" or self.services.library is not None:
            stopped_early = shown.state == "finished" and shown.stop_reason not in ("", "completed")
            self.stateText.emit(
                f"Finished ({shown.stop_reason})"
                if stopped_early
                else _STATES.get(shown.state, shown.state)
            )
        idle = shown.state == "idle"
        self.counters.emit(
            "" if idle else f"{shown.tokens:,} tokens", "" if idle else duration(shown.elapsed())
        )

    # -- history ----------------------------------------------------------
    async def refresh_history(self) -> None:
        try:
            runs = await self.services.history.list_threads()
        except Exception as exc:
            self.message.emit(f"The history could not be read: {exc}", 8000)
            return
        self.historyChanged.emit(runs)

    async def open_run(self, run_id: str) -> None:
        """Show a recorded run exactly as its events describe it: with its follow-ups,
        the whole thread it belongs to."""
        thread = await self.services.history.read_thread(run_id)
        research = [
            e for stored in thread for e in stored.replay_events()
        ]  # with a note when some were unreadable
        self.presenter.replay(research)
        started = next((e for e in research if isinstance(e, RunStarted)), None)
        if not any(isinstance(e, (Finished, Failed)) for e in research):
            self.presenter.state = "cancelled"
        self.runOpened.emit(started)
        self.update_status()

    async def delete_run(self, run_id: str) -> None:
        """Delete the run, with the follow-ups of its thread."""
        shown = {r for r, _, _ in self.presenter.steps} | {self.presenter.run_id}
        await self.services.history.delete_thread(run_id)
        if run_id in shown and not self.running:
            self.presenter.reset()
            self.update_status()
        await self.refresh_history()

    # -- what a run left --------------------------------------------------
    async def export(self, path: Path, *, include_consulted: bool = False) -> Path:
        """Export what is shown (the report, or the table for .csv/.json) to ``path``, the
        sources read but not cited too when ``include_consulted``.

        What to write is taken now, on the GUI thread; the file is rendered and
        written off it, so a large PDF never freezes the window. Raises OSError
        or ValueError when it cannot be written.
        """
        shown = self.presenter
        report = shown.report
        content = ReportContent(
            question=shown.question,
            markdown=shown.report_view.markdown_text(),
            evidence=tuple(shown.evidence.values()),
            support=report.support if report is not None else None,
            citations=report.citations if report is not None else (),
            table=shown.table,
            provenance=report.provenance if report is not None else None,
        )
        write = functools.partial(export, include_consulted=include_consulted, pdf=render_pdf)
        return await run_blocking(write, content, path, name="export")

    async def source(self, number: int) -> tuple[Evidence, Chunk | None, list[Chunk]]:
        """The evidence cited as ``[number]``, its chunk (None when the library lacks it)
        and the chunks around it."""
        evidence = self.presenter.evidence[number]
        chunk: Chunk | None = None
        context: list[Chunk] = []
        library = self.services.library
        if library is not None:
            found = await library.get_chunks([evidence.chunk_id])
            chunk = found[0] if found else None
            if chunk is not None:
                context = await self._neighbours(chunk)
        return evidence, chunk, context

    async def _neighbours(self, chunk: Chunk) -> list[Chunk]:
        """The chunk with up to CONTEXT_CHUNKS chunks of the same document on each side."""
        from app.core.ids import make_chunk_id

        library = self.services.library
        if library is None:
            return [chunk]
        numbers = range(
            max(0, chunk.chunk_no - CONTEXT_CHUNKS), chunk.chunk_no + CONTEXT_CHUNKS + 1
        )
        try:
            found = await library.get_chunks([make_chunk_id(chunk.doc_id, n) for n in numbers])
        except FathomError as exc:
            log.info("no context for %s: %s", chunk.chunk_id, exc)
            return [chunk]
        if all(c.chunk_id != chunk.chunk_id for c in found):
            found.append(chunk)
        return sorted(found, key=lambda c: c.chunk_no)


async def _closed(stream: AsyncIterator[ResearchEvent]) -> None:
    """Close the engine's event stream and wait until it has closed, even when
    the awaiting task is cancelled meanwhile (then it is re-raised after)."""
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    closing = asyncio.ensure_future(aclose())
    try:
        await asyncio.shield(closing)
    except asyncio.CancelledError:
        await asyncio.wait({closing})
        raise
