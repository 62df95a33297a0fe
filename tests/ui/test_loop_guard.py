"""THE LOOP GUARD CAN FAIL: a slot that blocks the GUI loop is caught.

The autouse ``loop_guard`` (``tests/ui/conftest.py``) fails any window test in
which the loop was blocked; these tests block it on purpose and check that the
guard saw it, then forgive it (so only the assertion here decides).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from stall_monitor import LoopGuard

import app.ui.run_presenter as run_presenter
from app.core.events import RunStarted
from app.ui.report_view import ReportView
from app.ui.run_presenter import RunPresenter
from app.ui.table_view import EntityTableView
from app.ui.tree_model import ResearchTreeModel

pytestmark = pytest.mark.gui

BLOCK_S = 0.2


@pytest.fixture
def blocking_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    """RunPresenter.flush blocks for BLOCK_S (its tree diff made slow)."""
    real = run_presenter.to_view

    def blocking_to_view(*args: Any) -> Any:
        time.sleep(BLOCK_S)
        return real(*args)

    monkeypatch.setattr(run_presenter, "to_view", blocking_to_view)


def test_the_guard_catches_a_slot_of_the_window_that_blocks_the_loop(
    qtbot: Any, aloop: Any, loop_guard: LoopGuard, blocking_flush: None
) -> None:
    # the presenter's frame timer calls RunPresenter.flush, made to block for 200 ms
    tree = ResearchTreeModel()
    presenter = RunPresenter(tree, ReportView(), EntityTableView())
    presenter.feed(RunStarted(run_id="r1", question="What blocks?", mode="quick"))
    qtbot.waitUntil(lambda: presenter.flush_count == 1, timeout=5_000)

    caught = [slow for slow in loop_guard.slots.slow if slow.name == "RunPresenter.flush"]
    assert len(caught) == 1 and caught[0].blocked_ms >= BLOCK_S * 1000 * 0.9, loop_guard.slots.slow
    with pytest.raises(
        AssertionError, match=r"RunPresenter\.flush held the loop \d+ ms \(blocked 2\d\d ms"
    ):
        loop_guard.check()
    loop_guard.forgive()


def test_the_guard_catches_a_blocking_slot_connected_for_the_test(
    qtbot: Any, aloop: Any, loop_guard: LoopGuard
) -> None:
    ran: list[bool] = []

    def blocking_slot() -> None:
        time.sleep(BLOCK_S)
        ran.append(True)

    loop_guard.slots.watch(blocking_slot)
    QTimer.singleShot(0, blocking_slot)
    qtbot.waitUntil(lambda: bool(ran), timeout=5_000)

    assert [s.name for s in loop_guard.slots.slow] == [blocking_slot.__qualname__]
    assert loop_guard.slots.slow[0].blocked_ms >= BLOCK_S * 1000 * 0.9
    with pytest.raises(AssertionError, match="blocking_slot held the loop"):
        loop_guard.check()
    loop_guard.forgive()


def test_the_guard_catches_a_slot_that_computes_too_long_but_not_one_that_waits_for_a_cpu(
    qtbot: Any, aloop: Any, loop_guard: LoopGuard
) -> None:
    ran: list[bool] = []
    seconds = loop_guard.slots.busy_ms / 1000 + BLOCK_S

    def busy_slot() -> None:
        end = time.thread_time() + seconds  # CPU time: a loaded machine only makes it last longer
        while time.thread_time() < end:
            pass
        ran.append(True)

    loop_guard.slots.watch(busy_slot)
    QTimer.singleShot(0, busy_slot)
    qtbot.waitUntil(lambda: bool(ran), timeout=30_000)

    (caught,) = loop_guard.slots.slow
    assert caught.name == busy_slot.__qualname__ and caught.cpu_ms >= seconds * 1000 * 0.9
    assert caught.blocked_ms < loop_guard.slots.blocked_ms  # computing is not being blocked
    with pytest.raises(AssertionError, match="busy_slot held the loop"):
        loop_guard.check()
    loop_guard.forgive()


def test_the_guard_catches_the_loop_left_unserved_by_anyone(
    qtbot: Any, aloop: Any, loop_guard: LoopGuard
) -> None:
    # not app/ui code, so only the loop-gap check can see it: block longer than its bound
    ran: list[bool] = []
    seconds = loop_guard.gap_bound_ms / 1000 + BLOCK_S
    QTimer.singleShot(0, lambda: (time.sleep(seconds), ran.append(True)))
    qtbot.waitUntil(lambda: bool(ran), timeout=10_000)

    assert loop_guard.slots.slow == []
    assert loop_guard.gaps.longest_ms >= seconds * 1000
    with pytest.raises(AssertionError, match="unserved while the test waited"):
        loop_guard.check()
    loop_guard.forgive()


def test_what_the_test_body_calls_itself_is_not_taken_for_a_blocked_loop(
    qtbot: Any, aloop: Any, loop_guard: LoopGuard, blocking_flush: None
) -> None:
    # the same blocking flush, called by the test body rather than dispatched by the loop
    presenter = RunPresenter(ResearchTreeModel(), ReportView(), EntityTableView())
    presenter.feed(RunStarted(run_id="r1", question="What blocks?", mode="quick"))
    presenter.flush()
    assert presenter.flush_count == 1
    qtbot.wait(20)
    assert loop_guard.problems() == []
