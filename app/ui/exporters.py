"""The window's side of export: Qt's PDF renderer, the file dialog's filters, and
the functions the window calls (the exporter itself is :mod:`app.export`, no Qt).

The PDF is the export's HTML page (the same one the HTML export writes)
typeset by ``QTextDocument`` and ``QPdfWriter``: no network, no browser
engine, Qt's font fallback for any script. The page holds no link and no
image, so the PDF holds none either. ``fathom export`` uses the same renderer
through :func:`headless_pdf_renderer`, with no display.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QGuiApplication, QPageSize, QPdfWriter, QTextDocument

from app.core.models import EntityTable, Evidence, SentenceSupport
from app.export.content import ReportContent
from app.export.exporter import PdfRenderer, export
from app.export.markdown import report_markdown as _report_markdown

EXPORT_FILTERS = {
    ".md": "Markdown (*.md)",
    ".html": "HTML (*.html)",
    ".pdf": "PDF (*.pdf)",
}
TABLE_FILTERS = {".csv": "CSV (*.csv)", ".json": "JSON (*.json)"}

_headless_app: QGuiApplication | None = None


def render_pdf(page_html: str, title: str) -> bytes:
    """The PDF of ``page_html`` (the export's HTML page), A4, titled ``title``."""
    doc = QTextDocument()
    doc.setHtml(page_html)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setTitle(title)
    writer.setCreator("Fathom")
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setResolution(150)
    doc.print_(writer)  # ends its painter, which finishes the file
    del writer
    buffer.close()
    return bytes(data.data())


def headless_pdf_renderer() -> PdfRenderer:
    """:func:`render_pdf` for a process with no window (``fathom export``): Qt's offscreen
    platform when there is no display, and a QGuiApplication when there is none yet."""
    global _headless_app
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if QGuiApplication.instance() is None:
        _headless_app = QGuiApplication(["fathom"])
    return render_pdf


def report_markdown(
    question: str,
    markdown: str,
    evidence: Iterable[Evidence],
    *,
    include_consulted: bool = False,
    support: SentenceSupport | None = None,
) -> str:
    """The export Markdown of a report as the window shows it."""
    content = ReportContent(question, markdown, tuple(evidence), support=support)
    return _report_markdown(content, include_consulted=include_consulted)


def export_report(
    path: Path,
    question: str,
    markdown: str,
    evidence: Iterable[Evidence],
    *,
    include_consulted: bool = False,
    support: SentenceSupport | None = None,
) -> Path:
    """Write the report in the format the file's suffix names (.md, .html, .pdf); the
    sources it read but did not cite only when ``include_consulted``."""
    content = ReportContent(question, markdown, tuple(evidence), support=support)
    return export(content, path, include_consulted=include_consulted, pdf=render_pdf)


def export_table(path: Path, table: EntityTable) -> Path:
    """Write the table as .csv or .json (by the suffix)."""
    return export(ReportContent("", "", table=table), path, pdf=render_pdf)
