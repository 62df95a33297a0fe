"""The main window: library and history on the left, the research panel with
its live tree in the middle, the report (or table) on the right.

All engine and library calls are awaited on the qasync loop; every task has
a handle (:class:`TaskKeeper`); slots that start work disable their control
and restore it when the work ends. Stopping a run asks the engine to stop and
waits until the run has ended (its evidence saved and shown); nothing is
cancelled behind its back after a delay. History reads and export writes run
in executors, never on the GUI thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import FathomError
from app.core.events import Failed, Finished, ResearchEvent, RunStarted
from app.core.models import Chunk
from app.ui.dialogs import ask_yes_no, show_error
from app.ui.drop_zone import local_paths
from app.ui.exporters import EXPORT_FILTERS, TABLE_FILTERS, export_report, export_table
from app.ui.find_bar import FindBar
from app.ui.formatting import count, duration
from app.ui.history_panel import HistoryPanel
from app.ui.library_panel import LibraryPanel
from app.ui.report_view import ReportView
from app.ui.research_panel import ResearchPanel
from app.ui.run_presenter import RunPresenter
from app.ui.services import Services
from app.ui.source_viewer import SourceViewer
from app.ui.table_view import EntityTableView
from app.ui.tasks import TaskKeeper
from app.ui.theme import app_icon
from app.ui.tree_model import ResearchTreeModel

if TYPE_CHECKING:
    from app.core.settings import Settings
    from app.research.engine import ResearchEngine

log = logging.getLogger(__name__)

CONTEXT_CHUNKS = 2  # neighbouring chunks shown on each side in the source viewer


class Banner(QWidget):
    """A dismissable line of text above the report (settings problems, starter model)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setObjectName("notice")
        self.label.setWordWrap(True)
        close = QPushButton("✕")
        close.setFlat(True)
        close.setFixedWidth(28)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.messages: list[str] = []
        self.hide()

    def add(self, text: str) -> None:
        if text and text not in self.messages:
            self.messages.append(text)
        self.label.setText("\n".join(self.messages))
        self.show()


class MainWindow(QMainWindow):
    closed = Signal()
    ready = Signal()  # the library is open (or failed to open) and the panels are filled

    def __init__(self, services: Services, settings_problem: str | None = None) -> None:
        super().__init__()
        self.services = services
        self.setWindowTitle("Fathom")
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self.resize(1400, 880)
        self.tasks = TaskKeeper(self._on_task_error)
        self.errors: list[str] = []
        self._run_task: asyncio.Task[Any] | None = None
        self._stopping = False  # Stop was asked for the current run
        self._engine: ResearchEngine | None = None
        self._run_id = ""  # the run the engine is running for this window ("" when none)
        self._closing = False
        self.run_options: dict[str, Any] = {}  # engine options for every run (benchmarks, tests)
        self.banner = Banner()
        self.report_tabs = QTabWidget()
        self._build()
        self._build_actions()
        if settings_problem:
            self.banner.add(settings_problem)
        self._clock = QTimer(self)
        self._clock.setInterval(500)
        self._clock.timeout.connect(self._update_status)

    # -- layout -----------------------------------------------------------
    def _build(self) -> None:
        services = self.services
        self.tree_model = ResearchTreeModel(self)
        self.report = ReportView()
        self.table = EntityTableView()
        self.table.setObjectName("entityTable")
        self.presenter = RunPresenter(self.tree_model, self.report, self.table)
        self.presenter.changed.connect(self._update_status)
        self.presenter.noticed.connect(lambda m: self.statusBar().showMessage(m, 8000))
        self.presenter.tableReady.connect(lambda: self.report_tabs.setCurrentWidget(self.table))
        self.report.citationClicked.connect(self.open_citation)
        self.report.externalLinkClicked.connect(
            lambda url: self.statusBar().showMessage(f"Links to outside are not opened from a report: {url}", 8000)
        )

        self.library_panel = LibraryPanel(self.tasks)
        self.library_panel.statusMessage.connect(lambda m: self.statusBar().showMessage(m, 8000))
        self.history_panel = HistoryPanel()
        self.history_panel.openRequested.connect(self.open_run)
        self.history_panel.deleteRequested.connect(self.delete_run)
        self.history_panel.exportRequested.connect(self.choose_export)
        self.left_tabs = QTabWidget()
        self.left_tabs.addTab(self.library_panel, "Library")
        self.left_tabs.addTab(self.history_panel, "History")

        self.research_panel = ResearchPanel(self.tree_model, services.settings.research)
        self.research_panel.runRequested.connect(self.run_research)
        self.research_panel.stopRequested.connect(self.stop_research)
        self.library_panel.collectionsChanged.connect(self.research_panel.set_collections)

        self.find_bar = FindBar(self.report)
        self.report_tabs.setObjectName("reportTabs")
        self.report_tabs.addTab(self.report, "Report")
        self.report_tabs.addTab(self.table, "Table")
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(4, 4, 4, 4)
        title = QLabel("Report")
        title.setObjectName("panelTitle")
        right_layout.addWidget(title)
        right_layout.addWidget(self.banner)
        right_layout.addWidget(self.report_tabs, 1)
        right_layout.addWidget(self.find_bar)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.left_tabs)
        split.addWidget(self.research_panel)
        split.addWidget(right)
        split.setSizes([380, 500, 520])
        split.setChildrenCollapsible(False)
        self.setCentralWidget(split)
        self.source_viewer = SourceViewer(self)

        self.state_label = QLabel("Starting…")
        self.tokens_label = QLabel("")
        self.elapsed_label = QLabel("")
        self.model_label = QLabel("")
        for widget in (self.model_label, self.state_label, self.tokens_label, self.elapsed_label):
            self.statusBar().addPermanentWidget(widget)
        self.research_panel.set_running(False, ready=False)

    def _build_actions(self) -> None:
        def action(text: str, slot: Any, *keys: QKeySequence | str) -> QAction:
            act = QAction(text, self)
            if keys:
                act.setShortcuts([QKeySequence(k) for k in keys])
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.triggered.connect(slot)
            self.addAction(act)
            return act

        self.add_folder_action = action("Add folder…", self.library_panel.choose_folder, "Ctrl+O")
        self.export_action = action("Export report…", self.choose_export, "Ctrl+Shift+E")
        self.settings_action = action("Settings…", self.open_settings, "Ctrl+,")
        self.quit_action = action("Quit", self.close, "Ctrl+Q")
        self.run_action = action("Run", self.run_research, "Ctrl+Return", "Ctrl+Enter")
        self.stop_action = action("Stop", self.stop_research, "Esc")
        self.find_action = action("Find in report", self.find_bar.open_bar, "Ctrl+F")
        menu = self.menuBar().addMenu("&File")
        for act in (self.add_folder_action, self.export_action, self.settings_action):
            menu.addAction(act)
        menu.addSeparator()
        menu.addAction(self.quit_action)
        menu = self.menuBar().addMenu("&Research")
        for act in (self.run_action, self.stop_action, self.find_action):
            menu.addAction(act)

    # -- start-up ---------------------------------------------------------
    def start(self) -> asyncio.Task[Any]:
        """Load the heavy parts after the window is shown (call once, on the running loop)."""
        return self.tasks.start(self._load(), "start-up")

    async def _load(self) -> None:
        self.state_label.setText("Opening the library…")
        await self.refresh_history()
        try:
            library = await self.services.open_library()
        except Exception as exc:
            message = f"The library could not be opened: {self.services.library_error or exc}"
            self.library_panel.set_library(None, message)
            self.banner.add(message)
            self.state_label.setText("Library unavailable")
            self.ready.emit()
            return
        self.library_panel.set_library(library)
        self.research_panel.set_running(False, ready=True)
        self.state_label.setText("Ready")
        self.ready.emit()
        if not self.services.settings.ui.first_run_done:
            self.open_setup()

    # -- research ---------------------------------------------------------
    @property
    def run_task(self) -> asyncio.Task[Any] | None:
        """The task of the current (or last) research run."""
        return self._run_task

    @property
    def running(self) -> bool:
        return self._run_task is not None and not self._run_task.done()

    def run_research(self) -> None:
        if self.running or not self.research_panel.run_button.isEnabled():
            return
        question = self.research_panel.question_text()
        if not question:
            self.statusBar().showMessage("Type a question first.", 5000)
            self.research_panel.question.setFocus()
            return
        panel = self.research_panel
        panel.set_running(True)  # at once, so a second click cannot start a second run
        self._stopping = False
        self.presenter.reset()
        self._run_task = self.tasks.start(
            self._run(question, panel.mode_name(), panel.scope(), panel.budget()), "research run"
        )

    async def _run(self, question: str, mode: str, scope: Any, budget: Any) -> None:
        self.report_tabs.setCurrentWidget(self.report)
        self.state_label.setText("Loading the model…")
        self._clock.start()
        stream: AsyncIterator[ResearchEvent] | None = None
        try:
            try:
                engine = await self.services.engine()
            except Exception as exc:
                text = self.services.model_error or self.services.library_error or str(exc)
                self.banner.add(f"Cannot run: {text}")
                self.state_label.setText("No model")
                return
            from app.research.engine import new_run_id

            self._engine = engine
            self._run_id = new_run_id()
            if self.services.model_notice:
                self.banner.add(self.services.model_notice)
            self.model_label.setText(getattr(self.services.model, "model_name", ""))
            stream = engine.run(
                question, mode=mode, scope=scope, budget=budget, run_id=self._run_id, options=self.run_options or None
            )
            async for event in stream:
                self.presenter.feed(event)
                if isinstance(event, Failed):
                    self.banner.add(event.message)
        finally:
            if stream is not None:
                await _closed(stream)  # when cut short, closing saves the run's end
            self._engine = None
            self._run_id = ""
            self._clock.stop()
            self.presenter.flush()
            self.research_panel.set_running(False)
            self._update_status()
            if not self._closing:
                self.tasks.start(self.refresh_history(), "refresh history")

    def stop_research(self) -> None:
        if self.find_bar.isVisible() and self.find_bar.edit.hasFocus():
            self.find_bar.close_bar()
            return
        self._ask_to_stop()

    async def stop_run(self) -> None:
        """Stop the current run and return once it has ended: the engine's work is
        over, what it found is saved and shown."""
        task = self._ask_to_stop()
        if task is not None:
            await asyncio.wait({task})

    def _ask_to_stop(self) -> asyncio.Task[Any] | None:
        """Ask the engine to stop the run (once); the run's task, which ends when the
        run has. A run still waiting for its model to load has found nothing yet:
        it is cancelled."""
        task = self._run_task
        if task is None or task.done():
            return None
        if not self._stopping:
            self._stopping = True
            self.state_label.setText("Stopping…")
            self.research_panel.set_stopping()
            if self._engine is not None and self._run_id:
                self._engine.stop(self._run_id)
            else:
                task.cancel()
        return task

    def _update_status(self) -> None:
        p = self.presenter
        states = {
            "idle": "Ready",
            "running": "Running…",
            "finished": f"Finished ({p.stop_reason})" if p.stop_reason not in ("", "completed") else "Finished",
            "cancelled": "Stopped",
            "failed": "Failed",
        }
        if p.state != "idle" or self.services.library is not None:
            self.state_label.setText(states.get(p.state, p.state))
        self.tokens_label.setText(f"{p.tokens:,} tokens" if p.state != "idle" else "")
        self.elapsed_label.setText(duration(p.elapsed()) if p.state != "idle" else "")

    # -- sources ----------------------------------------------------------
    def open_citation(self, number: int) -> None:
        evidence = self.presenter.evidence.get(number)
        if evidence is None:
            self.statusBar().showMessage(f"[{number}] cites no source of this report.", 6000)
            return
        self.tasks.start(self._show_source(number), "open source")

    async def _show_source(self, number: int) -> None:
        evidence = self.presenter.evidence[number]
        chunk: Chunk | None = None
        context: list[Chunk] = []
        library = self.services.library
        if library is not None:
            found = await library.get_chunks([evidence.chunk_id])
            chunk = found[0] if found else None
            if chunk is not None:
                context = await self._neighbours(chunk)
        self.source_viewer.show_source(evidence, chunk, context)
        self.source_viewer.show()
        self.source_viewer.raise_()

    async def _neighbours(self, chunk: Chunk) -> list[Chunk]:
        """The chunk with up to CONTEXT_CHUNKS chunks of the same document on each side."""
        from app.core.ids import make_chunk_id

        library = self.services.library
        if library is None:
            return [chunk]
        numbers = range(max(0, chunk.chunk_no - CONTEXT_CHUNKS), chunk.chunk_no + CONTEXT_CHUNKS + 1)
        try:
            found = await library.get_chunks([make_chunk_id(chunk.doc_id, n) for n in numbers])
        except FathomError as exc:
            log.info("no context for %s: %s", chunk.chunk_id, exc)
            return [chunk]
        if all(c.chunk_id != chunk.chunk_id for c in found):
            found.append(chunk)
        return sorted(found, key=lambda c: c.chunk_no)

    # -- history ----------------------------------------------------------
    async def refresh_history(self) -> None:
        try:
            runs = await self.services.history.list_runs()
        except Exception as exc:
            self.statusBar().showMessage(f"The history could not be read: {exc}", 8000)
            return
        self.history_panel.set_runs(runs)

    def open_run(self, run_id: str) -> None:
        if self.running:
            self.statusBar().showMessage("Stop the current run before opening another.", 6000)
            return
        self.tasks.start(self._open_run(run_id), "open run")

    async def _open_run(self, run_id: str) -> None:
        self.history_panel.open_button.setEnabled(False)
        try:
            stored = await self.services.history.read_events(run_id)
            research = stored.replay_events()  # with a note when some events could not be read
            self.presenter.replay(research)
            started = next((e for e in research if isinstance(e, RunStarted)), None)
            if started is not None:
                self.research_panel.question.setPlainText(started.question)
            if not any(isinstance(e, (Finished, Failed)) for e in research):
                self.presenter.state = "cancelled"
            self.report_tabs.setCurrentWidget(self.table if self.presenter.table else self.report)
            self._update_status()
        finally:
            self.history_panel.open_button.setEnabled(True)

    def delete_run(self, run_id: str) -> None:
        self.tasks.start(self._delete_run(run_id), "delete run")

    async def _delete_run(self, run_id: str) -> None:
        summary = next((r for r in self.history_panel.summaries if r.run_id == run_id), None)
        question = summary.question if summary else run_id
        if not await ask_yes_no(self, "Delete run", f"Delete the run “{question[:80]}” from the history?"):
            return
        await self.services.history.delete_run(run_id)
        if self.presenter.run_id == run_id and not self.running:
            self.presenter.reset()
            self._update_status()
        await self.refresh_history()

    # -- export -----------------------------------------------------------
    def choose_export(self) -> None:
        p = self.presenter
        if not p.report_view.markdown_text().strip() and p.table is None:
            self.statusBar().showMessage("There is no report to export: run a question or open one from History.", 6000)
            return
        filters = list(EXPORT_FILTERS.values()) + (list(TABLE_FILTERS.values()) if p.table is not None else [])
        base = self.services.paths.exports_dir / f"fathom-{p.run_id or 'report'}.md"
        path, chosen = QFileDialog.getSaveFileName(self, "Export report", str(base), ";;".join(filters))
        if not path:
            return
        target = Path(path)
        if not target.suffix:
            suffix = next((s for s, f in {**EXPORT_FILTERS, **TABLE_FILTERS}.items() if f == chosen), ".md")
            target = target.with_suffix(suffix)
        self.tasks.start(self.export_to(target), "export")

    async def export_to(self, path: Path) -> Path | None:
        """Export what is shown (the report, or the table for .csv/.json) to ``path``.

        What to write is taken now, on the GUI thread; the file is rendered and
        written in an executor, so a large PDF never freezes the window.
        """
        p = self.presenter
        question, markdown, table = p.question, p.report_view.markdown_text(), p.table
        evidence = list(p.evidence.values())
        controls = (self.export_action, self.history_panel.export_button)
        for control in controls:
            control.setEnabled(False)
        loop = asyncio.get_running_loop()
        try:
            if path.suffix.lower() in TABLE_FILTERS:
                if table is None:
                    raise ValueError("This run has no table to export.")
                written = await loop.run_in_executor(None, export_table, path, table)
            else:
                written = await loop.run_in_executor(None, export_report, path, question, markdown, evidence)
        except (OSError, ValueError) as exc:
            show_error(self, "Export failed", f"The report could not be exported to {path}: {exc}")
            return None
        finally:
            for control in controls:
                control.setEnabled(True)
        self.statusBar().showMessage(f"Exported to {written}", 8000)
        return written

    # -- settings ---------------------------------------------------------
    def open_settings(self) -> None:
        from app.ui.settings_dialog import SettingsDialog

        dialog = SettingsDialog(
            self.services.settings,
            self.services.paths,
            self.services.list_models,
            self.services.save_settings,
            _save_api_key,
            self.tasks,
            self,
        )
        dialog.saved.connect(self._settings_saved)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.settings_dialog = dialog

    def open_setup(self) -> None:
        from app.ui.setup_dialog import SetupDialog

        dialog = SetupDialog(self.services, self.tasks, self)
        dialog.saved.connect(self._settings_saved)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.setup_dialog = dialog

    def _settings_saved(self, settings: Settings) -> None:
        from app.ui.theme import apply_theme

        app = _application()
        if app is not None:
            apply_theme(app, settings.ui.theme)
        self.statusBar().showMessage("Settings saved.", 5000)
        self.tasks.start(self.apply_library_settings(settings), "apply the library settings")

    async def apply_library_settings(self, settings: Settings) -> None:
        """Hand new settings to the open library; when the embedding model changed,
        offer to re-index the collections built with the old one."""
        library = self.services.library
        if library is None:
            return
        if self.library_panel.ingesting and settings.embedding != library.settings.embedding:
            self.statusBar().showMessage("The new embedding model is used once the indexing in progress ends.")
        await self.library_panel.wait_until_idle()
        await library.use_settings(settings)
        stale = await library.collections_needing_reindex()
        if not stale:
            return
        names = ", ".join(f"“{c.name}”" for c in stale)
        ok = await ask_yes_no(
            self,
            "Re-index collections",
            f"{count(len(stale), 'collection')} {'was' if len(stale) == 1 else 'were'} built with another "
            f"embedding model than {await library.embedding_model()}: {names}.",
            "They cannot be searched with the new model until they are re-indexed. Re-index them now? Every "
            "document is embedded again; your files are not touched. (Or do it later from a collection's "
            "right-click menu, or switch the embedding model back in Settings.)",
        )
        if ok:
            await self.library_panel.reindex_all([c.name for c in stale])

    # -- drag and drop anywhere on the window -----------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if local_paths(event) and self.library_panel.drop_zone.isEnabled():
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = local_paths(event)
        if paths and self.library_panel.drop_zone.isEnabled():
            event.acceptProposedAction()
            self.left_tabs.setCurrentWidget(self.library_panel)
            self.library_panel.add_paths(paths)
        else:
            event.ignore()

    # -- errors and closing ----------------------------------------------
    def _on_task_error(self, name: str, exc: BaseException) -> None:
        text = str(exc) if isinstance(exc, FathomError) else f"{type(exc).__name__}: {exc}"
        self.errors.append(f"{name}: {text}")
        self.statusBar().showMessage(f"{name} failed: {text}", 10000)
        if not self._closing:
            show_error(self, f"{name.capitalize()} failed", text)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._closing = True
        if self.running:
            self.stop_research()
        self.source_viewer.close()
        event.accept()
        self.closed.emit()

    async def shutdown(self) -> None:
        """Stop the run (waiting until it is saved), cancel what else runs, and close
        the library and model (after the window closed)."""
        self._closing = True
        self.library_panel.stop_ingest()
        await self.stop_run()
        await self.tasks.cancel_all(timeout=5.0)
        await self.services.aclose()


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


def _save_api_key(base_url: str, key: str) -> None:
    from app.llm.keys import set_api_key

    set_api_key(base_url, key)


def _application() -> Any:
    from PySide6.QtWidgets import QApplication

    return QApplication.instance()
