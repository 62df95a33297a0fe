"""HTML blocks in Markdown (a ``<table>``, a ``<div>``) read as HTML, not as text.

Docling's Markdown reader hands a file with HTML blocks to its HTML reader, but its
round trip escapes the blocks first (``&lt;table&gt;``), so each block comes back as
one paragraph of tag text. :func:`read_markdown_html_blocks_as_html` wraps that round
trip so the blocks reach the HTML reader as written: tables become tables. It changes
nothing where the blocks already arrive unescaped (a Docling with this fixed).
"""

from __future__ import annotations

import dataclasses
import html
import re
from typing import Any

_installed = False


def read_markdown_html_blocks_as_html() -> None:
    """Wrap Docling's Markdown-to-HTML round trip once per process (idempotent)."""
    global _installed
    if _installed:
        return
    import docling.backend.md_backend as md_backend

    original = getattr(md_backend, "serialize_markdown_for_html", None)
    start = getattr(md_backend, "_START_MARKER", None)
    stop = getattr(md_backend, "_STOP_MARKER", None)
    if original is None or not isinstance(start, str) or not isinstance(stop, str):
        _installed = True  # a Docling without this round trip: nothing to repair
        return
    block = re.compile(re.escape(start) + "(.*?)" + re.escape(stop), re.DOTALL)

    def unescaped(match: re.Match[str]) -> str:
        body = match.group(1)
        if "<" in body:  # already raw HTML
            return match.group(0)
        return start + html.unescape(body) + stop

    def serialize_markdown_for_html(doc: Any, **kwargs: Any) -> Any:
        payload = original(doc, **kwargs)
        return dataclasses.replace(payload, text=block.sub(unescaped, payload.text))

    setattr(md_backend, "serialize_markdown_for_html", serialize_markdown_for_html)  # noqa: B010
    _installed = True
