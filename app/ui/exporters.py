"""Export a report as Markdown, HTML or PDF, and a table as CSV or JSON.

The Markdown export is the report followed by its numbered sources; HTML
and PDF are that Markdown rendered by ``QTextDocument`` (no network, no
browser engine).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from PySide6.QtGui import QPageSize, QPdfWriter, QTextDocument

from app.core.models import EntityTable, Evidence
from app.core.settings import write_atomic
from app.research.entity_table import write_table
from app.ui.citations import balance_fences

EXPORT_FILTERS = {
    ".md": "Markdown (*.md)",
    ".html": "HTML (*.html)",
    ".pdf": "PDF (*.pdf)",
}
TABLE_FILTERS = {".csv": "CSV (*.csv)", ".json": "JSON (*.json)"}


def report_markdown(question: str, markdown: str, evidence: Iterable[Evidence]) -> str:
    """The report as one Markdown file: the question, the report, the sources."""
    parts = []
    if question:
        parts.append(f"# {question}\n")
    parts.append(balance_fences(markdown).strip() + "\n")
    sources = sorted(evidence, key=lambda e: e.number)
    if sources:
        parts.append("\n## Sources\n")
        for e in sources:
            where = e.path + (f", page {e.page}" if e.page is not None else "")
            title = e.title or Path(e.path).name
            quote = " ".join(e.quote.split())
            parts.append(f"{e.number}. **{title}** — `{where}`" + (f"\n   > {quote}" if quote else "") + "\n")
    return "\n".join(parts)


def markdown_document(markdown: str) -> QTextDocument:
    doc = QTextDocument()
    doc.setMarkdown(markdown)
    return doc


def report_html(markdown: str, title: str = "Fathom report") -> str:
    doc = markdown_document(markdown)
    doc.setMetaInformation(QTextDocument.MetaInformation.DocumentTitle, title)
    return doc.toHtml()


def write_pdf(markdown: str, path: Path, title: str = "Fathom report") -> Path:
    doc = markdown_document(markdown)
    writer = QPdfWriter(str(path))
    writer.setTitle(title)
    writer.setCreator("Fathom")
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setResolution(150)
    doc.print_(writer)
    return path


def export_report(path: Path, question: str, markdown: str, evidence: Iterable[Evidence]) -> Path:
    """Write the report in the format the file's suffix names (.md, .html, .pdf)."""
    text = report_markdown(question, markdown, evidence)
    suffix = path.suffix.lower()
    if suffix in (".md", ".markdown"):
        write_atomic(path, text)
    elif suffix in (".html", ".htm"):
        write_atomic(path, report_html(text, question or "Fathom report"))
    elif suffix == ".pdf":
        path.parent.mkdir(parents=True, exist_ok=True)
        write_pdf(text, path, question or "Fathom report")
    else:
        raise ValueError(f"Cannot export a report as “{suffix or 'no suffix'}”: use .md, .html or .pdf.")
    return path


def export_table(path: Path, table: EntityTable) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_table(table, path)
