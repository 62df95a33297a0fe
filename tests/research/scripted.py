"""A scripted ChatModel and an in-memory library, for deterministic control-flow
tests of the research engine (the real model and Milvus are tested end to end
elsewhere).

ScriptedModel answers ``structured`` calls by the schema's ``title`` (the task
name: decompose, judge, reflect, route, citation_check, ...) and text/stream
calls with ``text``. A reply is:

* a value (returned as the parsed object),
* a callable ``(messages, schema) -> value``,
* an exception instance (raised),
* ``BLOCK`` (waits until cancelled; ``model.blocked`` is set first).

A list of replies is consumed in order, its last item repeating. A task with
no script raises StructuredOutputError (the engine must degrade to a default).
Every call costs ``prompt_tokens`` + ``completion_tokens``.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.errors import StructuredOutputError
from app.core.models import Chunk, Collection, Hit, Usage
from app.llm.base import ChatDelta, ChatResult, EmbedResult, Message, StructuredResult

BLOCK = object()
TEXT = "text"


@dataclass
class Call:
    kind: str  # structured | stream
    task: str  # the schema title, or "text"
    messages: list[Message]

    @property
    def prompt(self) -> str:
        return "\n".join(m["content"] for m in self.messages)


class ScriptedModel:
    def __init__(
        self,
        structured: Mapping[str, Any] | None = None,
        text: Any = "",
        *,
        prompt_tokens: int = 100,
        completion_tokens: int = 20,
        reasoning: str = "",
    ) -> None:
        self._scripts: dict[str, list[Any]] = {}
        for task, reply in (structured or {}).items():
            self._scripts[task] = list(reply) if isinstance(reply, list) else [reply]
        self._scripts[TEXT] = list(text) if isinstance(text, list) else [text]
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.reasoning = reasoning
        self.calls: list[Call] = []
        self.blocked = asyncio.Event()

    @property
    def model_name(self) -> str:
        return "scripted"

    def calls_for(self, task: str) -> list[Call]:
        return [c for c in self.calls if c.task == task]

    def _usage(self) -> Usage:
        return Usage(self.prompt_tokens, self.completion_tokens, 0.0, "scripted", 1)

    async def _reply(
        self, task: str, messages: Sequence[Message], schema: dict[str, Any] | None
    ) -> Any:
        script = self._scripts.get(task)
        if not script and task == "findings" and schema is not None:
            # unscripted, the writer's findings step picks every passage it is shown
            return {"sources": list(schema["properties"]["sources"]["items"]["enum"])}
        if not script:
            raise StructuredOutputError(f"no scripted reply for task {task!r}")
        reply = script.pop(0) if len(script) > 1 else script[0]
        if reply is BLOCK:
            self.blocked.set()
            await asyncio.Event().wait()
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(list(messages), schema)
        await asyncio.sleep(0)
        return reply

    async def structured(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> StructuredResult:
        task = str(schema.get("title", ""))
        self.calls.append(Call("structured", task, list(messages)))
        value = await self._reply(task, messages, schema)
        return StructuredResult(value=value, reasoning=self.reasoning, usage=self._usage())

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[ChatDelta]:
        self.calls.append(Call("stream", TEXT, list(messages)))
        text = str(await self._reply(TEXT, messages, None))
        if self.reasoning:
            yield ChatDelta("reasoning", self.reasoning)
        for piece in re.findall(r"\S+\s*", text):
            yield ChatDelta("content", piece)
            await asyncio.sleep(0)
        yield ChatDelta("done", usage=self._usage())

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        parts = []
        usage = None
        async for delta in self.stream(messages, temperature=temperature, max_tokens=max_tokens):
            if delta.kind == "content":
                parts.append(delta.text)
            elif delta.kind == "done":
                usage = delta.usage
        return ChatResult("".join(parts), self.reasoning, usage or self._usage())

    async def embed(self, texts: Sequence[str]) -> EmbedResult:
        return EmbedResult([[0.0] for _ in texts], Usage(calls=1))

    async def list_models(self) -> list[str]:
        return ["scripted"]

    async def aclose(self) -> None:
        return None


def prompt_of(messages: Sequence[Message]) -> str:
    return "\n".join(m["content"] for m in messages)


# -- an in-memory library ---------------------------------------------------------


def make_chunk(
    chunk_id: str, text: str, *, collection: str = "docs", path: str = "", page: int | None = None
) -> Chunk:
    return Chunk(
        chunk_id=chunk_id,
        doc_id=f"doc-{chunk_id}",
        collection=collection,
        path=path or f"/data/{chunk_id}.md",
        text=text,
        title=f"Title {chunk_id}",
        page=page,
    )


@functools.cache
def _minilm() -> Any:
    from app.ingest.embedder import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder()


@dataclass
class MemoryLibrary:
    """Word-overlap search over chunks held in memory; records every search call."""

    chunks: list[Chunk]
    descriptions: dict[str, str] = field(default_factory=dict)
    search_calls: list[tuple[list[str], tuple[str, ...] | None]] = field(default_factory=list)
    top_ks: list[int] = field(default_factory=list)  # the top_k of each search call
    fail_search: BaseException | None = None
    on_search: Callable[[], Any] | None = None

    async def collections(self) -> list[Collection]:
        names = dict.fromkeys(c.collection for c in self.chunks)
        return [Collection(name=n, description=self.descriptions.get(n, "")) for n in names]

    async def indexing(self) -> list[Any]:
        return []  # nothing is being indexed in memory

    async def embedding_model(self) -> str:
        return str(_minilm().model_name)

    async def documents_by_id(self, doc_ids: Sequence[str]) -> dict[str, Any]:
        return {}  # chunks in memory have no files: their sources are recorded by path only

    async def embed(self, texts: list[str]) -> Any:
        """The real embedding model (the claim check compares meanings with it)."""
        return await asyncio.to_thread(_minilm().embed, texts)

    async def search(
        self,
        queries: Sequence[str],
        *,
        collections: Sequence[str] | None = None,
        mode: str = "hybrid",
        top_k: int = 10,
    ) -> list[list[Hit]]:
        self.search_calls.append((list(queries), tuple(collections) if collections else None))
        self.top_ks.append(top_k)
        if self.on_search is not None:
            self.on_search()
        if self.fail_search is not None:
            raise self.fail_search
        await asyncio.sleep(0)
        out = []
        for query in queries:
            words = set(re.findall(r"\w+", query.lower()))
            scored = []
            for chunk in self.chunks:
                if collections and chunk.collection not in collections:
                    continue
                overlap = len(words & set(re.findall(r"\w+", chunk.text.lower())))
                if overlap:
                    scored.append(Hit(chunk=chunk, score=float(overlap), query=query))
            scored.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
            out.append(scored[:top_k])
        return out

    async def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        wanted = set(chunk_ids)
        return [c for c in self.chunks if c.chunk_id in wanted]

    async def sample_chunks(self, collection: str, n: int = 8) -> list[Chunk]:
        return [c for c in self.chunks if c.collection == collection][:n]


async def collect(events: AsyncIterator[Any]) -> list[Any]:
    """Every event of a run, in order."""
    return [event async for event in events]


MILVUS_CHUNKS = [
    make_chunk(
        "c1", "Milvus is an open-source vector database built for similarity search at scale."
    ),
    make_chunk(
        "c2",
        "Milvus supports hybrid search that combines dense vectors with BM25 full text search.",
    ),
    make_chunk(
        "c3",
        "Weaviate and Qdrant are other vector databases; Milvus scales to billions of vectors.",
    ),
    make_chunk("c4", "Bananas are rich in potassium and grow in tropical climates."),
    make_chunk("c5", "Milvus index types include HNSW, IVF_FLAT and DiskANN for vector search."),
]


def delayed(model: ScriptedModel, seconds: float) -> ScriptedModel:
    """Make every call of ``model`` take ``seconds`` (wall time) first."""
    original = model._reply

    async def slow(task: str, messages: Sequence[Message], schema: dict[str, Any] | None) -> Any:
        await asyncio.sleep(seconds)
        return await original(task, messages, schema)

    model._reply = slow  # type: ignore[method-assign]
    return model


def verdicts(
    *given: str, rest: str = "supported"
) -> Callable[[Sequence[Message], dict[str, Any]], Any]:
    """A citation_check reply: the given verdicts first, then ``rest`` for every other claim."""

    def reply(messages: Sequence[Message], schema: dict[str, Any]) -> Any:
        n = schema["properties"]["verdicts"]["minItems"]
        return {"verdicts": [*given[:n], *[rest] * max(0, n - len(given))]}

    return reply
