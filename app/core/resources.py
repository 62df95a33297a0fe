"""Files shipped under ``resources/``, found from a source checkout and inside a frozen build."""

from __future__ import annotations

import sys
from pathlib import Path

RESOURCES = Path(__file__).resolve().parent.parent.parent / "resources"


def resource_path(*parts: str) -> Path:
    """A file under ``resources/`` (PyInstaller unpacks it under ``sys._MEIPASS``)."""
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        candidate = Path(frozen_root, "resources", *parts)
        if candidate.exists():
            return candidate
    return RESOURCES.joinpath(*parts)
