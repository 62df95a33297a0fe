"""Reading the prompts a real model was sent: a recording wrapper, and a parser
that finds the fences the fencing function wrote.

:class:`RecordingModel` delegates every call to a real back end and keeps each
messages list it was sent. :func:`fence_spans` parses one message the way the
fencing function writes a fence — an opening line ``<document id="…"
title="…">``, the body, a closing line ``</document>`` — strictly: any other
fence-like tag, a fence opened inside another, or one closed when none is
open, is an error, since that is what a document that broke out of its fence
would look like.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from app.llm.base import ChatDelta, ChatModel, ChatResult, EmbedResult, Message, StructuredResult
from app.llm.fencing import DATA_RULE

_OPEN = re.compile(r'<document id="[^"<>\n]*"(?: title="[^"<>\n]*")?>\n')
_CLOSE = "</document>"
# any tag that names the fence (look-alike spellings are caught by the tests' marker checks)
_ANY_MARK = re.compile(r"<\s*/?\s*document\b[^<>\n]*>?", re.IGNORECASE)


class RecordingModel:
    """A ChatModel that hands every call to ``inner`` and records the messages."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.prompts: list[list[Message]] = []

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def _record(self, messages: Sequence[Message]) -> None:
        self.prompts.append([{"role": m["role"], "content": m["content"]} for m in messages])

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[ChatDelta]:
        self._record(messages)
        async for delta in self.inner.stream(
            messages, temperature=temperature, max_tokens=max_tokens
        ):
            yield delta

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        self._record(messages)
        return await self.inner.chat(messages, temperature=temperature, max_tokens=max_tokens)

    async def structured(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> StructuredResult:
        self._record(messages)
        return await self.inner.structured(
            messages, schema, temperature=temperature, max_tokens=max_tokens
        )

    async def embed(self, texts: Sequence[str]) -> EmbedResult:
        return await self.inner.embed(texts)

    async def list_models(self) -> list[str]:
        return await self.inner.list_models()

    async def aclose(self) -> None:
        """The inner model is shared; whoever made it closes it."""

    def messages(self) -> list[str]:
        """Every message's text, one entry per message (fences never span messages)."""
        return [m["content"] for prompt in self.prompts for m in prompt]


class FenceError(AssertionError):
    """A fence opened inside another, closed when none was open, or left open."""


def fence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every fence in ``text``, from its opening tag to its closing tag.

    Every fence-like tag must be one the fencing function writes, in order: an
    opening line, then a closing tag on a line of its own. The data rule's own
    mention of the tags (in system prompts) is skipped."""
    text = text.replace(DATA_RULE, " " * len(DATA_RULE))
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for mark in _ANY_MARK.finditer(text):
        at = mark.start()
        context = repr(text[max(0, at - 80) : mark.end() + 40])
        if _OPEN.match(text, at):
            if start is not None:
                raise FenceError(f"a fence opens inside another: {context}")
            start = at
        elif mark.group(0) == _CLOSE and text[at - 1 : at] == "\n":
            if start is None:
                raise FenceError(f"a fence closes when none is open: {context}")
            spans.append((start, mark.end()))
            start = None
        else:
            raise FenceError(f"a fence tag the fencing function did not write: {context}")
    if start is not None:
        raise FenceError(f"a fence is never closed: {text[start : start + 120]!r}")
    return spans


def outside_fences(text: str, needle: str) -> list[int]:
    """Offsets where ``needle`` (case-insensitive) occurs in ``text`` outside every fence."""
    spans = fence_spans(text)
    found = [m.start() for m in re.finditer(re.escape(needle), text, re.IGNORECASE)]
    return [i for i in found if not any(a <= i and i + len(needle) <= b for a, b in spans)]


def inside_fences(text: str, needle: str) -> bool:
    """True when ``needle`` occurs in ``text`` inside some fence."""
    spans = fence_spans(text)
    return any(needle.casefold() in text[a:b].casefold() for a, b in spans)
