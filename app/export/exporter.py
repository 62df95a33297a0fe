"""One exporter for the window and the CLI: a run's content in, a file's bytes out.

Markdown is built by :mod:`app.export.markdown`; HTML renders that Markdown
(:mod:`app.export.html`); PDF renders that same HTML with a renderer the
caller passes in (Qt's, from ``app.ui.exporters``: this package imports no Qt);
CSV and JSON are the run's table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from app.core.codec import to_jsonable
from app.export.content import ReportContent
from app.export.files import write_export
from app.export.formats import REPORT_FORMATS, TABLE_FORMATS, ExportError, format_of
from app.export.html import report_html
from app.export.markdown import report_markdown
from app.research.entity_table import table_to_csv, table_to_dict

# (the page's HTML, its title) -> the PDF's bytes
PdfRenderer = Callable[[str, str], bytes]


def render(
    content: ReportContent,
    fmt: str,
    *,
    include_consulted: bool = False,
    pdf: PdfRenderer | None = None,
) -> bytes:
    """The exported file's bytes in ``fmt`` (md, html, pdf, csv, json).

    Raises ExportError when the run has no table for csv/json, or no PDF renderer is given."""
    if fmt in TABLE_FORMATS:
        if content.table is None:
            raise ExportError(
                f"This run has no table to export as {fmt.upper()}: export its report as md, html or pdf."
            )
        if fmt == "csv":
            return table_to_csv(content.table).encode("utf-8")
        return table_json(content).encode("utf-8")
    if fmt not in REPORT_FORMATS:
        raise ExportError(f"Unknown format “{fmt}”.")
    markdown = report_markdown(content, include_consulted=include_consulted)
    if fmt == "md":
        return markdown.encode("utf-8")
    page = report_html(markdown, content.title)
    if fmt == "html":
        return page.encode("utf-8")
    if pdf is None:
        raise ExportError("PDF export needs Qt, which could not be loaded here.")
    return pdf(page, content.title)


def table_json(content: ReportContent) -> str:
    """A table run as JSON: the table, and the run's provenance when it is known."""
    assert content.table is not None
    data = table_to_dict(content.table)
    if content.provenance is not None:
        data = {**data, "provenance": to_jsonable(content.provenance)}
    return json.dumps(data, ensure_ascii=False, indent=2)


def export(
    content: ReportContent,
    path: Path,
    fmt: str | None = None,
    *,
    include_consulted: bool = False,
    pdf: PdfRenderer | None = None,
) -> Path:
    """Write ``content`` to ``path`` in ``fmt`` (default: by the suffix) with the user's
    normal permissions. Raises ExportError or OSError."""
    data = render(content, fmt or format_of(path), include_consulted=include_consulted, pdf=pdf)
    return write_export(path, data)
