"""History: past runs, newest first; open (replay), delete, export.

A run and its follow-up questions are one entry (a thread): its first question,
with how many follow-ups it has; opening it shows the whole thread, deleting
it deletes the whole thread."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.ui.formatting import duration

if TYPE_CHECKING:
    from app.store.research_runs import RunSummary

RUN_ID_ROLE = Qt.ItemDataRole.UserRole + 1


class HistoryPanel(QWidget):
    openRequested = Signal(str)
    deleteRequested = Signal(str)
    exportRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        title = QLabel("History")
        title.setObjectName("panelTitle")
        self.runs = QTreeWidget()
        self.runs.setObjectName("historyList")
        self.runs.setHeaderLabels(["Question", "Mode", "Status", "Tokens", "When"])
        self.runs.setRootIsDecorated(False)
        self.runs.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.runs.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.runs.header().setStretchLastSection(False)
        self.runs.itemActivated.connect(
            lambda item, _col: self.openRequested.emit(item.data(0, RUN_ID_ROLE))
        )
        self.runs.itemSelectionChanged.connect(self._update_enabled)
        self.open_button = QPushButton("Open")
        self.open_button.setToolTip("Replay the run's tree and report")
        self.open_button.clicked.connect(self._open)
        self.delete_button = QPushButton("Delete…")
        self.delete_button.clicked.connect(self._delete)
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip(
            "Export the report shown as Markdown, HTML or PDF (or the table as CSV)"
        )
        self.export_button.clicked.connect(self.exportRequested)
        buttons = QHBoxLayout()
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.delete_button)
        buttons.addStretch(1)
        buttons.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(self.runs, 1)
        layout.addLayout(buttons)
        self.summaries: list[RunSummary] = []
        self._update_enabled()

    def set_runs(self, runs: list[RunSummary]) -> None:
        selected = self.selected_run()
        self.summaries = runs
        self.runs.clear()
        for run in runs:
            when = (
                time.strftime("%Y-%m-%d %H:%M", time.localtime(run.started_at))
                if run.started_at
                else ""
            )
            status = (
                run.status
                if not run.stop_reason or run.stop_reason == "completed"
                else f"{run.status} ({run.stop_reason})"
            )
            item = QTreeWidgetItem(
                [thread_label(run), run.mode, status, f"{run.total_tokens:,}", when]
            )
            item.setData(0, RUN_ID_ROLE, run.run_id)
            latest = f"\nLatest follow-up: {run.question}" if run.follow_ups else ""
            item.setToolTip(
                0,
                f"{run.thread_question or run.question}{latest}\n{run.model} · {duration(run.elapsed_s)}"
                + (f"\n{run.message}" if run.message else ""),
            )
            self.runs.addTopLevelItem(item)
            if run.run_id == selected:
                item.setSelected(True)
        self._update_enabled()

    def selected_run(self) -> str | None:
        items = self.runs.selectedItems()
        return items[0].data(0, RUN_ID_ROLE) if items else None

    def select_run(self, run_id: str) -> None:
        for i in range(self.runs.topLevelItemCount()):
            item = self.runs.topLevelItem(i)
            if item is not None:
                item.setSelected(item.data(0, RUN_ID_ROLE) == run_id)

    def _update_enabled(self) -> None:
        has = self.selected_run() is not None
        self.open_button.setEnabled(has)
        self.delete_button.setEnabled(has)

    def _open(self) -> None:
        run_id = self.selected_run()
        if run_id:
            self.openRequested.emit(run_id)

    def _delete(self) -> None:
        run_id = self.selected_run()
        if run_id:
            self.deleteRequested.emit(run_id)


def thread_label(run: RunSummary) -> str:
    """A History entry's question: the thread's first, with its follow-ups counted."""
    if not run.follow_ups:
        return run.question
    n = run.follow_ups
    return f"{run.thread_question or run.question}  (+{n} follow-up{'' if n == 1 else 's'})"
