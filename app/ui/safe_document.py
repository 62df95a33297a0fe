"""Render untrusted Markdown into a ``QTextDocument`` with nothing live in it.

The text is first made inert by :func:`app.export.safe_markdown.neutralize_markdown`
(by the caller, so citation links can be added in between). Then Qt parses it
with raw HTML and the autolink extensions turned off, and :func:`defuse`
removes, as a second line of defence, every link the caller does not allow and
every image, leaving their text. The result loads nothing and links nowhere
outside the app.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QTextCharFormat, QTextCursor, QTextDocument, QTextFormat

_GITHUB = QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
_NO_HTML = QTextDocument.MarkdownFeature.MarkdownNoHTML.value
# md4c's permissive URL, e-mail and www autolink extensions (MD_FLAG_PERMISSIVE*AUTOLINKS)
_AUTOLINKS = 0x0004 | 0x0008 | 0x0400
# GitHub's tables, strikethrough and task lists; no raw HTML, no autolinks
SAFE_MARKDOWN = QTextDocument.MarkdownFeature((_GITHUB & ~_AUTOLINKS) | _NO_HTML)


def no_links(_href: str) -> bool:
    return False


def set_untrusted_markdown(
    doc: QTextDocument, markdown: str, keep_link: Callable[[str], bool] = no_links
) -> int:
    """Parse already neutralised ``markdown`` into ``doc`` safely; returns what :func:`defuse` removed."""
    doc.setMarkdown(markdown, SAFE_MARKDOWN)
    return defuse(doc, keep_link)


def fragments(doc: QTextDocument) -> list[tuple[int, int, QTextCharFormat]]:
    """(position, length, format) of every run of same-format text, read before any edit."""
    found: list[tuple[int, int, QTextCharFormat]] = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.isValid():
                found.append((fragment.position(), fragment.length(), fragment.charFormat()))
            it += 1
        block = block.next()
    return found


def defuse(doc: QTextDocument, keep_link: Callable[[str], bool] = no_links) -> int:
    """Turn every link ``keep_link`` refuses into plain text followed by its target,
    and every image into its name as text. Returns how many it changed."""
    edits: list[tuple[int, int, str, str]] = []
    for position, length, fmt in fragments(doc):
        if fmt.isImageFormat():
            edits.append((position, length, "image", fmt.toImageFormat().name()))
        elif fmt.isAnchor() and not keep_link(fmt.anchorHref()):
            edits.append((position, length, "link", fmt.anchorHref()))
    # merge a link split over several fragments (bold inside a link), then edit from the end
    merged: list[tuple[int, int, str, str]] = []
    for start, length, kind, target in edits:
        if merged and kind == "link" == merged[-1][2] and merged[-1][3] == target:
            last = merged[-1]
            if last[0] + last[1] == start:
                merged[-1] = (last[0], last[1] + length, kind, target)
                continue
        merged.append((start, length, kind, target))
    for start, length, kind, target in reversed(merged):
        cursor = QTextCursor(doc)
        cursor.setPosition(start)
        cursor.setPosition(start + length, QTextCursor.MoveMode.KeepAnchor)
        plain = QTextCharFormat(cursor.charFormat())
        plain.setAnchor(False)
        plain.setAnchorHref("")
        plain.setAnchorNames([])
        plain.clearProperty(QTextFormat.Property.ForegroundBrush)
        plain.setFontUnderline(False)
        if kind == "image":
            cursor.insertText(f"[image: {target}]" if target else "[image]", plain)
            continue
        shown = cursor.selectedText()
        cursor.setCharFormat(plain)
        if target and target != shown:
            cursor.setPosition(start + length)
            cursor.insertText(f" ({target})", plain)
    return len(merged)
