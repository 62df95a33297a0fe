"""The research panel, report and history with the real engine, the real
Library (Milvus Lite + Docling) and the real starter model (llama.cpp)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    await_in_test,
    fill_research_panel,
    make_docs_folder,
    real_window,
    run_to_the_end,
)
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QTextCursor

from app.core.events import (
    ChunkJudged,
    Finished,
    RoundStarted,
    SearchFinished,
    SubQueryPlanned,
    UsageUpdated,
)
from app.core.settings import Settings
from app.research.tree import chunk_node_id
from app.ui.main_window import MainWindow

pytestmark = [pytest.mark.gui, pytest.mark.slow]

QUESTION = "What is Milvus Lite and how is it installed?"


@pytest.fixture(scope="module")
def window(
    qapp: Any, qloop: Any, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    home = tmp_path_factory.mktemp("research-window")
    folder = make_docs_folder(shared_data, home / "docs", broken=False)
    # keep runs short with the tiny model: a short report, one round
    with real_window(
        qloop, home, [folder], "milvus", run_options={"report_max_tokens": 120}
    ) as win:
        yield win


def _configure(win: MainWindow, mode: str, rounds: int, queries: int) -> None:
    """Every field a run reads, so that no test depends on what an earlier one left in the
    panel (reopening a run from History restores its budget and collections)."""
    panel = win.research_panel
    defaults = Settings().research
    fill_research_panel(panel, QUESTION, mode, rounds=rounds, subqueries=queries, top_k=3)
    panel.max_tokens.setValue(defaults.max_tokens)
    panel.max_minutes.setValue(max(1, round(defaults.max_seconds / 60)))


def _expected_insert_order(events: list[Any]) -> list[str]:
    order: list[str] = []
    for event in events:
        if isinstance(event, (RoundStarted, SubQueryPlanned)):
            order.append(event.node_id)
        elif isinstance(event, SearchFinished):
            order += [chunk_node_id(event.node_id, hit.chunk.chunk_id) for hit in event.hits]
    return order


def test_a_question_runs_live_and_its_citations_open_the_source(
    qtbot: Any, aloop: Any, window: MainWindow
) -> None:
    _configure(window, "quick", rounds=1, queries=1)
    model = window.tree_model
    states_at_insert: list[str] = []
    model.rowsInserted.connect(lambda *_: states_at_insert.append(window.presenter.state))
    with qtbot.waitSignal(window.presenter.finished, timeout=600_000) as done:
        window.research_panel.run_button.click()
        assert not window.research_panel.run_button.isEnabled()
        assert window.research_panel.stop_button.isEnabled()
    final = done.args[0]
    assert isinstance(final, Finished), final
    qtbot.waitUntil(lambda: not window.runs.running, timeout=10_000)
    assert window.research_panel.run_button.isEnabled()

    # the tree grew while the run was going, in the order of the events
    assert "running" in states_at_insert
    events = window.presenter.events
    expected = _expected_insert_order(events)
    inserted = [node_id for node_id in model.inserted_ids if node_id in set(expected)]
    assert inserted == expected and len(expected) >= 3
    kinds = [kind for _, kind, _, _ in model.shape()]
    assert "round" in kinds and "subquery" in kinds and "chunk" in kinds
    judged = [e for e in events if isinstance(e, ChunkJudged)]
    for event in judged:
        index = model.index_of(chunk_node_id(event.node_id, event.chunk_id))
        assert index.siblingAtColumn(1).data().endswith("relevant")
    usage_events = [e for e in events if isinstance(e, UsageUpdated)]
    tokens = max([final.usage.total_tokens] + [e.total.total_tokens for e in usage_events])
    assert window.tokens_label.text() == f"{tokens:,} tokens"
    assert window.elapsed_label.text() not in ("", "—")

    # the report rendered, with its citations as links
    report = window.report
    assert report.markdown_text().strip() == final.report.markdown.strip()
    assert report.toPlainText().strip()
    positions = report.citation_anchor_positions()
    cited = [n for n in positions if n in window.presenter.evidence]
    assert cited, f"no citation of a known source in: {report.markdown_text()[:500]}"
    number = cited[0]
    evidence = window.presenter.evidence[number]

    # click the citation: the source viewer opens on that chunk, highlighted in its context
    cursor = QTextCursor(report.document())
    cursor.setPosition(positions[number] + 1)
    report.setTextCursor(cursor)
    report.ensureCursorVisible()
    point: QPoint = report.cursorRect(cursor).center()
    qtbot.mouseClick(report.viewport(), Qt.MouseButton.LeftButton, pos=point)
    viewer = window.source_viewer
    qtbot.waitUntil(lambda: viewer.isVisible() and viewer.evidence is not None, timeout=10_000)
    assert viewer.evidence is not None and viewer.evidence.number == number
    assert viewer.chunk is not None and viewer.chunk.chunk_id == evidence.chunk_id
    shown = viewer.text.toPlainText()
    assert " ".join(viewer.chunk.text.split())[:80] in " ".join(shown.split())
    assert len(viewer.context) > 1  # neighbouring chunks around it
    assert evidence.path in viewer.location.text()
    assert viewer.open_button.isEnabled()
    viewer.close()

    # saved in the history
    qtbot.waitUntil(
        lambda: window.presenter.run_id in [r.run_id for r in window.history_panel.summaries],
        timeout=10_000,
    )


def test_stop_ends_the_run_within_a_second_and_keeps_what_it_found(
    qtbot: Any, aloop: Any, window: MainWindow
) -> None:
    _configure(window, "deep", rounds=3, queries=3)
    window.runs.run_options = {"report_max_tokens": 400}
    try:
        window.research_panel.run_button.click()
        # let it get somewhere: at least one search done
        qtbot.waitUntil(
            lambda: any(isinstance(e, SearchFinished) for e in window.presenter.events),
            timeout=300_000,
        )
        assert window.runs.running
        ticks: list[float] = []
        timer = QTimer()
        timer.setInterval(10)
        timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
        timer.start()
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow, timeout=5_000)  # shortcuts need the active window
        window.research_panel.question.setFocus()
        started = time.perf_counter()
        qtbot.keyClick(window.research_panel.question, Qt.Key.Key_Escape)  # Esc stops
        qtbot.waitUntil(lambda: not window.runs.running, timeout=5_000)
        took = time.perf_counter() - started
        stopped = time.perf_counter()
        # keep watching the loop while the run winds down: ten more ticks after the stop
        qtbot.waitUntil(lambda: sum(t > stopped for t in ticks) >= 10, timeout=5_000)
        timer.stop()
    finally:
        window.runs.run_options = {"report_max_tokens": 120}
    assert took < 1.0, f"the run took {took:.2f} s to stop"
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert gaps and max(gaps) < 0.25, f"the window stalled {max(gaps):.3f} s while stopping"
    presenter = window.presenter
    assert presenter.state == "cancelled"
    assert window.state_label.text() == "Stopped"
    assert window.tree_model.rowCount() > 0  # partial results stay visible
    assert window.research_panel.run_button.isEnabled()
    run_id = presenter.run_id
    summary = await_in_test(qtbot, window.services.history.get_run(run_id))
    assert summary is not None and summary.status == "cancelled"
    saved = await_in_test(qtbot, window.services.history.load_events(run_id))
    assert isinstance(saved[-1], Finished) and saved[-1].stop_reason == "cancelled"
    assert len(saved) == len(presenter.events)


def test_reopening_a_run_replays_its_tree_and_report_and_exports_it(
    qtbot: Any, aloop: Any, window: MainWindow, tmp_path: Path
) -> None:
    _configure(window, "quick", rounds=1, queries=1)
    final = run_to_the_end(qtbot, window)
    run_id = final.run_id
    shape, markdown = window.tree_model.shape(), window.report.markdown_text()
    unsupported = window.report.unsupported_citations()
    assert shape and markdown.strip()
    # the window moves on (as after a restart): nothing of the run is on screen any more
    window.presenter.reset()
    window.research_panel.question.clear()
    assert window.tree_model.shape() == [] and window.report.markdown_text() == ""

    history = window.history_panel
    history.select_run(run_id)
    with qtbot.waitSignal(window.presenter.finished, timeout=10_000):
        history.open_button.click()
    qtbot.waitUntil(lambda: history.open_button.isEnabled(), timeout=10_000)
    assert window.presenter.run_id == run_id
    assert window.tree_model.shape() == shape
    assert window.report.markdown_text() == markdown
    assert window.report.unsupported_citations() == unsupported
    assert window.research_panel.question_text() == QUESTION

    # Ctrl+F finds in the report
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    word = next(w for w in window.report.toPlainText().split() if len(w) > 4 and w.isalpha())
    qtbot.keyClick(window.report, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.find_bar.isVisible()
    qtbot.keyClicks(window.find_bar.edit, word)
    assert window.report.textCursor().selectedText() == word

    # exports
    md = await_in_test(
        qtbot, window.export_to(tmp_path / "report.md")
    )  # written off the GUI thread
    html = await_in_test(qtbot, window.export_to(tmp_path / "report.html"))
    pdf = await_in_test(qtbot, window.export_to(tmp_path / "report.pdf"))
    assert md and html and pdf
    text = md.read_text(encoding="utf-8")
    assert text.startswith(f"# {QUESTION}") and "## Sources" in text
    assert QUESTION.split()[0] in html.read_text(encoding="utf-8")
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 1000

    # delete it (after confirming)
    from helpers import answer_confirmation

    history.select_run(run_id)
    history.delete_button.click()
    answer_confirmation(qtbot, window, yes=True)
    qtbot.waitUntil(lambda: run_id not in [r.run_id for r in history.summaries], timeout=10_000)
    assert await_in_test(qtbot, window.services.history.get_run(run_id)) is None
