"""The window's side of export: Qt's PDF renderer and the file dialog's filters
(the exporter itself is :mod:`app.export`, no Qt).

The PDF is the export's HTML page (the same one the HTML export writes)
typeset by ``QTextDocument`` and ``QPdfWriter``: no network, no browser
engine, Qt's font fallback for any script. The page holds no link and no
image, so the PDF holds none either. ``fathom export`` uses the same renderer
through :func:`headless_pdf_renderer`, with no display.
"""

from __future__ import annotations

import os
import sys

from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QGuiApplication, QPageSize, QPdfWriter, QTextDocument

from app.export.exporter import PdfRenderer
from app.ui.pyside_import_hook import make_feature_check_safe

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
    make_feature_check_safe()  # what the export imports after Qt is loaded is imported plainly
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if QGuiApplication.instance() is None:
        _headless_app = QGuiApplication(["fathom"])
    return render_pdf
