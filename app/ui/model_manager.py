"""The model manager: one list of the models on this machine and the recommended ones.

For each: parameters, quantisation, where it is, file size, memory needed,
context, whether it reasons, licence, and whether it fits this machine. One
click makes a model the research model; a catalog model downloads (progress,
speed, time left, cancel, resumed later) or is pulled by Ollama; Fathom's own
downloads and Ollama's models can be removed. Opening it contacts nothing but
the configured Ollama (on this machine by default): downloads start only on a click.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import FathomError
from app.core.settings import Settings
from app.llm.ollama_client import OllamaModelInfo, ollama_models_if_running
from app.model_files.catalog import Catalog
from app.model_files.machine_fit import Machine
from app.model_files.machine_speed import about
from app.model_files.model_inventory import ModelRow
from app.ui.model_downloads import ModelDownloads, Transfer
from app.ui.services import Services
from app.ui.tasks import TaskKeeper, run_blocking

COLUMNS = (
    "Model",
    "Parameters",
    "Quantisation",
    "Where",
    "File",
    "Memory",
    "Context",
    "Reasons",
    "Licence",
    "Fits",
    "Deep answer",  # about how long here, from the starter's measured speed (app/model_files/machine_speed.py)
)
FIT_TEXT = {"fits": "✓ fits", "tight": "≈ tight", "too big": "✗ too big", "unknown": "?"}


@dataclass(frozen=True)
class Inventory:
    rows: list[ModelRow]
    catalog: Catalog
    machine: Machine
    ollama_running: bool


def _gb(size: int) -> str:
    return f"{size / 1024**3:.1f} GB" if size else ""


def build_inventory(
    services_settings: Settings, services: Services, ollama: list[OllamaModelInfo] | None
) -> Inventory:
    """The list (blocking: reads GGUF headers, the catalog file, the machine's memory)."""
    from app.model_files.catalog import load_catalog
    from app.model_files.machine_fit import measure_for_research
    from app.model_files.model_inventory import list_models

    paths = services.paths
    catalog = load_catalog(services_settings.models.catalog, cache_dir=paths.cache_dir)
    machine = measure_for_research(services_settings, paths)
    rows = list_models(services_settings, paths, catalog, machine, ollama=ollama)
    return Inventory(rows, catalog, machine, ollama is not None)


class ModelManagerDialog(QDialog):
    """Models: use, download, pull, remove. Not modal: the window stays usable."""

    saved = Signal(object)  # Settings, after "Use for research" or a removal changed them

    def __init__(
        self,
        services: Services,
        downloads: ModelDownloads,
        tasks: TaskKeeper,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("modelManager")
        self.setWindowTitle("Models")
        self.resize(980, 560)
        self._services = services
        self._downloads = downloads
        self._tasks = tasks
        self.inventory: Inventory | None = None

        self.machine_label = QLabel("Measuring this machine…")
        self.machine_label.setObjectName("machineLabel")
        self.machine_label.setWordWrap(True)
        self.note = QLabel("")
        self.note.setWordWrap(True)
        self.note.hide()
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("modelTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.itemDoubleClicked.connect(lambda _item: self.use_selected())
        self.detail = QLabel("")
        self.detail.setObjectName("modelDetail")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.setTextFormat(Qt.TextFormat.PlainText)
        self.message = QLabel("")
        self.message.setObjectName("managerMessage")
        self.message.setWordWrap(True)

        self.progress = QProgressBar()
        self.progress.setObjectName("downloadProgress")
        self.progress.setTextVisible(False)
        self.progress_label = QLabel("")
        self.progress_label.setObjectName("downloadText")
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.setObjectName("cancelDownload")
        self.cancel_button.setToolTip(
            "Stop; what is downloaded is kept and the next download resumes from it"
        )
        self.cancel_button.clicked.connect(self.cancel_selected_transfer)
        progress_row = QHBoxLayout()
        progress_row.addWidget(self.progress, 1)
        progress_row.addWidget(self.cancel_button)
        self._progress_widgets = (self.progress, self.progress_label, self.cancel_button)

        self.use_button = QPushButton("Use for research")
        self.use_button.setObjectName("useModel")
        self.use_button.setDefault(True)
        self.use_button.clicked.connect(self.use_selected)
        self.download_button = QPushButton("Download")
        self.download_button.setObjectName("downloadModel")
        self.download_button.clicked.connect(lambda: self.download_selected(use_when_done=False))
        self.download_use_button = QPushButton("Download and use")
        self.download_use_button.setObjectName("downloadAndUse")
        self.download_use_button.clicked.connect(lambda: self.download_selected(use_when_done=True))
        self.pull_button = QPushButton("Pull with Ollama")
        self.pull_button.setObjectName("pullModel")
        self.pull_button.clicked.connect(self.pull_selected)
        self.remove_button = QPushButton("Remove…")
        self.remove_button.setObjectName("removeModel")
        self.remove_button.clicked.connect(self.remove_selected)
        self.add_file_button = QPushButton("Add a GGUF file…")
        self.add_file_button.setObjectName("addModelFile")
        self.add_file_button.setToolTip(
            "A GGUF model file on this computer: copied or linked into Fathom's models folder"
        )
        self.add_file_button.clicked.connect(self.choose_model_file)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip(
            "Look at the model folders and Ollama again (and fetch a catalog URL)"
        )
        self.refresh_button.clicked.connect(lambda: self.refresh(fetch_catalog=True))
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        for button in (
            self.use_button,
            self.download_use_button,
            self.download_button,
            self.pull_button,
        ):
            buttons.addWidget(button)
        buttons.addWidget(self.remove_button)
        buttons.addWidget(self.add_file_button)
        buttons.addStretch(1)
        buttons.addWidget(self.refresh_button)
        buttons.addWidget(close)

        layout = QVBoxLayout(self)
        layout.addWidget(self.machine_label)
        layout.addWidget(self.note)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.detail)
        layout.addWidget(self.progress_label)
        layout.addLayout(progress_row)
        layout.addWidget(self.message)
        layout.addLayout(buttons)
        downloads.progress.connect(self._on_progress)
        downloads.finished.connect(self._on_finished)
        downloads.failed.connect(self._on_failed)
        self._show_progress(None)
        self._selection_changed()
        self.refresh_task = tasks.start(self.refresh(), "list the models")

    # -- the list ----------------------------------------------------------------------

    async def refresh(self, *, fetch_catalog: bool = False) -> None:
        settings = self._services.settings
        if fetch_catalog:
            await self._fetch_catalog(settings)
        ollama = await ollama_models_if_running(settings.model.ollama.host)
        try:
            inventory = await run_blocking(
                build_inventory, settings, self._services, ollama, name="list the models"
            )
        except (FathomError, OSError) as exc:
            self.message.setText(f"The models could not be listed: {exc}")
            return
        self.show_inventory(inventory)

    async def _fetch_catalog(self, settings: Settings) -> None:
        from app.model_files.catalog import catalog_source, is_url, refresh_catalog

        if not is_url(catalog_source(settings.models.catalog)):
            return
        try:
            await run_blocking(
                lambda: refresh_catalog(
                    settings.models.catalog, cache_dir=self._services.paths.cache_dir
                ),
                name="fetch the model catalog",
            )
        except FathomError as exc:
            self.message.setText(str(exc))

    def show_inventory(self, inventory: Inventory) -> None:
        selected = self.selected_row()
        self.inventory = inventory
        machine = inventory.machine
        ollama = "Ollama is running" if inventory.ollama_running else "no Ollama running"
        self.machine_label.setText(f"This machine: {machine.describe()}; {ollama}.")
        self.note.setText(inventory.catalog.note)
        self.note.setVisible(bool(inventory.catalog.note))
        self.table.setRowCount(len(inventory.rows))
        for index, row in enumerate(inventory.rows):
            self._fill(index, row)
        keep = next(
            (i for i, r in enumerate(inventory.rows) if selected and r.key == selected.key), None
        )
        if keep is None:
            keep = next((i for i, r in enumerate(inventory.rows) if r.recommended), 0)
        if inventory.rows:
            self.table.selectRow(keep)
        self._selection_changed()

    def _fill(self, index: int, row: ModelRow) -> None:
        name = (
            row.name
            + ("  — in use" if row.in_use else "")
            + ("  — recommended" if row.recommended else "")
        )
        thinks = "yes" if row.reasoning else ("?" if row.reasoning is None else "no")
        cells = (
            name,
            row.parameters,
            row.quantization,
            row.source_label,
            _gb(row.size_bytes),
            _gb(row.ram_needed),
            f"{row.context:,}" if row.context else "",
            thinks,
            row.license,
            FIT_TEXT.get(row.fit.verdict, row.fit.verdict),
            about(row.answer_s) if row.answer_s is not None else "",
        )
        speed = (
            f"A deep answer takes {about(row.answer_s)} on this computer (measured with the starter model, "
            "scaled to this model's size)."
            if row.answer_s is not None
            else ""
        )
        tip = "\n".join(t for t in (row.why, row.fit.reason, speed, row.path, row.problem) if t)
        for column, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(tip)
            if row.in_use:
                font = QFont(item.font())
                font.setBold(True)
                item.setFont(font)
            self.table.setItem(index, column, item)

    def selected_row(self) -> ModelRow | None:
        if self.inventory is None:
            return None
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        index = rows[0].row()
        return self.inventory.rows[index] if 0 <= index < len(self.inventory.rows) else None

    def select_key(self, key: str) -> bool:
        if self.inventory is None:
            return False
        for index, row in enumerate(self.inventory.rows):
            if row.key == key:
                self.table.selectRow(index)
                return True
        return False

    def _selection_changed(self) -> None:
        row = self.selected_row()
        ollama_running = self.inventory is not None and self.inventory.ollama_running
        busy = row is not None and self._downloads.busy(row.key)
        pull_key = f"ollama:{row.ollama_tag}" if row is not None and row.ollama_tag else ""
        self.use_button.setEnabled(
            row is not None and row.installed and row.chat and not row.in_use
        )
        downloadable = row is not None and row.source == "catalog" and not busy
        self.download_button.setEnabled(downloadable)
        self.download_use_button.setEnabled(downloadable)
        self.pull_button.setEnabled(
            row is not None
            and row.source == "catalog"
            and bool(row.ollama_tag)
            and ollama_running
            and not self._downloads.busy(pull_key)
        )
        self.remove_button.setEnabled(row is not None and row.source in ("fathom", "ollama"))
        if row is None:
            self.detail.setText("")
            return
        lines = [
            row.why,
            f"Fits this machine: {row.fit.verdict} — {row.fit.reason}" if row.fit.reason else "",
        ]
        if row.path:
            lines.append(f"File: {row.path}")
        if row.problem:
            lines.append(f"Problem: {row.problem}")
        self.detail.setText("\n".join(line for line in lines if line))
        self._show_progress(
            self._downloads.latest.get(row.key) or self._downloads.latest.get(pull_key)
        )

    # -- actions -----------------------------------------------------------------------

    def use_selected(self) -> asyncio.Task[None] | None:
        row = self.selected_row()
        if row is None or not self.use_button.isEnabled():
            return None
        return self._tasks.start(self._use(row), "use a model")

    async def _use(self, row: ModelRow) -> None:
        from app.model_files.model_inventory import settings_using

        try:
            new = settings_using(row, self._services.settings)
            await self._services.save_settings(new)
        except (FathomError, OSError) as exc:
            self.message.setText(str(exc))
            return
        self.saved.emit(new)
        self.message.setText(f"Research now uses {row.name}.")
        await self.refresh()

    def choose_model_file(self) -> None:
        """Pick a GGUF file, then choose to copy it into Fathom's models folder or link it."""
        name, _ = QFileDialog.getOpenFileName(
            self, "Add a GGUF model file", "", "GGUF models (*.gguf);;All files (*)"
        )
        if not name:
            return
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Add a model file",
            f"Add {Path(name).name} to Fathom's models?",
            parent=self,
        )
        box.setObjectName("copyOrLink")
        box.setInformativeText(
            "Copy: Fathom keeps its own copy (the file may move or go). "
            "Link: no second copy on disk; the file must stay where it is."
        )
        copy = box.addButton("Copy", QMessageBox.ButtonRole.AcceptRole)
        link = box.addButton("Link", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def chosen(button: object) -> None:
            if button in (copy, link):
                self._tasks.start(
                    self.add_model_file(Path(name), link=button is link), "add a model file"
                )

        box.buttonClicked.connect(chosen)
        box.open()

    async def add_model_file(self, path: Path, *, link: bool) -> Path | None:
        """Copy or link ``path`` into the models folder (off the GUI thread), list it and select it."""
        from app.model_files.model_folders import add_model_file

        self.message.setText(f"{'Linking' if link else 'Copying'} {path.name}…")
        try:
            adding = functools.partial(
                add_model_file, path, self._services.paths.models_dir, link=link
            )
            added = await run_blocking(adding, name="add a model file")
        except (FathomError, OSError) as exc:
            self.message.setText(f"{path.name} was not added: {exc}")
            return None
        await self.refresh()
        rows = self.inventory.rows if self.inventory is not None else []
        for index, row in enumerate(rows):
            if row.path and Path(row.path).name == added.name:
                self.table.selectRow(index)
        self.message.setText(
            f"{path.name} is added ({'linked' if link else 'copied'}): press Use for research to use it."
        )
        return added

    def download_selected(self, *, use_when_done: bool) -> None:
        row = self.selected_row()
        if row is None or row.source != "catalog" or self.inventory is None:
            return
        entry = self.inventory.catalog.get(row.catalog_id)
        if entry is None:
            return
        self.message.setText(f"Downloading {entry.name}; the window stays usable meanwhile.")
        self._downloads.download(entry, use_when_done=use_when_done)
        self._selection_changed()

    def pull_selected(self) -> None:
        row = self.selected_row()
        if row is None or not row.ollama_tag:
            return
        self.message.setText(f"Ollama is pulling {row.ollama_tag}.")
        self._downloads.pull(
            self._services.settings.model.ollama.host, row.ollama_tag, use_when_done=False
        )
        self._selection_changed()

    def cancel_selected_transfer(self) -> None:
        row = self.selected_row()
        keys = [k for k in (row.key if row else "", f"ollama:{row.ollama_tag}" if row else "") if k]
        running = [k for k in keys if self._downloads.busy(k)] or self._downloads.running()[:1]
        for key in running:
            self._downloads.cancel(key)

    def remove_selected(self) -> QMessageBox | None:
        row = self.selected_row()
        if row is None or not self.remove_button.isEnabled():
            return None
        where = "Ollama" if row.source == "ollama" else row.path
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Remove model",
            f"Delete {row.name}?\n{where}",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setObjectName("confirmRemove")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.accepted.connect(lambda: self._tasks.start(self.remove(row), "remove a model"))
        box.open()
        return box

    async def remove(self, row: ModelRow) -> None:
        from app.model_files.model_inventory import (
            delete_model_file,
            removable_file,
            settings_without,
        )

        try:
            if row.source == "ollama":
                from app.model_files.ollama_admin import delete_ollama_model

                await delete_ollama_model(self._services.settings.model.ollama.host, row.ollama_tag)
            else:
                path = removable_file(row, self._services.paths)
                await run_blocking(delete_model_file, path, name="delete a model file")
            new = settings_without(row, self._services.settings)
            if new is not self._services.settings:
                await self._services.save_settings(new)
                self.saved.emit(new)
        except (FathomError, OSError) as exc:
            self.message.setText(f"{row.name} was not removed: {exc}")
            return
        self.message.setText(f"{row.name} is removed.")
        await self.refresh()

    # -- progress ----------------------------------------------------------------------

    def _on_progress(self, transfer: Transfer) -> None:
        row = self.selected_row()
        if (
            row is None
            or transfer.key in (row.key, f"ollama:{row.ollama_tag}")
            or len(self._downloads.running()) == 1
        ):
            self._show_progress(transfer)

    def _show_progress(self, transfer: Transfer | None) -> None:
        for widget in self._progress_widgets:
            widget.setVisible(transfer is not None)
        if transfer is None:
            return
        self.progress.setRange(0, 1000 if transfer.total else 0)
        if transfer.total:
            self.progress.setValue(int(transfer.done * 1000 // transfer.total))
        self.progress_label.setText(transfer.text())

    def _on_finished(self, _key: str, message: str) -> None:
        self.message.setText(message)
        self._show_progress(None)
        self._tasks.start(self.refresh(), "list the models")

    def _on_failed(self, key: str, message: str) -> None:
        self._show_progress(None)
        self.message.setText(
            message or "Download cancelled; what was downloaded is kept and the next one resumes."
        )
        self._selection_changed()
