"""The source viewer: a cited chunk highlighted in its surrounding text.

Shows the document path and page and offers "Open original", which hands
the file to the system's default application (``QDesktopServices``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QDesktopServices, QPalette
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.core.models import Chunk, Evidence


class _LocalOnlyBrowser(QTextBrowser):
    def loadResource(self, type: int, name: QUrl | str) -> Any:
        return None


class SourceViewer(QDialog):
    """Non-modal window; :meth:`show_source` fills it."""

    openOriginalRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Source")
        self.resize(720, 560)
        self.evidence: Evidence | None = None
        self.chunk: Chunk | None = None
        self.context: list[Chunk] = []
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(self.header.textInteractionFlags() | _selectable())
        self.location = QLabel()
        self.location.setWordWrap(True)
        self.location.setTextInteractionFlags(_selectable())
        self.text = _LocalOnlyBrowser()
        self.text.setOpenLinks(False)
        self.text.setOpenExternalLinks(False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.open_button = QPushButton("Open original")
        self.open_button.setToolTip("Open the file with the system's default application")
        buttons.addButton(self.open_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        self.open_button.clicked.connect(self.open_original)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.location)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)

    def show_source(self, evidence: Evidence, chunk: Chunk | None, context: list[Chunk]) -> None:
        self.evidence, self.chunk, self.context = evidence, chunk, context
        title = evidence.title or (chunk.title if chunk else "") or Path(evidence.path).name
        self.setWindowTitle(f"Source [{evidence.number}] — {title}")
        self.header.setText(f"<b>[{evidence.number}] {html.escape(title)}</b>")
        page = chunk.page if chunk and chunk.page is not None else evidence.page
        where = [html.escape(evidence.path)]
        if page is not None:
            where.append(f"page {page}")
        if chunk and chunk.headings:
            where.append(html.escape(chunk.heading_path))
        if evidence.collection:
            where.append(f"collection {html.escape(evidence.collection)}")
        self.location.setText(" · ".join(where))
        self.open_button.setEnabled(bool(evidence.path) and Path(evidence.path).exists())
        self.text.setHtml(self._context_html(evidence, chunk, context))
        self.text.scrollToAnchor("cited")

    def highlighted_text(self) -> str:
        """The plain text of the highlighted (cited) passage."""
        return self.chunk.text if self.chunk else (self.evidence.quote if self.evidence else "")

    def _context_html(self, evidence: Evidence, chunk: Chunk | None, context: list[Chunk]) -> str:
        highlight = self.palette().color(QPalette.ColorRole.Highlight)
        background = f"rgba({highlight.red()},{highlight.green()},{highlight.blue()},0.28)"
        parts: list[str] = []
        target_id = chunk.chunk_id if chunk else evidence.chunk_id
        shown = context or ([chunk] if chunk else [])
        if not shown:
            shown_text = evidence.quote or "(the source text is no longer in the library)"
            return f'<a name="cited"></a><p style="background:{background}; padding:6px">{_paragraphs(shown_text)}</p>'
        for item in shown:
            body = _paragraphs(item.text)
            if item.chunk_id == target_id:
                parts.append(
                    f'<a name="cited"></a><table width="100%" cellpadding="6" style="background:{background}">'
                    f"<tr><td>{body}</td></tr></table>"
                )
            else:
                parts.append(f"<p>{body}</p>")
        return "\n".join(parts)

    def open_original(self) -> None:
        if self.evidence and self.evidence.path:
            self.openOriginalRequested.emit(self.evidence.path)
            QDesktopServices.openUrl(QUrl.fromLocalFile(self.evidence.path))


def _paragraphs(text: str) -> str:
    return "<br>".join(html.escape(line) for line in text.splitlines())


def _selectable() -> Any:
    from PySide6.QtCore import Qt

    return Qt.TextInteractionFlag.TextSelectableByMouse
