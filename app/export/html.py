"""The export's HTML: its Markdown rendered by markdown-it-py, as a page to share.

Raw HTML in the Markdown stays text (``html`` off), a link or an image that
got through anyway is shown as inert text (its words, then its target in
brackets), and the page carries a Content-Security-Policy that forbids
scripts, frames, forms and every resource (only inline styles). The PDF is
rendered from this same page, so the two agree.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
)
STYLE = (
    "body{font-family:sans-serif;max-width:48em;margin:2em auto;padding:0 1em;line-height:1.45}"
    "blockquote{margin:0.3em 0 0.8em 0;padding-left:0.8em;border-left:3px solid #bbb;color:#333}"
    "pre{white-space:pre-wrap}code,pre{font-family:monospace}"
    "table{border-collapse:collapse}th,td{border:1px solid #bbb;padding:0.2em 0.5em}"
)


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"]
    )


def _text(content: str) -> Token:
    return Token("text", "", 0, content=content)


def _inert(tokens: Sequence[Token]) -> None:
    """Replace every link and image in ``tokens`` by text (in place)."""
    for token in tokens:
        if token.type != "inline" or not token.children:
            continue
        children: list[Token] = []
        open_links: list[tuple[str, bool]] = []
        for child in token.children:
            if child.type == "link_open":
                open_links.append((str(child.attrGet("href") or ""), child.markup == "autolink"))
            elif child.type == "link_close":
                href, autolink = open_links.pop() if open_links else ("", True)
                if href and not autolink:
                    children.append(_text(f" ({href})"))
            elif child.type == "image":
                children.append(_text(f"[image: {child.content or child.attrGet('src') or ''}]"))
            else:
                children.append(child)
        token.children = children


def markdown_to_html(markdown: str) -> str:
    """``markdown`` as an HTML fragment with no raw HTML, no link and no image."""
    parser = _parser()
    env: dict[str, object] = {}
    tokens = parser.parse(markdown, env)
    _inert(tokens)
    return str(parser.renderer.render(tokens, parser.options, env))


def standalone_page(body_html: str, title: str) -> str:
    """``body_html`` as a file to share: UTF-8, the restrictive policy, no referrer, ``title`` escaped."""
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n"
        '<meta charset="utf-8" />\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(CONTENT_SECURITY_POLICY)}" />\n'
        '<meta name="referrer" content="no-referrer" />\n'
        f"<title>{html.escape(' '.join(title.split()))}</title>\n"
        f"<style>{STYLE}</style>\n"
        f"</head>\n<body>\n{body_html}</body>\n</html>\n"
    )


def report_html(markdown: str, title: str) -> str:
    """The export Markdown (already made inert) as a standalone HTML page."""
    return standalone_page(markdown_to_html(markdown), title)
