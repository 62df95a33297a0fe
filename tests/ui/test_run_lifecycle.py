"""A research run's life in the window, driven by a scripted model over an
in-memory library (deterministic control flow; the real engine, the real
history file, real widgets): Stop waits for the engine and keeps what it
found, a failing history is reported in the status bar, runs saved by older
versions (or damaged) still open, exports are written off the GUI thread, and
no step freezes the window.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import EngineServices, await_in_test, drive
from history_fixture import DEEP_RUN, EXPECTED, STOPPED_RUN, TABLE_RUN, outline, restore, sha256
from PySide6.QtCore import Qt
from stall_monitor import StallMonitor

from app.core.events import EvidenceAdded, Finished
from app.core.paths import app_paths
from app.llm.base import Message
from app.research.engine import ResearchEngine
from app.store.research_runs import RunStore
from app.ui.main_window import MainWindow

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "research"))
from scripted import BLOCK, MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, verdicts

pytestmark = pytest.mark.gui

QUESTION = "What is Milvus and how does it compare with other vector databases?"
REPORT = "Milvus is an open-source vector database built for similarity search [1]."
STALL_LIMIT_MS = (
    500  # generous: a loaded machine must not make it flaky; a blocking call on the loop would
)
UNWIND_S = 1.0  # longer than the grace periods a stop used to give up after (0.8 s, 1.5 s)


def script(reflect: Any = None) -> dict[str, Any]:
    return {
        "decompose": {"sub_queries": ["Milvus features", "vector database comparison"]},
        "judge": {"relevant": [1, 2]},
        "reflect": reflect or {"done": True, "summary": "", "gap_queries": []},
        "citation_check": verdicts(),
    }


class SlowToStop(ScriptedModel):
    """Round 2's reflection hangs; cancelled, it takes UNWIND_S to clean up."""

    def __init__(self) -> None:
        gaps = {"done": False, "summary": "", "gap_queries": ["Milvus hybrid search"]}
        super().__init__(script(reflect=[gaps, BLOCK]), text=REPORT)
        self.unwound = False

    async def _reply(
        self, task: str, messages: Sequence[Message], schema: dict[str, Any] | None
    ) -> Any:
        try:
            return await super()._reply(task, messages, schema)
        except asyncio.CancelledError:
            await asyncio.sleep(UNWIND_S)
            self.unwound = True
            raise


@pytest.fixture
def make_window(qapp: Any, qloop: Any, aloop: Any) -> Iterator[Callable[..., MainWindow]]:
    made: list[MainWindow] = []

    def make(model: Any = None, history: Path | None = None) -> MainWindow:
        paths = app_paths().ensure()
        engine = ResearchEngine(
            model or ScriptedModel(script(), text=REPORT),
            MemoryLibrary(list(MILVUS_CHUNKS)),  # type: ignore[arg-type]
            history=history or paths.catalog_file,
        )
        window = MainWindow(EngineServices(engine))
        window.show()
        window.research_panel.set_running(False, ready=True)
        window.research_panel.question.setPlainText(QUESTION)
        made.append(window)
        return window

    yield make
    for window in made:
        drive(qloop, window.shutdown())
        window.close()
        window.deleteLater()


def mode_task(run_id: str) -> asyncio.Task[Any] | None:
    return next((t for t in asyncio.all_tasks() if t.get_name() == f"research-{run_id}"), None)


def status_messages(window: MainWindow) -> list[str]:
    seen: list[str] = []
    window.statusBar().messageChanged.connect(lambda text: seen.append(text) if text else None)
    return seen


def test_stop_waits_for_the_engine_and_the_evidence_is_shown_and_saved(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    model = SlowToStop()
    window = make_window(model)
    monitor = StallMonitor()
    monitor.start()
    window.research_panel.run_button.click()
    qtbot.waitUntil(model.blocked.is_set, timeout=20_000)
    run_id = window.presenter.run_id
    work = mode_task(run_id)
    assert work is not None and not work.done()
    found = [e.evidence for e in window.presenter.events if isinstance(e, EvidenceAdded)]
    assert found, "the run should have found evidence before it was stopped"

    await_in_test(qtbot, window.stop_run(), timeout_ms=20_000)
    assert work.done() and model.unwound  # when Stop returns, the engine's work is over
    assert mode_task(run_id) is None
    assert not window.runs.running
    stall = monitor.stop()

    # shown: the partial report lists the evidence; the tree keeps the judged chunks
    presenter = window.presenter
    assert presenter.state == "cancelled" and window.state_label.text() == "Stopped"
    assert [presenter.evidence[e.number].chunk_id for e in found] == [e.chunk_id for e in found]
    shown = window.report.toPlainText()
    for evidence in found:
        assert " ".join(evidence.quote.split())[:40] in " ".join(shown.split())
    assert any(
        result.endswith("relevant")
        for _, kind, _, result in window.tree_model.shape()
        if kind == "chunk"
    )
    assert (
        window.research_panel.run_button.isEnabled()
        and window.research_panel.stop_button.text() == "Stop"
    )

    # saved: the same events and evidence are in the history, and it lists the run as stopped
    stored = await_in_test(qtbot, window.services.history.read_events(run_id))
    assert list(stored.events) == presenter.events and stored.skipped == ()
    summary = await_in_test(qtbot, window.services.history.get_run(run_id))
    assert summary is not None and summary.status == "cancelled"
    qtbot.waitUntil(
        lambda: run_id in [r.run_id for r in window.history_panel.summaries], timeout=10_000
    )
    assert stall is not None and stall.max_ms < STALL_LIMIT_MS, f"the window froze: {stall}"


def test_esc_stops_the_run_and_the_stop_button_cannot_be_pressed_twice(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    model = SlowToStop()
    window = make_window(model)
    window.research_panel.run_button.click()
    qtbot.waitUntil(model.blocked.is_set, timeout=20_000)
    work = mode_task(window.presenter.run_id)
    assert work is not None
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)  # shortcuts need the active window
    window.research_panel.question.setFocus()
    qtbot.keyClick(window.research_panel.question, Qt.Key.Key_Escape)
    assert window.state_label.text() == "Stopping…"
    assert not window.research_panel.stop_button.isEnabled()
    assert window.runs.running and not work.done()  # still unwinding: not cut off
    qtbot.waitUntil(lambda: not window.runs.running, timeout=20_000)
    assert work.done() and model.unwound
    assert window.presenter.state == "cancelled" and window.errors == []


@pytest.mark.slow
def test_stopping_a_run_of_the_real_model_midway_shows_and_saves_its_evidence(
    qtbot: Any, make_window: Callable[..., MainWindow], starter_llm: Any
) -> None:
    window = make_window(starter_llm)
    panel = window.research_panel
    panel.rounds.setValue(3)
    panel.subqueries.setValue(2)
    panel.top_k.setValue(3)
    window.runs.run_options = {"report_max_tokens": 60}
    monitor = StallMonitor()
    monitor.start()
    panel.run_button.click()
    qtbot.waitUntil(
        lambda: any(isinstance(e, EvidenceAdded) for e in window.presenter.events), timeout=300_000
    )
    run_id = window.presenter.run_id
    work = mode_task(run_id)
    assert work is not None and not work.done(), "the run ended before it could be stopped"
    await_in_test(qtbot, window.stop_run(), timeout_ms=30_000)
    assert work.done() and mode_task(run_id) is None and not window.runs.running
    stall = monitor.stop()
    presenter = window.presenter
    assert presenter.state == "cancelled"
    found = [e.evidence for e in presenter.events if isinstance(e, EvidenceAdded)]
    assert found and sorted(presenter.evidence) == [e.number for e in found]
    shown = " ".join(window.report.toPlainText().split())
    assert all(" ".join(e.quote.split())[:40] in shown for e in found)
    stored = await_in_test(qtbot, window.services.history.read_events(run_id))
    assert list(stored.events) == presenter.events
    final = stored.events[-1]
    assert isinstance(final, Finished) and final.stop_reason == "cancelled"
    assert [e.chunk_id for e in final.report.evidence] == [e.chunk_id for e in found]
    assert stall is not None and stall.max_ms < STALL_LIMIT_MS, f"the window froze: {stall}"


def test_a_scripted_run_reopened_and_exported_never_freezes_the_window(
    qtbot: Any,
    make_window: Callable[..., MainWindow],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    window = make_window()
    monitor = StallMonitor()
    monitor.start()
    with qtbot.waitSignal(window.presenter.finished, timeout=30_000) as done:
        window.research_panel.run_button.click()
    assert isinstance(done.args[0], Finished)
    qtbot.waitUntil(lambda: not window.runs.running, timeout=10_000)
    run_id = window.presenter.run_id
    shape, markdown = window.tree_model.shape(), window.report.markdown_text()
    during_run = monitor.stop()

    # reopen it from History: the same tree and report
    monitor.start()
    history = window.history_panel
    qtbot.waitUntil(lambda: run_id in [r.run_id for r in history.summaries], timeout=10_000)
    window.presenter.reset()
    history.select_run(run_id)
    with qtbot.waitSignal(window.presenter.finished, timeout=10_000):
        history.open_button.click()
    qtbot.waitUntil(history.open_button.isEnabled, timeout=10_000)
    assert window.tree_model.shape() == shape and window.report.markdown_text() == markdown
    reopening = monitor.stop()

    # export: rendered and written by a worker thread
    writers: list[int] = []
    import app.ui.run_controller as run_controller

    real_export = run_controller.export

    def spy(*args: Any, **kwargs: Any) -> Path:
        writers.append(threading.get_ident())
        return real_export(*args, **kwargs)

    monkeypatch.setattr(run_controller, "export", spy)
    monitor.start()
    written = [
        await_in_test(qtbot, window.export_to(tmp_path / f"report{suffix}"))
        for suffix in (".md", ".pdf")
    ]
    exporting = monitor.stop()
    assert written == [tmp_path / "report.md", tmp_path / "report.pdf"]
    assert (tmp_path / "report.md").read_text(encoding="utf-8").startswith(f"# {QUESTION}")
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF")
    assert len(writers) == 2 and threading.get_ident() not in writers
    assert window.export_action.isEnabled()

    for name, stall in (
        ("the run", during_run),
        ("reopening", reopening),
        ("exporting", exporting),
    ):
        assert stall is not None and stall.max_ms < STALL_LIMIT_MS, (
            f"the window froze during {name}: {stall}"
        )


def test_a_history_that_cannot_be_written_is_reported_in_the_status_bar(
    qtbot: Any, make_window: Callable[..., MainWindow], tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the history's folder should be")
    window = make_window(history=blocker / "catalog.sqlite")
    messages = status_messages(window)
    with qtbot.waitSignal(window.presenter.finished, timeout=30_000) as done:
        window.research_panel.run_button.click()
    assert isinstance(done.args[0], Finished) and window.presenter.state == "finished"
    told = [m for m in messages if "cannot be saved to the history" in m]
    assert told and str(blocker) in told[0]
    notices = [label for _, kind, label, _ in window.tree_model.shape() if kind == "notice"]
    assert any("cannot be saved to the history" in label for label in notices)


def test_runs_saved_by_the_first_version_open_in_the_window(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    restore(app_paths().ensure().catalog_file)
    window = make_window()
    await_in_test(qtbot, window.runs.refresh_history())
    history = window.history_panel
    assert {r.run_id for r in history.summaries} == set(EXPECTED)
    for run_id in (DEEP_RUN, TABLE_RUN, STOPPED_RUN):
        expected = EXPECTED[run_id]
        history.select_run(run_id)
        with qtbot.waitSignal(window.presenter.finished, timeout=10_000):
            history.open_button.click()
        qtbot.waitUntil(history.open_button.isEnabled, timeout=10_000)
        presenter = window.presenter
        assert presenter.run_id == run_id
        assert outline(presenter.builder.root) == expected["tree"]
        assert (
            presenter.report is not None
            and sha256(presenter.report.markdown) == expected["report_sha256"]
        )
        assert window.report.markdown_text() == presenter.report.markdown
        assert [presenter.evidence[n].chunk_id for n in sorted(presenter.evidence)] == expected[
            "evidence"
        ]
        assert window.research_panel.question_text() == expected["question"]
        assert presenter.state == ("cancelled" if expected["status"] == "cancelled" else "finished")
        if expected["table_rows"] is not None:
            assert (
                presenter.table is not None and len(presenter.table.rows) == expected["table_rows"]
            )
            assert window.report_tabs.currentWidget() is window.table
        else:
            assert window.report_tabs.currentWidget() is window.report
        chunks = sum(1 for row in expected["tree"] if row[1] == "chunk")
        assert sum(1 for _, kind, _, _ in window.tree_model.shape() if kind == "chunk") == chunks


def test_a_damaged_run_opens_with_a_note_in_the_tree_and_the_status_bar(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    runs = RunStore(restore(app_paths().ensure().catalog_file))
    try:
        with runs.db.conn:
            runs.db.execute(
                "UPDATE research_events SET data = '{oops' WHERE run_id = ? AND seq = 40",
                [DEEP_RUN],
            )
            runs.db.execute(
                "UPDATE research_events SET data = ? WHERE run_id = ? AND seq = 41",
                [json.dumps({"type": "FromTheFuture", "v": 7, "run_id": DEEP_RUN}), DEEP_RUN],
            )
    finally:
        runs.close()
    window = make_window()
    messages = status_messages(window)
    await_in_test(qtbot, window.runs.refresh_history())
    window.history_panel.select_run(DEEP_RUN)
    with qtbot.waitSignal(window.presenter.finished, timeout=10_000):
        window.history_panel.open_button.click()
    note = "2 events of this run could not be read and were skipped"
    notices = [label for _, kind, label, _ in window.tree_model.shape() if kind == "notice"]
    assert any(label.startswith(note) for label in notices)
    assert any(m.startswith(note) for m in messages)
    assert window.presenter.report is not None
    assert sha256(window.presenter.report.markdown) == EXPECTED[DEEP_RUN]["report_sha256"]
    assert window.errors == []
