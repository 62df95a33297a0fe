"""The report pane: Markdown rendered as it streams, citations as links.

Deltas are buffered and the document is re-rendered at most every
``RENDER_INTERVAL_MS`` (a re-render of a long report costs a few ms; doing it
per token would stall the window). Citations ``[n]`` become ``cite:n``
links; clicking one emits :attr:`ReportView.citationClicked`. A citation the
checker found not to support its sentence is drawn struck out in red with a
tooltip, there and in the "⚠ (not supported by [n])" flag after the sentence,
not wherever else the same source is cited (a supported sentence, a quote, the
sources list); a citation that names no source is struck out everywhere.

A finished report (:meth:`ReportView.show_finished`) also gets a header, "N of
M sentences cited, K flagged" (:attr:`Report.support`), a mark after every
sentence that cites nothing (:data:`UNCITED_MARK`, with a tooltip), and, after
the report, a collapsed "Also consulted" list of the evidence that was read but
not cited (a click on its heading opens or closes it; its entries open the
source like a citation).

The report is untrusted text (a model wrote it, from documents anyone may have
written): it is neutralised (:mod:`app.export.safe_markdown`) so raw HTML shows as
text and URLs show as text, never as links; Qt parses it without HTML; and
every link but the ``cite:n`` citations is removed (:mod:`app.ui.safe_document`).
Nothing is ever loaded either: ``loadResource`` refuses every URL, so a report
cannot make the window fetch anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QTimer, QUrl, Signal
from PySide6.QtGui import QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import QTextBrowser, QWidget

from app.core.models import Citation, Evidence, SentenceSupport
from app.export.md_fences import balance_fences
from app.export.safe_markdown import code_span, neutralize_inline, neutralize_markdown
from app.research.citations import flag_unsupported, flagged_spans, mark_uncited, support_headline
from app.research.provenance import STARTER_HEADER
from app.ui.citations import citation_number, cited_numbers, linkify_citations
from app.ui.safe_document import fragments, set_untrusted_markdown
from app.ui.theme import unsupported_colour
from app.ui.tooltips import plain_tooltip

RENDER_INTERVAL_MS = 150
UNCITED_MARK = "‹no source›"
UNCITED_TIP = "No citation: this sentence names no source."
UNSUPPORTED_TIP = "The checker found no support for this claim in the source."
CONSULTED_HREF = "fathom:also-consulted"
CONSULTED_TITLE = "Also consulted"


class ReportView(QTextBrowser):
    citationClicked = Signal(int)
    externalLinkClicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("report")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setReadOnly(True)
        self.setPlaceholderText("The report appears here as it is written.")
        self.anchorClicked.connect(self._on_anchor)
        self._markdown = ""
        self._dirty = False
        self._checked: dict[tuple[int, str], Citation] = {}  # (number, sentence) → its verdict
        self._known: set[int] | None = None
        self._support: SentenceSupport | None = None
        self._starter = False
        self._consulted: tuple[Evidence, ...] = ()
        self.consulted_open = False
        self.render_count = 0
        self._timer = QTimer(self)
        self._timer.setInterval(RENDER_INTERVAL_MS)
        self._timer.timeout.connect(self._flush)

    def changeEvent(self, event: QEvent) -> None:
        """A new palette (the dark theme, the system's switch): the report is rendered again,
        so its citation links take the new palette's link colour (a document keeps the
        colours it was rendered with)."""
        super().changeEvent(event)
        if (
            event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
            and self._markdown
        ):
            self._dirty = True
            self._flush()

    # -- content ----------------------------------------------------------
    def markdown_text(self) -> str:
        return self._markdown

    def clear_report(self) -> None:
        self._markdown = ""
        self._checked.clear()
        self._known = None
        self._support = None
        self._starter = False
        self._consulted = ()
        self.consulted_open = False
        self._dirty = False
        self._timer.stop()
        self.clear()

    def append_markdown(self, delta: str) -> None:
        """Add streamed text; the view catches up on the next render tick."""
        self._markdown += delta
        self._dirty = True
        if not self._timer.isActive():
            self._timer.start()

    def set_markdown_text(self, markdown: str) -> None:
        """Replace the whole report and render now (finished runs, replays)."""
        self._markdown = markdown
        self._dirty = True
        self._flush()

    def show_finished(
        self,
        markdown: str,
        *,
        known: set[int],
        citations: Sequence[Citation],
        support: SentenceSupport,
        consulted: Sequence[Evidence] = (),
        starter: bool = False,
    ) -> None:
        """Show a finished report: its text, which numbers exist, its checked
        citations (earlier marks are dropped: the final text is numbered anew), its
        header (saying so when the starter model wrote it) and the evidence it read
        but did not cite; renders once, now."""
        self._starter = starter
        self._markdown = markdown
        self._known = set(known)
        self._checked = {(c.number, c.sentence): c for c in citations}
        self._support = support
        self._consulted = tuple(consulted)
        self._dirty = True
        self._flush()

    def header_text(self) -> str:
        """The finished report's header ("" while it is written)."""
        if self._support is None:
            return ""
        headline = support_headline(self._support)
        return f"{STARTER_HEADER} {headline}" if self._starter else headline

    def consulted(self) -> tuple[Evidence, ...]:
        return self._consulted

    def toggle_consulted(self) -> None:
        """Open or close the "Also consulted" list."""
        self.consulted_open = not self.consulted_open
        self._dirty = True
        self._flush()

    def set_known_citations(self, numbers: set[int]) -> None:
        """The source numbers that exist; a citation outside them is flagged."""
        self._known = set(numbers)
        self._dirty = True
        self._schedule()

    def mark_citation(
        self, number: int, supported: bool | None, note: str = "", sentence: str = ""
    ) -> None:
        """The checker's verdict on citation ``number`` of ``sentence`` (its claim, as
        :class:`Citation` has it), while the report is checked: the sentence gets its
        flag as the finished report will have it."""
        self._checked[(number, sentence)] = Citation(number, sentence, supported, note)
        self._dirty = True
        self._schedule()

    def unsupported_citations(self) -> dict[int, str]:
        """The numbers struck out somewhere, with why (tests, the status line)."""
        flagged = {
            c.number: c.note or UNSUPPORTED_TIP
            for c in self._checked.values()
            if c.supported is False
        }
        if self._known is not None:
            for n in cited_numbers(self._markdown):
                if n not in self._known:
                    flagged.setdefault(n, "No source with this number.")
        return flagged

    def flush(self) -> None:
        """Render pending text now."""
        self._flush()

    # -- rendering --------------------------------------------------------
    def _schedule(self) -> None:
        if not self._timer.isActive():
            self._timer.start()

    def _flush(self) -> None:
        if not self._dirty:
            self._timer.stop()
            return
        self._dirty = False
        bar = self.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 4
        keep = bar.value()
        text = balance_fences(self._markdown)
        if self._support is not None:
            text = mark_uncited(text, UNCITED_MARK)  # a finished report carries its flags
        elif self._checked:
            text = flag_unsupported(text, list(self._checked.values()))
        safe = neutralize_markdown(text)
        if self._support is not None:
            safe = f"*{self.header_text()}*\n\n{safe}"
        if self._consulted:
            safe = safe.rstrip("\n") + "\n\n" + self._consulted_markdown()
        set_untrusted_markdown(self.document(), linkify_citations(safe), keep_link=_is_kept)
        self._format_citations()
        if self._support is not None:
            self._format_uncited()
        self.render_count += 1
        bar.setValue(bar.maximum() if at_bottom else keep)

    def _format_citations(self) -> None:
        notes = self.unsupported_citations()
        doc = self.document()
        cursor = QTextCursor(doc)
        cursor.beginEditBlock()  # one layout for all the citations, not one each
        spans: dict[
            int, list[tuple[int, int, frozenset[int]]]
        ] = {}  # block → its flagged sentences
        for position, length, fmt in list(fragments(doc)):
            number = citation_number(fmt.anchorHref()) if fmt.isAnchor() else None
            if number is None:
                continue
            block = doc.findBlock(position)
            if block.blockNumber() not in spans:
                spans[block.blockNumber()] = flagged_spans(block.text())
            offset = position - block.position()
            flagged = any(
                start <= offset < end and number in ns
                for start, end, ns in spans[block.blockNumber()]
            )
            unknown = self._known is not None and number not in self._known
            cursor.setPosition(position)
            cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
            extra = QTextCharFormat()
            if flagged or unknown:
                extra.setForeground(unsupported_colour())
                extra.setFontStrikeOut(True)
                why = (
                    notes.get(number, UNSUPPORTED_TIP) if flagged else "No source with this number."
                )
                extra.setToolTip(plain_tooltip(f"Unsupported citation [{number}]: {why}"))
            else:
                extra.setToolTip(f"Show source [{number}]")
            cursor.mergeCharFormat(extra)
        cursor.endEditBlock()

    def _consulted_markdown(self) -> str:
        """The "Also consulted" heading (a link that opens or closes it) and, open, its list."""
        arrow = "▾" if self.consulted_open else "▸"
        lines = [f"[{arrow} {CONSULTED_TITLE} ({len(self._consulted)})]({CONSULTED_HREF})", ""]
        if self.consulted_open:
            for e in self._consulted:
                title = neutralize_inline(e.title or Path(e.path).name)
                lines.append(f"- [{e.number}] {title} — {code_span(e.location)}")
        return "\n".join(lines) + "\n"

    def _format_uncited(self) -> None:
        doc = self.document()
        fmt = QTextCharFormat()
        fmt.setForeground(unsupported_colour())
        fmt.setToolTip(UNCITED_TIP)
        cursor = doc.find(UNCITED_MARK)
        edit = QTextCursor(doc)
        edit.beginEditBlock()
        while not cursor.isNull():
            cursor.mergeCharFormat(fmt)
            cursor = doc.find(UNCITED_MARK, cursor)
        edit.endEditBlock()

    def uncited_marks(self) -> int:
        """How many sentences are marked as citing nothing (tests)."""
        return self.document().toPlainText().count(UNCITED_MARK)

    # -- links and resources ----------------------------------------------
    def _on_anchor(self, url: QUrl) -> None:
        if url.toString() == CONSULTED_HREF:
            self.toggle_consulted()
            return
        number = citation_number(url.toString())
        if number is not None:
            self.citationClicked.emit(number)
        else:
            self.externalLinkClicked.emit(url.toString())

    def loadResource(self, type: int, name: QUrl | str) -> Any:
        """Refuse every resource: a rendered report never loads anything, local or remote."""
        return None

    def citation_anchor_positions(self) -> dict[int, int]:
        """Where each citation link starts in the document (tests, keyboard navigation)."""
        found: dict[int, int] = {}
        doc: QTextDocument = self.document()
        block = doc.begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.isValid() and fragment.charFormat().isAnchor():
                    number = citation_number(fragment.charFormat().anchorHref())
                    if number is not None:
                        found.setdefault(number, fragment.position())
                it += 1
            block = block.next()
        return found


def _is_kept(href: str) -> bool:
    return href == CONSULTED_HREF or citation_number(href) is not None
