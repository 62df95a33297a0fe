"""Fenced code blocks in Markdown, recognised as CommonMark does (pure text, no Qt).

A fence opens on a line of at most three spaces then three or more backticks
(whose info string holds no backtick) or tildes, and closes on a line of at
most three spaces then at least as many of the same character and nothing
else. Shared by the citation linker, the fence balancer and the sanitiser, so
they all agree on what is code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from app.research.citations import OPEN_QUESTIONS_HEADING, SOURCES_HEADING

LineKind = Literal["prose", "open", "code", "close"]

_OPENER = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_CLOSER = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")


@dataclass(frozen=True)
class Fence:
    char: str
    length: int
    info: str

    @property
    def closer(self) -> str:
        return self.char * self.length


def fence_opener(line: str) -> Fence | None:
    """The fence ``line`` opens (its line ending ignored), or None."""
    match = _OPENER.match(line.rstrip("\r\n"))
    if match is None:
        return None
    run, info = match.group(1), match.group(2)
    if run[0] == "`" and "`" in info:
        return None  # not a fence: an inline code span
    return Fence(run[0], len(run), info.strip())


def closes(line: str, fence: Fence) -> bool:
    match = _CLOSER.match(line.rstrip("\r\n"))
    return (
        match is not None
        and match.group(1)[0] == fence.char
        and len(match.group(1)) >= fence.length
    )


def classify(lines: list[str]) -> Iterator[tuple[str, LineKind, Fence | None]]:
    """Each line with what it is: prose, a fence opening, code inside, a fence closing."""
    fence: Fence | None = None
    for line in lines:
        if fence is None:
            fence = fence_opener(line)
            yield line, ("prose" if fence is None else "open"), fence
        elif closes(line, fence):
            yield line, "close", fence
            fence = None
        else:
            yield line, "code", fence


# Sections the engine appends after the model's text; a code block the model left
# open must not swallow them.
_ENGINE_SECTIONS = (SOURCES_HEADING, OPEN_QUESTIONS_HEADING)


def balance_fences(markdown: str) -> str:
    """Close a code block the model left open before the engine's own sections,
    and at the end, so the rest of the report renders as text."""
    out: list[str] = []
    fence: Fence | None = None
    for line in markdown.splitlines(keepends=True):
        if fence is None:
            fence = fence_opener(line)
        elif closes(line, fence):
            fence = None
        elif line.strip() in _ENGINE_SECTIONS:
            out.append(fence.closer + "\n\n")
            fence = None
        out.append(line)
    if fence is not None:
        out.append(("" if not out or out[-1].endswith("\n") else "\n") + fence.closer + "\n")
    return "".join(out)
