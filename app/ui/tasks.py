"""Keep a handle on every asyncio task the window starts.

A task that fails reports its error through one callback (the window shows
it); nothing is fire-and-forget, and closing the window cancels what is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class TaskKeeper:
    """A set of running tasks with one error callback."""

    def __init__(self, on_error: Callable[[str, BaseException], None]) -> None:
        self._tasks: dict[asyncio.Task[Any], str] = {}
        self._on_error = on_error

    def start(self, coro: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        task = asyncio.ensure_future(coro)
        self._tasks[task] = name
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        name = self._tasks.pop(task, "task")
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("%s failed", name, exc_info=exc)
            self._on_error(name, exc)

    def running(self) -> list[str]:
        return [name for task, name in self._tasks.items() if not task.done()]

    def __len__(self) -> int:
        return len(self._tasks)

    async def cancel_all(self, timeout: float = 5.0) -> None:
        tasks = [task for task in self._tasks if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
