"""Servers for the model back-end tests: each runs the real starter model."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ollama_server import OllamaLoopback


@pytest.fixture(scope="session")
def ollama_loopback(starter_model_path: Path) -> Iterator[OllamaLoopback]:
    server = OllamaLoopback(starter_model_path).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llama_cpp_server(starter_model_path: Path, server_processes: Any) -> str:
    """``python -m llama_cpp.server`` with the starter model (it rejects json_schema
    with HTTP 500, so the client's json_object fallback runs); returns the base URL."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(starter_model_path),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "1",
               "--model_alias", "smollm2"]  # fmt: skip
    died = server_processes.start("llama-cpp-server", command, "/v1/models", port)
    if died is not None:
        log = server_processes.log("llama-cpp-server").read_text(errors="replace")[-500:]
        pytest.fail(f"python -m llama_cpp.server exited with code {died}: {log}")
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="session")
def llama_cpp_embedding_server(starter_model_path: Path, server_processes: Any) -> str:
    """``python -m llama_cpp.server --embedding true``: the starter model's embeddings over
    the OpenAI API (``/v1/embeddings``); returns the base URL."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(starter_model_path),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
               "--embedding", "true", "--model_alias", "smollm2-embed"]  # fmt: skip
    died = server_processes.start("llama-cpp-embedding-server", command, "/v1/models", port)
    if died is not None:
        log = server_processes.log("llama-cpp-embedding-server").read_text(errors="replace")[-500:]
        pytest.fail(f"python -m llama_cpp.server --embedding exited with code {died}: {log}")
    return f"http://127.0.0.1:{port}/v1"
