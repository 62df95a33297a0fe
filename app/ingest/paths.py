"""Paths as ingest records and compares them: absolute without resolving links,
stored as printable text, and whether one lies under a root."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: Path | str) -> str:
    """A path as text that can be printed and stored (lone surrogates escaped)."""
    text = str(path)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")


def absolute(path: Path) -> Path:
    """Absolute and normalised, without resolving symlinks (their names are what the user sees)."""
    return Path(os.path.abspath(os.path.expanduser(path)))


def is_under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it (both as :func:`display_path` text)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
