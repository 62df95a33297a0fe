"""A follow-up question in the real window: the real engine, Library (Milvus Lite
over real MuSiQue paragraphs, tests/musique_thread.py) and starter model. Ask,
finish, ask a follow-up, see the second section and the tree's branch, find the
thread once in History, and reopen it whole."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers import fill_research_panel, real_window, run_to_the_end
from musique_thread import FIRST, FOLLOW_UP, write_paragraphs

from app.research.citations import SOURCES_HEADING
from app.ui.main_window import MainWindow

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture(scope="module")
def window(
    qapp: Any, qloop: Any, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    home = tmp_path_factory.mktemp("follow-up-window")
    files = write_paragraphs(shared_data, home / "paragraphs")
    short = {"report_max_tokens": 120}  # keep the tiny model's reports short
    with real_window(qloop, home, files, "music", run_options=short, size=(1366, 768)) as win:
        yield win


def test_ask_a_follow_up_see_its_section_and_branch_and_reopen_the_thread(
    qtbot: Any, aloop: Any, window: MainWindow
) -> None:
    panel = window.research_panel
    fill_research_panel(panel, FIRST, "quick", rounds=1, top_k=3)
    assert not panel.follow_up_button.isEnabled()  # nothing to follow up yet
    first = run_to_the_end(qtbot, window)
    first_report = window.report.markdown_text()
    body = first_report.split(SOURCES_HEADING)[0].strip()
    assert body

    # Ask a follow-up: the question box says what it follows; New question drops it
    assert panel.follow_up_button.isEnabled()
    panel.follow_up_button.click()
    assert panel.follows == first.run_id and panel.follow_up_bar.isVisible()
    assert panel.follow_up_label.text() == f"Follow-up to: {FIRST}"
    assert panel.question_text() == "" and panel.run_button.text() == "Ask follow-up"
    panel.new_question_button.click()
    assert (
        panel.follows == ""
        and not panel.follow_up_bar.isVisible()
        and panel.run_button.text() == "Run"
    )
    panel.follow_up_button.click()
    panel.question.setPlainText(FOLLOW_UP)
    second = run_to_the_end(qtbot, window)
    assert second.run_id != first.run_id

    # the report pane shows the thread: the first answer, then the follow-up's section, one Sources list
    shown = window.report.markdown_text()
    heading = f"## Follow-up: {FOLLOW_UP}"
    assert shown.startswith(body[:60]) and heading in shown and shown.count(SOURCES_HEADING) == 1
    assert shown.index(body[:60]) < shown.index(heading) < shown.index(SOURCES_HEADING)
    assert "sentences cited" in window.report.header_text()
    assert set(window.presenter.evidence) == {e.number for e in second.report.evidence}
    plain = window.report.toPlainText()
    assert f"Follow-up: {FOLLOW_UP}" in plain

    # the tree: the first run's rows, then the follow-up's branch holding its own rounds and searches
    shape = window.tree_model.shape()
    top = [(kind, label) for depth, kind, label, _ in shape if depth == 0 and kind != "notice"]
    assert top[-1] == ("followup", f"Follow-up: {FOLLOW_UP}") and ("round", "Round 1") in top
    at = shape.index(next(row for row in shape if row[1] == "followup"))
    inside = [kind for depth, kind, _, _ in shape[at + 1 :] if depth >= 1]
    assert {"round", "subquery", "chunk", "report"} <= set(inside)
    assert window.tree_model.index_of(f"followup:{second.run_id}").isValid()
    screenshots = os.environ.get("FATHOM_SCREENSHOTS")
    if screenshots:  # the screenshot of a follow-up thread
        window.grab().save(str(Path(screenshots) / "follow-up-thread.png"))

    # History lists the thread once, with its follow-up counted
    history = window.history_panel
    rows = [r for r in history.summaries if r.thread_id == first.run_id]
    assert [(r.run_id, r.follow_ups) for r in rows] == [(second.run_id, 1)]
    assert history.runs.topLevelItem(0).text(0) == f"{FIRST}  (+1 follow-up)"

    # reopening it (after the window moved on) shows the whole thread again
    window.presenter.reset()
    assert window.tree_model.shape() == [] and window.report.markdown_text() == ""
    history.select_run(second.run_id)
    history.open_button.click()
    qtbot.waitUntil(
        lambda: len(window.presenter.steps) == 2 and history.open_button.isEnabled(), timeout=10_000
    )
    assert window.report.markdown_text() == shown
    assert window.tree_model.shape() == shape
    assert panel.follow_up_button.isEnabled()  # and it can be followed up again
