"""Fixtures for the ingest tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.ingest.chunking import chunk_token_limit
from app.ingest.convert import Converter, ConverterConfig
from app.ingest.embedder import OnnxMiniLMEmbedder


@pytest.fixture(scope="session")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="session")
def converter(embedder: OnnxMiniLMEmbedder) -> Converter:
    config = ConverterConfig(
        tokenizer_json=embedder.tokenizer.to_str(),
        max_tokens=chunk_token_limit(embedder.max_tokens, 256),
    )
    return Converter(config)


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A temporary folder an unprivileged user can enter (pytest's tmp_path is root-only)."""
    folder = Path(tempfile.mkdtemp(prefix="fathom-world-", dir="/tmp"))
    os.chmod(folder, 0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
