"""The library panel: collections and documents, the drop zone, the buttons,
and the ingest progress (:class:`IngestProgressView`).

The collections and documents are a :class:`LibraryModel` in a tree view: the
controller reads the catalog and builds the rows off the GUI thread, the model
changes only what changed, a slice at a time (a library of 10,000 documents
opens without freezing the window), and the view is shown a large
collection's documents a few hundred at a time, more as it scrolls.

It shows what its :class:`LibraryController` holds and forwards the user's
actions to it; the questions (remove? re-index?) and the repair report are
asked here, in boxes that never block the loop. The Library is handed over
once it has loaded (after the window is up); until then the panel says so and
its actions are disabled. A followed collection whose folders are not there (an
unplugged drive) is marked "— folder offline", with a sentence in its tooltip, until
they are back.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QPoint, Qt, Signal
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
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from app.core.models import Collection
from app.ingest.folder_presence import offline_sentence
from app.ui.dialogs import ask_yes_no, show_message
from app.ui.drop_zone import DropZone
from app.ui.formatting import count
from app.ui.ingest_progress import IngestProgressView
from app.ui.library_controller import LibraryController
from app.ui.library_model import (
    DESCRIPTION_COLUMN,
    DOC_ROLE,
    INDEXING_ROLE,
    KIND_ROLE,
    NAME_ROLE,
    OFFLINE_ROLE,
    PATH_ROLE,
    CollectionRow,
    LibraryModel,
)
from app.ui.tasks import TaskKeeper

if TYPE_CHECKING:
    from app.ingest.indexing_state import IndexingState
    from app.ingest.library import Library
    from app.store.consistency import CheckResult

__all__ = [
    "DOC_ROLE",
    "INDEXING_ROLE",
    "KIND_ROLE",
    "NAME_ROLE",
    "OFFLINE_ROLE",
    "PATH_ROLE",
    "LibraryPanel",
    "repair_report",
]

NEW_COLLECTION = "(new collection named after the folder or file)"
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
        self.model = LibraryModel(self)
        self.model.greyed = self.palette().brush(
            QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text
        )
        self.model.descriptionEdited.connect(self._on_description_edited)
        self.tree = QTreeView()
        self.tree.setObjectName("collectionsTree")
        self.tree.setModel(self.model)
        self.tree.setUniformRowHeights(True)  # one line a row: a view of 10,000 rows lays out fast
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.tree.setTextElideMode(
            Qt.TextElideMode.ElideMiddle
        )  # long names keep their end; the tooltip has all
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Interactive)
        header.setResizeContentsPrecision(
            0
        )  # fit the rows on screen, not the first 1,000 (each asks the model)
        header.setStretchLastSection(False)
        header.resizeSection(3, 72)  # (wider by dragging; the whole description is in the tooltip)
        self.tree.doubleClicked.connect(self._on_double_click)
        self.tree.selectionModel().selectionChanged.connect(self._update_enabled)
        self.tree.verticalScrollBar().valueChanged.connect(self._fetch_in_sight)
        self.model.shown.connect(self._fetch_in_sight)

        self.drop_zone = DropZone()
        self.drop_zone.pathsDropped.connect(self.add_paths)
        self.target = QComboBox()
        self.target.setObjectName("targetCollection")
        self.target.setEditable(True)
        # as wide as the column allows, not as its longest item: the report gets the room
        self.target.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.target.setMinimumContentsLength(12)
        self.target.setToolTip("The collection new documents go into; type a name to create one")
        self.target.addItem(NEW_COLLECTION)

        self.add_button = QPushButton("Add folder…")
        self.add_button.setToolTip("Add a folder to the library (Ctrl+O)")
        self.add_button.clicked.connect(self.choose_folder)
        self.add_files_button = QPushButton("Add files…")
        self.add_files_button.clicked.connect(self.choose_files)
        self.rescan_button = QPushButton("Re-scan")
        self.rescan_button.setToolTip(
            "Index new and changed files of the selected collection, drop deleted ones"
        )
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
        self.reindex_action.setToolTip(
            "Embed every document of the collection again (after the model changed)"
        )
        self.reindex_action.triggered.connect(self._on_reindex)
        self.rescan_action = QAction("Re-scan", self)
        self.rescan_action.triggered.connect(self._on_rescan)
        self.retry_action = QAction("Re-scan, reading again the files given up on", self)
        self.retry_action.setObjectName("retryGivenUp")
        self.retry_action.setToolTip(
            "Files that took more memory or time than Settings allow (or crashed the converter) are "
            "not read again until they change; this reads them again (after raising the limits, say)"
        )
        self.retry_action.triggered.connect(self._on_retry)
        self.remove_action = QAction("Remove…", self)
        self.remove_action.triggered.connect(self._on_remove)
        self.follow_action = QAction("Follow changes in its folders", self)
        self.follow_action.setCheckable(True)
        self.follow_action.setToolTip(
            "New, changed, renamed and deleted files in the collection's folders are indexed without asking"
        )
        self.follow_action.toggled.connect(self._on_follow)
        self.watched: dict[str, bool] = {}  # collection → followed
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)
        self.ingest.stop_button.clicked.connect(self.controller.stop_ingest)

        target_row = QHBoxLayout()
        target_row.addWidget(QLabel("Add to:"))
        target_row.addWidget(self.target, 1)
        # two rows, so the library needs little width and the report gets the room
        adding = QHBoxLayout()
        for button in (self.add_button, self.add_files_button):
            adding.addWidget(button)
        upkeep = QHBoxLayout()
        for button in (self.rescan_button, self.remove_button, self.repair_button):
            upkeep.addWidget(button)
        buttons = QVBoxLayout()
        buttons.addLayout(adding)
        buttons.addLayout(upkeep)

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
        c.stopping.connect(ingest.stopping)
        c.stopped.connect(ingest.stopped)
        c.failed.connect(ingest.failed)
        c.repaired.connect(self._show_repair)
        c.indexingChanged.connect(self._show_indexing)
        c.offlineChanged.connect(self._show_offline)

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
        can_add = self.controller.can_add  # while an indexing runs, what is added is queued
        self.add_button.setEnabled(can_add)
        self.add_files_button.setEnabled(can_add)
        self.drop_zone.setEnabled(can_add)
        self.drop_zone.setAcceptDrops(can_add)
        self.rescan_button.setEnabled(idle and selected is not None)
        self.remove_button.setEnabled(idle and selected is not None)
        self.rescan_action.setEnabled(self.rescan_button.isEnabled())
        self.retry_action.setEnabled(self.rescan_button.isEnabled())
        self.remove_action.setEnabled(self.remove_button.isEnabled())
        self.reindex_action.setEnabled(
            idle and selected is not None and selected[0] == "collection"
        )
        self.repair_button.setEnabled(idle)
        self.ingest.stop_button.setEnabled(
            self.controller.ingesting and not self.ingest.is_stopping
        )
        self.target.setEnabled(can_add)

    def _selected(self) -> tuple[str, str, str] | None:
        """(kind, collection, doc_id) of the selected row."""
        index = self._selected_index()
        if index is None:
            return None
        return (index.data(KIND_ROLE), index.data(NAME_ROLE), index.data(DOC_ROLE) or "")

    def _selected_index(self) -> QModelIndex | None:
        rows = self.tree.selectionModel().selectedRows()
        return rows[0] if rows else None

    def collection_index(self, name: str) -> QModelIndex:
        """Collection ``name``'s row (column 0); invalid when the panel does not list it."""
        return self.model.collection_index(name)

    def select(self, index: QModelIndex) -> None:
        """Make ``index``'s row the current and selected one (as a click does)."""
        self.tree.setCurrentIndex(index)

    # -- catalog ----------------------------------------------------------
    def _show(self, collections: list[Collection], rows: list[CollectionRow]) -> None:
        """Show the catalog (the rows were built off the GUI thread; the model applies
        them a slice at a time, keeping expansion and selection)."""
        self.model.show(rows)
        self.watched = {c.name: c.watched for c in collections}
        current = self.target.currentText()
        self.target.blockSignals(True)
        self.target.clear()
        self.target.addItem(NEW_COLLECTION)
        for collection in collections:
            self.target.addItem(collection.name)
        self.target.setCurrentText(current or NEW_COLLECTION)
        self.target.blockSignals(False)
        self._update_enabled()
        self.collectionsChanged.emit(collections)

    def _fetch_in_sight(self) -> None:
        """Show more documents of an expanded collection whose last row shown so far is in
        sight (the view lays out a few hundred rows at a time, not a whole large collection)."""
        area = self.tree.viewport().rect()
        model = self.model
        for name in model.collection_names():
            index = model.collection_index(name)
            if not self.tree.isExpanded(index) or not model.can_show_more(index):
                continue
            last = model.index(model.rowCount(index) - 1, 0, index)
            if self.tree.visualRect(last).intersects(area):
                model.show_more(index)

    def _show_indexing(self, states: list[IndexingState]) -> None:
        """Mark the collections being indexed (greyed, "Indexing — 12 of 40 documents"),
        adding the row of a new one; the others show their name again."""
        self.model.set_indexing({s.collection: s.describe() for s in states})

    def _show_offline(self, offline: dict[str, list[Path]]) -> None:
        """Mark the followed collections whose folders are not there; the others lose the mark."""
        self.model.set_offline(
            {name: offline_sentence(folders) for name, folders in offline.items()}
        )

    # -- descriptions -----------------------------------------------------
    def _on_double_click(self, index: QModelIndex) -> None:
        if (
            index.data(KIND_ROLE) == "collection"
            and index.column() == DESCRIPTION_COLUMN
            and self.controller.library is not None
        ):
            self.tree.edit(index)

    def _on_description_edited(self, name: str, text: str) -> None:
        self._tasks.start(self.controller.set_description(name, text), "save the description")

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
        self.controller.add_paths(
            list(paths), None if not chosen or chosen == NEW_COLLECTION else chosen
        )

    def _on_rescan(self) -> None:
        selected = self._selected()
        if selected is not None:
            self.controller.rescan(selected[1])

    def _on_retry(self) -> None:
        selected = self._selected()
        if selected is not None:
            self.controller.rescan(selected[1], retry=True)

    def _on_reindex(self) -> None:
        selected = self._selected()
        if selected is not None and selected[0] == "collection":
            self.controller.reindex(selected[1])

    def _on_follow(self, on: bool) -> None:
        selected = self._selected()
        if selected is not None and selected[0] == "collection":
            self._tasks.start(self.controller.set_watched(selected[1], on), "follow the folders")

    def _context_menu(self, position: QPoint) -> None:
        if self._selected() is None:
            return
        menu = QMenu(self.tree)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        selected = self._selected()
        if selected is not None and selected[0] == "collection":
            self.follow_action.blockSignals(True)
            self.follow_action.setChecked(self.watched.get(selected[1], True))
            self.follow_action.blockSignals(False)
            menu.addAction(self.follow_action)
        for act in (self.rescan_action, self.retry_action, self.reindex_action, self.remove_action):
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
                index = self._selected_index()
                name = Path((index.data(PATH_ROLE) if index is not None else None) or doc_id).name
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
        return f"Repaired {count(len(before.drift), 'problem')}. {after.summary()}", "\n".join(
            lines
        )
    remaining = "\n".join(f"• {d.sentence()}" for d in after.drift[:SHOWN_DRIFT])
    return (
        "Some problems remain after the repair.",
        f"Found:\n{chr(10).join(lines)}\n\nStill wrong:\n{remaining}",
    )
