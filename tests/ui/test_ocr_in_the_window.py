"""OCR in the window: a scanned PDF dropped on the library is read by OCR and says so
beside the document; turning OCR off in Settings restarts the converters, so the next
scan fails with a sentence saying to turn it on and an image is skipped. The real
window, the real Library (Milvus Lite, Docling, RapidOCR, ONNX embeddings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import await_in_test, drop_paths, started_window
from PySide6.QtWidgets import QDialogButtonBox
from scanned_files import image_pdf, rasterise, text_pdf

from app.core.paths import app_paths
from app.core.settings import load_settings
from app.ui.main_window import MainWindow
from app.ui.settings_dialog import SettingsDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture
def window(qtbot: Any, aloop: Any) -> Any:
    with started_window(qtbot) as win:
        yield win


def scanned_pdf(path: Path, line: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(image_pdf(rasterise(text_pdf(((line,),)))))
    return path


def document_note(window: MainWindow, collection: str, name: str) -> str:
    panel = window.library_panel
    item = panel.collection_index(collection)
    panel.tree.expand(item)
    model = item.model()
    for row in range(model.rowCount(item)):
        child = model.index(row, 0, item)
        if str(child.data()).endswith(name):
            return str(child.siblingAtColumn(3).data())
    raise AssertionError(f"{name} is not listed under {collection}")


def test_a_scan_is_read_by_ocr_until_settings_turn_it_off(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    panel = window.library_panel
    first = scanned_pdf(
        tmp_path / "Scans" / "tide.pdf", "The tide gauge at Veltmoor was read at six."
    )
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=300_000) as finished:
        drop_paths(panel.drop_zone, [first.parent])
    assert (finished.args[0].indexed, finished.args[0].failed) == (1, 0)
    qtbot.waitUntil(lambda: panel.collection_index("scans").isValid(), timeout=10_000)
    qtbot.waitUntil(
        lambda: document_note(window, "scans", "tide.pdf") == "read by OCR", timeout=10_000
    )

    dialog: SettingsDialog = await_in_test(qtbot, window.open_settings())
    assert dialog.ocr.isChecked()
    dialog.ocr.setChecked(False)
    with qtbot.waitSignal(dialog.saved, timeout=5000):
        dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    settings, _ = load_settings(app_paths().settings_file)
    assert settings.ingest.ocr is False
    library = window.services.library
    assert library is not None
    qtbot.waitUntil(
        lambda: library.settings.ingest.ocr is False, timeout=10_000
    )  # applied by a task

    second = scanned_pdf(tmp_path / "More" / "beacon.pdf", "A copper beacon was mounted in 1902.")
    rasterise(text_pdf((("A photo of the beacon.",),)))[0].save(second.parent / "beacon.png")
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=300_000) as finished:
        drop_paths(panel.drop_zone, [second.parent])
    result = finished.args[0]
    assert (result.indexed, result.skipped, result.failed) == (0, 1, 1)
    failure = panel.ingest.failures.item(0).text()
    assert (
        "beacon.pdf: No text could be extracted from this PDF; it is probably scanned images."
        in failure
    )
    assert "1 skipped (OCR turned off)" in panel.ingest.current_label.text()
    qtbot.waitUntil(
        lambda: not panel.controller.ingesting, timeout=60_000
    )  # its bookkeeping after the summary
