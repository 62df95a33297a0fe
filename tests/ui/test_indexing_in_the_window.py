"""While a folder is being indexed, the library shows how far (greyed row,
"Indexing — 2 of 5 documents"); at its end the summary counts the skipped files
and says why, with every skipped file in its tooltip. The real window, the real
Library (Milvus Lite, Docling for the PDF, ONNX embeddings)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
from helpers import answer_confirmation, drop_paths, make_docs_folder, started_window
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

from app.ingest.folder_size import ASK_ABOVE_FILES
from app.ingest.indexing_state import IndexingState
from app.ui.library_panel import INDEXING_ROLE
from app.ui.main_window import MainWindow

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture
def window(qtbot: Any, aloop: Any) -> Any:
    with started_window(qtbot) as win:
        yield win


def test_a_collection_being_indexed_shows_how_far_and_the_summary_counts_skipped_files(
    qtbot: Any, window: MainWindow, shared_data: Path, tmp_path: Path
) -> None:
    folder = make_docs_folder(
        shared_data, tmp_path / "Milvus Intro", broken=False
    )  # 4 pages and a PDF
    (folder / "song.mp3").write_bytes(b"ID3")
    (folder / "tool.exe").write_bytes(b"MZ")
    panel = window.library_panel
    seen: list[tuple[list[IndexingState], str, bool, str]] = []

    def look(
        states: list[IndexingState],
    ) -> None:  # after the panel's own slot: what the row shows now
        item = panel.collection_index("milvus_intro")
        if item.isValid():
            brush = item.data(Qt.ItemDataRole.ForegroundRole)
            greyed = brush is not None and brush.color() == panel.palette().color(
                QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text
            )
            seen.append((states, item.data(), greyed, item.data(Qt.ItemDataRole.ToolTipRole)))

    panel.controller.indexingChanged.connect(look)
    with qtbot.waitSignal(panel.controller.ingestFinished, timeout=600_000) as finished:
        entered, dropped = drop_paths(panel.drop_zone, [folder])
        assert entered and dropped
    result = finished.args[0]
    assert (result.indexed, result.skipped, result.failed) == (5, 2, 0)

    counted = [
        (states, text, greyed, tip)
        for states, text, greyed, tip in seen
        if states and states[0].expected
    ]
    assert counted, f"the row never showed the indexing: {seen}"
    for states, text, greyed, tip in counted:
        (state,) = states
        assert state.collection == "milvus_intro" and 0 <= state.searchable <= state.expected <= 7
        assert text == f"milvus_intro — Indexing — {state.searchable} of {state.expected} documents"
        assert greyed and "a research run over it says its results are partial" in tip
    assert any(states[0].searchable < (states[0].expected or 0) for states, *_ in counted)

    # the end: the row is the collection again, with the catalog's counts
    qtbot.waitUntil(lambda: not panel.controller.indexing, timeout=10_000)
    qtbot.waitUntil(lambda: panel.collection_index("milvus_intro").siblingAtColumn(1).data() == "5")
    item = panel.collection_index("milvus_intro")
    assert item.data() == "milvus_intro" and not item.data(INDEXING_ROLE)
    assert item.data(Qt.ItemDataRole.ForegroundRole) is None
    assert "partial" not in str(item.data(Qt.ItemDataRole.ToolTipRole))

    summary = panel.ingest.current_label
    assert (
        "5 files indexed, 0 unchanged, 2 skipped (not a format Fathom reads), 0 failed"
        in summary.text()
    )
    details = html.unescape(summary.toolTip())  # a plain-text tooltip, escaped
    assert "Milvus Intro/song.mp3: Fathom does not read '.mp3' files." in details
    assert "Milvus Intro/tool.exe: Fathom does not read '.exe' files." in details


def test_stop_is_said_at_once_and_done_within_two_seconds(
    qtbot: Any, window: MainWindow, shared_data: Path
) -> None:
    """A real ingest of the Milvus docs (270 files): Stop says "Stopping…" at once and
    cannot be pressed twice; the indexing has stopped 2 s later; until the rate rests on a
    few files the time left is "estimating…", not a guess."""
    panel = window.library_panel
    formats: list[str] = []
    panel.controller.ingestEvent.connect(
        lambda _event: formats.append(panel.ingest.progress.format())
    )
    entered, dropped = drop_paths(panel.drop_zone, [shared_data / "milvus-docs"])
    assert entered and dropped
    qtbot.waitUntil(
        lambda: (
            panel.controller.last_progress is not None
            and panel.controller.last_progress.done_files >= 3
        ),
        timeout=300_000,
    )
    assert any("ETA estimating…" in shown for shown in formats), formats[:20]

    def counted() -> bool:  # the collection's row counts what is stored, while indexing
        index = panel.collection_index("milvus_docs")
        documents = (
            str(index.siblingAtColumn(1).data() or "").replace(",", "") if index.isValid() else ""
        )
        chunks = (
            str(index.siblingAtColumn(2).data() or "").replace(",", "") if index.isValid() else ""
        )
        return documents.isdigit() and int(documents) > 0 and chunks.isdigit() and int(chunks) > 0

    qtbot.waitUntil(counted, timeout=60_000)
    assert panel.controller.ingesting
    panel.ingest.stop_button.click()
    assert (
        panel.ingest.progress.format() == "Stopping…" and not panel.ingest.stop_button.isEnabled()
    )
    qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=2_000)
    assert (
        panel.ingest.progress.format().startswith("Stopped")
        and not panel.ingest.stop_button.isEnabled()
    )


def test_a_folder_added_while_another_indexes_waits_its_turn(
    qtbot: Any, window: MainWindow, shared_data: Path, tmp_path: Path
) -> None:
    first = make_docs_folder(shared_data, tmp_path / "Milvus Intro", broken=False)
    second = tmp_path / "notes"
    second.mkdir()
    (second / "kelp.md").write_text(
        "# Kelp\n\nKelp forests grow up to half a metre a day.\n", encoding="utf-8"
    )
    panel = window.library_panel
    done: list[str] = []
    panel.controller.ingestFinished.connect(lambda finished: done.append(finished.collection))
    entered, dropped = drop_paths(panel.drop_zone, [first])
    assert entered and dropped and panel.controller.ingesting
    assert panel.add_button.isEnabled()  # not greyed for the whole indexing
    entered, dropped = drop_paths(panel.drop_zone, [second])
    assert entered and dropped and len(panel.controller.queued) == 1  # queued, not refused
    qtbot.waitUntil(lambda: done == ["milvus_intro", "notes"], timeout=600_000)
    qtbot.waitUntil(lambda: panel.collection_index("notes").isValid(), timeout=10_000)
    assert panel.controller.queued == []


@pytest.mark.parametrize("case", ["home folder", "thousands of files"])
def test_a_home_folder_or_thousands_of_files_are_indexed_only_when_the_user_says_so(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    folder = tmp_path / "everything"
    folder.mkdir()
    if case == "home folder":
        (folder / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
        monkeypatch.setenv("HOME", str(folder))
    else:
        for i in range(ASK_ABOVE_FILES + 1):
            (folder / f"n{i}.txt").write_text("x\n", encoding="utf-8")
    panel = window.library_panel
    entered, dropped = drop_paths(panel.drop_zone, [folder])
    assert entered and dropped
    question = answer_confirmation(qtbot, window, yes=False)
    said = "your home folder" if case == "home folder" else f"{ASK_ABOVE_FILES + 1:,} files"
    assert question.startswith("Index ") and said in question, question
    qtbot.waitUntil(lambda: not panel.controller.ingesting, timeout=10_000)
    assert not panel.collection_index("everything").isValid()  # nothing indexed, no collection made
