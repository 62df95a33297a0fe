"""Split ``<think>…</think>`` reasoning from the answer, also while streaming.

Reasoning models write their thoughts between ``<think>`` and ``</think>``;
the tags may arrive split across deltas (``"<thi"`` then ``"nk>"``). The
splitter holds back only the few characters that could still be the start
of a tag, so text flows through with no noticeable delay. Reasoning never
reaches JSON parsing: structured output is parsed from the content channel.
"""

from __future__ import annotations

from typing import Literal

Channel = Literal["content", "reasoning"]

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class ThinkSplitter:
    """Feed streamed text; get back ``(channel, text)`` pieces in order."""

    def __init__(self, *, in_reasoning: bool = False) -> None:
        self._in_reasoning = in_reasoning
        self._pending = ""

    @property
    def in_reasoning(self) -> bool:
        return self._in_reasoning

    def feed(self, text: str) -> list[tuple[Channel, str]]:
        out: list[tuple[Channel, str]] = []
        buffer = self._pending + text
        self._pending = ""
        while buffer:
            tag = CLOSE_TAG if self._in_reasoning else OPEN_TAG
            channel: Channel = "reasoning" if self._in_reasoning else "content"
            index = buffer.find(tag)
            if index < 0 and not self._in_reasoning and CLOSE_TAG in buffer:
                # A stray "</think>" (the template opened the block in the prompt):
                # what came before it was reasoning.
                index = buffer.find(CLOSE_TAG)
                if index:
                    out.append(("reasoning", buffer[:index]))
                buffer = buffer[index + len(CLOSE_TAG) :]
                continue
            if index >= 0:
                if index:
                    out.append((channel, buffer[:index]))
                buffer = buffer[index + len(tag) :]
                self._in_reasoning = not self._in_reasoning
                continue
            keep = max(_partial_tag_suffix(buffer, tag), _partial_tag_suffix(buffer, CLOSE_TAG))
            emit, self._pending = (buffer[:-keep], buffer[-keep:]) if keep else (buffer, "")
            if emit:
                out.append((channel, emit))
            break
        return _merge(out)

    def flush(self) -> list[tuple[Channel, str]]:
        """The held-back tail at the end of the stream (it was not a tag after all)."""
        pending, self._pending = self._pending, ""
        if not pending:
            return []
        return [("reasoning" if self._in_reasoning else "content", pending)]


def _merge(pieces: list[tuple[Channel, str]]) -> list[tuple[Channel, str]]:
    merged: list[tuple[Channel, str]] = []
    for channel, text in pieces:
        if merged and merged[-1][0] == channel:
            merged[-1] = (channel, merged[-1][1] + text)
        else:
            merged.append((channel, text))
    return merged


def split_think(text: str) -> tuple[str, str]:
    """``(content, reasoning)`` of a whole reply."""
    splitter = ThinkSplitter()
    pieces = splitter.feed(text) + splitter.flush()
    content = "".join(t for c, t in pieces if c == "content")
    reasoning = "".join(t for c, t in pieces if c == "reasoning")
    return content, reasoning
