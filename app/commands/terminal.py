"""What every subcommand shares on the terminal: paths and durations written short, and
Ctrl+C turned into a sentence and exit status 130."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Coroutine
from typing import Any


def run_until_interrupted(work: Coroutine[Any, Any, int], stopped: str) -> int:
    """Run a subcommand's coroutine; on Ctrl+C print ``stopped`` (what is kept, what to do) and return 130."""
    try:
        return asyncio.run(work)
    except KeyboardInterrupt:
        print(f"\n{stopped}", file=sys.stderr)
        return 130


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
