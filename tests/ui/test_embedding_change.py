"""Changing the embedding model in Settings: the library uses it at once, and the
collections built with the old one are named and offered a re-index (never searched
with vectors of another model)."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from helpers import answer_confirmation, await_in_test
from PySide6.QtWidgets import QDialogButtonBox

from app.core.errors import EmbeddingMismatch
from app.core.paths import app_paths
from app.core.settings import Settings
from app.ui.main_window import MainWindow
from app.ui.services import Services
from app.ui.settings_dialog import SettingsDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def window(qtbot: Any, aloop: Any, shared_data: Path, tmp_path: Path) -> Any:
    services = Services(Settings(), app_paths().ensure())
    win = MainWindow(services)
    qtbot.addWidget(win)
    win.show()
    library = await_in_test(qtbot, services.open_library(), 120_000)
    win.library_panel.set_library(library)
    folder = tmp_path / "notes"
    folder.mkdir()
    shutil.copy(shared_data / "milvus-docs" / "about" / "limitations.md", folder / "limitations.md")
    with qtbot.waitSignal(win.library_panel.controller.ingestFinished, timeout=300_000):
        win.library_panel.add_paths([folder])
    yield win
    qtbot.waitUntil(lambda: not win.library_panel.controller.ingesting, timeout=60_000)
    await_in_test(qtbot, win.shutdown(), 60_000)


def _save_embedding(qtbot: Any, window: MainWindow, url: str) -> None:
    dialog: SettingsDialog = await_in_test(qtbot, window.open_settings())
    dialog.embedding_backend.setCurrentIndex(dialog.embedding_backend.findData("openai"))
    dialog.embedding_model.setText("text-embedding-3-small")
    dialog.embedding_url.setText(url)
    with qtbot.waitSignal(dialog.saved, timeout=5000):
        dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()


def test_a_new_embedding_model_names_the_collections_to_reindex(
    qtbot: Any, window: MainWindow
) -> None:
    library = window.services.library
    assert library is not None
    _save_embedding(qtbot, window, f"http://127.0.0.1:{_closed_port()}/v1")

    question = answer_confirmation(qtbot, window, yes=False)
    assert question == (
        "1 collection was built with another embedding model than openai:text-embedding-3-small: “notes”."
    )
    assert (
        library.settings.embedding.model == "text-embedding-3-small"
    )  # in use at once, no restart
    with pytest.raises(EmbeddingMismatch, match="fathom reindex --collection notes"):
        await_in_test(qtbot, library.search(["collection name limits"], collections=["notes"]))
    (notes,) = await_in_test(qtbot, library.collections())
    assert (
        notes.embedding_model == "all-MiniLM-L6-v2-onnx-int8" and notes.documents == 1
    )  # untouched


def test_a_reindex_that_cannot_reach_the_new_model_says_why_and_changes_nothing(
    qtbot: Any, window: MainWindow
) -> None:
    library = window.services.library
    assert library is not None
    _save_embedding(qtbot, window, f"http://127.0.0.1:{_closed_port()}/v1")

    answer_confirmation(qtbot, window, yes=True)
    panel = window.library_panel
    qtbot.waitUntil(
        lambda: "could not embed text" in panel.ingest.current_label.text(), timeout=60_000
    )
    assert (
        "choose another embedding back end, model or server address in Settings"
        in panel.ingest.current_label.text()
    )
    qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=60_000)
    (notes,) = await_in_test(qtbot, library.collections())
    assert notes.embedding_model == "all-MiniLM-L6-v2-onnx-int8" and notes.documents == 1
    assert await_in_test(qtbot, library.check()).consistent
