"""The research panel: the question, mode, scope and budget; Run and Stop;
the live tree with a detail pane for the selected node.

Under a finished report, *Ask a follow-up* turns the question box into a
follow-up of the thread shown ("Follow-up to: …", with *New question* to start
fresh); :attr:`ResearchPanel.follows` is then the run it continues."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from app.core.events import RunStarted
from app.core.models import Budget, Collection, Scope
from app.core.settings import ResearchSettings
from app.research.budget import budget_from
from app.ui.tree_model import DETAIL_ROLE, KIND_ROLE, ResearchTreeModel

MODES: dict[str, str] = {
    "deep": "Searches in rounds, keeps what answers, looks again for what is missing; a cited report (default)",
    "plan": "Reads an overview of the library, plans the steps, runs them, stops once answered",
    "table": "Finds the things the question asks about and fills a table of them, every cell cited",
    "hds": "For reasoning models: the model decides what to search while it thinks",
    "quick": "One search for the question, then a cited answer: the fastest",
}  # one plain line per mode, shown under the selector and as each item's tooltip


class QuestionEdit(QPlainTextEdit):
    """Ctrl+Enter runs (handled by the window's shortcut); plain Enter is a new line."""


class ResearchPanel(QWidget):
    runRequested = Signal()
    stopRequested = Signal()

    def __init__(
        self, model: ResearchTreeModel, defaults: ResearchSettings, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.tree_model = model
        self._collections: list[str] = []
        self._build(defaults)
        self.set_running(False)

    def _build(self, defaults: ResearchSettings) -> None:
        title = QLabel("Research")
        title.setObjectName("panelTitle")
        self.question = QuestionEdit()
        self.question.setObjectName("question")
        self.question.setPlaceholderText(
            "Ask a question about your documents…  (Ctrl+Enter runs, Esc stops)"
        )
        self.question.setMaximumHeight(84)

        self.mode = QComboBox()
        self.mode.setObjectName("mode")
        for name, tip in MODES.items():
            self.mode.addItem(name, name)
            self.mode.setItemData(self.mode.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        self.mode.setCurrentIndex(max(0, self.mode.findData(defaults.mode)))
        self.mode_help = QLabel()
        self.mode_help.setObjectName("modeHelp")
        self.mode_help.setWordWrap(True)
        self.mode.currentIndexChanged.connect(self._show_mode_help)
        self._show_mode_help()

        self.scope_button = QToolButton()
        self.scope_button.setObjectName("scope")
        self.scope_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.scope_menu = QMenu(self.scope_button)
        self.scope_button.setMenu(self.scope_menu)
        self._scope_actions: dict[str, QAction] = {}
        self._update_scope_label()

        self.rounds = _spin(1, 20, defaults.max_rounds, "Most research rounds")
        self.subqueries = _spin(1, 16, defaults.max_subqueries, "Most sub-queries per round")
        self.max_tokens = _spin(
            1_000, 2_000_000, defaults.max_tokens, "Most tokens the run may spend", step=5_000
        )
        self.max_minutes = _spin(
            1, 240, max(1, round(defaults.max_seconds / 60)), "Most minutes the run may take"
        )
        self.top_k = _spin(1, 50, defaults.top_k, "Chunks retrieved per search")
        self._defaults = defaults

        self.run_button = QPushButton("Run")
        self.run_button.setObjectName("runButton")
        self.run_button.setToolTip("Run the research (Ctrl+Enter)")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self.runRequested)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setToolTip("Stop the run and keep what it found (Esc)")
        self.stop_button.clicked.connect(self.stopRequested)
        self.follow_up_button = QPushButton("Ask a follow-up")
        self.follow_up_button.setObjectName("followUpButton")
        self.follow_up_button.setToolTip(
            "Ask a question that continues this research: it sees the report and its sources"
        )
        self.follow_up_button.clicked.connect(self.ask_follow_up)
        self.follow_up_label = QLabel()
        self.follow_up_label.setObjectName("followUpLabel")
        self.follow_up_label.setWordWrap(True)
        self.new_question_button = QPushButton("New question")
        self.new_question_button.setObjectName("newQuestionButton")
        self.new_question_button.setToolTip("Start a new research instead of a follow-up")
        self.new_question_button.clicked.connect(self.start_fresh)
        self.follow_up_bar = QWidget()
        bar = QHBoxLayout(self.follow_up_bar)
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.follow_up_label, 1)
        bar.addWidget(self.new_question_button)
        self.follow_up_bar.hide()
        self.follows = ""  # the run a follow-up continues ("" for a new question)
        self._running = False
        self._followable: tuple[str, str] | None = (
            None  # (latest run id, question) of the thread shown
        )

        form = QFormLayout()
        form.setRowWrapPolicy(
            QFormLayout.RowWrapPolicy.WrapLongRows
        )  # narrow: fields under their labels
        row = QHBoxLayout()
        row.addWidget(self.mode)
        row.addWidget(QLabel("in"))
        row.addWidget(self.scope_button, 1)
        form.addRow("Mode", row)
        form.addRow("", self.mode_help)
        budget = QHBoxLayout()
        for label, spin in (
            ("rounds", self.rounds),
            ("queries", self.subqueries),
            ("top-k", self.top_k),
        ):
            budget.addWidget(spin)
            budget.addWidget(QLabel(label))
        budget.addStretch(1)
        form.addRow("Budget", budget)
        limits = QHBoxLayout()
        limits.addWidget(self.max_tokens)
        limits.addWidget(QLabel("tokens"))
        limits.addWidget(self.max_minutes)
        limits.addWidget(QLabel("min"))
        limits.addStretch(1)
        form.addRow("Limits", limits)
        buttons = QHBoxLayout()
        buttons.addWidget(self.follow_up_button)
        buttons.addStretch(1)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.run_button)

        self.tree = QTreeView()
        self.tree.setObjectName("researchTree")
        self.tree.setModel(self.tree_model)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.tree.header().setStretchLastSection(False)
        self.tree.header().resizeSection(
            1, 120
        )  # the step (indented, with its mark) keeps the rest
        self.tree.header().resizeSection(2, 110)
        self.tree_model.rowsInserted.connect(self._expand_new)
        self.tree_model.modelReset.connect(
            self._clear_detail
        )  # a new run (or one reopened): nothing selected
        self.tree.selectionModel().currentChanged.connect(self._show_detail)
        self.detail = QPlainTextEdit()
        self.detail.setObjectName("nodeDetail")
        self.detail.setReadOnly(True)
        self.detail.setPlaceholderText(
            "Select a node to read its full text, the model's reasoning or a chunk."
        )
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.tree)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)

        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(self.follow_up_bar)
        layout.addWidget(self.question)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(split, 1)

    # -- state ------------------------------------------------------------
    def set_running(self, running: bool, ready: bool = True) -> None:
        self._running = running
        self.run_button.setEnabled(ready and not running)
        self.stop_button.setEnabled(running)
        self.stop_button.setText("Stop")
        for widget in (
            self.mode,
            self.scope_button,
            self.rounds,
            self.subqueries,
            self.max_tokens,
            self.max_minutes,
            self.top_k,
        ):
            widget.setEnabled(not running)
        self.follow_up_button.setEnabled(
            not running and self._followable is not None and not self.follows
        )
        self.new_question_button.setEnabled(not running)

    # -- follow-ups -------------------------------------------------------
    def set_followable(self, run_id: str | None, question: str = "") -> None:
        """The thread shown (its latest finished run and first question) can be followed
        up, or (None) it cannot; a follow-up being typed is dropped."""
        self._followable = (run_id, question) if run_id else None
        self._set_follows("")

    def ask_follow_up(self) -> None:
        """Type a follow-up to the thread shown: the next Run continues it."""
        if self._followable is None:
            return
        run_id, question = self._followable
        self._set_follows(run_id, question)
        self.question.clear()
        self.question.setFocus()

    def start_fresh(self) -> None:
        """Drop the follow-up: the next Run is a new research."""
        self._set_follows("")
        self.question.setFocus()

    def _set_follows(self, run_id: str, question: str = "") -> None:
        self.follows = run_id
        self.follow_up_label.setText(
            f"Follow-up to: {' '.join(question.split())}" if run_id else ""
        )
        self.follow_up_bar.setVisible(bool(run_id))
        self.question.setPlaceholderText(
            "Ask a follow-up question…  (Ctrl+Enter runs)"
            if run_id
            else "Ask a question about your documents…  (Ctrl+Enter runs, Esc stops)"
        )
        self.run_button.setText("Ask follow-up" if run_id else "Run")
        self.follow_up_button.setEnabled(
            self._followable is not None and not run_id and not self._running
        )

    def set_stopping(self) -> None:
        """Stop was asked for: the run is ending (saving what it found); not twice."""
        self.stop_button.setEnabled(False)
        self.stop_button.setText("Stopping…")

    def set_collections(self, collections: list[Collection]) -> None:
        checked = {name for name, action in self._scope_actions.items() if action.isChecked()}
        self.scope_menu.clear()
        self._scope_actions.clear()
        for collection in collections:
            action = QAction(
                f"{collection.name} ({collection.documents} documents)", self.scope_menu
            )
            action.setCheckable(True)
            action.setChecked(collection.name in checked)
            action.setData(collection.name)
            if collection.description:
                action.setToolTip(collection.description)
            action.toggled.connect(self._update_scope_label)
            self.scope_menu.addAction(action)
            self._scope_actions[collection.name] = action
        self._collections = [c.name for c in collections]
        self._update_scope_label()

    def set_scope(self, names: list[str]) -> None:
        for name, action in self._scope_actions.items():
            action.setChecked(name in names)
        self._update_scope_label()

    def collection_names(self) -> list[str]:
        return list(self._collections)

    def restore(self, started: RunStarted) -> None:
        """Show what a past run asked: its question, mode, collections and budget."""
        self.question.setPlainText(started.question)
        index = self.mode.findData(started.mode)
        if index >= 0:
            self.mode.setCurrentIndex(index)
        self.set_scope(list(started.collections))
        budget = started.budget
        self.rounds.setValue(budget.max_rounds)
        self.subqueries.setValue(budget.max_subqueries)
        self.max_tokens.setValue(budget.max_tokens)
        self.max_minutes.setValue(max(1, round(budget.max_seconds / 60)))
        self.top_k.setValue(budget.top_k)

    def _show_mode_help(self, *_: object) -> None:
        self.mode_help.setText(MODES.get(self.mode_name(), ""))

    def _update_scope_label(self, *_: object) -> None:
        chosen = self.scope().collections
        if not chosen:
            self.scope_button.setText("all collections")
        else:
            self.scope_button.setText(", ".join(chosen))

    # -- what to run ------------------------------------------------------
    def question_text(self) -> str:
        return self.question.toPlainText().strip()

    def mode_name(self) -> str:
        return str(self.mode.currentData())

    def scope(self) -> Scope:
        return Scope(
            tuple(name for name, action in self._scope_actions.items() if action.isChecked())
        )

    def budget(self) -> Budget:
        return budget_from(
            self._defaults,
            max_rounds=self.rounds.value(),
            max_subqueries=self.subqueries.value(),
            max_tokens=self.max_tokens.value(),
            max_seconds=float(self.max_minutes.value() * 60),
            top_k=self.top_k.value(),
        )

    # -- tree -------------------------------------------------------------
    def _expand_new(self, parent: QModelIndex, first: int, last: int) -> None:
        if parent.isValid():
            self.tree.expand(parent)
        for row in range(first, last + 1):
            self._expand_subtree(self.tree_model.index(row, 0, parent))

    def _expand_subtree(self, index: QModelIndex) -> None:
        """Open rounds, sub-queries and plans (so their chunks show); reasoning stays one line."""
        if index.data(KIND_ROLE) not in ("round", "subquery", "plan", "reflection", "followup"):
            return
        self.tree.expand(index)
        for row in range(self.tree_model.rowCount(index)):
            self._expand_subtree(self.tree_model.index(row, 0, index))

    def _clear_detail(self) -> None:
        self.detail.clear()

    def _show_detail(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not current.isValid():
            self.detail.clear()
            return
        first = current.siblingAtColumn(0)
        text = first.data(DETAIL_ROLE) or ""
        label = first.data(Qt.ItemDataRole.DisplayRole) or ""
        self.detail.setPlainText(text or label)


def _spin(low: int, high: int, value: int, tip: str, step: int = 1) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setSingleStep(step)
    spin.setValue(max(low, min(high, value)))
    spin.setToolTip(tip)
    spin.setGroupSeparatorShown(True)
    return spin
