"""Fixtures for the window tests: one qasync loop for the session.

The loop is a real ``qasync.QEventLoop`` on the test ``QApplication``. A test
that drives the window asks for ``aloop``: while it runs, that loop is the
running asyncio loop, so tasks the window starts make progress whenever Qt
processes events — that is, while the test waits with ``qtbot.waitUntil`` or
``qtbot.waitSignal`` (never sleep). ``aloop`` cancels whatever is left when
the test ends, and any exception a task left unhandled fails the test.
Module-scoped set-up that must await (ingesting a corpus once) uses
``helpers.drive``, which runs a coroutine to completion on the same loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import qasync
from PySide6.QtWidgets import QApplication

_LOOP_ERRORS: list[str] = []


@pytest.fixture(scope="session")
def qloop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    loop = qasync.QEventLoop(qapp)

    def handler(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        _LOOP_ERRORS.append(f"{context.get('message')}: {exc!r}")

    loop.set_exception_handler(handler)
    yield loop
    asyncio.events._set_running_loop(None)
    if not loop.is_closed():
        loop.close()


@pytest.fixture
def aloop(qloop: qasync.QEventLoop, qtbot: Any) -> Iterator[qasync.QEventLoop]:
    """The session loop, running for the length of one test."""
    _LOOP_ERRORS.clear()
    asyncio.events._set_running_loop(qloop)
    try:
        yield qloop
        pending = [t for t in asyncio.all_tasks(qloop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            qtbot.waitUntil(lambda: all(t.done() for t in pending), timeout=10_000)
    finally:
        asyncio.events._set_running_loop(None)
    errors, _LOOP_ERRORS[:] = list(_LOOP_ERRORS), []
    assert not errors, f"unhandled errors in asyncio tasks: {errors}"
