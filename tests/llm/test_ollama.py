"""The Ollama back end over the wire, against a loopback server speaking Ollama's
API with the real starter model (see ollama_server.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import jsonschema
import pytest
from ollama_server import MODEL_NAME, OllamaLoopback
from outline import OUTLINE_PROMPT, OUTLINE_SCHEMA

from app.core.errors import ModelNotFound, ModelUnavailable
from app.llm.base import ChatDelta, ChatModel
from app.llm.ollama_backend import OllamaModel

pytestmark = pytest.mark.slow


@pytest.fixture
async def ollama_model(ollama_loopback: OllamaLoopback) -> AsyncIterator[OllamaModel]:
    model = OllamaModel(MODEL_NAME, host=ollama_loopback.url, think=True, timeout_s=120)
    yield model
    await model.aclose()


async def test_chat_streams_thinking_as_reasoning_and_the_answer_as_content(
    ollama_model: OllamaModel, ollama_loopback: OllamaLoopback
) -> None:
    deltas: list[ChatDelta] = [
        d
        async for d in ollama_model.stream(
            [{"role": "user", "content": "What is the capital of France?"}], max_tokens=40
        )
    ]
    reasoning = [d.text for d in deltas if d.kind == "reasoning"]
    content = [d.text for d in deltas if d.kind == "content"]
    assert len(reasoning) > 1 and len(content) > 1
    assert "paris" in "".join(content).lower()
    # reasoning all came before the answer, as the server streamed it
    kinds = [d.kind for d in deltas if d.kind != "done"]
    assert kinds.index("content") > max(i for i, k in enumerate(kinds) if k == "reasoning")
    done = deltas[-1]
    assert done.kind == "done" and done.usage is not None
    assert done.usage.prompt_tokens > 5 and done.usage.completion_tokens > 5
    assert done.usage.model == MODEL_NAME
    path, body = ollama_loopback.requests[-1]
    assert path == "/api/chat" and body["think"] is True and body["stream"] is True
    assert body["options"]["num_predict"] == 40


async def test_structured_output_uses_format_and_validates(
    ollama_model: OllamaModel, ollama_loopback: OllamaLoopback
) -> None:
    assert isinstance(ollama_model, ChatModel)
    for _ in range(2):
        result = await ollama_model.structured(OUTLINE_PROMPT, OUTLINE_SCHEMA)
        jsonschema.validate(result.value, OUTLINE_SCHEMA)
        assert result.reasoning  # the thinking went to the reasoning channel, not into the JSON
    _, body = ollama_loopback.requests[-1]
    assert body["format"]["properties"]["sections"]["maxItems"] == 3
    assert body["format"]["additionalProperties"] is False


async def test_list_models_reads_api_tags(ollama_model: OllamaModel) -> None:
    assert await ollama_model.list_models() == [MODEL_NAME]


async def test_embed_uses_api_embed(ollama_model: OllamaModel) -> None:
    result = await ollama_model.embed(["rivers shape cities", "lighthouses guide ships"])
    assert len(result.vectors) == 2 and len(result.vectors[0]) > 100
    assert result.usage.prompt_tokens > 4


async def test_a_model_that_is_not_pulled_says_how_to_pull_it(
    ollama_loopback: OllamaLoopback,
) -> None:
    model = OllamaModel("qwen3:8b", host=ollama_loopback.url)
    with pytest.raises(ModelNotFound) as caught:
        await model.chat([{"role": "user", "content": "hi"}])
    assert "`ollama pull qwen3:8b`" in str(caught.value)
    with pytest.raises(ModelNotFound):
        await model.embed(["hi"])
    await model.aclose()


async def test_a_server_that_is_not_running_says_how_to_start_it(unused_tcp_port: int) -> None:
    host = f"http://127.0.0.1:{unused_tcp_port}"
    model = OllamaModel(MODEL_NAME, host=host)
    with pytest.raises(ModelUnavailable) as caught:
        await model.chat([{"role": "user", "content": "hi"}])
    assert str(caught.value).startswith(f"Ollama is not running at {host}.")
    assert "`ollama serve`" in str(caught.value)
    with pytest.raises(ModelUnavailable):
        await model.list_models()
    await model.aclose()


async def test_a_reports_provenance_names_the_ollama_models_digest(
    ollama_loopback: OllamaLoopback,
) -> None:
    from app.research.provenance import ollama_digest

    model = OllamaModel(MODEL_NAME, host=ollama_loopback.url)
    try:
        # the digest Ollama lists the model under (/api/tags), as Ollama spells it
        assert await ollama_digest(model) == "sha256:" + "0" * 64
        unknown = OllamaModel("not-pulled:7b", host=ollama_loopback.url)
        assert await ollama_digest(unknown) == ""
        await unknown.aclose()
    finally:
        await model.aclose()
