"""HTML blocks in Markdown (a ``<table>``, a ``<div>``) read as HTML, not as text.

Docling's Markdown reader hands a file with HTML blocks to its HTML reader, but its
round trip escapes the blocks first (``&lt;table&gt;``), so each block comes back as
one paragraph of tag text. :func:`read_markdown_html_blocks_as_html` wraps that round
trip so the blocks reach the HTML reader as written: tables become tables.

Only blocks that open with a standard HTML element (or a comment) are passed on; a
block that opens with anything else (``<document id="99">``, an MDX component) stays
text, as Docling has it. Nothing changes where the blocks already arrive unescaped
(a Docling with this fixed).
"""

from __future__ import annotations

import dataclasses
import html
import re
from typing import Any

_installed = False

_HTML_ELEMENTS = frozenset(
    {
        "a",
        "abbr",
        "address",
        "area",
        "article",
        "aside",
        "audio",
        "b",
        "bdi",
        "bdo",
        "blockquote",
        "body",
    }
    | {
        "br",
        "button",
        "canvas",
        "caption",
        "center",
        "cite",
        "code",
        "col",
        "colgroup",
        "data",
        "dd",
        "del",
    }
    | {
        "details",
        "dfn",
        "dialog",
        "div",
        "dl",
        "dt",
        "em",
        "embed",
        "fieldset",
        "figcaption",
        "figure",
        "font",
    }
    | {
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "head",
        "header",
        "hr",
        "html",
        "i",
        "iframe",
    }
    | {
        "img",
        "input",
        "ins",
        "kbd",
        "label",
        "legend",
        "li",
        "main",
        "map",
        "mark",
        "menu",
        "meta",
        "nav",
    }
    | {
        "noscript",
        "object",
        "ol",
        "optgroup",
        "option",
        "output",
        "p",
        "picture",
        "pre",
        "q",
        "s",
        "samp",
    }
    | {
        "script",
        "section",
        "select",
        "small",
        "source",
        "span",
        "strong",
        "style",
        "sub",
        "summary",
        "sup",
    }
    | {
        "table",
        "tbody",
        "td",
        "template",
        "textarea",
        "tfoot",
        "th",
        "thead",
        "time",
        "tr",
        "track",
        "u",
    }
    | {"ul", "var", "video", "wbr"}
)
_FIRST_TAG = re.compile(r"\s*<(?:!--|/?([A-Za-z][A-Za-z0-9-]*))")


def is_html_block(block: str) -> bool:
    """True when a Markdown HTML block opens with a standard HTML element or a comment."""
    match = _FIRST_TAG.match(block)
    return match is not None and (
        match.group(1) is None or match.group(1).lower() in _HTML_ELEMENTS
    )


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
        raw = html.unescape(body)
        return start + raw + stop if is_html_block(raw) else match.group(0)

    def serialize_markdown_for_html(doc: Any, **kwargs: Any) -> Any:
        payload = original(doc, **kwargs)
        return dataclasses.replace(payload, text=block.sub(unescaped, payload.text))

    setattr(md_backend, "serialize_markdown_for_html", serialize_markdown_for_html)  # noqa: B010
    _installed = True
