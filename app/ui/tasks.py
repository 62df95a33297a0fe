"""Keep a handle on every asyncio task the window starts, and run blocking
calls off the GUI thread.

A task that fails reports its error through one callback (the window shows
it); nothing is fire-and-forget, and closing the window cancels what is left.

:func:`run_blocking` is the one way ``app/ui`` calls something that may block
(file I/O, SQLite, the keyring, the settings file, exports, heavy imports):
it runs in an executor and its result comes back on the loop thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

SLOW_CALL_S = 2.0  # a blocking call that takes longer is logged (it never held the window)


async def run_blocking(
    fn: Callable[..., T], /, *args: Any, name: str, executor: Executor | None = None
) -> T:
    """Run ``fn(*args)`` in ``executor`` (the loop's default one when None) and await it.

    ``name`` says what the call does, for the log. Context variables travel
    with the call, as with :func:`asyncio.to_thread`.
    """
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    started = time.monotonic()
    try:
        return await loop.run_in_executor(executor, call)
    finally:
        took = time.monotonic() - started
        if took > SLOW_CALL_S:
            log.info("%s took %.1f s (off the GUI thread)", name, took)


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
