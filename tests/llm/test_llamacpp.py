"""llama.cpp in-process with the real starter model (SmolLM2-135M-Instruct)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from outline import OUTLINE_PROMPT, OUTLINE_SCHEMA

from app.core.errors import ModelUnavailable
from app.llm.base import ChatDelta, ChatModel
from app.llm.llamacpp import LlamaCppModel, schema_grammar
from app.llm.structured import harden_schema

pytestmark = pytest.mark.slow

LONG_PROMPT = [
    {"role": "user", "content": "Write a very long story about a lighthouse keeper and the sea."}
]


async def test_free_text_answer_with_usage(starter_llm: LlamaCppModel) -> None:
    result = await starter_llm.chat(
        [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}],
        max_tokens=40,
    )
    assert isinstance(starter_llm, ChatModel)
    assert "paris" in result.content.lower()
    assert result.usage.prompt_tokens > 5
    assert 0 < result.usage.completion_tokens <= 41
    assert result.usage.latency_s > 0
    assert result.usage.model == starter_llm.model_name


def test_warm_up_imports_the_grammar_module_before_the_first_call() -> None:
    """The window calls warm_up() in a worker thread: llama.cpp's grammar module is then
    imported there, not on the event loop by the first structured call; other back ends
    have nothing to load (a fresh interpreter: this session imported it long ago)."""
    script = (
        "import sys\n"
        "from app.llm.llamacpp import LlamaCppModel\n"
        "from app.llm.ollama_backend import OllamaModel\n"
        "model = LlamaCppModel('never-loaded.gguf')\n"
        "assert 'llama_cpp.llama_grammar' not in sys.modules\n"
        "OllamaModel('any').warm_up()\n"
        "assert 'llama_cpp.llama_grammar' not in sys.modules\n"
        "model.warm_up()\n"
        "assert 'llama_cpp.llama_grammar' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


async def test_structured_output_is_valid_ten_times_out_of_ten(starter_llm: LlamaCppModel) -> None:
    values: list[Any] = []
    for seed_temperature in (0.2, 0.5, 0.8, 1.0, 0.2, 0.5, 0.8, 1.0, 0.3, 0.9):
        result = await starter_llm.structured(
            OUTLINE_PROMPT, OUTLINE_SCHEMA, temperature=seed_temperature
        )
        jsonschema.validate(result.value, OUTLINE_SCHEMA)
        assert result.usage.completion_tokens > 0
        values.append(result.value)
    assert len(values) == 10
    assert all(v["sections"] for v in values)


async def test_grammar_keeps_control_characters_out_of_strings() -> None:
    gbnf = schema_grammar(
        harden_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    )
    char_rule = next(line for line in gbnf.splitlines() if line.startswith("char ::="))
    assert r"\x00-\x1F" in char_rule
    assert "maxLength" not in gbnf  # bounds became repetitions, not text


async def test_streaming_yields_many_deltas_then_usage(starter_llm: LlamaCppModel) -> None:
    deltas: list[ChatDelta] = [
        d
        async for d in starter_llm.stream(
            [{"role": "user", "content": "Name five colours."}], max_tokens=40
        )
    ]
    text = [d for d in deltas if d.kind == "content"]
    assert len(text) > 1
    assert deltas[-1].kind == "done"
    assert deltas[-1].usage is not None and deltas[-1].usage.completion_tokens >= len(text) // 2


async def test_cancelling_a_long_generation_returns_within_a_second(
    starter_llm: LlamaCppModel,
) -> None:
    first_token = asyncio.Event()

    async def consume() -> int:
        count = 0
        async for delta in starter_llm.stream(LONG_PROMPT, max_tokens=2000, temperature=0.8):
            if delta.kind == "content":
                count += 1
                first_token.set()
        return count

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_token.wait(), timeout=60)
    started = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - started < 1.0
    # the worker thread itself stops within a second, too
    await asyncio.wait_for(starter_llm.idle(), timeout=1.0)
    assert time.perf_counter() - started < 1.0
    # and the model still answers afterwards
    again = await starter_llm.chat([{"role": "user", "content": "Say hello."}], max_tokens=8)
    assert again.content


async def test_the_event_loop_keeps_running_during_generation(starter_llm: LlamaCppModel) -> None:
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    await starter_llm.chat(LONG_PROMPT, max_tokens=60)
    done.set()
    await tick
    assert len(gaps) > 20
    assert max(gaps) < 0.25, f"the loop stalled for {max(gaps):.3f} s"


async def test_embeddings_have_one_vector_per_text(starter_llm: LlamaCppModel) -> None:
    result = await starter_llm.embed(["rivers and cities", "a lighthouse at sea"])
    assert len(result.vectors) == 2
    assert len(result.vectors[0]) == len(result.vectors[1]) > 100
    assert result.usage.prompt_tokens > 4


async def test_a_missing_model_file_says_what_to_do(tmp_path: Path) -> None:
    model = LlamaCppModel(tmp_path / "absent.gguf")
    with pytest.raises(ModelUnavailable) as caught:
        await model.chat([{"role": "user", "content": "hi"}])
    assert "absent.gguf" in str(caught.value)
    assert "Settings" in caught.value.hint
    await model.aclose()


async def test_list_models_names_the_file(starter_llm: LlamaCppModel) -> None:
    assert await starter_llm.list_models() == [starter_llm.model_name]
