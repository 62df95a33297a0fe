"""Ollama and OpenAI-compatible embedding models, chosen in Settings, index and search a
collection through the library and the CLI; a collection keeps the model it was built
with, refuses another with a clear message, and is re-indexed on request.

The servers are real HTTP servers on loopback with the real starter model computing
the embeddings (Ollama's ``/api/embed``; llama-cpp-python's ``/v1/embeddings``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ollama_server import OllamaLoopback

from app.cli import main
from app.core.paths import app_paths
from app.core.settings import Settings, replace_setting, save_settings

DOCS = ("fragments/installation_guide.md", "fragments/faq_normalize_embeddings.md")
SMOLLM2_DIMENSION = 576
MINILM_DIMENSION = 384


def _docs(folder: Path, shared_data: Path) -> Path:
    folder.mkdir()
    for rel in DOCS:
        shutil.copyfile(shared_data / "milvus-docs" / rel, folder / Path(rel).name)
    (folder / "kelp.txt").write_text(
        "Kelp forests grow up to half a metre a day along the western shelf.\n", encoding="utf-8"
    )
    return folder


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _use(settings: Settings) -> None:
    save_settings(settings, app_paths().ensure().settings_file)


def _collection(capsys: pytest.CaptureFixture[str], name: str) -> dict[str, object]:
    assert main(["collections", "--json"]) == 0
    listed = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    return listed[name]


def _top_path(capsys: pytest.CaptureFixture[str], query: str, collection: str) -> str:
    assert main(["search", query, "-c", collection, "--mode", "dense", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    return str(Path(hits[0]["path"]).name)


def test_ollama_embeddings_index_and_search_then_a_model_change_asks_for_a_reindex(
    tmp_path: Path,
    shared_data: Path,
    ollama_loopback: OllamaLoopback,
    capsys: pytest.CaptureFixture[str],
) -> None:
    docs = _docs(tmp_path / "docs", shared_data)
    ollama = replace_setting(Settings(), "model.ollama.host", ollama_loopback.url)
    ollama = replace_setting(ollama, "embedding.backend", "ollama")
    ollama = replace_setting(ollama, "embedding.model", "smollm2:135m")
    _use(ollama)
    embeds_before = sum(1 for path, _ in ollama_loopback.requests if path == "/api/embed")

    assert main(["ingest", str(docs), "-c", "kb"]) == 0
    assert "3 indexed" in capsys.readouterr().err
    built = _collection(capsys, "kb")
    assert (built["embedding_model"], built["dimension"]) == (
        "ollama:smollm2:135m",
        SMOLLM2_DIMENSION,
    )
    assert _top_path(capsys, "Kelp forests grow up to half a metre a day", "kb") == "kelp.txt"
    assert sum(1 for path, _ in ollama_loopback.requests if path == "/api/embed") > embeds_before

    # the embedding model changes in Settings: searching and adding are refused, with the way out
    _use(Settings())
    assert main(["search", "kelp", "-c", "kb"]) == 2
    refused = capsys.readouterr().err
    assert "was built with ollama:smollm2:135m (576 dims)" in refused
    assert "the current embedding model is all-MiniLM-L6-v2-onnx-int8" in refused
    assert "fathom reindex --collection kb" in refused
    assert main(["ingest", str(docs), "-c", "kb"]) == 2
    assert "fathom reindex --collection kb" in capsys.readouterr().err

    # re-indexed with the new model: one model, one dimension, everything searchable again
    assert main(["reindex", "-c", "kb"]) == 0
    assert "3 indexed" in capsys.readouterr().err
    rebuilt = _collection(capsys, "kb")
    assert (rebuilt["embedding_model"], rebuilt["dimension"], rebuilt["documents"]) == (
        "all-MiniLM-L6-v2-onnx-int8",
        MINILM_DIMENSION,
        3,
    )
    assert _top_path(capsys, "Kelp forests grow up to half a metre a day", "kb") == "kelp.txt"
    assert main(["repair", "--check"]) == 0


def test_openai_compatible_embeddings_index_and_search(
    tmp_path: Path,
    shared_data: Path,
    llama_cpp_embedding_server: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    docs = _docs(tmp_path / "docs", shared_data)
    settings = replace_setting(Settings(), "embedding.backend", "openai")
    settings = replace_setting(settings, "embedding.base_url", llama_cpp_embedding_server)
    settings = replace_setting(settings, "embedding.model", "smollm2-embed")
    _use(settings)

    assert main(["ingest", str(docs), "-c", "kb"]) == 0
    assert "3 indexed" in capsys.readouterr().err
    built = _collection(capsys, "kb")
    assert (built["embedding_model"], built["dimension"]) == (
        "openai:smollm2-embed",
        SMOLLM2_DIMENSION,
    )
    assert _top_path(capsys, "Kelp forests grow up to half a metre a day", "kb") == "kelp.txt"


def test_a_per_token_server_embeds_each_text_of_a_batch_as_if_alone(
    llama_cpp_embedding_server: str,
) -> None:
    """llama-cpp-python's server without pooling mixes up the sequences of a batch (the
    second text came back 0.82 away from its own vector): Fathom asks it one text at a time."""
    import asyncio

    import numpy as np

    from app.llm.openai_backend import OpenAICompatibleModel

    texts = ["Kelp forests grow fast.", "Milvus stores vectors.", "The western shelf is cold."]

    async def vectors() -> tuple[np.ndarray, np.ndarray]:
        model = OpenAICompatibleModel(llama_cpp_embedding_server, "smollm2-embed")
        try:
            batch = (await model.embed(texts)).vectors
            alone = [(await model.embed([text])).vectors[0] for text in texts]
        finally:
            await model.aclose()
        return np.asarray(batch), np.asarray(alone)

    batch, alone = asyncio.run(vectors())
    assert batch.shape == (3, SMOLLM2_DIMENSION)
    np.testing.assert_allclose(batch, alone, atol=1e-4)
    assert (
        np.abs(batch[0] - batch[1]).max() > 1e-3
    )  # three different texts, three different vectors


def test_an_unreachable_embedding_server_stops_the_ingest_with_a_sentence(
    tmp_path: Path, shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _docs(tmp_path / "docs", shared_data)
    settings = replace_setting(Settings(), "embedding.backend", "ollama")
    settings = replace_setting(settings, "embedding.model", "nomic-embed-text")
    settings = replace_setting(settings, "embedding.base_url", f"http://127.0.0.1:{_closed_port()}")
    _use(settings)
    assert main(["ingest", str(docs), "-c", "kb"]) == 2
    err = capsys.readouterr().err
    assert (
        "The embedding model ollama:nomic-embed-text could not embed text: Ollama is not running at"
        in err
    )
    assert "choose another embedding back end, model or server address in Settings" in err
    assert main(["collections", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # nothing half-made is left listed
