"""Turn the ``[n]`` citations of a Markdown report into ``cite:n`` links.

Pure text work (no Qt): code spans and fenced code blocks are left alone,
as are real Markdown links (``[text](url)``) and escaped brackets (``\\[3]``).
"""

from __future__ import annotations

import re

from app.export.md_fences import classify

CITE_SCHEME = "cite"
_CITE = re.compile(r"(?<!\\)\[(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\](?!\(|:)")
_ESCAPE_OR_TICKS = re.compile(r"\\[\s\S]|`+")


def _code_spans(line: str) -> list[tuple[int, int]]:
    """Where the inline code spans of ``line`` are (a backslash-escaped backtick opens none)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (match := _ESCAPE_OR_TICKS.search(line, pos)) is not None:
        pos = match.end()
        if match.group(0).startswith("`"):
            closing = re.compile(rf"(?<!`)`{{{len(match.group(0))}}}(?!`)").search(line, pos)
            if closing is not None:
                spans.append((match.start(), closing.end()))
                pos = closing.end()
    return spans


def _linkify_prose(text: str) -> str:
    def repl(match: re.Match[str]) -> str:
        numbers = re.split(r"\s*[,;]\s*", match.group(1))
        return "".join(f"[\\[{n}\\]]({CITE_SCHEME}:{n})" for n in numbers)

    out: list[str] = []
    pos = 0
    for start, end in _code_spans(text):
        out.append(_CITE.sub(repl, text[pos:start]))
        out.append(text[start:end])
        pos = end
    out.append(_CITE.sub(repl, text[pos:]))
    return "".join(out)


def linkify_citations(markdown: str) -> str:
    """``[3]`` → ``[\\[3\\]](cite:3)``; ``[1, 2]`` → two links."""
    return "".join(
        _linkify_prose(line) if kind == "prose" else line
        for line, kind, _fence in classify(markdown.splitlines(keepends=True))
    )


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
