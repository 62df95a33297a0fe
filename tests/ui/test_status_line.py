"""The window's status line says what a real run is doing, phase by phase: the real
engine, the real Library (Milvus Lite + Docling) and the real starter model
(llama.cpp), driven through the Run button."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import fill_research_panel, make_docs_folder, real_window, run_to_the_end

from app.core.events import PhaseChanged
from app.ui.main_window import MainWindow

pytestmark = [pytest.mark.gui, pytest.mark.slow]

QUESTION = "What is Milvus Lite and how is it installed?"


@pytest.fixture(scope="module")
def window(
    qapp: Any, qloop: Any, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    home = tmp_path_factory.mktemp("status-line")
    folder = make_docs_folder(shared_data, home / "docs", broken=False)
    short = {"report_max_tokens": 120}  # a short report: the tiny model loops on long ones
    with real_window(qloop, home, [folder], "milvus", run_options=short) as win:
        yield win


def test_the_status_line_says_each_phase_of_a_real_run(
    qtbot: Any, aloop: Any, window: MainWindow
) -> None:
    fill_research_panel(window.research_panel, QUESTION, "deep", rounds=1, subqueries=2, top_k=3)
    shown: list[str] = []

    def read_label(_text: str) -> None:  # connected after the label: reads what the user sees
        text = window.state_label.text()
        if not shown or shown[-1] != text:
            shown.append(text)

    window.runs.stateText.connect(read_label)
    try:
        run_to_the_end(qtbot, window)
    finally:
        window.runs.stateText.disconnect(read_label)

    said = [e.line for e in window.presenter.events if isinstance(e, PhaseChanged)]
    assert said, "the run said nothing about what it was doing"

    def first(prefix: str) -> int:
        return next(i for i, text in enumerate(shown) if text.startswith(prefix))

    # in the order the run went through them, each in the words a user reads
    order = [
        first("Splitting the question into up to 2 sub-questions"),
        first("Searching "),
        first("Reading "),
        first("Writing the report"),
    ]
    assert order == sorted(order), shown
    assert shown[-1].startswith("Finished")
    # the label showed the phases, not a bare "Running…" while there was one to show
    assert all(text in said or text in ("Loading the model…", "Running…") for text in shown[:-1]), (
        shown
    )
    assert shown.count("Running…") <= 1
