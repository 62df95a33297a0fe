"""The library panel with the real Library (Milvus Lite, Docling, ONNX embeddings):
drop a folder from the file manager, watch it index, manage collections."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import answer_confirmation, await_in_test, drop_paths, make_docs_folder, started_window

from app.ui.library_panel import KIND_ROLE
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
        assert panel.controller.ingesting and not panel.add_button.isEnabled()  # busy while indexing
    result = finished.args[0]
    assert result.collection == "milvus_intro"
    assert (result.indexed, result.failed) == (5, 1)
    # progress reached 100 % and says so
    assert panel.ingest.progress.maximum() == 6 and panel.ingest.progress.value() == 6
    assert "done" in panel.ingest.progress.format()
    assert panel.controller.last_progress is not None and panel.controller.last_progress.fraction == 1.0
    # the broken file is listed with its reason
    assert panel.ingest.failures.isVisible() and panel.ingest.failures.count() == 1
    assert (
        panel.ingest.failures.item(0).text().startswith("broken.pdf: ")
        and len(panel.ingest.failures.item(0).text()) > 14
    )
    # the collection appears with the catalog's counts
    qtbot.waitUntil(lambda: panel.collection_item("milvus_intro") is not None, timeout=10_000)
    library = window.services.library
    assert library is not None
    catalog = {c.name: c for c in await_in_test(qtbot, library.collections())}

    def counts_shown() -> bool:  # the row added while indexing gets its counts from the next read of the list
        row = panel.collection_item("milvus_intro")
        return row is not None and row.text(1) != ""

    qtbot.waitUntil(counts_shown, timeout=10_000)
    item = panel.collection_item("milvus_intro")
    assert item is not None
    assert item.text(1) == f"{catalog['milvus_intro'].documents:,}"
    assert item.text(2) == f"{catalog['milvus_intro'].chunks:,}"
    assert catalog["milvus_intro"].chunks > 5
    docs = await_in_test(qtbot, library.documents("milvus_intro"))
    assert item.childCount() == len(docs) == 6
    # the research panel offers the collection as a scope
    assert "milvus_intro" in window.research_panel._scope_actions
    assert panel.add_button.isEnabled() and not panel.ingest.stop_button.isEnabled()


def test_descriptions_rescan_and_removal(qtbot: Any, window: MainWindow, shared_data: Path, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("overview.md", "limitations.md"):
        shutil.copy(shared_data / "milvus-docs" / "about" / name, folder / name)
    panel = window.library_panel
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=600_000) as first:
        entered, dropped = drop_paths(window, [folder])  # the whole window accepts drops too
        assert entered and dropped
    assert first.args[0].indexed == 2
    qtbot.waitUntil(lambda: panel.collection_item("notes") is not None, timeout=10_000)
    library = window.services.library
    assert library is not None

    # edit the description in place
    item = panel.collection_item("notes")
    assert item is not None
    with qtbot.waitSignal(panel.collectionsChanged, timeout=10_000):  # saved, then the list reloaded
        item.setText(3, "Milvus overview and limits")
    reloaded = panel.collection_item("notes")
    assert reloaded is not None and reloaded.text(3) == "Milvus overview and limits"
    catalog = {c.name: c for c in await_in_test(qtbot, library.collections())}
    assert catalog["notes"].description == "Milvus overview and limits"

    # re-scan after a file changed and one was deleted
    (folder / "overview.md").write_text("# Overview\n\nA changed page about Milvus.\n", encoding="utf-8")
    (folder / "limitations.md").unlink()
    item = panel.collection_item("notes")
    assert item is not None
    panel.tree.setCurrentItem(item)
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=600_000) as rescanned:
        panel.rescan_button.click()
    assert rescanned.args[0].indexed == 1 and rescanned.args[0].removed == 1
    qtbot.waitUntil(lambda: (panel.collection_item("notes") or item).childCount() == 1, timeout=10_000)

    # remove the document (confirmation first; Cancel keeps it)
    item = panel.collection_item("notes")
    assert item is not None
    doc_row = item.child(0)
    assert doc_row.data(0, KIND_ROLE) == "document"
    panel.tree.setCurrentItem(doc_row)
    panel.remove_button.click()
    assert "overview.md" in answer_confirmation(qtbot, panel, yes=False)
    qtbot.waitUntil(lambda: panel.remove_button.isEnabled(), timeout=10_000)
    assert len(await_in_test(qtbot, library.documents("notes"))) == 1
    item = panel.collection_item("notes")
    assert item is not None
    panel.tree.setCurrentItem(item.child(0))
    panel.remove_button.click()
    answer_confirmation(qtbot, panel, yes=True)
    qtbot.waitUntil(lambda: (panel.collection_item("notes") or item).childCount() == 0, timeout=10_000)
    assert await_in_test(qtbot, library.documents("notes")) == []

    # remove the collection
    item = panel.collection_item("notes")
    assert item is not None
    panel.tree.setCurrentItem(item)
    panel.remove_button.click()
    assert "notes" in answer_confirmation(qtbot, panel, yes=True)
    qtbot.waitUntil(lambda: panel.collection_item("notes") is None, timeout=10_000)
    assert "notes" not in {c.name for c in await_in_test(qtbot, library.collections())}
