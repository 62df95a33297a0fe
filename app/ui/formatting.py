"""Small text helpers for durations, counts and paths."""

from __future__ import annotations

from pathlib import Path


def duration(seconds: float | None) -> str:
    """``75`` → ``1m 15s``; None → ``—``."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "—"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def short_path(path: str, keep: int = 2) -> str:
    """The last ``keep`` parts of a path, for narrow columns."""
    parts = Path(path).parts
    return str(Path(*parts[-keep:])) if len(parts) > keep else path


def source_label(path: str, page: int | None) -> str:
    name = Path(path).name if path else ""
    return f"{name} p.{page}" if page is not None else name
