"""Shared prompt helpers: document text is data, never instructions.

Every piece of text Fathom did not write itself enters a prompt through
:func:`app.llm.fencing.fence` (re-exported here): document passages, titles,
paths and headings, collection descriptions, earlier reports and what a model
wrote from them. The user's question goes in :func:`question_block`.
:data:`DATA_RULE` goes into every system prompt that shows fenced text.
Prompts describe formats, never topical examples a small model could copy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from app.llm.base import Message
from app.llm.fencing import (
    DATA_RULE,
    FENCE_TAG,
    WITHHELD,
    clip,
    fence,
    neutralise,
    withhold_instructions,
)

__all__ = [
    "DATA_RULE",
    "WITHHELD",
    "clip",
    "fence",
    "fence_many",
    "neutralise",
    "question_block",
    "strip_echo",
    "system",
    "user",
    "withhold_instructions",
]

_SENTENCE_SPLIT = re.compile(r"((?<=[.!?])\s+|\n)")


def fence_many(
    items: Sequence[tuple[str | int, str, str]], *, max_chars: int, total_chars: int
) -> str:
    """Fence ``(label, title, text)`` items, sharing ``total_chars`` between them."""
    if not items:
        return "(no documents)"
    each = max(min(200, max_chars), min(max_chars, total_chars // len(items)))
    return "\n".join(
        fence(label, text, max_chars=each, title=title) for label, title, text in items
    )


def system(*parts: str) -> Message:
    return {"role": "system", "content": "\n".join(p for p in parts if p)}


def user(*parts: str) -> Message:
    return {"role": "user", "content": "\n\n".join(p for p in parts if p)}


_ECHO_QUESTION = re.compile(r"<question>.*?</question>", re.DOTALL | re.IGNORECASE)
_ECHO_TAG = re.compile(r"</?\s*[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
# a fence tag the reply was cut off in (``<document id="1" title="`` at a line's end)
_CUT_FENCE = re.compile(rf"</?\s*{FENCE_TAG}\b[^<>\n]*$", re.MULTILINE)


# a unit of 1–16 characters with a letter or digit in it, said 12 times or more in a row:
# a small model looping ("2.4.10.3.1.0.0.0.0…", "the the the …"); a table rule or a dot
# leader has no letter or digit, a long number is not 32 characters of one digit
_LOOP = re.compile(r"(.{1,16}?)\1{11,}", re.DOTALL)
_LOOP_AT_END = re.compile(r"(.{1,16}?)\1{11,}$", re.DOTALL)
LOOP_MIN_CHARS = 32


def _is_loop(match: re.Match[str]) -> bool:
    return len(match.group(0)) >= LOOP_MIN_CHARS and any(c.isalnum() for c in match.group(1))


def ends_in_a_loop(text: str) -> bool:
    """Whether ``text`` (a reply as it streams) ends by saying one short thing over and over."""
    match = _LOOP_AT_END.search(text[-400:])
    return match is not None and _is_loop(match)


def collapse_loops(text: str) -> str:
    """``text`` with each looping run said once, then "…" (the model was cut there)."""
    return _LOOP.sub(lambda m: m.group(1) + "…" if _is_loop(m) else m.group(0), text)


# a repeat is dropped from these lengths (without citations): a short sentence may well
# recur inside a line, but a line of its own said again is a loop; table rows and headings
# are structure, kept as written
MIN_REPEATED_SENTENCE = 20
MIN_REPEATED_LINE = 12


def strip_echo(text: str) -> str:
    """A model reply without prompt structure or HTML a small model may have written
    (the question block, document and other tags, the withheld-passage note), and without
    sentences or lines that repeat an earlier one (or a cut-off start of one), and with a loop
    of one short thing said once (:func:`collapse_loops`)."""
    text = _ECHO_QUESTION.sub("", collapse_loops(text))
    text = _CUT_FENCE.sub("", _ECHO_TAG.sub("", text)).replace(WITHHELD, "")
    seen: set[str] = set()
    seen_lines: set[str] = set()
    lines = []
    for line in text.splitlines():
        if not line.strip():
            lines.append("")
            continue
        whole = _sentence_key(line)
        if len(whole) >= MIN_REPEATED_LINE and not line.lstrip().startswith(("|", "#")):
            if whole in seen_lines:
                continue  # a short line said again between others ("C# (Microsoft) [2]")
            seen_lines.add(whole)
        kept = []
        for sentence in _SENTENCE_SPLIT.split(line.strip())[::2]:
            key = _sentence_key(sentence)
            unfinished = not sentence.rstrip().endswith((".", "!", "?", ":"))
            long_enough = len(key) >= MIN_REPEATED_SENTENCE
            if (long_enough and key in seen) or (key and unfinished and _is_prefix(key, seen)):
                continue  # a repeat, or a cut-off start of a repeat
            if long_enough:
                seen.add(key)
            kept.append(sentence.strip())
        if kept:
            lines.append(line[: len(line) - len(line.lstrip())] + " ".join(kept))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _sentence_key(sentence: str) -> str:
    return " ".join(re.sub(r"\[\d+(?:\s*[,;]\s*\d+)*\]", " ", sentence).lower().split())


def _is_prefix(key: str, seen: set[str]) -> bool:
    return any(other.startswith(key) for other in seen)


def question_block(question: str) -> str:
    """The user's question, as a delimited block (the question is the user's own words)."""
    return f"<question>\n{neutralise(question)}\n</question>"


def object_schema(
    title: str, properties: dict[str, Any], required: Sequence[str] | None = None
) -> dict[str, Any]:
    """A JSON schema object; ``title`` names the task (scripted test models dispatch on it)."""
    return {
        "title": title,
        "type": "object",
        "properties": properties,
        "required": list(required if required is not None else properties),
        "additionalProperties": False,
    }


def string_list(max_items: int, *, min_items: int = 0) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "string"},
        "minItems": min_items,
        "maxItems": max_items,
    }


def int_list(max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "integer"}, "maxItems": max_items}
