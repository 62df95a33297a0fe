"""The library panel: collections and documents, the drop zone, the buttons,
and the ingest progress (:class:`IngestProgressView`).

It shows what its :class:`LibraryController` holds and forwards the user's
actions to it; the questions (remove? re-index?) and the repair report are
asked here, in boxes that never block the loop. The Library is handed over
once it has loaded (after the window is up); until then the panel says so and
its actions are disabled.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.models import Collection, Document, DocumentStatus
from app.ui.dialogs import ask_yes_no, show_message
from app.ui.drop_zone import DropZone
from app.ui.formatting import count, short_path
from app.ui.ingest_progress import PATH_ROLE, IngestProgressView
from app.ui.library_controller import LibraryController
from app.ui.tasks import TaskKeeper
from app.ui.tooltips import plain_tooltip

if TYPE_CHECKING:
    from app.ingest.indexing_state import IndexingState
    from app.ingest.library import Library
    from app.store.consistency import CheckResult

NEW_COLLECTION = "(new collection named after the folder or file)"
KIND_ROLE = Qt.ItemDataRole.UserRole + 1
NAME_ROLE = Qt.ItemDataRole.UserRole + 2
DOC_ROLE = Qt.ItemDataRole.UserRole + 3
INDEXING_ROLE = Qt.ItemDataRole.UserRole + 5  # the row's indexing state, while it is being indexed
_COLUMNS = ("Collection / document", "Documents", "Chunks", "Description")
SHOWN_DRIFT = 12  # problems listed in the repair report; the rest are counted


class LibraryPanel(QWidget):
    collectionsChanged = Signal(list)  # list[Collection], once they are shown

    def __init__(self, tasks: TaskKeeper, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tasks = tasks
        self.controller = LibraryController(tasks, functools.partial(ask_yes_no, self), self)
        self.ingest = IngestProgressView()
        self._build()
        self._connect()
        self._update_enabled()

    # -- layout -----------------------------------------------------------
    def _build(self) -> None:
        title = QLabel("Library")
        title.setObjectName("panelTitle")
        self.state_label = QLabel("Opening the library…")
        self.tree = QTreeWidget()
        self.tree.setObjectName("collectionsTree")
        self.tree.setColumnCount(len(_COLUMNS))
        self.tree.setHeaderLabels(list(_COLUMNS))
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # long names keep their end; the tooltip has all
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        header.resizeSection(3, 110)
        self.tree.itemDoubleClicked.connect(self._on_double_click)
        self.tree.itemChanged.connect(self._on_item_changed)
        self.tree.itemSelectionChanged.connect(self._update_enabled)

        self.drop_zone = DropZone()
        self.drop_zone.pathsDropped.connect(self.add_paths)
        self.target = QComboBox()
        self.target.setObjectName("targetCollection")
        self.target.setEditable(True)
        self.target.setToolTip("The collection new documents go into; type a name to create one")
        self.target.addItem(NEW_COLLECTION)

        self.add_button = QPushButton("Add folder…")
        self.add_button.setToolTip("Add a folder to the library (Ctrl+O)")
        self.add_button.clicked.connect(self.choose_folder)
        self.add_files_button = QPushButton("Add files…")
        self.add_files_button.clicked.connect(self.choose_files)
        self.rescan_button = QPushButton("Re-scan")
        self.rescan_button.setToolTip("Index new and changed files of the selected collection, drop deleted ones")
        self.rescan_button.clicked.connect(self._on_rescan)
        self.remove_button = QPushButton("Remove…")
        self.remove_button.setToolTip("Remove the selected document or collection from the library")
        self.remove_button.clicked.connect(self._on_remove)
        self.repair_button = QPushButton("Repair…")
        self.repair_button.setObjectName("repairButton")
        self.repair_button.setToolTip(
            "Compare the library with its search index, document by document, and fix what differs"
        )
        self.repair_button.clicked.connect(self.controller.repair)
        self.reindex_action = QAction("Re-index with the current embedding model", self)
        self.reindex_action.setToolTip("Embed every document of the collection again (after the model changed)")
        self.reindex_action.triggered.connect(self._on_reindex)
        self.rescan_action = QAction("Re-scan", self)
        self.rescan_action.triggered.connect(self._on_rescan)
        self.remove_action = QAction("Remove…", self)
        self.remove_action.triggered.connect(self._on_remove)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)
        self.ingest.stop_button.clicked.connect(self.controller.stop_ingest)

        target_row = QHBoxLayout()
        target_row.addWidget(QLabel("Add to:"))
        target_row.addWidget(self.target, 1)
        buttons = QHBoxLayout()
        for button in (
            self.add_button,
            self.add_files_button,
            self.rescan_button,
            self.remove_button,
            self.repair_button,
        ):
            buttons.addWidget(button)

        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(self.state_label)
        layout.addWidget(self.tree, 3)
        layout.addLayout(buttons)
        layout.addWidget(self.drop_zone)
        layout.addLayout(target_row)
        layout.addLayout(self.ingest.bar_row())
        for widget, stretch in self.ingest.widgets():
            layout.addWidget(widget, stretch)

    def _connect(self) -> None:
        c, ingest = self.controller, self.ingest
        c.busyChanged.connect(self._update_enabled)
        c.catalogChanged.connect(self._show)
        c.progressStarted.connect(ingest.start)
        c.ingestEvent.connect(ingest.show_event)
        c.stopped.connect(ingest.stopped)
        c.failed.connect(ingest.failed)
        c.repaired.connect(self._show_repair)
        c.indexingChanged.connect(self._show_indexing)

    # -- state ------------------------------------------------------------
    def set_library(self, library: Library | None, problem: str = "") -> None:
        if library is None:
            self.state_label.setText(problem or "The library is not available.")
            self.state_label.setObjectName("errorText" if problem else "")
        else:
            self.state_label.setText("")
            self.state_label.hide()
        self.controller.set_library(library)

    def _update_enabled(self) -> None:
        idle = self.controller.idle
        selected = self._selected()
        self.add_button.setEnabled(idle)
        self.add_files_button.setEnabled(idle)
        self.drop_zone.setEnabled(idle)
        self.drop_zone.setAcceptDrops(idle)
        self.rescan_button.setEnabled(idle and selected is not None)
        self.remove_button.setEnabled(idle and selected is not None)
        self.rescan_action.setEnabled(self.rescan_button.isEnabled())
        self.remove_action.setEnabled(self.remove_button.isEnabled())
        self.reindex_action.setEnabled(idle and selected is not None and selected[0] == "collection")
        self.repair_button.setEnabled(idle)
        self.ingest.stop_button.setEnabled(self.controller.ingesting)
        self.target.setEnabled(idle)

    def _selected(self) -> tuple[str, str, str] | None:
        """(kind, collection, doc_id) of the selected row."""
        items = self.tree.selectedItems()
        if not items:
            return None
        item = items[0]
        return (item.data(0, KIND_ROLE), item.data(0, NAME_ROLE), item.data(0, DOC_ROLE) or "")

    def top_items(self) -> list[QTreeWidgetItem]:
        items = (self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount()))
        return [item for item in items if item is not None]

    def collection_item(self, name: str) -> QTreeWidgetItem | None:
        return next((item for item in self.top_items() if item.data(0, NAME_ROLE) == name), None)

    # -- catalog ----------------------------------------------------------
    def _show(self, collections: list[Collection], documents: dict[str, list[Document]]) -> None:
        expanded = {item.data(0, NAME_ROLE) for item in self.top_items() if item.isExpanded()}
        selected = self._selected()
        self.tree.blockSignals(True)
        self.tree.clear()
        reselect: QTreeWidgetItem | None = None
        for collection in collections:
            top = QTreeWidgetItem(
                [collection.name, f"{collection.documents:,}", f"{collection.chunks:,}", collection.description]
            )
            top.setData(0, KIND_ROLE, "collection")
            top.setData(0, NAME_ROLE, collection.name)
            top.setToolTip(3, "Double-click to edit the description (the research engine reads it to route questions)")
            top.setFlags(top.flags() | Qt.ItemFlag.ItemIsEditable)
            for doc in documents.get(collection.name, []):
                status = doc.status.value if isinstance(doc.status, DocumentStatus) else str(doc.status)
                child = QTreeWidgetItem([short_path(doc.path, 3), status, f"{doc.chunk_count:,}", doc.error])
                child.setToolTip(0, plain_tooltip(doc.path))
                child.setData(0, PATH_ROLE, doc.path)
                if doc.error:
                    child.setToolTip(3, plain_tooltip(doc.error))
                child.setData(0, KIND_ROLE, "document")
                child.setData(0, NAME_ROLE, collection.name)
                child.setData(0, DOC_ROLE, doc.doc_id)
                top.addChild(child)
                if selected == ("document", collection.name, doc.doc_id):
                    reselect = child
            self.tree.addTopLevelItem(top)
            top.setExpanded(collection.name in expanded)
            if selected == ("collection", collection.name, ""):
                reselect = top
        if reselect is not None:
            self.tree.setCurrentItem(reselect)
        self.tree.blockSignals(False)
        current = self.target.currentText()
        self.target.blockSignals(True)
        self.target.clear()
        self.target.addItem(NEW_COLLECTION)
        for collection in collections:
            self.target.addItem(collection.name)
        self.target.setCurrentText(current or NEW_COLLECTION)
        self.target.blockSignals(False)
        self._show_indexing(self.controller.indexing)
        self._update_enabled()
        self.collectionsChanged.emit(collections)

    def _show_indexing(self, states: list[IndexingState]) -> None:
        """Mark the collections being indexed (greyed, "Indexing — 12 of 40 documents"),
        adding the row of a new one; the others show their name again."""
        by_name = {s.collection: s for s in states}
        self.tree.blockSignals(True)  # not an edit of a description
        try:
            self._mark_indexing(by_name)
        finally:
            self.tree.blockSignals(False)

    def _mark_indexing(self, by_name: dict[str, IndexingState]) -> None:
        for name in by_name.keys() - {item.data(0, NAME_ROLE) for item in self.top_items()}:
            top = QTreeWidgetItem([name, "", "", ""])
            top.setData(0, KIND_ROLE, "collection")
            top.setData(0, NAME_ROLE, name)
            self.tree.addTopLevelItem(top)
        for item in self.top_items():
            name = item.data(0, NAME_ROLE)
            state = by_name.get(name)
            if state is None:
                if item.data(0, INDEXING_ROLE):
                    item.setData(0, INDEXING_ROLE, None)
                    item.setText(0, name)
                    item.setToolTip(0, "")
                    for column in range(len(_COLUMNS)):
                        item.setData(column, Qt.ItemDataRole.ForegroundRole, None)
                continue
            item.setData(0, INDEXING_ROLE, state.describe())
            item.setText(0, f"{name} — {state.describe()}")
            item.setToolTip(
                0,
                plain_tooltip(
                    f"{name}: {state.describe()}. A search finds only the documents indexed so far; "
                    "a research run over it says its results are partial."
                ),
            )
            for column in range(len(_COLUMNS)):
                item.setForeground(column, self.palette().brush(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text))

    # -- descriptions -----------------------------------------------------
    def _on_double_click(self, item: QTreeWidgetItem, column: int) -> None:
        if item.data(0, KIND_ROLE) == "collection" and column == 3 and self.controller.library is not None:
            self.tree.editItem(item, 3)

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if column != 3 or item.data(0, KIND_ROLE) != "collection":
            return
        description = self.controller.set_description(item.data(0, NAME_ROLE), item.text(3))
        self._tasks.start(description, "save the description")

    # -- adding documents -------------------------------------------------
    def choose_folder(self) -> None:
        if not self.add_button.isEnabled():
            return
        folder = QFileDialog.getExistingDirectory(self, "Add a folder to the library")
        if folder:
            self.add_paths([Path(folder)])

    def choose_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Add files to the library")
        if files:
            self.add_paths([Path(f) for f in files])

    def add_paths(self, paths: Sequence[Path]) -> None:
        """Index dropped or chosen paths into the collection chosen under "Add to"."""
        chosen = self.target.currentText().strip()
        self.controller.add_paths(list(paths), None if not chosen or chosen == NEW_COLLECTION else chosen)

    def _on_rescan(self) -> None:
        selected = self._selected()
        if selected is not None:
            self.controller.rescan(selected[1])

    def _on_reindex(self) -> None:
        selected = self._selected()
        if selected is not None and selected[0] == "collection":
            self.controller.reindex(selected[1])

    def _context_menu(self, position: QPoint) -> None:
        if self._selected() is None:
            return
        menu = QMenu(self.tree)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        for act in (self.rescan_action, self.reindex_action, self.remove_action):
            menu.addAction(act)
        menu.popup(self.tree.viewport().mapToGlobal(position))

    def _show_repair(self, before: CheckResult, after: CheckResult) -> None:
        self.ingest.repaired(after.consistent)
        show_message(self, "Repair", *repair_report(before, after))

    # -- removal ----------------------------------------------------------
    def _on_remove(self) -> None:
        selected = self._selected()
        if selected is not None:
            self._tasks.start(self.remove_selected(*selected), "remove")

    async def remove_selected(self, kind: str, collection: str, doc_id: str) -> None:
        c = self.controller
        if c.library is None:
            return
        self.remove_button.setEnabled(False)
        try:
            if kind == "collection":
                ok = await ask_yes_no(
                    self,
                    "Remove collection",
                    f"Remove the collection “{collection}” from the library?",
                    "Its index is deleted; your original files are not touched.",
                )
                if ok:
                    await c.remove_collection(collection)
            else:
                item = self.tree.selectedItems()[0] if self.tree.selectedItems() else None
                name = Path(item.data(0, PATH_ROLE) if item else doc_id).name
                ok = await ask_yes_no(
                    self,
                    "Remove document",
                    f"Remove “{name}” from “{collection}”?",
                    "Its chunks are deleted from the index; the file itself is not touched.",
                )
                if ok:
                    await c.remove_document(collection, doc_id, name)
        finally:
            await c.refresh()
            self._update_enabled()


def repair_report(before: CheckResult, after: CheckResult) -> tuple[str, str]:
    """(text, details) of the repair's message box, in plain words."""
    if before.consistent:
        return before.summary(), "Nothing needed fixing."
    lines = [f"• {d.sentence()}" for d in before.drift[:SHOWN_DRIFT]]
    if len(before.drift) > SHOWN_DRIFT:
        lines.append(f"… and {len(before.drift) - SHOWN_DRIFT} more.")
    if after.consistent:
        return f"Repaired {count(len(before.drift), 'problem')}. {after.summary()}", "\n".join(lines)
    remaining = "\n".join(f"• {d.sentence()}" for d in after.drift[:SHOWN_DRIFT])
    return "Some problems remain after the repair.", f"Found:\n{chr(10).join(lines)}\n\nStill wrong:\n{remaining}"
