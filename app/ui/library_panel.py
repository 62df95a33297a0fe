"""The library panel: collections, documents, the drop zone and ingest progress.

It only shows the catalog and forwards actions to the ``Library``; every
call is awaited on the qasync loop (the Library runs blocking work in
executors). The Library is handed over once it has loaded (after the window
is up); until then the panel says so and its actions are disabled.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import EmbeddingMismatch, FathomError
from app.core.events import FileDone, FileStarted, IngestEvent, IngestFinished, IngestProgress, IngestStarted
from app.core.models import Collection, Document, DocumentStatus
from app.ui.dialogs import ask_yes_no, show_message
from app.ui.drop_zone import DropZone
from app.ui.formatting import count, duration, short_path
from app.ui.tasks import TaskKeeper
from app.ui.tooltips import plain_tooltip

if TYPE_CHECKING:
    from app.ingest.library import Library
    from app.store.consistency import CheckResult

NEW_COLLECTION = "(new collection named after the folder)"
KIND_ROLE = Qt.ItemDataRole.UserRole + 1
NAME_ROLE = Qt.ItemDataRole.UserRole + 2
DOC_ROLE = Qt.ItemDataRole.UserRole + 3
PATH_ROLE = Qt.ItemDataRole.UserRole + 4
MAX_FILE_ROWS = 400
_COLUMNS = ("Collection / document", "Documents", "Chunks", "Description")
SHOWN_DRIFT = 12  # problems listed in the repair report; the rest are counted


def collection_name_for(paths: Sequence[Path]) -> str:
    """A collection name from what was dropped: the first folder's name, else ``documents``."""
    for path in paths:
        if path.is_dir():
            base = path.name
            break
    else:
        base = paths[0].parent.name if paths else "documents"
    name = re.sub(r"[^A-Za-z0-9_]+", "_", base).strip("_").lower() or "documents"
    if name[0].isdigit():
        name = f"c_{name}"
    return name[:60]


class LibraryPanel(QWidget):
    collectionsChanged = Signal(list)  # list[Collection]
    ingestFinished = Signal(object)  # IngestFinished
    statusMessage = Signal(str)

    def __init__(self, tasks: TaskKeeper, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tasks = tasks
        self._library: Library | None = None
        self._ingest_task: asyncio.Task[Any] | None = None
        self._file_rows: dict[str, QListWidgetItem] = {}
        self.collections: list[Collection] = []
        self.last_finished: IngestFinished | None = None
        self.last_progress: IngestProgress | None = None
        self.last_repair: tuple[CheckResult, CheckResult] | None = None
        self._build()
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
        self.repair_button.clicked.connect(self.repair)
        self.reindex_action = QAction("Re-index with the current embedding model", self)
        self.reindex_action.setToolTip("Embed every document of the collection again (after the model changed)")
        self.reindex_action.triggered.connect(self._on_reindex)
        self.rescan_action = QAction("Re-scan", self)
        self.rescan_action.triggered.connect(self._on_rescan)
        self.remove_action = QAction("Remove…", self)
        self.remove_action.triggered.connect(self._on_remove)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop indexing; it resumes where it stopped next time")
        self.stop_button.clicked.connect(self.stop_ingest)

        self.progress = QProgressBar()
        self.progress.setObjectName("ingestProgress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("Idle")
        self.progress.setTextVisible(True)
        self.current_label = QLabel("")
        self.current_label.setWordWrap(True)
        self.files = QListWidget()
        self.files.setObjectName("ingestFiles")
        self.files.setUniformItemSizes(True)
        self.failures_label = QLabel("Failed files")
        self.failures = QListWidget()
        self.failures.setObjectName("ingestFailures")
        self.failures.setWordWrap(True)
        self.failures_label.hide()
        self.failures.hide()

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
        progress_row = QHBoxLayout()
        progress_row.addWidget(self.progress, 1)
        progress_row.addWidget(self.stop_button)

        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(self.state_label)
        layout.addWidget(self.tree, 3)
        layout.addLayout(buttons)
        layout.addWidget(self.drop_zone)
        layout.addLayout(target_row)
        layout.addLayout(progress_row)
        layout.addWidget(self.current_label)
        layout.addWidget(self.files, 2)
        layout.addWidget(self.failures_label)
        layout.addWidget(self.failures, 1)

    # -- state ------------------------------------------------------------
    def set_library(self, library: Library | None, problem: str = "") -> None:
        self._library = library
        if library is None:
            self.state_label.setText(problem or "The library is not available.")
            self.state_label.setObjectName("errorText" if problem else "")
        else:
            self.state_label.setText("")
            self.state_label.hide()
            if library.recovery:
                self.statusMessage.emit(f"Finished what an interrupted run left undone: {library.recovery.summary()}.")
            self._tasks.start(self.refresh(), "refresh the library")
        self._update_enabled()

    @property
    def ingesting(self) -> bool:
        return self._ingest_task is not None and not self._ingest_task.done()

    def _update_enabled(self) -> None:
        ready = self._library is not None
        idle = ready and not self.ingesting
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
        self.stop_button.setEnabled(self.ingesting)
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
    async def refresh(self) -> None:
        library = self._library
        if library is None:
            return
        collections = await library.collections()
        documents: dict[str, list[Document]] = {}
        for collection in collections:
            documents[collection.name] = await library.documents(collection.name)
        self._show(collections, documents)

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
        self.collections = collections
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

    # -- descriptions -----------------------------------------------------
    def _on_double_click(self, item: QTreeWidgetItem, column: int) -> None:
        if item.data(0, KIND_ROLE) == "collection" and column == 3 and self._library is not None:
            self.tree.editItem(item, 3)

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if column != 3 or item.data(0, KIND_ROLE) != "collection":
            return
        self._tasks.start(self.set_description(item.data(0, NAME_ROLE), item.text(3)), "save the description")

    async def set_description(self, name: str, description: str) -> None:
        if self._library is None:
            return
        await self._library.set_description(name, description.strip())
        self.statusMessage.emit(f"Saved the description of {name}.")
        await self.refresh()

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

    def target_collection(self, paths: Sequence[Path]) -> str:
        chosen = self.target.currentText().strip()
        if not chosen or chosen == NEW_COLLECTION:
            return collection_name_for(paths)
        return chosen

    def add_paths(self, paths: list[Path]) -> None:
        """Index dropped or chosen paths (ignored while an ingest runs or before the library is open)."""
        if self._library is None or self.ingesting or not paths:
            if self.ingesting:
                self.statusMessage.emit("Wait for the current indexing to finish, or stop it.")
            return
        missing = [p for p in paths if not p.exists()]
        if missing:
            self.statusMessage.emit(f"Not found: {missing[0]}")
            paths = [p for p in paths if p.exists()]
            if not paths:
                return
        collection = self.target_collection(paths)
        self._ingest_task = self._tasks.start(self._run_ingest(paths, collection), "indexing")
        self._update_enabled()

    def stop_ingest(self) -> None:
        if self.ingesting and self._ingest_task is not None:
            self._ingest_task.cancel()

    def _on_rescan(self) -> None:
        selected = self._selected()
        if selected is None or self._library is None or self.ingesting:
            return
        self._ingest_task = self._tasks.start(self._run_ingest([], selected[1], how="rescan"), "re-scan")
        self._update_enabled()

    def _on_reindex(self) -> None:
        selected = self._selected()
        if selected is None or selected[0] != "collection":
            return
        self.reindex(selected[1])

    def reindex(self, collection: str) -> None:
        """Embed ``collection`` again with the embedding model now in Settings."""
        if self._library is None or self.ingesting:
            return
        self._ingest_task = self._tasks.start(self._run_ingest([], collection, how="reindex"), "re-index")
        self._update_enabled()

    async def reindex_all(self, collections: Sequence[str]) -> None:
        """Re-index these collections one after another (each shows its progress)."""
        for name in collections:
            await self.wait_until_idle()
            self.reindex(name)
            await self.wait_until_idle()

    async def wait_until_idle(self) -> None:
        """Return once the indexing, re-index or repair in progress (if any) has ended."""
        task = self._ingest_task
        if task is not None and not task.done():
            await asyncio.wait([task])

    def _context_menu(self, position: QPoint) -> None:
        if self._selected() is None:
            return
        menu = QMenu(self.tree)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        for act in (self.rescan_action, self.reindex_action, self.remove_action):
            menu.addAction(act)
        menu.popup(self.tree.viewport().mapToGlobal(position))

    async def _run_ingest(self, paths: list[Path], collection: str, *, how: str = "ingest") -> None:
        library = self._library
        assert library is not None
        self._reset_progress(collection)
        mismatch = False
        try:
            stream: Any
            if how == "rescan":
                stream = library.rescan(collection)
            elif how == "reindex":
                stream = library.reindex(collection)
            else:
                stream = library.ingest(paths, collection)
            if inspect.isawaitable(stream):
                stream = await stream
            async for event in stream:
                self.on_ingest_event(event)
        except asyncio.CancelledError:
            self.progress.setFormat("Stopped — indexing resumes where it stopped next time")
            self.current_label.setText("")
            raise
        except FathomError as exc:
            self._show_failure(str(exc))
            mismatch = isinstance(exc, EmbeddingMismatch)
        finally:
            self._ingest_task = None
            self._update_enabled()
            self._tasks.start(self.refresh(), "refresh the library")
        if mismatch:
            await self.offer_reindex(collection)

    def _show_failure(self, message: str) -> None:
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("Stopped")
        self.current_label.setText(message)
        self.current_label.setObjectName("errorText")
        self.statusMessage.emit(message)

    async def offer_reindex(self, collection: str) -> None:
        """Ask, then re-index a collection built with another embedding model."""
        ok = await ask_yes_no(
            self,
            "Re-index collection",
            f"“{collection}” was built with another embedding model than the one in Settings.",
            "Re-index it now? Every document is embedded again with the current model; "
            "your files are not touched. (Or switch the embedding model back in Settings.)",
        )
        if ok:
            self.reindex(collection)

    # -- repair -----------------------------------------------------------
    def repair(self) -> None:
        """Compare the catalog with the search index and fix drift (in the background)."""
        if self._library is None or self.ingesting:
            return
        self._ingest_task = self._tasks.start(self._run_repair(), "repair")
        self._update_enabled()

    async def _run_repair(self) -> None:
        library = self._library
        assert library is not None
        self._reset_progress("the repair")
        self.progress.setFormat("Comparing the library with its search index…")
        try:
            before, after = await library.repair(on_event=self.on_ingest_event)
        except asyncio.CancelledError:
            self.progress.setFormat("Stopped — run Repair again to finish")
            raise
        except FathomError as exc:
            self._show_failure(str(exc))
            return
        finally:
            self._ingest_task = None
            self._update_enabled()
            self._tasks.start(self.refresh(), "refresh the library")
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        self.progress.setFormat("Repair done" if after.consistent else "Repair: problems remain")
        self.last_repair = (before, after)
        self.statusMessage.emit(after.summary())
        show_message(self, "Repair", *repair_report(before, after))

    def _reset_progress(self, collection: str) -> None:
        self.last_finished = None
        self.last_progress = None
        self.files.clear()
        self._file_rows.clear()
        self.failures.clear()
        self.failures.hide()
        self.failures_label.hide()
        self.progress.setRange(0, 0)  # busy until the file count is known
        self.progress.setFormat(f"Scanning for {collection}…")
        self.current_label.setText("")

    # -- ingest events ----------------------------------------------------
    def on_ingest_event(self, event: IngestEvent) -> None:
        if isinstance(event, IngestStarted):
            self.progress.setRange(0, max(event.total_files, 1))
            self.progress.setValue(0)
            self.progress.setFormat(f"{event.collection}: 0 / {event.total_files} files")
        elif isinstance(event, FileStarted):
            self._file_row(event.path).setText(f"… {short_path(event.path, 3)}")
        elif isinstance(event, FileDone):
            self._on_file_done(event)
        elif isinstance(event, IngestProgress):
            self.last_progress = event
            self.progress.setRange(0, max(event.total_files, 1))
            self.progress.setValue(event.done_files)
            eta = "" if event.eta_s is None else f" — ETA {duration(event.eta_s)}"
            self.progress.setFormat(f"{event.done_files} / {event.total_files} files ({event.fraction:.0%}){eta}")
            self.current_label.setText(f"{event.collection}: {event.chunks:,} chunks so far")
        elif isinstance(event, IngestFinished):
            self._on_finished(event)

    def _file_row(self, path: str) -> QListWidgetItem:
        row = self._file_rows.get(path)
        if row is None:
            row = QListWidgetItem(short_path(path, 3))
            row.setToolTip(plain_tooltip(path))
            row.setData(PATH_ROLE, path)
            self.files.addItem(row)
            self._file_rows[path] = row
            while self.files.count() > MAX_FILE_ROWS:
                old = self.files.takeItem(0)
                if old is not None:
                    self._file_rows.pop(old.data(PATH_ROLE), None)
        return row

    def _on_file_done(self, event: FileDone) -> None:
        marks = {"indexed": "✓", "unchanged": "=", "skipped": "–", "failed": "✗", "removed": "−"}
        detail = f"{event.chunks} chunks" if event.status == "indexed" else event.status
        if event.reason:
            detail += f": {event.reason}"
        self._file_row(event.path).setText(f"{marks.get(event.status, '·')} {short_path(event.path, 3)} — {detail}")
        if event.status == "failed":
            self._add_failure(event.path, event.reason)
        self.files.scrollToBottom()

    def _add_failure(self, path: str, reason: str) -> None:
        item = QListWidgetItem(f"{Path(path).name}: {reason or 'failed'}")
        item.setToolTip(plain_tooltip(f"{path}\n{reason}"))
        item.setData(PATH_ROLE, path)
        self.failures.addItem(item)
        self.failures.show()
        self.failures_label.show()

    def _on_finished(self, event: IngestFinished) -> None:
        self.last_finished = event
        total = event.indexed + event.unchanged + event.skipped + event.failed
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(max(total, 1))
        self.progress.setFormat(f"{event.collection}: done, {total} / {total} files")
        self.current_label.setText(
            f"{count(event.indexed, 'file')} indexed, {event.unchanged} unchanged, {event.failed} failed, "
            f"{event.removed} removed; {event.chunks:,} chunks in {duration(event.elapsed_s)}"
        )
        known = {self.failures.item(i).data(PATH_ROLE) for i in range(self.failures.count())}
        for path, reason in event.failures:
            if path not in known:
                self._add_failure(path, reason)
        self.statusMessage.emit(f"Indexed {event.collection}: {event.indexed} new, {event.failed} failed.")
        self.ingestFinished.emit(event)

    # -- removal ----------------------------------------------------------
    def _on_remove(self) -> None:
        selected = self._selected()
        if selected is not None:
            self._tasks.start(self.remove_selected(*selected), "remove")

    async def remove_selected(self, kind: str, collection: str, doc_id: str) -> None:
        library = self._library
        if library is None:
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
                    await library.remove_collection(collection)
                    self.statusMessage.emit(f"Removed the collection {collection}.")
            else:
                item = self.tree.selectedItems()[0] if self.tree.selectedItems() else None
                name = item.data(0, PATH_ROLE) if item else doc_id
                ok = await ask_yes_no(
                    self,
                    "Remove document",
                    f"Remove “{Path(name).name}” from “{collection}”?",
                    "Its chunks are deleted from the index; the file itself is not touched.",
                )
                if ok:
                    await library.remove_document(collection, doc_id)
                    self.statusMessage.emit(f"Removed {Path(name).name}.")
        finally:
            await self.refresh()
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
