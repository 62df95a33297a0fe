"""Any OpenAI-compatible HTTP endpoint: llama-server, LM Studio, vLLM, a remote provider.

Structured output asks for ``response_format: json_schema``; a server that
rejects it (``python -m llama_cpp.server`` answers HTTP 500) is asked again
with ``json_object`` plus the schema, and remembered as such. Reasoning comes
from ``reasoning_content`` (or ``reasoning``) and from ``<think>`` tags in the
text. The API key comes from the OS keyring (see :mod:`app.llm.keys`).
Transient HTTP errors (connection reset, 429, 502-504) are retried once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

import httpx
import openai

from app.core.errors import ModelError, ModelNotFound, ModelTimeout, ModelUnavailable
from app.core.models import Usage
from app.llm.backend import Attempts, ModelBackend, StructuredAsk
from app.llm.base import ChatDelta, ChatResult, EmbedResult, Message
from app.llm.keys import ENV_VAR
from app.llm.reasoning import ThinkSplitter, split_think
from app.llm.structured import RawReply, schema_instruction

DEFAULT_MAX_TOKENS = 2048
RETRY_STATUS = frozenset({429, 502, 503, 504})
RETRY_DELAY_S = 1.0
# Statuses with which servers say "I do not understand this response_format".
SCHEMA_REJECTED_STATUS = frozenset({400, 415, 422, 500, 501})
NO_KEY = "no-key"  # local servers want no key, but the client insists on one

T = TypeVar("T")


def _transport_errors() -> tuple[type[BaseException], ...]:
    """HTTP transport errors that may escape the openai client while a stream is read."""
    errors: list[type[BaseException]] = [openai.APIError, httpx.HTTPError]
    try:  # openai >= 3 runs on httpx2
        import httpx2

        errors.append(httpx2.HTTPError)
    except ImportError:
        pass
    return tuple(errors)


_TRANSPORT_ERRORS = _transport_errors()


def _reasoning_of(obj: Any) -> str:
    for name in ("reasoning_content", "reasoning"):
        value = getattr(obj, name, None)
        if value is None and getattr(obj, "model_extra", None):
            value = obj.model_extra.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


class OpenAICompatibleModel(ModelBackend):
    """A model behind an OpenAI-compatible ``/v1`` endpoint."""

    def __init__(
        self,
        base_url: str,
        model: str = "",
        *,
        api_key: str | None = None,
        temperature: float = 0.2,
        timeout_s: float = 300.0,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._model = model
        self._temperature = temperature
        self._timeout_s = timeout_s
        self._has_key = bool(api_key)
        self._client = openai.AsyncOpenAI(
            base_url=self._base_url,
            api_key=api_key or NO_KEY,
            timeout=openai.Timeout(timeout_s, connect=5.0),
            max_retries=0,  # one retry, done here, only on transient errors
        )
        # Any: its overloads fit no dict messages
        self._completions: Any = self._client.chat.completions
        self._embeds_per_token = False  # learnt from the first reply: see embed()
        self.json_schema_supported: bool | None = None  # learnt on the first structured call

    @property
    def model_name(self) -> str:
        return self._model or self._base_url

    @property
    def base_url(self) -> str:
        return self._base_url

    # -- errors and retries ---------------------------------------------------

    def _translate(self, exc: BaseException) -> ModelError:
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeout(
                f"The endpoint {self._base_url} did not answer within {self._timeout_s:.0f} s.",
                "Ask for a shorter answer, or raise the timeout (model.timeout_s) in Settings.",
            )
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailable(
                f"No OpenAI-compatible server answers at {self._base_url}.",
                "Start the server (for example `llama-server -m model.gguf --port 8080`), "
                "or correct the address (model.openai.base_url) in Settings.",
            )
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            where = "the key stored for it in the OS keyring" if self._has_key else "no API key"
            return ModelUnavailable(
                f"The endpoint {self._base_url} refused the request with {where}.",
                f"Enter the endpoint's API key in Settings (kept in the OS keyring) or set {ENV_VAR}.",
            )
        if isinstance(exc, openai.NotFoundError):
            return ModelNotFound(
                f"The endpoint {self._base_url} has no model '{self._model}' (or the address is wrong).",
                "Pick one of the models it offers in Settings (`fathom doctor` lists them); "
                "the address usually ends in /v1.",
            )
        if isinstance(exc, openai.APIStatusError):
            return ModelError(
                f"The endpoint {self._base_url} refused the request (HTTP {exc.status_code}): {exc.message}."
            )
        return ModelError(f"The endpoint {self._base_url} failed: {exc}.")

    async def _call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run one request; retry once on a transient error; raise nothing but ModelError."""
        for attempt in (1, 2):
            try:
                return await make()
            except openai.APITimeoutError as exc:
                raise self._translate(exc) from exc
            except openai.APIConnectionError as exc:
                if attempt == 2 or not self._reachable_before(exc):
                    raise self._translate(exc) from exc
            except openai.APIStatusError as exc:
                if attempt == 2 or exc.status_code not in RETRY_STATUS:
                    raise self._translate(exc) from exc
            await asyncio.sleep(RETRY_DELAY_S)
        raise AssertionError("unreachable")

    @staticmethod
    def _reachable_before(exc: openai.APIConnectionError) -> bool:
        """A refused connection is not transient (nothing listens); a dropped one is."""
        cause = exc.__cause__
        text = f"{exc} {cause}".lower()
        return "refused" not in text and "connecterror" not in type(cause).__name__.lower()

    async def _resolved_model(self) -> str:
        if not self._model:
            models = await self.list_models()
            if not models:
                raise ModelNotFound(
                    f"The endpoint {self._base_url} offers no models.",
                    "Load a model in the server, then try again.",
                )
            self._model = models[0]
        return self._model

    # -- chat -----------------------------------------------------------------

    async def _stream(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int | None
    ) -> AsyncIterator[ChatDelta]:
        model = await self._resolved_model()
        started = time.perf_counter()
        chunks = await self._call(
            lambda: self._completions.create(
                model=model,
                messages=[dict(m) for m in messages],  # type: ignore[misc]
                temperature=self._temperature if temperature is None else temperature,
                max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        splitter = ThinkSplitter()
        usage: Usage | None = None
        pieces = 0
        try:
            async for chunk in chunks:
                if chunk.usage is not None:
                    usage = Usage(
                        prompt_tokens=chunk.usage.prompt_tokens or 0,
                        completion_tokens=chunk.usage.completion_tokens or 0,
                        model=model,
                    )
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                reasoning = _reasoning_of(delta)
                if reasoning:
                    pieces += 1
                    yield ChatDelta(kind="reasoning", text=reasoning)
                if delta.content:
                    pieces += 1
                    for channel, text in splitter.feed(delta.content):
                        yield ChatDelta(kind=channel, text=text)
        except _TRANSPORT_ERRORS as exc:
            raise self._translate(exc) from exc
        finally:
            await chunks.close()
        for channel, text in splitter.flush():
            yield ChatDelta(kind=channel, text=text)
        if usage is None:  # the server sent no usage: count streamed pieces, estimate the prompt
            prompt_chars = sum(len(m["content"]) for m in messages)
            usage = Usage(prompt_tokens=prompt_chars // 4, completion_tokens=pieces, model=model)
        yield ChatDelta(kind="done", usage=_with_latency(usage, started))

    async def _complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None,
        max_tokens: int,
        response_format: dict[str, Any] | None = None,
    ) -> RawReply:
        model = await self._resolved_model()
        started = time.perf_counter()
        extra: dict[str, Any] = {"response_format": response_format} if response_format else {}
        response = await self._call(
            lambda: self._completions.create(
                model=model,
                messages=[dict(m) for m in messages],  # type: ignore[misc]
                temperature=self._temperature if temperature is None else temperature,
                max_tokens=max_tokens,
                **extra,
            )
        )
        if not response.choices:
            raise ModelError(f"The endpoint {self._base_url} returned no answer.")
        message = response.choices[0].message
        content, think = split_think(message.content or "")
        reasoning = "\n".join(r for r in (_reasoning_of(message), think) if r)
        usage = Usage(
            prompt_tokens=response.usage.prompt_tokens if response.usage else 0,
            completion_tokens=response.usage.completion_tokens if response.usage else 0,
            model=model,
        )
        return RawReply(content=content, reasoning=reasoning, usage=_with_latency(usage, started))

    async def _chat(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int | None
    ) -> ChatResult:
        """One request, not streamed."""
        reply = await self._complete(
            messages, temperature=temperature, max_tokens=max_tokens or DEFAULT_MAX_TOKENS
        )
        return ChatResult(content=reply.content, reasoning=reply.reasoning, usage=reply.usage)

    async def _structured_attempts(self, ask: StructuredAsk) -> Attempts:
        messages, schema, temperature, budget = ask

        async def generate(attempt: Sequence[Message]) -> RawReply:
            if self.json_schema_supported is not False:
                try:
                    reply = await self._complete(
                        attempt,
                        temperature=temperature,
                        max_tokens=budget,
                        response_format={
                            "type": "json_schema",
                            "json_schema": {"name": "reply", "schema": schema, "strict": False},
                        },
                    )
                except ModelError as exc:
                    if not _rejected_format(exc):
                        raise
                    self.json_schema_supported = False
                else:
                    self.json_schema_supported = True
                    return reply
            return await self._complete_json_object(attempt, schema, temperature, budget)

        return generate, messages

    async def _complete_json_object(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        temperature: float | None,
        budget: int,
    ) -> RawReply:
        """The fallback: ``json_object`` with the schema in the prompt (and in the
        request, which llama-cpp-python's server turns into a grammar)."""
        guided: list[Message] = [
            {"role": "system", "content": schema_instruction(schema)},
            *messages,
        ]
        try:
            return await self._complete(
                guided,
                temperature=temperature,
                max_tokens=budget,
                response_format={"type": "json_object", "schema": schema},
            )
        except ModelError as exc:
            if not _rejected_format(exc):
                raise
        return await self._complete(
            guided,
            temperature=temperature,
            max_tokens=budget,
            response_format={"type": "json_object"},
        )

    # -- models and embeddings ------------------------------------------------

    async def embed(self, texts: Sequence[str]) -> EmbedResult:
        """One vector per text. A server that sends one vector per token (llama-cpp-python's
        ``--embedding`` server, no pooling) mixes up the sequences of a batch, so such a
        server is asked one text at a time from its first reply on."""
        model = await self._resolved_model()
        started = time.perf_counter()
        if self._embeds_per_token:
            vectors, tokens = await self._embed_one_by_one(model, texts)
        else:
            data, tokens = await self._embeddings(model, texts)
            self._embeds_per_token = any(_per_token(embedding) for embedding in data)
            if self._embeds_per_token and len(texts) > 1:
                vectors, tokens = await self._embed_one_by_one(model, texts)
            else:
                vectors = [_one_vector(embedding) for embedding in data]
        usage = Usage(prompt_tokens=tokens, model=model)
        return EmbedResult(vectors=vectors, usage=_with_latency(usage, started))

    async def _embeddings(self, model: str, texts: Sequence[str]) -> tuple[list[Any], int]:
        """The raw embeddings of one request, in input order, and its prompt tokens."""
        response = await self._call(
            lambda: self._client.embeddings.create(model=model, input=list(texts))
        )
        ordered = sorted(response.data, key=lambda item: item.index)
        return [
            item.embedding for item in ordered
        ], response.usage.prompt_tokens if response.usage else 0

    async def _embed_one_by_one(
        self, model: str, texts: Sequence[str]
    ) -> tuple[list[list[float]], int]:
        vectors: list[list[float]] = []
        tokens = 0
        for text in texts:
            data, used = await self._embeddings(model, [text])
            vectors.append(_one_vector(data[0]))
            tokens += used
        return vectors, tokens

    async def list_models(self) -> list[str]:
        async def fetch() -> list[str]:
            page = await self._client.models.list()
            return [m.id for m in page.data]

        return await self._call(fetch)

    async def aclose(self) -> None:
        await self._client.close()


def _per_token(embedding: Any) -> bool:
    return bool(embedding) and isinstance(embedding[0], list)


def _one_vector(embedding: Any) -> list[float]:
    """One text's vector. A server started without pooling (``python -m llama_cpp.server
    --embedding true``) sends one vector per token: they are averaged, as llama.cpp's
    mean pooling would."""
    if _per_token(embedding):
        width = len(embedding[0])
        return [sum(float(token[i]) for token in embedding) / len(embedding) for i in range(width)]
    return [float(x) for x in embedding]


def _rejected_format(exc: ModelError) -> bool:
    """True when the error is the server refusing the requested response_format."""
    if type(exc) is not ModelError:  # unavailable, not found, timeout: something else
        return False
    text = str(exc)
    return any(f"HTTP {status}" in text for status in SCHEMA_REJECTED_STATUS)


def _with_latency(usage: Usage, started: float) -> Usage:
    return Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        latency_s=time.perf_counter() - started,
        model=usage.model,
    )
