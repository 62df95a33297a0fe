"""Raw HTML kept out of chunk text: tags that Docling leaves in text and table cells
(``<br/>``, ``<a href>``, ``<code>`` inside a Markdown table) are dropped, entities
decoded. Code is content and is never touched: code items, and `code spans`."""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

from app.core.serial_import import serial_import

if TYPE_CHECKING:
    from docling_core.types.doc.document import DoclingDocument

# Only real HTML element names, written as CommonMark defines a tag: ``List<String>``
# or ``Map<i, j>`` in prose is not a tag. Line-breaking elements become a line break
# (a space in a table cell); the rest disappear and leave their text.
_BREAKING = frozenset(
    {
        "br",
        "p",
        "div",
        "tr",
        "li",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "hr",
    }
    | {
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "blockquote",
        "section",
        "article",
        "details",
        "summary",
    }
    | {"figure", "figcaption", "center"}
)
_INLINE = frozenset(
    {
        "td",
        "th",
        "a",
        "abbr",
        "b",
        "i",
        "u",
        "s",
        "em",
        "strong",
        "small",
        "big",
        "code",
        "kbd",
        "samp",
    }
    | {
        "var",
        "tt",
        "span",
        "font",
        "sup",
        "sub",
        "mark",
        "del",
        "ins",
        "q",
        "cite",
        "img",
        "caption",
    }
    | {"colgroup", "col", "label", "nobr", "wbr"}
)
_NAME = "|".join(sorted(_BREAKING | _INLINE, key=lambda name: (-len(name), name)))
_ATTRIBUTES = r"""(?:\s+[A-Za-z_:][\w:.-]*(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*"""
_TAG = re.compile(
    rf"<(?:(?P<open>{_NAME}){_ATTRIBUTES}\s*/?|/(?P<close>{_NAME})\s*)>", re.IGNORECASE
)
_ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# Only complete references (with their ';'): "&para=2" in a URL stays as written.
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_SPACES = re.compile(r"[ \t]{2,}")
_AROUND_BREAK = re.compile(r"[ \t]*\n[ \t\n]*")


def has_inline_html(text: str) -> bool:
    """True when ``text`` holds an HTML tag, comment or entity (outside code spans or not)."""
    return bool(_TAG.search(text) or _ENTITY.search(text) or "<!--" in text)


def drop_inline_html(text: str, *, one_line: bool = False) -> str:
    """``text`` without HTML tags and comments, entities decoded; `code spans` kept as
    written. ``one_line`` (a table cell): line-breaking tags become a space."""
    if not has_inline_html(text):
        return text
    parts = []
    last = 0
    for span in _CODE_SPAN.finditer(text):
        parts.append(_clean(text[last : span.start()], one_line))
        parts.append(span.group(0))
        last = span.end()
    parts.append(_clean(text[last:], one_line))
    return "".join(parts).strip()


def _clean(text: str, one_line: bool) -> str:
    """Text outside code: tags and comments out, entities decoded, the spaces and
    line breaks they leave behind collapsed."""
    text = _COMMENT.sub(" ", text)
    text = _TAG.sub(lambda m: _replacement(m, one_line), text)
    text = _AROUND_BREAK.sub(" " if one_line else "\n", text)
    text = _SPACES.sub(" ", text)
    return _ENTITY.sub(lambda m: html.unescape(m.group(0)), text)


def _replacement(match: re.Match[str], one_line: bool) -> str:
    name = (match.group("open") or match.group("close")).lower()
    if name in _BREAKING:
        return " " if one_line else "\n"
    if name == "img":
        alt = _ALT.search(match.group(0))
        return (
            f" {alt.group(1) or alt.group(2)} " if alt and (alt.group(1) or alt.group(2)) else " "
        )
    return ""


def drop_inline_html_from_document(document: DoclingDocument) -> None:
    """Tags and entities left in a Docling document's text items and table cells,
    removed in place; code items, headings and titles are left as they are."""
    with serial_import("docling_core.types.doc.labels"):
        from docling_core.types.doc.items.table.table_data import RichTableCell
        from docling_core.types.doc.labels import DocItemLabel

    kept = {
        DocItemLabel.CODE,
        DocItemLabel.FORMULA,
        DocItemLabel.TITLE,
        DocItemLabel.SECTION_HEADER,
    }
    for item in document.texts:
        if item.label not in kept and has_inline_html(item.text):
            item.text = drop_inline_html(item.text)
    for table in document.tables:
        for cell in table.data.table_cells:
            if not isinstance(cell, RichTableCell) and has_inline_html(cell.text):
                cell.text = drop_inline_html(cell.text, one_line=True)
