"""What every subcommand shares on the terminal: paths and durations written short, and
Ctrl+C turned into a sentence and exit status 130."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import Any


def run_until_interrupted(work: Coroutine[Any, Any, int], stopped: str) -> int:
    """Run a subcommand's coroutine; on Ctrl+C, or SIGTERM (a service manager, ``kill``),
    which stops it the same way, print ``stopped`` (what is kept, what to do) and return 130."""
    previous = _term_as_interrupt()
    try:
        return asyncio.run(work)
    except KeyboardInterrupt:
        print(f"\n{stopped}", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _term_as_interrupt() -> Any:
    """Have SIGTERM interrupt this process as Ctrl+C does (asyncio then cancels the work and
    its clean-up runs); the handler it replaces, or None where it could not be set."""
    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(_signum: int, _frame: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)

    return signal.signal(signal.SIGTERM, interrupt)


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
