"""What every model back end shares: the public methods of :class:`~app.llm.base.ChatModel`
written once, around the few steps each back end does its own way.

A back end subclasses :class:`ModelBackend` and writes ``_stream`` (one reply, streamed)
and ``_structured_attempts`` (how one structured reply is asked for); ``chat()`` gathers the
stream unless the back end has a better way (``_chat``), ``structured()`` sets the token
budget, hardens the schema and runs the repair round, and ``warm_up()`` does nothing
unless the back end has something to load first. (Not in ``base.py``: this needs
:mod:`app.llm.structured`, which needs ``base``.)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, NamedTuple

from app.llm.base import ChatDelta, ChatResult, Message, StructuredResult, collect_stream
from app.llm.structured import RawReply, harden_schema, structured_with_repair

DEFAULT_STRUCTURED_MAX_TOKENS = 1024

# One structured reply for a conversation (the first try, or the repair round's).
Attempt = Callable[[Sequence[Message]], Awaitable[RawReply]]
# How a back end asks for structured replies, and the conversation to start from.
Attempts = tuple[Attempt, Sequence[Message]]


class StructuredAsk(NamedTuple):
    """One structured reply asked of a back end: its conversation, its JSON schema
    (already hardened), its temperature and its token budget."""

    messages: Sequence[Message]
    schema: dict[str, Any]
    temperature: float | None
    budget: int


class ModelBackend(ABC):
    """The shared part of every back end (see the module's docstring)."""

    @property
    @abstractmethod
    def model_name(self) -> str: ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[ChatDelta]:
        return self._stream(messages, temperature, max_tokens)

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        return await self._chat(messages, temperature, max_tokens)

    async def structured(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> StructuredResult:
        budget = max_tokens or DEFAULT_STRUCTURED_MAX_TOKENS
        hardened = harden_schema(schema, max_tokens=budget)
        ask = StructuredAsk(messages, hardened, temperature, budget)
        attempt, guided = await self._structured_attempts(ask)
        return await structured_with_repair(attempt, guided, schema, model_name=self.model_name)

    def warm_up(self) -> None:
        """Nothing to load before the first call (see :meth:`app.llm.base.ChatModel.warm_up`)."""
        return

    @abstractmethod
    def _stream(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int | None
    ) -> AsyncIterator[ChatDelta]:
        """The reply to ``messages``, streamed (``stream()``'s work)."""

    async def _chat(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int | None
    ) -> ChatResult:
        """``chat()``'s work: the stream gathered into one result."""
        return await collect_stream(
            self.stream(messages, temperature=temperature, max_tokens=max_tokens), self.model_name
        )

    @abstractmethod
    async def _structured_attempts(self, ask: StructuredAsk) -> Attempts:
        """How this back end asks for one reply valid against ``ask.schema`` within
        ``ask.budget`` tokens, and the conversation to start from (``ask.messages``, or
        those with the schema spelled out in front)."""
