"""Tooltips that show untrusted text as text.

Qt renders a tooltip as rich text when it looks like HTML, so a model's note or
a document's sentence holding ``<img src=…>`` would be rendered. Wrapping the
escaped text in a paragraph makes Qt show it literally.
"""

from __future__ import annotations

import html


def plain_tooltip(text: str) -> str:
    """``text`` as a tooltip Qt shows literally (line breaks kept)."""
    return f'<p style="white-space:pre-wrap">{html.escape(text)}</p>'
