"""Managing Ollama's models (list, pull with progress and cancel, delete) over the
wire, against the loopback server speaking Ollama's API (see ollama_server.py)."""

from __future__ import annotations

import asyncio
import gc
import time
import warnings
from collections.abc import Iterator

import pytest
from ollama_server import MODEL_NAME, OllamaLoopback, layer_sizes

from app.core.errors import ModelNotFound, ModelUnavailable
from app.llm.ollama_backend import OllamaModel
from app.llm.ollama_client import list_ollama_models
from app.model_files.ollama_admin import PullProgress, delete_ollama_model, pull_ollama_model

pytestmark = pytest.mark.slow

TINY = "tiny:1b"
TINY_BYTES = 3_000_000


@pytest.fixture
def ollama(ollama_loopback: OllamaLoopback) -> Iterator[OllamaLoopback]:
    """The session's loopback server with "tiny:1b" in its registry; pulls, deletes
    and pacing are undone afterwards so other tests see the starter model only."""
    ollama_loopback.reset_models()
    ollama_loopback.pullable[TINY] = TINY_BYTES
    yield ollama_loopback
    ollama_loopback.reset_models()


async def names(host: str) -> list[str]:
    return [m.name for m in await list_ollama_models(host)]


async def test_list_shows_the_real_model_with_its_details(ollama: OllamaLoopback) -> None:
    models = await list_ollama_models(ollama.url)
    assert len(models) == 1
    model = models[0]
    assert model.name == MODEL_NAME
    assert model.size_bytes == ollama.model_path.stat().st_size
    assert (model.parameter_size, model.quantization, model.family) == ("135M", "Q4_1", "llama")
    assert model.modified_at.startswith(ollama.real_entry["modified_at"][:19])


async def test_pull_streams_monotonic_progress_and_the_model_is_listed(
    ollama: OllamaLoopback,
) -> None:
    seen: list[PullProgress] = []
    await pull_ollama_model(ollama.url, TINY, progress=seen.append)

    assert seen[0] == PullProgress(status="pulling manifest", completed=0, total=0)
    assert [p.status for p in seen[-3:]] == [
        "verifying sha256 digest",
        "writing manifest",
        "success",
    ]
    layers = {
        p.status for p in seen if p.status.startswith("pulling ") and p.status != "pulling manifest"
    }
    assert len(layers) == 2 and all(len(s.removeprefix("pulling ")) == 12 for s in layers)
    completed = [p.completed for p in seen]
    assert (
        completed == sorted(completed) and len(set(completed)) > 4
    )  # several increments, never back
    assert all(p.completed <= p.total for p in seen)
    # the total grows as the second layer appears, and ends at the model's size
    assert seen[1].total == layer_sizes(TINY_BYTES)[0]
    assert (seen[-1].completed, seen[-1].total) == (TINY_BYTES, TINY_BYTES)

    listed = {m.name: m for m in await list_ollama_models(ollama.url)}
    assert set(listed) == {TINY, MODEL_NAME}
    assert listed[TINY].size_bytes == TINY_BYTES
    assert listed[TINY].parameter_size == "" and listed[TINY].quantization == "Q4_K_M"
    body = next(b for p, b in reversed(ollama.requests) if p == "/api/pull")
    assert body == {"model": TINY, "insecure": False, "stream": True}


async def test_a_pulled_model_answers_through_the_chat_back_end(ollama: OllamaLoopback) -> None:
    await pull_ollama_model(ollama.url, TINY)
    model = OllamaModel(TINY, host=ollama.url, think=False, timeout_s=120)
    try:
        result = await model.chat([{"role": "user", "content": "Say hello."}], max_tokens=8)
    finally:
        await model.aclose()
    assert result.content.strip()


async def test_pull_of_a_name_the_registry_lacks_is_model_not_found(ollama: OllamaLoopback) -> None:
    seen: list[PullProgress] = []
    with pytest.raises(ModelNotFound) as caught:
        await pull_ollama_model(ollama.url, "nosuchmodel:7b", progress=seen.append)
    assert "'nosuchmodel:7b'" in str(caught.value)
    assert [p.status for p in seen] == ["pulling manifest"]  # Ollama streamed the error after this
    assert await names(ollama.url) == [MODEL_NAME]


async def test_pull_without_internet_on_ollamas_side_says_pulled_models_still_work(
    ollama: OllamaLoopback,
) -> None:
    ollama.pull_offline = True
    with pytest.raises(ModelUnavailable) as caught:
        await pull_ollama_model(ollama.url, TINY)
    message = str(caught.value)
    assert "no internet connection" in message and "'tiny:1b'" in message
    assert "already pulled keep working" in message


async def test_cancelling_a_pull_closes_the_stream_promptly(ollama: OllamaLoopback) -> None:
    ollama.pull_delay_s = (
        0.3  # 13 lines: the pull would take about 4 s without a cancel (room on a busy machine)
    )
    downloading = asyncio.Event()
    seen: list[PullProgress] = []

    def on_progress(progress: PullProgress) -> None:
        seen.append(progress)
        if progress.completed > 0:
            downloading.set()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        task = asyncio.create_task(pull_ollama_model(ollama.url, TINY, progress=on_progress))
        await asyncio.wait_for(downloading.wait(), timeout=10)
        cancelled_at = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.perf_counter() - cancelled_at < 1.0
        assert task.cancelled()
        # the server saw the connection closed mid-stream, so it stopped the pull
        outcome = await asyncio.to_thread(ollama.wait_for_pull_end, TINY, 5.0)
        assert outcome == "aborted"
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning | RuntimeWarning)]
    assert seen[-1].status != "success"
    assert await names(ollama.url) == [MODEL_NAME]


async def test_delete_removes_the_model_and_a_second_delete_is_not_found(
    ollama: OllamaLoopback,
) -> None:
    await pull_ollama_model(ollama.url, TINY)
    assert TINY in await names(ollama.url)
    await delete_ollama_model(ollama.url, TINY)
    assert await names(ollama.url) == [MODEL_NAME]
    with pytest.raises(ModelNotFound) as caught:
        await delete_ollama_model(ollama.url, TINY)
    assert "'tiny:1b'" in str(caught.value)
    path, body = ollama.requests[-1]
    assert path == "/api/delete" and body == {"model": TINY}


async def test_a_host_with_nothing_listening_is_model_unavailable(unused_tcp_port: int) -> None:
    host = f"http://127.0.0.1:{unused_tcp_port}"
    for call in (
        list_ollama_models(host),
        pull_ollama_model(host, TINY),
        delete_ollama_model(host, TINY),
    ):
        with pytest.raises(ModelUnavailable) as caught:
            await call
        assert str(caught.value).startswith(f"Ollama is not running at {host}.")
        assert "`ollama serve`" in str(caught.value)
