"""The library panel with the real Library (Milvus Lite, Docling, ONNX embeddings):
drop a folder from the file manager, watch it index, manage collections."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import answer_confirmation, await_in_test, drop_paths, make_docs_folder, started_window
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QLineEdit

from app.ui.library_panel import KIND_ROLE, PATH_ROLE, LibraryPanel
from app.ui.main_window import MainWindow

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture
def window(qtbot: Any, aloop: Any) -> Any:
    with started_window(qtbot) as win:
        yield win


def test_dropping_a_folder_indexes_it_with_progress_and_failures(
    qtbot: Any, window: MainWindow, shared_data: Path, tmp_path: Path
) -> None:
    folder = make_docs_folder(shared_data, tmp_path / "Milvus Intro")
    panel = window.library_panel
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=600_000) as finished:
        entered, dropped = drop_paths(panel.drop_zone, [folder])
        assert entered and dropped
        assert (
            panel.controller.ingesting and panel.add_button.isEnabled()
        )  # more is queued while indexing
    result = finished.args[0]
    assert result.collection == "milvus_intro"
    assert (result.indexed, result.failed) == (5, 1)
    # progress reached 100 % and says so
    assert panel.ingest.progress.maximum() == 6 and panel.ingest.progress.value() == 6
    assert "done" in panel.ingest.progress.format()
    assert (
        panel.controller.last_progress is not None
        and panel.controller.last_progress.fraction == 1.0
    )
    # the broken file is listed with its reason
    assert panel.ingest.failures.isVisible() and panel.ingest.failures.count() == 1
    assert (
        panel.ingest.failures.item(0).text().startswith("broken.pdf: ")
        and len(panel.ingest.failures.item(0).text()) > 14
    )
    # the collection appears with the catalog's counts
    qtbot.waitUntil(lambda: panel.collection_index("milvus_intro").isValid(), timeout=10_000)
    library = window.services.library
    assert library is not None
    catalog = {c.name: c for c in await_in_test(qtbot, library.collections())}

    def counts_shown() -> (
        bool
    ):  # the row's counts grow while indexing; the last read of the list has them all
        documents = f"{catalog['milvus_intro'].documents:,}"
        return cell(panel, "milvus_intro", 1) == documents and not panel.model.updating

    qtbot.waitUntil(counts_shown, timeout=10_000)
    assert cell(panel, "milvus_intro", 1) == f"{catalog['milvus_intro'].documents:,}"
    assert cell(panel, "milvus_intro", 2) == f"{catalog['milvus_intro'].chunks:,}"
    assert catalog["milvus_intro"].chunks > 5
    docs = await_in_test(qtbot, library.documents("milvus_intro"))
    item = panel.collection_index("milvus_intro")
    assert panel.model.rowCount(item) == len(docs) == 6
    shown = {panel.model.index(row, 0, item).data(PATH_ROLE) for row in range(6)}
    assert shown == {
        doc.path for doc in docs
    }  # every document row names its file (the source viewer opens it)
    # the research panel offers the collection as a scope
    assert "milvus_intro" in window.research_panel._scope_actions
    assert panel.add_button.isEnabled() and not panel.ingest.stop_button.isEnabled()


def test_descriptions_rescan_and_removal(
    qtbot: Any, window: MainWindow, shared_data: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("overview.md", "limitations.md"):
        shutil.copy(shared_data / "milvus-docs" / "about" / name, folder / name)
    panel = window.library_panel
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=600_000) as first:
        entered, dropped = drop_paths(window, [folder])  # the whole window accepts drops too
        assert entered and dropped
    assert first.args[0].indexed == 2
    qtbot.waitUntil(lambda: panel.collection_index("notes").isValid(), timeout=10_000)
    library = window.services.library
    assert library is not None
    panel.tree.expand(panel.collection_index("notes"))

    # edit the description in place: the view's editor, opened by a double-click on the cell
    description = panel.collection_index("notes").siblingAtColumn(3)
    panel.tree.scrollTo(description)
    cell_rect = panel.tree.visualRect(description)
    qtbot.mouseClick(
        panel.tree.viewport(), Qt.MouseButton.LeftButton, pos=cell_rect.center()
    )  # as a mouse does:
    qtbot.mouseDClick(
        panel.tree.viewport(), Qt.MouseButton.LeftButton, pos=cell_rect.center()
    )  # a click first
    (editor,) = [e for e in panel.tree.viewport().findChildren(QLineEdit) if e.isVisible()]
    editor.setText("Milvus overview and limits")
    # saved (said once the catalog holds it), then the list reloaded; a reload of the
    # counts begun before the save may land first, so the signal to wait for is the save's
    with qtbot.waitSignal(
        panel.controller.statusMessage,
        timeout=10_000,
        check_params_cb=lambda text, _ms: text == "Saved the description of notes.",
    ):
        qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: cell(panel, "notes", 3) == "Milvus overview and limits", timeout=10_000)
    catalog = {c.name: c for c in await_in_test(qtbot, library.collections())}
    assert catalog["notes"].description == "Milvus overview and limits"
    assert panel.tree.isExpanded(panel.collection_index("notes"))  # the reload kept the row open

    # re-scan after a file changed and one was deleted
    (folder / "overview.md").write_text(
        "# Overview\n\nA changed page about Milvus.\n", encoding="utf-8"
    )
    (folder / "limitations.md").unlink()
    panel.select(panel.collection_index("notes"))
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=600_000) as rescanned:
        panel.rescan_button.click()
    assert rescanned.args[0].indexed == 1 and rescanned.args[0].removed == 1
    qtbot.waitUntil(lambda: documents_shown(panel, "notes") == ["overview.md"], timeout=10_000)
    assert panel.tree.isExpanded(panel.collection_index("notes"))

    # remove the document (confirmation first; Cancel keeps it)
    doc_row = panel.model.index(0, 0, panel.collection_index("notes"))
    assert doc_row.data(KIND_ROLE) == "document"
    panel.select(doc_row)
    panel.remove_button.click()
    assert "overview.md" in answer_confirmation(qtbot, panel, yes=False)
    qtbot.waitUntil(lambda: panel.remove_button.isEnabled(), timeout=10_000)
    assert len(await_in_test(qtbot, library.documents("notes"))) == 1
    assert documents_shown(panel, "notes") == ["overview.md"]
    panel.select(panel.model.index(0, 0, panel.collection_index("notes")))
    panel.remove_button.click()
    answer_confirmation(qtbot, panel, yes=True)
    qtbot.waitUntil(lambda: documents_shown(panel, "notes") == [], timeout=10_000)
    assert await_in_test(qtbot, library.documents("notes")) == []
    assert cell(panel, "notes", 1) == "0"

    # remove the collection
    panel.select(panel.collection_index("notes"))
    panel.remove_button.click()
    assert "notes" in answer_confirmation(qtbot, panel, yes=True)
    qtbot.waitUntil(lambda: not panel.collection_index("notes").isValid(), timeout=10_000)
    assert "notes" not in {c.name for c in await_in_test(qtbot, library.collections())}
    assert panel.model.rowCount() == 0


def cell(panel: LibraryPanel, collection: str, column: int) -> str:
    """What collection ``collection``'s row shows in ``column`` ("" when it is not listed)."""
    index = panel.collection_index(collection)
    return str(index.siblingAtColumn(column).data() or "") if index.isValid() else ""


def documents_shown(panel: LibraryPanel, collection: str) -> list[str]:
    """The file names of ``collection``'s document rows, in order."""
    parent = panel.collection_index(collection)
    if not parent.isValid():
        return []
    rows = (panel.model.index(row, 0, parent) for row in range(panel.model.rowCount(parent)))
    return [Path(index.data(PATH_ROLE)).name for index in rows if isinstance(index, QModelIndex)]
