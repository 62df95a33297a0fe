"""The main window: library and history on the left, the research panel with
its live tree in the middle, the report (or table) on the right.

The window lays out the panels and wires them to the :class:`RunController`
(the run and what follows it) and the :class:`LibraryController` (the library
panel's state); it keeps the dialogs (questions, file choosers, settings).
Every task has a handle (:class:`TaskKeeper`); slots that start work disable
their control and restore it when the work ends. Its length is the layout of
three panels, a menu and a status bar, and one short slot per user action;
the work itself is the controllers'.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import importlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QByteArray, QRect, Qt, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QMainWindow,
    QProgressBar,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import FathomError
from app.core.events import RunStarted
from app.ui.banner import Banner
from app.ui.dialogs import ask_yes_no, show_error
from app.ui.drop_zone import local_paths
from app.ui.exporters import EXPORT_FILTERS, TABLE_FILTERS
from app.ui.find_bar import FindBar
from app.ui.history_panel import HistoryPanel
from app.ui.library_panel import LibraryPanel
from app.ui.model_downloads import ModelDownloads, Transfer
from app.ui.report_view import ReportView
from app.ui.research_panel import ResearchPanel
from app.ui.run_controller import RunController
from app.ui.run_presenter import RunPresenter
from app.ui.services import Services
from app.ui.source_viewer import SourceViewer, open_decision
from app.ui.table_view import EntityTableView
from app.ui.tasks import TaskKeeper, run_blocking
from app.ui.theme import app_icon
from app.ui.tree_model import ResearchTreeModel

if TYPE_CHECKING:
    from app.core.settings import Settings
    from app.ui.model_manager import ModelManagerDialog
    from app.ui.settings_dialog import SettingsDialog
    from app.ui.settings_form import SettingsForm
    from app.ui.setup_dialog import SetupDialog

D = TypeVar("D", bound="SettingsForm")

log = logging.getLogger(__name__)

SCREEN_SHARE = 0.8  # the window opens at this share of the screen's available area…
MAX_SIZE = (1600, 1000)  # …but no larger
WINDOW_STATE_FILE = "window.json"  # the window's size and place when it last closed
WINDOW_STATE_VERSION = 1
MODEL_NOTICE_KEY = "model-notice:"  # a banner message's key: the model's notice, of this model
LIBRARY_COLUMN = 0  # the library and history, then the research, then the report
COLUMN_SHARES = (24, 28, 48)  # percent of the width each column opens with


class MainWindow(QMainWindow):
    closed = Signal()
    ready = Signal()  # the library is open (or failed to open) and the panels are filled

    def __init__(self, services: Services, settings_problem: str | None = None) -> None:
        super().__init__()
        self.services = services
        self.setWindowTitle("Fathom")
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self._closed_geometry: bytes | None = None  # what closing left, saved by shutdown()
        self.tasks = TaskKeeper(self._on_task_error)
        self.errors: list[str] = []
        self._closing = False
        self._theme = services.settings.ui.theme  # the one applied at start-up
        self.banner = Banner()
        self.report_tabs = QTabWidget()
        self._build()
        self._build_actions()
        self.fit_screen()
        if settings_problem:
            self.banner.add(settings_problem)

    # -- layout -----------------------------------------------------------
    def _build(self) -> None:
        services = self.services
        self.tree_model = ResearchTreeModel(self)
        self.report = ReportView()
        self.table = EntityTableView()
        self.table.setObjectName("entityTable")
        self.presenter = RunPresenter(self.tree_model, self.report, self.table)
        self.runs = RunController(services, self.presenter, self.tasks, self)
        self.presenter.noticed.connect(lambda m: self.statusBar().showMessage(m, 8000))
        self.presenter.tableReady.connect(lambda: self.report_tabs.setCurrentWidget(self.table))
        self.report.citationClicked.connect(self.open_citation)
        self.report.externalLinkClicked.connect(
            lambda url: self.statusBar().showMessage(
                f"Links to outside are not opened from a report: {url}", 8000
            )
        )

        self.library_panel = LibraryPanel(self.tasks)
        self.library_controller = self.library_panel.controller
        self.library_controller.statusMessage.connect(self.statusBar().showMessage)
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
        self.report_column = right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(4, 4, 4, 4)
        title = QLabel("Report")
        title.setObjectName("panelTitle")
        right_layout.addWidget(title)
        right_layout.addWidget(self.banner)
        right_layout.addWidget(self.report_tabs, 1)
        right_layout.addWidget(self.find_bar)

        self.main_split = split = QSplitter(Qt.Orientation.Horizontal)
        split.setObjectName("mainSplit")
        split.addWidget(self.left_tabs)
        split.addWidget(self.research_panel)
        split.addWidget(right)
        split.setChildrenCollapsible(False)
        split.setCollapsible(
            LIBRARY_COLUMN, True
        )  # the library folds away (View → Library, Ctrl+L)
        split.splitterMoved.connect(self._on_split_moved)
        self._shares = [float(share) for share in COLUMN_SHARES]  # of the width, per column
        self._library_share = float(COLUMN_SHARES[LIBRARY_COLUMN])  # the library's, while folded
        self._placing = False
        self.setCentralWidget(split)
        self.source_viewer = SourceViewer(self, tasks=self.tasks)

        self.state_label = QLabel("Starting…")
        self.tokens_label = QLabel("")
        self.elapsed_label = QLabel("")
        self.model_label = QLabel("")
        self.downloads = ModelDownloads(
            self.tasks,
            lambda: services.paths.models_dir,
            lambda: services.settings,
            services.save_settings,
            self,
        )
        self.download_bar = QProgressBar()
        self.download_bar.setObjectName("statusDownload")
        self.download_bar.setMaximumWidth(160)
        self.download_bar.setTextVisible(True)
        self.download_bar.hide()
        self.downloads.progress.connect(self._on_download_progress)
        self.downloads.finished.connect(self._on_download_finished)
        self.downloads.failed.connect(self._on_download_failed)
        self.downloads.settingsChanged.connect(self._settings_saved)
        self.model_manager: ModelManagerDialog | None = None
        self.statusBar().addPermanentWidget(self.download_bar)
        for widget in (self.model_label, self.state_label, self.tokens_label, self.elapsed_label):
            self.statusBar().addPermanentWidget(widget)
        self.research_panel.set_running(False, ready=False)
        self._connect_runs()

    def _connect_runs(self) -> None:
        runs, status = self.runs, self.statusBar()
        runs.runningChanged.connect(self._on_running)
        runs.stopping.connect(self.research_panel.set_stopping)
        runs.stateText.connect(self.state_label.setText)
        runs.counters.connect(self._show_counters)
        runs.problem.connect(self.banner.add)
        runs.modelNotice.connect(self._on_model_notice)
        self.banner.dismissed.connect(self._on_banner_dismissed)
        runs.message.connect(status.showMessage)
        runs.modelName.connect(self.model_label.setText)
        runs.historyChanged.connect(self.history_panel.set_runs)
        runs.runOpened.connect(self._on_run_opened)
        self.presenter.finished.connect(self._offer_follow_up)

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
        self.export_all_action = action(
            "Export report with sources consulted but not cited…", self.choose_export_all
        )
        self.settings_action = action("Settings…", self.open_settings, "Ctrl+,")
        self.models_action = action("Models…", self.open_models, "Ctrl+Shift+M")
        self.quit_action = action("Quit", self.close, "Ctrl+Q")
        self.run_action = action("Run", self.run_research, "Ctrl+Return", "Ctrl+Enter")
        self.stop_action = action("Stop", self.stop_research, "Esc")
        self.find_action = action("Find in report", self.find_bar.open_bar, "Ctrl+F")
        menu = self.menuBar().addMenu("&File")
        for act in (
            self.add_folder_action,
            self.export_action,
            self.export_all_action,
            self.settings_action,
            self.models_action,
        ):
            menu.addAction(act)
        menu.addSeparator()
        menu.addAction(self.quit_action)
        menu = self.menuBar().addMenu("&Research")
        for act in (self.run_action, self.stop_action, self.find_action):
            menu.addAction(act)
        self.library_action = action("Library", self.show_library, "Ctrl+L")
        self.library_action.setCheckable(True)
        self.library_action.setChecked(True)
        self.library_action.setToolTip("Show or fold away the library and history column (Ctrl+L)")
        self.menuBar().addMenu("&View").addAction(self.library_action)

    # -- size and place ---------------------------------------------------
    def fit_screen(self) -> None:
        """Open at ``SCREEN_SHARE`` of the screen's available area (capped at ``MAX_SIZE``), centred."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            self.resize(*MAX_SIZE)
        else:
            self.fit_area(screen.availableGeometry())

    def fit_area(self, area: QRect) -> None:
        """Take ``SCREEN_SHARE`` of ``area`` (no more than ``MAX_SIZE``, no less than the window
        needs, never more than the area) and centre the window in it."""
        least = self.minimumSizeHint()
        width = min(
            MAX_SIZE[0], max(least.width(), round(area.width() * SCREEN_SHARE)), area.width()
        )
        height = min(
            MAX_SIZE[1], max(least.height(), round(area.height() * SCREEN_SHARE)), area.height()
        )
        self.resize(width, height)
        frame = self.frameGeometry()
        frame.moveCenter(area.center())
        self.move(frame.topLeft())

    async def restore_geometry(self) -> bool:
        """Put the window where it was when it last closed, its columns in the shares the
        user left them (read off the GUI thread); False when nothing usable was saved (then
        it keeps the size it opened with, its columns in :data:`COLUMN_SHARES`)."""
        saved = await run_blocking(
            read_window_state, self._state_file(), name="read the window's place"
        )
        if saved is None:
            return False
        placed = self.restoreGeometry(QByteArray(saved.geometry))
        if placed and saved.columns:
            self._shares = list(saved.columns)
            self._place_columns()
            self.library_action.setChecked(self._shares[LIBRARY_COLUMN] > 0)
        return placed

    async def save_geometry(self) -> None:
        """Keep the window's size and place, and its columns' shares, for the next start
        (written off the GUI thread)."""
        geometry = self._closed_geometry or bytes(self.saveGeometry().data())
        try:
            await run_blocking(
                write_window_state,
                self._state_file(),
                WindowState(geometry, tuple(self._shares)),
                name="save the window's place",
            )
        except OSError as exc:
            log.info("the window's place was not saved: %s", exc)

    # -- columns ----------------------------------------------------------
    # The columns keep their shares of the width: COLUMN_SHARES until the user drags a
    # handle or folds the library away, then the user's, at any window size and the next start.

    def show_library(self, shown: bool) -> None:
        """Show the library column, or fold it away: its share goes to the research (a
        third) and the report (two thirds), and comes back from them."""
        shares = self._shares
        if shown == (shares[LIBRARY_COLUMN] > 0):
            self.library_action.setChecked(shown)
            return
        if shown:
            width = self._library_share
            shares[1], shares[2] = (
                max(1.0, shares[1] - width / 3),
                max(1.0, shares[2] - width * 2 / 3),
            )
            shares[LIBRARY_COLUMN] = width
        else:
            width = self._library_share = shares[LIBRARY_COLUMN]
            shares[1], shares[2], shares[LIBRARY_COLUMN] = (
                shares[1] + width / 3,
                shares[2] + width * 2 / 3,
                0.0,
            )
        self._place_columns()
        self.library_action.setChecked(shown)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._place_columns()

    def _place_columns(self) -> None:
        """The columns in their shares of the window's width, none below what it needs (the
        report gets what the others leave), the library folded when its share is 0."""
        split = self.main_split
        width = split.width() - split.handleWidth() * (split.count() - 1)
        columns = (self.left_tabs, self.research_panel, self.report_column)
        least = [
            c.minimumSizeHint().width() if share else 0
            for c, share in zip(columns, self._shares, strict=True)
        ]
        total = sum(self._shares) or 1.0
        sizes = [
            max(m, round(width * share / total))
            for m, share in zip(least, self._shares, strict=True)
        ]
        sizes[-1] = max(least[-1], width - sum(sizes[:-1]))
        self._placing = True
        try:
            split.setSizes(sizes)
        finally:
            self._placing = False

    def _on_split_moved(self, *_: object) -> None:
        """A handle was dragged: the columns' new shares are the user's from now on."""
        if self._placing:
            return
        sizes = self.main_split.sizes()
        total = sum(sizes) or 1
        self._shares = [100.0 * size / total for size in sizes]
        if sizes[LIBRARY_COLUMN] > 0:
            self._library_share = self._shares[LIBRARY_COLUMN]
        self.library_action.setChecked(sizes[LIBRARY_COLUMN] > 0)  # dragged shut, or open again

    def _state_file(self) -> Path:
        return self.services.paths.config_dir / WINDOW_STATE_FILE

    # -- start-up ---------------------------------------------------------
    def start(self) -> asyncio.Task[Any]:
        """Load the heavy parts after the window is shown (call once, on the running loop)."""
        return self.tasks.start(self._load(), "start-up")

    async def _load(self) -> None:
        self.state_label.setText("Opening the library…")
        await self.restore_geometry()
        await self.runs.refresh_history()
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
        if self.services.settings.ingest.watch_folders:
            self.library_controller.start_following()  # catches up with what changed while closed
        if not self.services.settings.ui.first_run_done:
            self.open_setup()

    # -- research ---------------------------------------------------------
    def run_research(self) -> None:
        if self.runs.running or not self.research_panel.run_button.isEnabled():
            return
        question = self.research_panel.question_text()
        if not question:
            self.statusBar().showMessage("Type a question first.", 5000)
            self.research_panel.question.setFocus()
            return
        panel = self.research_panel
        self.runs.start(
            question, panel.mode_name(), panel.scope(), panel.budget(), follows=panel.follows
        )

    def _on_running(self, running: bool) -> None:
        self.research_panel.set_running(running)
        if running:
            self.report_tabs.setCurrentWidget(self.report)

    def stop_research(self) -> None:
        if self.find_bar.isVisible() and self.find_bar.edit.hasFocus():
            self.find_bar.close_bar()
            return
        self.runs.stop()

    async def stop_run(self) -> None:
        """Stop the current run and return once it has ended (see :meth:`RunController.stop_run`)."""
        await self.runs.stop_run()

    def _show_counters(self, tokens: str, elapsed: str) -> None:
        self.tokens_label.setText(tokens)
        self.elapsed_label.setText(elapsed)

    # -- sources ----------------------------------------------------------
    def open_citation(self, number: int) -> None:
        if self.presenter.evidence.get(number) is None:
            self.statusBar().showMessage(f"[{number}] cites no source of this report.", 6000)
            return
        self.tasks.start(self._show_source(number), "open source")

    async def _show_source(self, number: int) -> None:
        evidence, chunk, context = await self.runs.source(number)
        self.source_viewer.show_source(evidence, chunk, context, await open_decision(evidence.path))
        self.source_viewer.show()
        self.source_viewer.raise_()

    # -- history ----------------------------------------------------------
    def open_run(self, run_id: str) -> None:
        if self.runs.running:
            self.statusBar().showMessage("Stop the current run before opening another.", 6000)
            return
        self.tasks.start(self._open_run(run_id), "open run")

    async def _open_run(self, run_id: str) -> None:
        self.history_panel.open_button.setEnabled(False)
        try:
            await self.runs.open_run(run_id)
        finally:
            self.history_panel.open_button.setEnabled(True)

    def _offer_follow_up(self, *_: object) -> None:
        """A finished report (or a thread reopened) can be followed up."""
        steps = self.presenter.steps
        self.research_panel.set_followable(steps[-1][0] if steps else None, self.presenter.question)

    def _on_run_opened(self, started: RunStarted | None) -> None:
        self._offer_follow_up()
        if started is not None:
            self.research_panel.restore(started)
            missing = [
                c for c in started.collections if c not in self.research_panel.collection_names()
            ]
            if missing:
                self.statusBar().showMessage(
                    f"No longer in the library: {', '.join(missing)}", 8000
                )
        self.report_tabs.setCurrentWidget(self.table if self.presenter.table else self.report)

    def delete_run(self, run_id: str) -> None:
        self.tasks.start(self._delete_run(run_id), "delete run")

    async def _delete_run(self, run_id: str) -> None:
        summary = next((r for r in self.history_panel.summaries if r.run_id == run_id), None)
        question = (summary.thread_question or summary.question) if summary else run_id
        n = summary.follow_ups if summary else 0
        more = f" and its {n} follow-up{'' if n == 1 else 's'}" if n else ""
        if not await ask_yes_no(
            self, "Delete run", f"Delete the run “{question[:80]}”{more} from the history?"
        ):
            return
        await self.runs.delete_run(run_id)

    # -- export -----------------------------------------------------------
    def choose_export(self, include_consulted: bool = False) -> None:
        shown = self.presenter
        if not shown.report_view.markdown_text().strip() and shown.table is None:
            self.statusBar().showMessage(
                "There is no report to export: run a question or open one from History.", 6000
            )
            return
        filters = list(EXPORT_FILTERS.values()) + (
            list(TABLE_FILTERS.values()) if shown.table is not None else []
        )
        base = self.services.paths.exports_dir / f"fathom-{shown.run_id or 'report'}.md"
        path, chosen = QFileDialog.getSaveFileName(
            self, "Export report", str(base), ";;".join(filters)
        )
        if not path:
            return
        target = Path(path)
        if not target.suffix:
            suffix = next(
                (s for s, f in {**EXPORT_FILTERS, **TABLE_FILTERS}.items() if f == chosen), ".md"
            )
            target = target.with_suffix(suffix)
        self.tasks.start(self.export_to(target, include_consulted=include_consulted), "export")

    def choose_export_all(self) -> None:
        """Export with the sources read but not cited ("Also consulted") listed too."""
        self.choose_export(include_consulted=True)

    async def export_to(self, path: Path, *, include_consulted: bool = False) -> Path | None:
        """Export what is shown to ``path`` (off the GUI thread); None when it failed (and said so)."""
        controls = (self.export_action, self.export_all_action, self.history_panel.export_button)
        for control in controls:
            control.setEnabled(False)
        try:
            written = await self.runs.export(path, include_consulted=include_consulted)
        except (OSError, ValueError) as exc:
            show_error(self, "Export failed", f"The report could not be exported to {path}: {exc}")
            return None
        finally:
            for control in controls:
                control.setEnabled(True)
        self.statusBar().showMessage(f"Exported to {written}", 8000)
        return written

    # -- settings ---------------------------------------------------------
    def open_settings(self) -> asyncio.Task[SettingsDialog]:
        """Open the settings dialog (its module, which loads the keyring, is imported off the loop)."""
        return self.tasks.start(self._open_settings(), "open the settings")

    async def _open_settings(self) -> SettingsDialog:
        module = await run_blocking(
            importlib.import_module, "app.ui.settings_dialog", name="import the settings"
        )
        dialog: SettingsDialog = module.SettingsDialog(
            self.services.settings,
            self.services.paths,
            self.services.list_models,
            self.services.save_settings,
            _save_api_key,
            self.tasks,
            self,
            open_models=self.open_models,
        )
        self.settings_dialog = self._open_form(dialog)
        return dialog

    def open_models(self) -> asyncio.Task[ModelManagerDialog]:
        """Open the model manager (not modal: the window stays usable while a model downloads)."""
        return self.tasks.start(self._open_models(), "open the models")

    async def _open_models(self) -> ModelManagerDialog:
        if self.model_manager is not None:
            self.model_manager.raise_()
            self.model_manager.activateWindow()
            return self.model_manager
        module = await run_blocking(
            importlib.import_module, "app.ui.model_manager", name="import the models"
        )
        dialog: ModelManagerDialog = module.ModelManagerDialog(
            self.services, self.downloads, self.tasks, self
        )
        dialog.saved.connect(self._settings_saved)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.destroyed.connect(lambda: setattr(self, "model_manager", None))
        self.model_manager = dialog
        dialog.show()
        return dialog

    # -- downloads in the status bar --------------------------------------
    def _on_download_progress(self, transfer: Transfer) -> None:
        self.download_bar.show()
        self.download_bar.setRange(0, 100 if transfer.total else 0)
        self.download_bar.setValue(transfer.percent)
        self.download_bar.setFormat(f"{transfer.label} %p%")
        self.download_bar.setToolTip(transfer.text())

    def _on_download_finished(self, _key: str, message: str) -> None:
        self.download_bar.setVisible(bool(self.downloads.running()))
        self.statusBar().showMessage(message, 15000)

    def _on_model_notice(self, text: str, model: str) -> None:
        """The model's notice (the starter's), unless it was dismissed for this model."""
        if model != self.services.settings.ui.dismissed_model_notice:
            self.banner.add(text, key=MODEL_NOTICE_KEY + model)

    def _on_banner_dismissed(self, keys: list[str]) -> None:
        """A model's notice dismissed stays dismissed, across starts, until the model changes."""
        models = [k.removeprefix(MODEL_NOTICE_KEY) for k in keys if k.startswith(MODEL_NOTICE_KEY)]
        settings = self.services.settings
        if models and models[-1] != settings.ui.dismissed_model_notice:
            kept = dataclasses.replace(
                settings, ui=dataclasses.replace(settings.ui, dismissed_model_notice=models[-1])
            )
            self.tasks.start(self.services.save_settings(kept), "remember the dismissed notice")

    def _on_download_failed(self, _key: str, message: str) -> None:
        self.download_bar.setVisible(bool(self.downloads.running()))
        if message:
            self.banner.add(message)

    def open_setup(self) -> asyncio.Task[SetupDialog]:
        """Open the first-run dialog (its module imported, the starter model looked for, off the loop)."""
        return self.tasks.start(self._open_setup(), "open the setup")

    async def _open_setup(self) -> SetupDialog:
        module = await run_blocking(
            importlib.import_module, "app.ui.setup_dialog", name="import the setup"
        )
        from app.llm.starter import starter_model_path  # imported with the dialog

        starter = await run_blocking(starter_model_path, name="look for the starter model")
        dialog: SetupDialog = module.SetupDialog(
            self.services, self.tasks, self, starter=starter, downloads=self.downloads
        )
        self.setup_dialog = self._open_form(dialog)
        return dialog

    def _open_form(self, dialog: D) -> D:
        dialog.saved.connect(self._settings_saved)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def _settings_saved(self, settings: Settings) -> None:
        if settings.ui.theme != self._theme:  # restyling every widget is slow: only when it changed
            from app.ui.theme import apply_theme

            self._theme = settings.ui.theme
            app = _application()
            if app is not None:
                apply_theme(app, settings.ui.theme)
        self.statusBar().showMessage("Settings saved.", 5000)
        self.tasks.start(
            self.library_controller.use_settings(settings), "apply the library settings"
        )

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
        # a task that ended after the window closed: its widgets may be gone (it is logged)
        if self._closing:
            return
        self.statusBar().showMessage(f"{name} failed: {text}", 10000)
        show_error(self, f"{name.capitalize()} failed", text)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._closing = True
        self._closed_geometry = bytes(self.saveGeometry().data())
        self.runs.close()
        if self.runs.running:
            self.stop_research()
        self.downloads.cancel_all()  # a download's part is kept: the next one resumes
        self.source_viewer.close()
        event.accept()
        self.closed.emit()

    async def shutdown(self) -> None:
        """Stop the run (waiting until it is saved), cancel what else runs, and close
        the library and model (after the window closed)."""
        self._closing = True
        self.runs.close()
        self.library_controller.stop_ingest(said=False)
        await self.library_controller.stop_following()
        self.downloads.cancel_all()
        await self.save_geometry()
        await self.stop_run()
        await self.tasks.cancel_all(timeout=5.0)
        await self.services.aclose()


@dataclass(frozen=True)
class WindowState:
    """What the window keeps between starts: its geometry (Qt's bytes) and its columns'
    shares of the width."""

    geometry: bytes
    columns: tuple[float, ...] = ()  # empty: the columns as they open (COLUMN_SHARES)


def read_window_state(path: Path) -> WindowState | None:
    """The window state saved in ``path`` (None when absent, of another version or unreadable)."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        if state.get("version") != WINDOW_STATE_VERSION:
            return None
        columns = tuple(float(share) for share in state.get("columns", ()))
        if columns and (
            len(columns) != len(COLUMN_SHARES) or min(columns) < 0 or sum(columns) <= 0
        ):
            columns = ()  # not this window's columns: they open as usual
        return WindowState(base64.b64decode(state["geometry"], validate=True), columns)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_window_state(path: Path, state: WindowState) -> None:
    """Save the window state to ``path`` atomically (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(
        {
            "version": WINDOW_STATE_VERSION,
            "geometry": base64.b64encode(state.geometry).decode("ascii"),
            "columns": list(state.columns),
        }
    )
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _save_api_key(base_url: str, key: str) -> None:
    from app.llm.keys import set_api_key

    set_api_key(base_url, key)


def _application() -> Any:
    from PySide6.QtWidgets import QApplication

    return QApplication.instance()
