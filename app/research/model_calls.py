"""Model calls of one research run, all through :class:`ModelCalls`.

``call_structured``, ``call_text`` and ``stream_text``: each waits for a slot
(``max_concurrent_calls``), checks the budgets before and after waiting, runs
under the wall-time deadline, counts its tokens into the run's account
(``UsageUpdated``), shows the model's reasoning under the node, and never lets
a malformed structured reply crash the run (``call_structured`` returns the
given default and posts a Notice). A ``call_text`` given a ``phase`` says on
the status line how many words the model has written so far (a reply nobody
sees as it is written must not leave the window silent), and while any call
shows nothing (the model reads its prompt) the status line says how long it
has waited.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from app.core.errors import StructuredOutputError
from app.core.events import ReasoningDelta, UsageUpdated
from app.core.models import Usage
from app.llm.base import ChatModel, Message
from app.research import phases
from app.research.budget import RunAccount
from app.research.run_events import RunEvents

STRUCTURED_MAX_TOKENS = 384
TEXT_MAX_TOKENS = 512
PLAN_TEMPERATURE = 0.1
WRITE_TEMPERATURE = 0.3


class ModelCalls:
    """The run's model, behind its budgets, its concurrency limit and its event stream."""

    def __init__(self, model: ChatModel, account: RunAccount, events: RunEvents) -> None:
        self.model = model
        self.account = account
        self.events = events
        self._semaphore = asyncio.Semaphore(max(1, account.budget.max_concurrent_calls))

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        """Wait for a slot (budgets checked before and after); while the call holds
        it, the status line is kept alive (:meth:`RunEvents.keep_alive`)."""
        self.account.check()
        async with self._semaphore:
            self.account.check()
            async with self.events.kept_alive():
                yield

    def _account(self, usage: Usage | None) -> None:
        if usage is None:
            return
        self.account.add_usage(usage)
        self.events.emit(UsageUpdated(run_id=self.events.run_id, total=self.account.usage))

    def _reasoning(self, node_id: str, text: str) -> None:
        if text:
            self.events.emit(ReasoningDelta(run_id=self.events.run_id, node_id=node_id, text=text))

    async def call_structured(
        self,
        node_id: str,
        messages: Sequence[Message],
        schema: dict[str, Any],
        default: Any,
        *,
        temperature: float = PLAN_TEMPERATURE,
        max_tokens: int = STRUCTURED_MAX_TOKENS,
    ) -> Any:
        """The model's reply as a JSON value validated against ``schema``.

        A reply that does not fit the schema (after the back end's repair) gives
        ``default`` and a Notice; the run goes on. Budget exhaustion raises
        BudgetHit; other model errors (back end down) propagate and fail the run.
        """
        async with self._slot():
            try:
                async with asyncio.timeout(self.account.call_deadline()):
                    result = await self.model.structured(
                        messages, schema, temperature=temperature, max_tokens=max_tokens
                    )
            except StructuredOutputError as exc:
                task = schema.get("title", "structured output")
                self.events.notice(
                    f"The model's {task} reply did not fit its format ({exc.message}); using a default.",
                    level="warning",
                    node_id=node_id,
                )
                self._account(exc.usage)
                return default
            except TimeoutError:
                if self.account.finishing:
                    self.events.notice(
                        "A check was skipped: the wall-time budget ran out.", level="warning"
                    )
                    self.account.stop("max_seconds")
                    return default
                raise self.account.timeout_hit() from None
        self._reasoning(node_id, result.reasoning)
        self._account(result.usage)
        return result.value

    async def call_text(
        self,
        node_id: str,
        messages: Sequence[Message],
        *,
        temperature: float = WRITE_TEMPERATURE,
        max_tokens: int = TEXT_MAX_TOKENS,
        phase: tuple[str, str] | None = None,
    ) -> str:
        """A plain-text reply; its reasoning is shown under ``node_id``. With ``phase``
        (name, text), the status line says it, then counts the words written."""
        if phase is None:
            return await self.stream_text(
                node_id, messages, temperature=temperature, max_tokens=max_tokens
            )
        name, text = phase
        words, last = 0, " "
        self.events.phase(name, text, node_id=node_id)

        def on_text(piece: str) -> None:
            nonlocal words, last
            words += new_words(piece, last)
            last = piece[-1:] or last
            self.events.phase(
                name, phases.writing(text, words), done=words, node_id=node_id, update=True
            )

        return await self.stream_text(
            node_id, messages, on_text=on_text, temperature=temperature, max_tokens=max_tokens
        )

    async def stream_text(
        self,
        node_id: str,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], bool | None] | None = None,
        temperature: float = WRITE_TEMPERATURE,
        max_tokens: int = TEXT_MAX_TOKENS,
    ) -> str:
        """Stream a reply: ``on_text`` gets each answer piece (returning False stops the
        generation early); reasoning goes to the node."""
        parts: list[str] = []
        reasoning_chars = 0
        accounted = False
        started = time.monotonic()
        async with self._slot():
            try:
                async with asyncio.timeout(self.account.call_deadline()):
                    stream = self.model.stream(
                        messages, temperature=temperature, max_tokens=max_tokens
                    )
                    try:
                        async for delta in stream:
                            if delta.kind == "content" and delta.text:
                                parts.append(delta.text)
                                if on_text is not None and on_text(delta.text) is False:
                                    self.events.notice(
                                        "The model started repeating itself; its reply was cut there."
                                    )
                                    break
                            elif delta.kind == "reasoning":
                                reasoning_chars += len(delta.text)
                                self._reasoning(node_id, delta.text)
                            elif delta.kind == "done":
                                accounted = True
                                self._account(delta.usage)
                    finally:
                        closer = getattr(stream, "aclose", None)
                        if closer is not None:
                            await closer()
                        # cut early: the back end never reported usage, estimate it
                        if not accounted:
                            self._account(
                                Usage(
                                    prompt_tokens=sum(len(m["content"]) for m in messages) // 4,
                                    completion_tokens=len(parts) + reasoning_chars // 4,
                                    latency_s=time.monotonic() - started,
                                    model=getattr(self.model, "model_name", ""),
                                )
                            )
            except TimeoutError:
                if self.account.finishing:
                    self.events.notice(
                        "The report was cut short by the wall-time budget.", level="warning"
                    )
                    self.account.stop("max_seconds")
                    return "".join(parts)
                raise self.account.timeout_hit() from None
        return "".join(parts)


def new_words(piece: str, before: str = " ") -> int:
    """How many words a streamed ``piece`` starts, ``before`` being the character
    just before it: a word starts where a non-space follows a space."""
    count = 0
    previous = before
    for char in piece:
        if previous.isspace() and not char.isspace():
            count += 1
        previous = char
    return count
