"""Watched folders in the window: a dropped folder is followed, so a file written into it
later is indexed and searchable without anyone pressing anything; a collection turned off
in its right-click menu is no longer followed; Settings turn following off and on. The real window and Library, a real
filesystem (inotify through watchdog); the test waits on the window's signals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import await_in_test, drop_paths, started_window
from PySide6.QtWidgets import QDialogButtonBox

from app.ui.main_window import MainWindow
from app.ui.settings_dialog import SettingsDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture
def window(qtbot: Any, aloop: Any) -> Any:
    with started_window(qtbot, watch_folders=True) as win:
        yield win


def found(qtbot: Any, window: MainWindow, word: str) -> list[str]:
    library = window.services.library
    assert library is not None
    hits = await_in_test(
        qtbot, library.search([word], collections=["logbook"], mode="bm25", top_k=5)
    )[0]
    return sorted({h.chunk.path for h in hits if word in h.chunk.text})


def test_a_file_written_into_a_dropped_folder_is_indexed_without_asking(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    panel = window.library_panel
    folder = tmp_path / "Logbook"
    folder.mkdir()
    (folder / "monday.txt").write_text(
        "Wind from the west; the harbour wall held.\n", encoding="utf-8"
    )
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=300_000):
        drop_paths(panel.drop_zone, [folder])
    qtbot.waitUntil(lambda: panel.controller.folders.watches("logbook"), timeout=30_000)

    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=120_000) as rescanned:
        (folder / "tuesday.txt").write_text(
            "A pod of narwhals passed the breakwater.\n", encoding="utf-8"
        )
    assert rescanned.args[0].indexed == 1 and rescanned.args[0].collection == "logbook"
    assert found(qtbot, window, "narwhals") == [str(folder / "tuesday.txt")]
    assert (
        "tuesday.txt" in panel.ingest.files.item(panel.ingest.files.count() - 1).text()
    )  # the list shows it

    qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=60_000)
    with qtbot.waitSignal(  # the status bar says what changed on disk
        panel.controller.statusMessage,
        check_params_cb=lambda text, ms: text == "Indexed logbook: 1 removed.",
        timeout=120_000,
    ):
        (folder / "monday.txt").unlink()
    assert found(qtbot, window, "harbour") == []

    qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=60_000)
    await_in_test(qtbot, panel.controller.set_watched("logbook", False))
    assert not panel.controller.folders.watches("logbook") and panel.watched["logbook"] is False
    qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=60_000)


def test_settings_turn_following_off_and_on(qtbot: Any, window: MainWindow, tmp_path: Path) -> None:
    controller = window.library_panel.controller
    qtbot.waitUntil(lambda: controller.folders.following, timeout=30_000)
    library = window.services.library
    assert library is not None

    def save(on: bool) -> None:
        dialog: SettingsDialog = await_in_test(qtbot, window.open_settings())
        assert dialog.watch_folders.isChecked() is not on
        dialog.watch_folders.setChecked(on)
        with qtbot.waitSignal(dialog.saved, timeout=5000):
            dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
        qtbot.waitUntil(lambda: library.settings.ingest.watch_folders is on, timeout=10_000)

    save(False)
    qtbot.waitUntil(lambda: not controller.folders.following, timeout=10_000)
    save(True)
    qtbot.waitUntil(lambda: controller.folders.following, timeout=10_000)
