"""What every subcommand shares on the terminal: paths and durations written short, and
Ctrl+C or SIGTERM turned into a sentence and exit status 130."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any


def run_until_interrupted(work: Coroutine[Any, Any, int], stopped: str) -> int:
    """Run a subcommand's coroutine; on Ctrl+C, or SIGTERM (a service manager, ``kill``),
    print ``stopped`` (what is kept, what to do) and return 130.

    SIGTERM cancels the work as asyncio's Ctrl+C does (its clean-up runs), by a handler of
    its own rather than by raising SIGINT: a command started in the background by a script
    or ``nohup`` ignores SIGINT, and there a SIGTERM turned into SIGINT did nothing."""
    terminated = False

    async def until_terminated() -> int:
        nonlocal terminated
        main = asyncio.current_task()
        assert main is not None
        loop = asyncio.get_running_loop()

        def terminate() -> None:
            nonlocal terminated
            if terminated:  # a second SIGTERM: stop at once, as a second Ctrl+C does
                raise KeyboardInterrupt
            terminated = True
            main.cancel()

        handled = _on_term(loop, terminate)
        try:
            return await work
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGTERM)

    previous = signal.getsignal(signal.SIGTERM) if _can_handle_signals() else None
    try:
        return asyncio.run(until_terminated())
    except (KeyboardInterrupt, asyncio.CancelledError) as stop:
        if isinstance(stop, asyncio.CancelledError) and not terminated:
            raise
        print(f"\n{stopped}", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _can_handle_signals() -> bool:
    return sys.platform != "win32" and threading.current_thread() is threading.main_thread()


def _on_term(loop: asyncio.AbstractEventLoop, terminate: Callable[[], None]) -> bool:
    """Call ``terminate`` on the loop at SIGTERM; whether it could be set (not on Windows,
    nor outside the main thread)."""
    if not _can_handle_signals():
        return False
    try:
        loop.add_signal_handler(signal.SIGTERM, terminate)
    except (NotImplementedError, RuntimeError, ValueError):
        return False
    return True


def format_duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def short_path(path: str) -> str:
    """Relative to the current folder when under it."""
    try:
        cwd = os.getcwd()
    except OSError:
        return path
    if path.startswith(cwd.rstrip(os.sep) + os.sep):
        return path[len(cwd.rstrip(os.sep)) + 1 :]
    return path
