"""The interface every model back end implements.

A back end is an object with these async methods; the research engine and
the ingest pipeline only ever see this protocol. Reasoning text (``<think>``,
``reasoning_content``, Ollama's ``thinking``) is always split from the
answer: it arrives as ``reasoning`` deltas and never reaches JSON parsing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from app.core.models import Usage


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ChatDelta:
    """A piece of a streamed reply. The last one has ``kind == "done"`` and the usage."""

    kind: Literal["content", "reasoning", "done"]
    text: str = ""
    usage: Usage | None = None


@dataclass(frozen=True)
class ChatResult:
    content: str
    reasoning: str
    usage: Usage


@dataclass(frozen=True)
class StructuredResult:
    """A reply validated against a JSON schema: ``value`` is the parsed object."""

    value: Any
    reasoning: str
    usage: Usage
    repaired: bool = False  # True when the first reply was invalid and a repair succeeded


@dataclass(frozen=True)
class EmbedResult:
    vectors: list[list[float]]
    usage: Usage


@runtime_checkable
class ChatModel(Protocol):
    """What the engine needs from a model back end."""

    @property
    def model_name(self) -> str: ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[ChatDelta]: ...

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult: ...

    async def structured(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> StructuredResult: ...

    async def embed(self, texts: Sequence[str]) -> EmbedResult: ...

    async def list_models(self) -> list[str]: ...

    async def aclose(self) -> None: ...

    def warm_up(self) -> None:
        """Load now, in the caller's worker thread, what the first call would otherwise load
        on the event loop (llama.cpp's grammar module); most back ends have nothing to load."""
        ...


async def collect_stream(deltas: AsyncIterator[ChatDelta], model: str) -> ChatResult:
    """Gather a streamed reply into one ChatResult (content, reasoning, usage)."""
    content: list[str] = []
    reasoning: list[str] = []
    usage = Usage(model=model)
    async for delta in deltas:
        if delta.kind == "content":
            content.append(delta.text)
        elif delta.kind == "reasoning":
            reasoning.append(delta.text)
        elif delta.usage is not None:
            usage = delta.usage
    return ChatResult(content="".join(content), reasoning="".join(reasoning), usage=usage)
