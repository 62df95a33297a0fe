"""The source viewer: a cited chunk highlighted in its surrounding text.

Shows the document path and page and offers "Open original". A document is
handed to the system's default application; a script, a program or anything
else that could run is shown in the file manager instead (the decision is
:func:`app.core.opening.decide_open`, the button says which it will do).
Chunk text is shown as written: it is put into the viewer as plain text
(never parsed as HTML or Markdown, so ``<b>`` and ``>`` read as they are), the
HTML escapes a converter may have left in it (``&gt;``, ``&lt;``, ``&amp;``) are
shown as the characters they stand for, and the viewer loads no resource.
Looking at the file (its mode and first bytes) is file I/O: :func:`open_decision`
does it off the loop, before the viewer is filled and again when the button is
pressed.

A cited chunk with a page in a PDF or an image file also gets a "Page N" tab next
to "Text" (Alt+P / Alt+T or Ctrl+Tab switch): the page as a picture
(``page_view.py``), rendered from the local file off the loop when the tab is
shown. A new viewer opens on the text; while the page tab is open, the next source
with a page opens on its page. A source without pages has no tab bar.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QPalette,
    QShowEvent,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPushButton,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.core.models import Chunk, Evidence
from app.core.opening import OpenDecision, decide_open
from app.core.page_images import page_kind
from app.ui.file_opener import DesktopOpener, FileOpener, carry_out
from app.ui.page_view import PageRequest, PageView
from app.ui.tasks import TaskKeeper, run_blocking
from app.ui.tooltips import plain_tooltip

log = logging.getLogger(__name__)

OPEN_LABEL = "Open original"
REVEAL_LABEL = "Show in folder"
TEXT_TAB = "&Text"
CITED_MARGIN_PX = 24  # of the text before the cited passage, above it when the viewer opens


async def open_decision(path: str) -> OpenDecision | None:
    """What "Open original" would do with ``path`` (None when the source has no file),
    decided off the loop."""
    if not path:
        return None
    return await run_blocking(decide_open, path, name="look at the original file")


class _LocalOnlyBrowser(QTextBrowser):
    def loadResource(self, type: int, name: QUrl | str) -> Any:
        """Refuse every resource: the viewer never loads anything, local or remote."""
        return None


class SourceViewer(QDialog):
    """Non-modal window; :meth:`show_source` fills it."""

    openOriginalRequested = Signal(str)
    # what "Open original" did: "open" or "reveal", the path, and whether it worked
    originalHandled = Signal(str, str, bool)

    def __init__(
        self,
        parent: QWidget | None = None,
        opener: FileOpener | None = None,
        *,
        tasks: TaskKeeper | None = None,
    ) -> None:
        super().__init__(parent)
        self._cited_at = 0  # where the cited passage starts in the text
        self._opener: FileOpener = opener if opener is not None else DesktopOpener(self)
        self._tasks = (
            tasks
            if tasks is not None
            else TaskKeeper(lambda name, exc: log.warning("%s: %s", name, exc))
        )
        self.decision: OpenDecision | None = None
        self.setWindowTitle("Source")
        self.resize(720, 560)
        self.evidence: Evidence | None = None
        self.chunk: Chunk | None = None
        self.context: list[Chunk] = []
        self.header = QLabel()
        self.header.setTextFormat(Qt.TextFormat.PlainText)
        bold = QFont(self.header.font())
        bold.setBold(True)
        self.header.setFont(bold)
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(self.header.textInteractionFlags() | _selectable())
        self.location = QLabel()
        self.location.setTextFormat(Qt.TextFormat.PlainText)
        self.location.setWordWrap(True)
        self.location.setTextInteractionFlags(_selectable())
        self.text = _LocalOnlyBrowser()
        self.text.setOpenLinks(False)
        self.text.setOpenExternalLinks(False)
        self.page_view = PageView(self._tasks)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.setTabBarAutoHide(True)  # one tab (text only): no tab bar
        self.tabs.addTab(self.text, TEXT_TAB)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.open_button = QPushButton(OPEN_LABEL)
        self.open_button.setEnabled(False)
        buttons.addButton(self.open_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        self.open_button.clicked.connect(self.open_original)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.location)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(buttons)

    def show_source(
        self,
        evidence: Evidence,
        chunk: Chunk | None,
        context: list[Chunk],
        decision: OpenDecision | None,
    ) -> None:
        """Show ``chunk`` among ``context``; ``decision`` is :func:`open_decision` of its path."""
        self.evidence, self.chunk, self.context = evidence, chunk, context
        title = evidence.title or (chunk.title if chunk else "") or Path(evidence.path).name
        self.setWindowTitle(f"Source [{evidence.number}] — {title}")
        self.header.setText(f"[{evidence.number}] {as_written(title)}")
        page = chunk.page if chunk and chunk.page is not None else evidence.page
        where = [evidence.path]
        if page is not None:
            where.append(f"page {page}")
        if chunk and chunk.headings:
            where.append(chunk.heading_path)
        if evidence.collection:
            where.append(f"collection {evidence.collection}")
        self.location.setText(as_written(" · ".join(where)))
        self._show_decision(decision)
        self._fill_text(evidence, chunk, context)
        self._offer_page(
            chunk.path if chunk and chunk.path else evidence.path, page, self.highlighted_text()
        )

    def page_tab_shown(self) -> bool:
        """Whether this source has a "Page N" tab."""
        return self.tabs.indexOf(self.page_view) >= 0

    def show_page(self) -> None:
        """Switch to the "Page N" tab (when the source has one); it renders the page."""
        if self.page_tab_shown():
            self.tabs.setCurrentWidget(self.page_view)

    def _offer_page(self, path: str, page: int | None, quote: str) -> None:
        """A "Page N" tab for a page of a local PDF or image (``quote`` marked on it); no
        tab for anything else."""
        request = (
            PageRequest(path, page, quote)
            if path and page is not None and page_kind(path)
            else None
        )
        self.page_view.set_source(request)
        index = self.tabs.indexOf(self.page_view)
        if request is None:
            if index >= 0:
                self.tabs.removeTab(index)
            return
        label = f"&Page {request.page}"
        if index < 0:
            self.tabs.addTab(self.page_view, label)
        else:
            self.tabs.setTabText(index, label)
        self.tabs.setTabToolTip(
            self.tabs.indexOf(self.page_view), plain_tooltip(f"Page {request.page} of {path}")
        )
        # the reader was looking at pages: keep showing them
        if self.tabs.currentWidget() is self.page_view:
            self.page_view.load()

    def _on_tab_changed(self, _index: int) -> None:
        if self.tabs.currentWidget() is self.page_view:
            self.page_view.load()

    def highlighted_text(self) -> str:
        """The plain text of the highlighted (cited) passage."""
        return self.chunk.text if self.chunk else (self.evidence.quote if self.evidence else "")

    def _fill_text(self, evidence: Evidence, chunk: Chunk | None, context: list[Chunk]) -> None:
        """The chunks as plain text, the cited one on a highlighted background, scrolled to."""
        highlight = QColor(self.palette().color(QPalette.ColorRole.Highlight))
        highlight.setAlpha(70)
        target_id = chunk.chunk_id if chunk else evidence.chunk_id
        shown = context or ([chunk] if chunk else [])
        pieces = [(c.text, c.chunk_id == target_id) for c in shown] or [
            (evidence.quote or "(the source text is no longer in the library)", True)
        ]
        self.text.clear()
        cursor = QTextCursor(self.text.document())
        cursor.beginEditBlock()
        cited_at = 0
        for i, (text, cited) in enumerate(pieces):
            if i:
                cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
            block = QTextBlockFormat()
            block.setTopMargin(6)
            block.setBottomMargin(6)
            if cited:
                block.setBackground(highlight)
                cited_at = cursor.position()
            cursor.setBlockFormat(block)
            lines = as_written(text).splitlines() or [""]
            for j, line in enumerate(lines):
                if j:
                    cursor.insertBlock(block, QTextCharFormat())
                cursor.insertText(line, QTextCharFormat())
        cursor.endEditBlock()
        at = QTextCursor(self.text.document())
        at.setPosition(cited_at)
        self.text.setTextCursor(at)
        self._cited_at = cited_at
        self._scroll_to_cited()
        QTimer.singleShot(0, self._scroll_to_cited)  # again once the dialog is laid out and shown

    def _scroll_to_cited(self) -> None:
        """The cited passage at the top of the view (a line of the text before it above it),
        not merely somewhere on screen: before the dialog is laid out, the view cannot know."""
        document = self.text.document()
        block = document.findBlock(self._cited_at)
        if not block.isValid():
            return
        top = document.documentLayout().blockBoundingRect(block).top()
        bar = self.text.verticalScrollBar()
        bar.setValue(max(0, round(top) - CITED_MARGIN_PX))

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        QTimer.singleShot(0, self._scroll_to_cited)

    def cited_block_text(self) -> str:
        """The highlighted passage as the viewer shows it (tests)."""
        lines = []
        block = self.text.document().begin()
        while block.isValid():
            if block.blockFormat().hasProperty(QTextBlockFormat.Property.BackgroundBrush):
                lines.append(block.text())
            block = block.next()
        return "\n".join(lines)

    def _show_decision(self, decision: OpenDecision | None) -> None:
        self.decision = decision
        if decision is None:
            self.open_button.setText(OPEN_LABEL)
            self.open_button.setEnabled(False)
            self.open_button.setToolTip("This source has no file.")
            return
        self.open_button.setText(REVEAL_LABEL if decision.action == "reveal" else OPEN_LABEL)
        self.open_button.setEnabled(decision.action != "missing")
        self.open_button.setToolTip(plain_tooltip(decision.reason))

    def open_original(self) -> asyncio.Task[None] | None:
        """Open the document, or show it in its folder when it could run (decided again
        now, off the loop: the file may have changed since the viewer showed it)."""
        if not (self.evidence and self.evidence.path):
            return None
        return self._tasks.start(self._open_original(self.evidence.path), "open the original")

    async def _open_original(self, path: str) -> None:
        decision = await open_decision(path)
        assert decision is not None
        self._show_decision(decision)
        if decision.action == "missing":
            return
        self.openOriginalRequested.emit(path)
        done = carry_out(decision, self._opener)
        self.originalHandled.emit(decision.action, path, done)


_ESCAPE = re.compile(r"&(?:amp|lt|gt|quot|#39|#x27);")
_ESCAPED = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&#x27;": "'"}


def as_written(text: str) -> str:
    """``text`` with the HTML escapes a converter leaves (``&gt;`` for ``>``) shown as
    the characters they stand for; nothing else changes."""
    return _ESCAPE.sub(lambda m: _ESCAPED[m.group(0)], text)


def _selectable() -> Any:
    from PySide6.QtCore import Qt

    return Qt.TextInteractionFlag.TextSelectableByMouse
