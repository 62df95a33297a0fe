"""A followed collection whose folder goes away (an unplugged drive) says so in the library
tree — "work — folder offline", and why in its tooltip — while its documents stay listed and
searchable; the mark goes when the folder is back. A folder already away when the window
opens is marked from the start. The real window and Library, a real folder renamed away and
back; the watcher's periodic look is made short, and the test waits on the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import await_in_test, drive, drop_paths, started_window
from PySide6.QtCore import QModelIndex, Qt

from app.core.paths import app_paths
from app.core.settings import Settings
from app.ingest.library import Library
from app.ui.library_model import OFFLINE_ROLE
from app.ui.main_window import MainWindow

pytestmark = [pytest.mark.gui, pytest.mark.slow]

LOOK_S = 0.3  # the watcher's look for folders gone or back (5 s in the app)


def offline_sentence(folder: Path) -> str:
    return (
        f"The folder {folder} is not there (an unplugged drive or an offline network share?). "
        "Its documents are kept and searchable; Fathom picks the folder up again when it is back."
    )


def row(window: MainWindow, name: str) -> QModelIndex:
    return window.library_panel.model.collection_index(name)


def shown(window: MainWindow, name: str) -> str:
    index = row(window, name)
    return str(index.data()) if index.isValid() else ""


def found(qtbot: Any, window: MainWindow, collection: str, word: str) -> list[str]:
    library = window.services.library
    assert library is not None
    hits = await_in_test(
        qtbot, library.search([word], collections=[collection], mode="bm25", top_k=5)
    )[0]
    return sorted({h.chunk.path for h in hits if word in h.chunk.text})


def test_a_folder_unplugged_and_plugged_back_marks_its_collection_and_unmarks_it(
    qtbot: Any, aloop: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "Work"
    folder.mkdir()
    (folder / "minutes.txt").write_text(
        "The committee approved the lighthouse repairs.\n", encoding="utf-8"
    )
    with started_window(qtbot, watch_folders=True) as window:
        panel = window.library_panel
        controller = panel.controller
        controller.folders.recheck_s = LOOK_S
        with qtbot.waitSignal(controller.ingestFinished, timeout=300_000):
            drop_paths(panel.drop_zone, [folder])
        qtbot.waitUntil(lambda: controller.folders.watches("work"), timeout=30_000)
        qtbot.waitUntil(lambda: shown(window, "work") == "work", timeout=30_000)
        assert row(window, "work").data(OFFLINE_ROLE) is None

        away = tmp_path / "Work-unplugged"
        folder.rename(away)  # the drive is gone
        qtbot.waitUntil(lambda: shown(window, "work") == "work — folder offline", timeout=60_000)
        assert row(window, "work").data(OFFLINE_ROLE) == offline_sentence(folder)
        tooltip = row(window, "work").data(Qt.ItemDataRole.ToolTipRole)
        assert "is not there (an unplugged drive or an offline network share?)" in tooltip
        assert [d.path for d in panel.model.documents_of("work")] == [str(folder / "minutes.txt")]
        assert found(qtbot, window, "work", "lighthouse") == [str(folder / "minutes.txt")]

        away.rename(folder)  # plugged in again
        qtbot.waitUntil(lambda: shown(window, "work") == "work", timeout=60_000)
        assert row(window, "work").data(OFFLINE_ROLE) is None
        assert row(window, "work").data(Qt.ItemDataRole.ToolTipRole) is None
        assert found(qtbot, window, "work", "lighthouse") == [str(folder / "minutes.txt")]
        qtbot.waitUntil(lambda: not controller.ingesting, timeout=60_000)


async def ingest(folder: Path, collection: str) -> None:
    library = Library.open(Settings(), app_paths().ensure())
    try:
        async for _ in library.ingest([folder], collection):
            pass
    finally:
        await library.aclose()


def test_a_folder_away_when_the_window_opens_is_marked_from_the_start(
    qtbot: Any, aloop: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "Work"
    folder.mkdir()
    (folder / "minutes.txt").write_text(
        "The committee approved the lighthouse repairs.\n", encoding="utf-8"
    )
    drive(aloop, ingest(folder, "work"))
    (folder / "minutes.txt").rename(
        tmp_path / "minutes.txt"
    )  # an empty mount point: the drive is not on it

    with started_window(qtbot, watch_folders=True) as window:
        qtbot.waitUntil(lambda: shown(window, "work") == "work — folder offline", timeout=60_000)
        assert row(window, "work").data(OFFLINE_ROLE) == offline_sentence(folder)
        assert found(qtbot, window, "work", "lighthouse") == [str(folder / "minutes.txt")]
        qtbot.waitUntil(lambda: not window.library_panel.controller.ingesting, timeout=60_000)
