"""Counts in sentences: "1 collection", "3 collections" (never "1 collections")."""

from __future__ import annotations


def plural(n: int, one: str, many: str | None = None) -> str:
    """``"1 passage"``, ``"1,204 passages"``; ``many`` where adding an s is wrong."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"
