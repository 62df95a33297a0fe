"""Ollama through the ``ollama`` package's AsyncClient.

Structured output uses ``format=<json schema>``; reasoning models are asked to
``think`` and their ``thinking`` field becomes reasoning deltas. A server that
is not running and a model that is not pulled both raise an error that says
what to type.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import ollama

from app.core.errors import ModelError, ModelNotFound, ModelTimeout
from app.core.models import Usage
from app.llm.backend import Attempts, ModelBackend, StructuredAsk
from app.llm.base import ChatDelta, EmbedResult, Message, collect_stream
from app.llm.ollama_client import OLLAMA_ERRORS, ollama_error
from app.llm.reasoning import ThinkSplitter
from app.llm.structured import RawReply, schema_instruction

DEFAULT_MAX_TOKENS = 2048


class OllamaModel(ModelBackend):
    """One model served by an Ollama server."""

    def __init__(
        self,
        model: str,
        *,
        host: str = "http://127.0.0.1:11434",
        think: bool = True,
        temperature: float = 0.2,
        timeout_s: float = 300.0,
    ) -> None:
        self._model = model
        self._host = host.rstrip("/")
        self._think = think
        self._temperature = temperature
        self._timeout_s = timeout_s
        self._client = ollama.AsyncClient(
            host=self._host, timeout=httpx.Timeout(timeout_s, connect=5.0)
        )
        self._think_supported: bool | None = None

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def host(self) -> str:
        return self._host

    # -- errors ---------------------------------------------------------------

    def _translate(self, exc: BaseException) -> ModelError:
        timeout = ModelTimeout(
            f"Ollama at {self._host} did not answer within {self._timeout_s:.0f} s.",
            "Check that the machine is not overloaded, or raise the timeout (model.timeout_s) in Settings.",
        )
        return ollama_error(exc, self._host, timeout=timeout, refused=self._refused)

    def _refused(self, exc: ollama.ResponseError) -> ModelError:
        text = str(exc.error)
        if exc.status_code == 404 or "not found" in text.lower():
            return ModelNotFound(
                f"Ollama at {self._host} does not have the model '{self._model}'.",
                f"Download it with `ollama pull {self._model}`, or pick an installed model in Settings.",
            )
        return ModelError(f"Ollama at {self._host} refused the request: {text}.")

    def _options(
        self, temperature: float | None, max_tokens: int | None, default_max: int
    ) -> dict[str, Any]:
        return {
            "temperature": self._temperature if temperature is None else temperature,
            "num_predict": max_tokens or default_max,
        }

    # -- chat -----------------------------------------------------------------

    async def _chat_stream(
        self,
        messages: Sequence[Message],
        *,
        options: dict[str, Any],
        format: dict[str, Any] | None,
        think: bool,
    ) -> AsyncIterator[ChatDelta]:
        started = time.perf_counter()
        splitter = ThinkSplitter()
        try:
            parts = await self._client.chat(
                model=self._model,
                messages=[dict(m) for m in messages],
                stream=True,
                format=format,
                options=options,
                think=think if think else None,
            )
            last: Any = None
            async for part in parts:
                last = part
                thinking = part.message.thinking
                if thinking:
                    yield ChatDelta(kind="reasoning", text=thinking)
                if part.message.content:
                    for channel, text in splitter.feed(part.message.content):
                        yield ChatDelta(kind=channel, text=text)
        except OLLAMA_ERRORS as exc:
            raise self._translate(exc) from exc
        for channel, text in splitter.flush():
            yield ChatDelta(kind=channel, text=text)
        usage = Usage(
            prompt_tokens=int(getattr(last, "prompt_eval_count", 0) or 0),
            completion_tokens=int(getattr(last, "eval_count", 0) or 0),
            latency_s=time.perf_counter() - started,
            model=self._model,
        )
        yield ChatDelta(kind="done", usage=usage)

    async def _with_think_fallback(
        self,
        messages: Sequence[Message],
        *,
        options: dict[str, Any],
        format: dict[str, Any] | None,
    ) -> AsyncIterator[ChatDelta]:
        """Ask to think when configured; a model that cannot think is asked again without."""
        think = self._think and self._think_supported is not False
        emitted = False
        try:
            async for delta in self._chat_stream(
                messages, options=options, format=format, think=think
            ):
                emitted = True
                yield delta
            if think:
                self._think_supported = True
        except ModelError as exc:
            if not think or emitted or "think" not in str(exc).lower():
                raise
            self._think_supported = False
            async for delta in self._chat_stream(
                messages, options=options, format=format, think=False
            ):
                yield delta

    async def _stream(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int | None
    ) -> AsyncIterator[ChatDelta]:
        options = self._options(temperature, max_tokens, DEFAULT_MAX_TOKENS)
        async for delta in self._with_think_fallback(messages, options=options, format=None):
            yield delta

    async def _structured_attempts(self, ask: StructuredAsk) -> Attempts:
        messages, schema, temperature, budget = ask
        options = self._options(temperature, budget, budget)
        guided: list[Message] = [
            {"role": "system", "content": schema_instruction(schema)},
            *messages,
        ]

        async def generate(attempt: Sequence[Message]) -> RawReply:
            deltas = self._with_think_fallback(attempt, options=options, format=schema)
            result = await collect_stream(deltas, self._model)
            return RawReply(content=result.content, reasoning=result.reasoning, usage=result.usage)

        return generate, guided

    # -- models and embeddings ------------------------------------------------

    async def embed(self, texts: Sequence[str]) -> EmbedResult:
        started = time.perf_counter()
        try:
            response = await self._client.embed(model=self._model, input=list(texts))
        except OLLAMA_ERRORS as exc:
            raise self._translate(exc) from exc
        usage = Usage(
            prompt_tokens=int(response.prompt_eval_count or 0),
            latency_s=time.perf_counter() - started,
            model=self._model,
        )
        return EmbedResult(vectors=[list(map(float, v)) for v in response.embeddings], usage=usage)

    async def list_models(self) -> list[str]:
        try:
            response = await self._client.list()
        except OLLAMA_ERRORS as exc:
            raise self._translate(exc) from exc
        return sorted(m.model for m in response.models if m.model)

    async def aclose(self) -> None:
        await self._client._client.aclose()


async def ollama_models(host: str, timeout_s: float = 2.0) -> list[str]:
    """The models an Ollama server at ``host`` offers (raises ModelUnavailable when down)."""
    probe = OllamaModel("", host=host, timeout_s=timeout_s)
    try:
        return await probe.list_models()
    finally:
        await probe.aclose()
