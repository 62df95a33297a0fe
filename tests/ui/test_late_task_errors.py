"""A task that fails after the window is gone (its C++ object deleted at shutdown) is
logged, never raised again from the error handler into the event loop (CI once saw
"Internal C++ object (MainWindow) already deleted" from a refresh that ended late)."""

from __future__ import annotations

import asyncio
from typing import Any

import shiboken6

from app.core.paths import app_paths
from app.core.settings import Settings
from app.ui.main_window import MainWindow
from app.ui.services import Services


def test_a_task_failing_after_the_window_is_gone_is_logged_not_raised(
    qtbot: Any, aloop: Any
) -> None:
    window = MainWindow(Services(Settings(), app_paths().ensure()))
    keeper, errors = window.tasks, window.errors
    gate = asyncio.Event()

    async def late_work() -> None:
        await gate.wait()
        raise RuntimeError("Signal source has been deleted")

    task = keeper.start(late_work(), "refresh the library")
    window._closing = True  # what shutdown sets before it cancels and closes
    shiboken6.delete(window)
    assert not shiboken6.isValid(window)
    gate.set()
    qtbot.waitUntil(task.done, timeout=5000)
    qtbot.waitUntil(
        lambda: errors == ["refresh the library: RuntimeError: Signal source has been deleted"],
        timeout=5000,
    )
    # the aloop fixture fails the test if the error handler raised inside the loop
