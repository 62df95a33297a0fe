"""The library panel keeps the library trustworthy: Repair finds and fixes drift between
the catalog and the search index, a collection built with another embedding model is
offered a re-index, and what a crash left half-done is finished and said at start.

Real parts: the Library on Milvus Lite and SQLite, Docling, MiniLM, widgets offscreen.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import answer_confirmation, await_in_test
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.core.ids import chunk_ids_of
from app.core.models import DocumentStatus
from app.core.paths import app_paths
from app.core.settings import Settings
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library
from app.ui.library_panel import LibraryPanel

pytestmark = [pytest.mark.gui, pytest.mark.slow]

FILES = ("about/limitations.md", "fragments/faq_normalize_embeddings.md")


class _Renamed:
    """The real MiniLM presented under another model name: what a change of the
    embedding model in Settings looks like to a collection."""

    def __init__(self, inner: OnnxMiniLMEmbedder) -> None:
        self.inner = inner
        self.model_name = "another-embedding-model"
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.tokenizer = inner.tokenizer

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def minilm() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture
def docs(tmp_path: Path, shared_data: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for rel in FILES:
        shutil.copy(shared_data / "milvus-docs" / rel, folder / Path(rel).name)
    return folder


def _close(qtbot: Any, panel: LibraryPanel, library: Library) -> None:
    """Let the panel's own tasks (a refresh after each change) end, then close the library."""
    qtbot.waitUntil(lambda: not panel._tasks.running(), timeout=60_000)
    panel.set_library(None)
    await_in_test(qtbot, library.aclose())


def _open(qtbot: Any, panel: LibraryPanel, embedder: Any) -> Library:
    library = Library.open(Settings(), app_paths().ensure(), embedder=embedder)
    panel.set_library(library)
    return library


def _index(qtbot: Any, panel: LibraryPanel, docs: Path) -> None:
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=300_000) as finished:
        panel.add_paths([docs])
    assert finished.args[0].indexed == len(FILES)
    # the collection is listed while it is indexed too: wait for the ingest itself to end
    qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=10_000)
    qtbot.waitUntil(lambda: panel.collection_index("notes").isValid(), timeout=10_000)


def _message_box(qtbot: Any, panel: LibraryPanel) -> QMessageBox:
    found: list[QMessageBox] = []

    def shown() -> bool:
        found[:] = [b for b in panel.findChildren(QMessageBox, "messageBox") if b.isVisible()]
        return bool(found)

    qtbot.waitUntil(shown, timeout=120_000)
    return found[0]


def test_repair_reembeds_lost_passages_and_says_what_it_fixed(
    qtbot: Any, panel: LibraryPanel, docs: Path, minilm: OnnxMiniLMEmbedder
) -> None:
    library = _open(qtbot, panel, minilm)
    try:
        _index(qtbot, panel, docs)
        doc = next(
            d
            for d in await_in_test(qtbot, library.documents("notes"))
            if d.path.endswith("limitations.md")
        )
        expected = chunk_ids_of(doc.doc_id, doc.chunk_count)
        library.store.delete_chunks(
            "notes", sorted(expected)[:4]
        )  # four passages vanish from the index
        library.store.flush("notes")

        assert panel.repair_button.isEnabled()
        qtbot.mouseClick(panel.repair_button, Qt.MouseButton.LeftButton)
        box = _message_box(qtbot, panel)
        assert box.text().startswith("Repaired 1 problem. The library is consistent")
        assert (
            f"limitations.md ('notes'): 4 of its {doc.chunk_count} passages are missing"
            in box.informativeText()
        )
        assert set(library.store.document_chunk_ids("notes", doc.doc_id)) == expected
        assert (
            panel.controller.last_repair is not None and panel.controller.last_repair[1].consistent
        )
        assert panel.repair_button.isEnabled() and panel.add_button.isEnabled()
    finally:
        _close(qtbot, panel, library)


def test_repair_on_a_consistent_library_says_so(
    qtbot: Any, panel: LibraryPanel, docs: Path, minilm: OnnxMiniLMEmbedder
) -> None:
    library = _open(qtbot, panel, minilm)
    try:
        _index(qtbot, panel, docs)
        panel.controller.repair()
        box = _message_box(qtbot, panel)
        assert box.text().startswith("The library is consistent: 1 collection, 2 indexed documents")
        assert box.informativeText() == "Nothing needed fixing."
    finally:
        _close(qtbot, panel, library)


def test_a_collection_built_with_another_model_is_offered_a_reindex(
    qtbot: Any, panel: LibraryPanel, docs: Path, minilm: OnnxMiniLMEmbedder
) -> None:
    library = _open(qtbot, panel, minilm)
    _index(qtbot, panel, docs)
    _close(qtbot, panel, library)

    renamed = _open(qtbot, panel, _Renamed(minilm))  # the embedding model changed since
    try:
        qtbot.waitUntil(lambda: panel.collection_index("notes").isValid(), timeout=10_000)
        assert [c.name for c in await_in_test(qtbot, renamed.collections_needing_reindex())] == [
            "notes"
        ]
        panel.select(panel.collection_index("notes"))
        with qtbot.waitSignal(panel.controller.ingestFinished, timeout=300_000) as finished:
            panel.rescan_action.trigger()  # refused: another model built it; Fathom offers to re-index
            question = answer_confirmation(qtbot, panel, yes=True)
            assert (
                question
                == "“notes” was built with another embedding model than the one in Settings."
            )
        assert finished.args[0].indexed == len(FILES)
        (collection,) = await_in_test(qtbot, renamed.collections())
        assert collection.embedding_model == "another-embedding-model"
        assert collection.documents == len(FILES)
        (hits,) = await_in_test(
            qtbot, renamed.search(["Milvus limits on collection names"], mode="dense")
        )
        assert hits and hits[0].chunk.path.endswith("limitations.md")
        assert await_in_test(qtbot, renamed.collections_needing_reindex()) == []
    finally:
        _close(qtbot, panel, renamed)


def test_what_a_crash_left_half_done_is_finished_and_said_at_start(
    qtbot: Any, panel: LibraryPanel, docs: Path, minilm: OnnxMiniLMEmbedder
) -> None:
    library = _open(qtbot, panel, minilm)
    _index(qtbot, panel, docs)
    doc = next(
        d
        for d in await_in_test(qtbot, library.documents("notes"))
        if d.path.endswith("limitations.md")
    )
    # as a kill between "chunks written" and "indexed" leaves it
    library.catalog.save_documents([replace(doc, status=DocumentStatus.WRITING)])
    _close(qtbot, panel, library)

    with qtbot.waitSignal(panel.controller.statusMessage, timeout=10_000) as said:
        reopened = _open(qtbot, panel, minilm)
    try:
        assert said.args[0] == (
            "Finished what an interrupted run left undone: 1 document whose indexing was cut short was completed."
        )
        again = next(
            d for d in await_in_test(qtbot, reopened.documents("notes")) if d.doc_id == doc.doc_id
        )
        assert again.status is DocumentStatus.INDEXED
    finally:
        _close(qtbot, panel, reopened)


@pytest.mark.skipif(
    __import__("app.store.milvus_connection", fromlist=["x"]).lite_major_version() >= 3,
    reason="the native Milvus Lite moves a 3.x index (Linux, macOS)",
)
def test_an_index_from_milvus_lite_3_is_moved_and_said_and_the_panel_lists_it(
    qtbot: Any, panel: LibraryPanel, minilm: OnnxMiniLMEmbedder
) -> None:
    import tarfile

    home = app_paths().data_dir.parent  # FATHOM_HOME: the archive holds data/…
    with tarfile.open(Path(__file__).parents[1] / "store" / "data" / "lite3-library.tar.gz") as tar:
        tar.extractall(
            home, filter="data"
        )  # a library an earlier Fathom wrote with Milvus Lite 3.x
    with qtbot.waitSignal(panel.controller.statusMessage, timeout=60_000) as said:
        library = _open(qtbot, panel, minilm)
    try:
        assert said.args[0].startswith(
            "Moved the search index to the native Milvus Lite: 3 chunks in 2 collections"
        )
        assert said.args[1] == 0  # it stays until replaced
        qtbot.waitUntil(lambda: panel.collection_index("quay").isValid(), timeout=10_000)
        (hits,) = await_in_test(
            qtbot, library.search(["when did the gantry crane arrive"], collections=["harbour"])
        )
        assert hits and hits[0].chunk.path.endswith("cranes.md")
    finally:
        _close(qtbot, panel, library)
