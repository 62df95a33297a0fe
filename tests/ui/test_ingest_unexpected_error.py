"""An indexing that ends on an error Fathom did not expect (a bug, not a bad file) must not
leave the window looking busy: the progress panel says it stopped and why, the task's
error box appears, and the library can index again. The real window and Library; only
the folder scan is made to fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import drop_paths, started_window
from PySide6.QtWidgets import QMessageBox

from app.ingest.pipeline import ingest_run
from app.ui.main_window import MainWindow

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture
def window(qtbot: Any, aloop: Any) -> Any:
    with started_window(qtbot) as win:
        yield win


def test_an_indexing_that_fails_unexpectedly_says_so_and_frees_the_library(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nSome words.\n")

    def broken_scan(*_args: Any, **_kwargs: Any) -> Any:
        raise ImportError("cannot import name 'x' from partially initialized module 'y'")

    monkeypatch.setattr(ingest_run, "scan", broken_scan)
    panel = window.library_panel
    with qtbot.waitSignal(panel.controller.failed, timeout=60_000) as failed:
        entered, dropped = drop_paths(panel.drop_zone, [folder])
        assert entered and dropped
    qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=10_000)
    message = failed.args[0]
    assert message.startswith(
        "Indexing stopped on an unexpected error (ImportError: cannot import name 'x'"
    )
    # the bar no longer spins: it says it stopped, with the reason under it
    progress = panel.ingest.progress
    assert (progress.minimum(), progress.maximum(), progress.format()) == (0, 1, "Stopped")
    assert panel.ingest.current_label.text() == message
    # the task's error box and the window's error list name it too
    qtbot.waitUntil(lambda: bool(window.errors), timeout=10_000)
    assert window.errors[-1].startswith("indexing: ImportError: cannot import name 'x'")
    boxes = [
        box
        for box in window.findChildren(QMessageBox)
        if box.objectName() == "errorBox" and box.isVisible()
    ]
    assert [box.windowTitle() for box in boxes] == ["Indexing failed"]
    # nothing stays locked: the same folder indexes once the scan works again
    monkeypatch.undo()
    assert panel.add_button.isEnabled()
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=600_000) as finished:
        drop_paths(panel.drop_zone, [folder])
    assert (finished.args[0].indexed, finished.args[0].failed) == (1, 0)
