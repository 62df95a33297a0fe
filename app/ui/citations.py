"""Turn the ``[n]`` citations of a Markdown report into ``cite:n`` links.

Pure text work (no Qt): code spans and fenced code blocks are left alone,
as are real Markdown links (``[text](url)``).
"""

from __future__ import annotations

import re

CITE_SCHEME = "cite"
_CITE = re.compile(r"\[(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\](?!\(|:)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _linkify_prose(text: str) -> str:
    def repl(match: re.Match[str]) -> str:
        numbers = re.split(r"\s*[,;]\s*", match.group(1))
        return "".join(f"[\\[{n}\\]]({CITE_SCHEME}:{n})" for n in numbers)

    parts = text.split("`")
    # even parts are prose, odd parts are inside inline code spans
    return "`".join(_CITE.sub(repl, part) if i % 2 == 0 else part for i, part in enumerate(parts))


# Sections the engine appends after the model's text; a code block the model left
# open must not swallow them.
_ENGINE_SECTIONS = ("## Sources", "## Open questions")


def balance_fences(markdown: str) -> str:
    """Close a code block the model left open before the engine's own sections,
    and at the end, so the rest of the report renders as text."""
    out: list[str] = []
    fence = ""
    for line in markdown.splitlines(keepends=True):
        match = _FENCE.match(line)
        if match:
            fence = "" if fence else match.group(1)
        elif fence and line.strip() in _ENGINE_SECTIONS:
            out.append(fence + "\n\n")
            fence = ""
        out.append(line)
    if fence:
        out.append(("" if not out or out[-1].endswith("\n") else "\n") + fence + "\n")
    return "".join(out)


def linkify_citations(markdown: str) -> str:
    """``[3]`` → ``[\\[3\\]](cite:3)``; ``[1, 2]`` → two links."""
    out: list[str] = []
    in_fence = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            in_fence = not in_fence
            out.append(line)
            continue
        out.append(line if in_fence else _linkify_prose(line))
    return "".join(out)


def cited_numbers(markdown: str) -> list[int]:
    """Every citation number in order of first appearance."""
    seen: dict[int, None] = {}
    for match in _CITE.finditer(markdown):
        for n in re.split(r"\s*[,;]\s*", match.group(1)):
            seen.setdefault(int(n), None)
    return list(seen)


def citation_number(href: str) -> int | None:
    """``cite:7`` → 7; anything else → None."""
    scheme, _, rest = href.partition(":")
    if scheme != CITE_SCHEME:
        return None
    try:
        return int(rest)
    except ValueError:
        return None
