"""The settings dialog: back end and model (the list fetched from the server),
endpoints, embedding model, Milvus URI, research budgets; the data dir shown.

Saving writes the settings file atomically, off the loop; an API key goes to
the OS keyring, never to the file (see :mod:`app.ui.settings_form`). The
keyring is asked in an executor (it may block); the dialog says whether a
keyring exists and whether it holds a key.

Its length is one form's: a field and a row per setting, in three tabs, and
the one function that reads them back; splitting it would scatter one form.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import FathomError
from app.core.paths import AppPaths
from app.core.settings import (
    EmbeddingSettings,
    LlamaCppSettings,
    ModelSettings,
    OllamaSettings,
    OpenAISettings,
    ResearchSettings,
    Settings,
    StoreSettings,
    UiSettings,
)
from app.llm.keys import keyring_state, milvus_token_state, set_milvus_token
from app.store.milvus_connection import is_server_uri
from app.ui.key_field import ApiKeyField, KeySaver, StateReader
from app.ui.research_panel import MODES
from app.ui.settings_form import SettingsForm, SettingsWriter
from app.ui.tasks import TaskKeeper

ModelLister = Callable[[Settings, str], Awaitable[list[str]]]

BACKENDS = {
    "auto": "Automatic (Ollama if running, else llama.cpp)",
    "llamacpp": "llama.cpp (in-process, a GGUF file)",
    "ollama": "Ollama",
    "openai": "OpenAI-compatible server",
}


def _combo(items: dict[str, str], current: str) -> QComboBox:
    combo = QComboBox()
    for key, label in items.items():
        combo.addItem(label, key)
    combo.setCurrentIndex(max(0, combo.findData(current)))
    return combo


def _check(text: str, name: str, checked: bool, tip: str) -> QCheckBox:
    box = QCheckBox(text)
    box.setObjectName(name)
    box.setChecked(checked)
    box.setToolTip(tip)
    return box


def _spin(low: int, high: int, value: int, step: int = 1) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setSingleStep(step)
    spin.setValue(max(low, min(high, value)))
    spin.setGroupSeparatorShown(True)
    return spin


class SettingsDialog(SettingsForm):
    """Edits a copy of the settings; :attr:`saved` carries the new settings."""

    def __init__(
        self,
        settings: Settings,
        paths: AppPaths,
        list_models: ModelLister,
        save: SettingsWriter,
        save_key: KeySaver,
        tasks: TaskKeeper,
        parent: QWidget | None = None,
        *,
        read_key_state: StateReader = keyring_state,
        open_models: Callable[[], object] | None = None,
        read_token_state: StateReader = milvus_token_state,
        save_token: KeySaver = set_milvus_token,
    ) -> None:
        """``open_models`` opens the model manager (Settings closes first, so its fields
        never overwrite the model the manager chose). ``read_token_state``/``save_token``:
        the Milvus server token's keyring, as ``read_key_state``/``save_key`` the API key's."""
        super().__init__(tasks, save, read_key_state, save_key, parent)
        self.token_field = ApiKeyField(tasks, read_token_state, save_token)
        self.token_field.edit.setObjectName("milvusToken")
        self.token_field.status.setObjectName("milvusTokenStatus")
        self._checked_milvus_uri: str | None = None
        self._open_models = open_models
        self.setWindowTitle("Fathom settings")
        self.setObjectName("settingsDialog")
        self.resize(620, 520)
        self._settings = settings
        self._list_models = list_models
        self._checked_url = settings.model.openai.base_url
        self.fetch_status = QLabel("")
        self.fetch_status.setWordWrap(True)
        tabs = QTabWidget()
        tabs.addTab(self._model_tab(settings.model), "Model")
        tabs.addTab(self._library_tab(settings, paths), "Library")
        tabs.addTab(self._research_tab(settings.research, settings.ui), "Research")
        layout = QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        self.key_field.check(settings.model.openai.base_url)
        self._milvus_uri_edited()

    # -- tabs -------------------------------------------------------------
    def _model_tab(self, m: ModelSettings) -> QWidget:
        tab = QWidget()
        self.backend = _combo(BACKENDS, m.backend)
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setValue(m.temperature)
        self.timeout = _spin(5, 3600, int(m.timeout_s))

        self.gguf = QLineEdit(m.llamacpp.model_path)
        self.gguf.setPlaceholderText("empty: the starter model (SmolLM2-135M)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse_gguf)
        gguf_row = QHBoxLayout()
        gguf_row.addWidget(self.gguf, 1)
        gguf_row.addWidget(browse)
        self.n_ctx = _spin(512, 262_144, m.llamacpp.n_ctx, 1024)
        self.n_threads = _spin(0, 256, m.llamacpp.n_threads)
        self.n_threads.setSpecialValueText("all cores")
        llama = QGroupBox("llama.cpp")
        f = QFormLayout(llama)
        f.addRow("GGUF file", gguf_row)
        f.addRow("Context", self.n_ctx)
        f.addRow("Threads", self.n_threads)

        self.ollama_host = QLineEdit(m.ollama.host)
        self.ollama_model, row = self._model_picker(
            "ollama", m.ollama.model, "ollamaModel", "fetchOllama"
        )
        ollama = QGroupBox("Ollama")
        f = QFormLayout(ollama)
        f.addRow("Host", self.ollama_host)
        f.addRow("Model", row)

        self.openai_url = QLineEdit(m.openai.base_url)
        self.openai_url.setPlaceholderText("http://127.0.0.1:8080/v1")
        self.openai_model, row = self._model_picker(
            "openai", m.openai.model, "openaiModel", "fetchOpenAI"
        )
        self.api_key = self.key_field.edit
        self.openai_url.editingFinished.connect(self._url_edited)
        openai = QGroupBox(
            "OpenAI-compatible endpoint (data leaves this machine if the server is remote)"
        )
        f = QFormLayout(openai)
        f.addRow("Base URL", self.openai_url)
        f.addRow("Model", row)
        f.addRow("API key", self.key_field)

        manage = QPushButton("Models… (download, choose, remove)")
        manage.setObjectName("openModels")
        manage.setToolTip(
            "The models on this machine and the recommended ones; closes Settings without saving"
        )
        manage.setEnabled(self._open_models is not None)
        manage.clicked.connect(self._to_models)
        self.catalog = QLineEdit(self._settings.models.catalog)
        self.catalog.setObjectName("modelCatalog")
        self.catalog.setPlaceholderText("empty: the built-in catalog")
        self.catalog.setToolTip(
            "The recommended-models catalog: a JSON file or an http(s) URL (an organisation's mirror); "
            "a URL is fetched only when you press Refresh in Models…"
        )
        form = QFormLayout()
        form.addRow("", manage)
        form.addRow("Model catalog", self.catalog)
        form.addRow("Back end", self.backend)
        form.addRow("Temperature", self.temperature)
        form.addRow("Timeout (s)", self.timeout)
        layout = QVBoxLayout(tab)
        layout.addLayout(form)
        layout.addWidget(llama)
        layout.addWidget(ollama)
        layout.addWidget(openai)
        layout.addWidget(self.fetch_status)
        layout.addStretch(1)
        return tab

    def _to_models(self) -> None:
        if self._open_models is not None:
            self.reject()
            self._open_models()

    def _model_picker(
        self, backend: str, current: str, name: str, fetch_name: str
    ) -> tuple[QComboBox, QHBoxLayout]:
        """An editable model name with a button that fetches the server's list into it."""
        combo = QComboBox()
        combo.setEditable(True)
        combo.setObjectName(name)
        combo.setCurrentText(current)
        fetch = QPushButton("Fetch list")
        fetch.setObjectName(fetch_name)
        fetch.clicked.connect(lambda: self._fetch(backend, combo, fetch))
        row = QHBoxLayout()
        row.addWidget(combo, 1)
        row.addWidget(fetch)
        return combo, row

    def _library_tab(self, s: Settings, paths: AppPaths) -> QWidget:
        tab = QWidget()
        self.embedding_backend = _combo(
            {
                "onnx": "Built-in (all-MiniLM-L6-v2, offline)",
                "ollama": "Ollama",
                "openai": "OpenAI-compatible",
            },
            s.embedding.backend,
        )
        self.embedding_model = QLineEdit(s.embedding.model)
        self.embedding_model.setToolTip(
            "For Ollama or an OpenAI-compatible server: its embedding model's name"
        )
        self.embedding_url = QLineEdit(s.embedding.base_url)
        self.embedding_url.setObjectName("embeddingUrl")
        self.embedding_url.setPlaceholderText("empty: the model server above")
        self.embedding_url.setToolTip(
            "The Ollama host or OpenAI-compatible base URL that serves the embedding model"
        )
        self.milvus_uri = QLineEdit(s.store.milvus_uri)
        self.milvus_uri.setPlaceholderText(f"empty: Milvus Lite in {paths.milvus_file}")
        self.milvus_uri.setToolTip(
            "A file path means Milvus Lite; http://host:19530 a Milvus server"
        )
        self.milvus_uri.editingFinished.connect(self._milvus_uri_edited)
        self.milvus_token = self.token_field.edit
        self.token_field.setToolTip(
            "A Milvus server's credentials (user:password, or an API key), kept in the OS keyring "
            "under the Milvus URI, never in the settings file"
        )
        self.chunk_tokens = _spin(64, 4096, s.ingest.chunk_max_tokens, 32)
        self.max_file_mb = _spin(1, 10_000, s.ingest.max_file_mb)
        self.memory_per_file = _spin(256, 65_536, s.ingest.memory_per_file_mb, 256)
        self.memory_per_file.setToolTip(
            "The memory one file may take while it is read. Past it, the file is skipped with a reason "
            "(a decompression bomb, a damaged file) and the rest of the folder goes on."
        )
        self.seconds_per_file = _spin(10, 86_400, s.ingest.seconds_per_file, 30)
        self.seconds_per_file.setToolTip(
            "The time one file may take to read, plus 10 s per MB of file and per page OCR reads. "
            "Past it, the file is skipped with a reason and the rest of the folder goes on."
        )
        self.ocr = _check(
            "Read scanned PDF pages and images (OCR)",
            "ocr",
            s.ingest.ocr,
            "Text is read from the pixels of PDF pages without a text layer and of image files "
            "(PNG, JPEG, TIFF, …), offline. Slow on a CPU: a few seconds a page.",
        )
        self.links_outside = _check(
            "Follow links outside the folder",
            "followLinksOutside",
            s.ingest.follow_links_outside,
            "A symbolic link in a folder you add that points to a file or folder elsewhere is read only "
            "when this is on; otherwise it is listed as not followed",
        )
        self.watch_folders = _check(
            "Follow changes in the collections' folders",
            "watchFolders",
            s.ingest.watch_folders,
            "New, changed, renamed and deleted files are indexed as they happen, and what changed while "
            "Fathom was closed at start-up (a collection can be turned off in its right-click menu)",
        )
        data_dir = self._data_dir = QLabel(str(paths.data_dir))
        data_dir.setObjectName("dataDir")
        data_dir.setTextInteractionFlags(data_dir.textInteractionFlags() | _selectable())
        settings_file = QLabel(str(paths.settings_file))
        settings_file.setTextInteractionFlags(_selectable())
        form = QFormLayout(tab)
        form.addRow("Embeddings", self.embedding_backend)
        form.addRow("Embedding model", self.embedding_model)
        form.addRow("Embedding server", self.embedding_url)
        form.addRow("Milvus URI", self.milvus_uri)
        form.addRow("Milvus token", self.token_field)
        form.addRow("Chunk size (tokens)", self.chunk_tokens)
        form.addRow("Largest file (MB)", self.max_file_mb)
        form.addRow("Memory per file (MB)", self.memory_per_file)
        form.addRow("Seconds per file", self.seconds_per_file)
        form.addRow("OCR", self.ocr)
        form.addRow("Folders", self.watch_folders)
        form.addRow("Links", self.links_outside)
        form.addRow("Data folder", data_dir)
        form.addRow("Settings file", settings_file)
        note = QLabel(
            "A new embedding model is used at once; collections built with another one are offered a "
            "re-index (they cannot be searched until then). A new Milvus URI takes effect after a restart."
        )
        note.setWordWrap(True)
        form.addRow(note)
        return tab

    def _research_tab(self, r: ResearchSettings, ui: UiSettings) -> QWidget:
        tab = QWidget()
        self.mode = _combo({k: k for k in MODES}, r.mode)
        self.max_rounds = _spin(1, 20, r.max_rounds)
        self.max_subqueries = _spin(1, 16, r.max_subqueries)
        self.max_search_calls = _spin(1, 500, r.max_search_calls)
        self.max_tokens = _spin(1000, 2_000_000, r.max_tokens, 5000)
        self.max_seconds = _spin(10, 14_400, int(r.max_seconds), 30)
        self.max_concurrent = _spin(1, 16, r.max_concurrent_calls)
        self.top_k = _spin(1, 50, r.top_k)
        self.theme = _combo(
            {"system": "Follow the system", "light": "Light", "dark": "Dark"}, ui.theme
        )
        form = QFormLayout(tab)
        form.addRow("Default mode", self.mode)
        form.addRow("Rounds", self.max_rounds)
        form.addRow("Sub-queries per round", self.max_subqueries)
        form.addRow("Search calls", self.max_search_calls)
        form.addRow("Tokens", self.max_tokens)
        form.addRow("Seconds", self.max_seconds)
        form.addRow("Concurrent model calls", self.max_concurrent)
        form.addRow("Chunks per search (top-k)", self.top_k)
        form.addRow("Appearance", self.theme)
        return tab

    def data_dir_label(self) -> QLabel:
        return self._data_dir

    # -- actions ----------------------------------------------------------
    def _browse_gguf(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Choose a GGUF model", "", "GGUF models (*.gguf)"
        )
        if path:
            self.gguf.setText(path)

    def _fetch(self, backend: str, combo: QComboBox, button: QPushButton) -> None:
        self._tasks.start(self.fetch_models(backend, combo, button), f"list {backend} models")

    async def fetch_models(self, backend: str, combo: QComboBox, button: QPushButton) -> None:
        button.setEnabled(False)
        self.fetch_status.setText(f"Asking the {backend} server for its models…")
        try:
            names = await self._list_models(self.settings(), backend)
        except FathomError as exc:
            self.fetch_status.setText(str(exc))
            return
        finally:
            button.setEnabled(True)
        current = combo.currentText()
        combo.clear()
        combo.addItems(names)
        combo.setCurrentText(current if current in names or not names else names[0])
        self.fetch_status.setText(
            f"{len(names)} models on the server." if names else "The server has no models."
        )

    def settings(self) -> Settings:
        """The settings as the dialog shows them now."""
        s = self._settings
        model = ModelSettings(
            backend=self.backend.currentData(),  # one of the choices it was filled with
            temperature=round(self.temperature.value(), 3),
            timeout_s=float(self.timeout.value()),
            llamacpp=dataclasses.replace(
                s.model.llamacpp,
                model_path=self.gguf.text().strip(),
                n_ctx=self.n_ctx.value(),
                n_threads=self.n_threads.value(),
            )
            if isinstance(s.model.llamacpp, LlamaCppSettings)
            else LlamaCppSettings(),
            ollama=OllamaSettings(
                host=self.ollama_host.text().strip() or OllamaSettings().host,
                model=self.ollama_model.currentText().strip(),
                think=s.model.ollama.think,
            ),
            openai=OpenAISettings(
                base_url=self.openai_url.text().strip(),
                model=self.openai_model.currentText().strip(),
            ),
        )
        return dataclasses.replace(
            s,
            model=model,
            models=dataclasses.replace(s.models, catalog=self.catalog.text().strip()),
            embedding=EmbeddingSettings(
                backend=self.embedding_backend.currentData(),
                model=self.embedding_model.text().strip() or EmbeddingSettings().model,
                base_url=self.embedding_url.text().strip(),
                batch_size=s.embedding.batch_size,
            ),
            store=StoreSettings(milvus_uri=self.milvus_uri.text().strip()),
            ingest=dataclasses.replace(
                s.ingest,
                chunk_max_tokens=self.chunk_tokens.value(),
                max_file_mb=self.max_file_mb.value(),
                memory_per_file_mb=self.memory_per_file.value(),
                seconds_per_file=self.seconds_per_file.value(),
                ocr=self.ocr.isChecked(),
                watch_folders=self.watch_folders.isChecked(),
                follow_links_outside=self.links_outside.isChecked(),
            ),
            research=ResearchSettings(
                mode=self.mode.currentData(),
                max_rounds=self.max_rounds.value(),
                max_subqueries=self.max_subqueries.value(),
                max_search_calls=self.max_search_calls.value(),
                max_tokens=self.max_tokens.value(),
                max_seconds=float(self.max_seconds.value()),
                max_concurrent_calls=self.max_concurrent.value(),
                top_k=self.top_k.value(),
            ),
            ui=dataclasses.replace(s.ui, theme=self.theme.currentData()),
        )

    def _url_edited(self) -> None:
        url = self.openai_url.text().strip()
        if self.key_field.state is None or url != self._checked_url:
            self._checked_url = url
            self.key_field.check(url)

    def _milvus_uri_edited(self) -> None:
        """A server URI gets the token field (its keyring state read off the loop); Milvus Lite needs none."""
        uri = self.milvus_uri.text().strip()
        if uri == self._checked_milvus_uri:
            return
        self._checked_milvus_uri = uri
        if is_server_uri(uri):
            self.token_field.check(uri)
        else:
            self.token_field.not_needed("Milvus Lite (a file on this computer) needs no token.")

    def save(self) -> None:
        """Save (off the loop); with a typed API key or Milvus token, store it first and
        save only if the keyring kept it."""
        new = self.settings()
        if self.api_key.text() and not new.model.openai.base_url:
            self.error.setText(
                "Settings not saved: an API key needs the endpoint's base URL. Fill in the Base URL."
            )
            return
        uri = new.store.milvus_uri
        if self.milvus_token.text() and not is_server_uri(uri):
            self.error.setText(
                "Settings not saved: a token is for a Milvus server. Fill in its URI (http://host:19530)."
            )
            return
        tokens = [(self.token_field, uri)] if self.milvus_token.text() else []
        self.start_saving(new, new.model.openai.base_url if self.api_key.text() else None, tokens)

    def written(self, new: Settings) -> None:
        self._settings = new

    def busy_widgets(self) -> list[QWidget]:
        return [self.openai_url]


def _selectable():  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt

    return Qt.TextInteractionFlag.TextSelectableByMouse
