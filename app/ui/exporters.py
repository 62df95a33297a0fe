"""Export a report as Markdown, HTML or PDF, and a table as CSV or JSON.

The Markdown export is the report's header ("N of M sentences cited, K
flagged"), its text, its Sources (the sources it cites, once each, with their
passage quoted, in the report's numbering) and its Open questions; the
evidence it read but did not cite ("Also consulted") only when asked for. HTML
and PDF are that Markdown rendered by ``QTextDocument`` (no network, no
browser engine).

Everything a model or a document wrote is made inert first
(:func:`app.ui.safe_markdown.neutralize_markdown`): raw HTML is text, URLs are
text in code spans, there is no link and no image, so the Markdown file is
safe in any Markdown viewer. HTML and PDF are rendered without HTML and
without links (:mod:`app.ui.safe_document`), and the HTML file carries a
Content-Security-Policy that forbids scripts and every resource.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from PySide6.QtGui import QPageSize, QPdfWriter, QTextDocument

from app.core.models import EntityTable, Evidence, SentenceSupport
from app.core.settings import write_atomic
from app.research.citations import (
    OPEN_QUESTIONS_HEADING,
    SOURCES_HEADING,
    first_cited,
    sentence_support,
    split_report,
    support_headline,
)
from app.research.entity_table import write_table
from app.ui.citations import balance_fences
from app.ui.safe_document import set_untrusted_markdown, standalone_html
from app.ui.safe_markdown import code_span, neutralize_inline, neutralize_markdown

EXPORT_FILTERS = {
    ".md": "Markdown (*.md)",
    ".html": "HTML (*.html)",
    ".pdf": "PDF (*.pdf)",
}
TABLE_FILTERS = {".csv": "CSV (*.csv)", ".json": "JSON (*.json)"}


def _source_entry(e: Evidence) -> str:
    where = e.path + (f", page {e.page}" if e.page is not None else "")
    title = neutralize_inline(e.title or Path(e.path).name)
    quote = neutralize_inline(e.quote)
    return f"- [{e.number}] **{title}** — {code_span(where)}" + (f"\n\n  > {quote}\n" if quote else "")


def report_markdown(
    question: str,
    markdown: str,
    evidence: Iterable[Evidence],
    *,
    include_consulted: bool = False,
    support: SentenceSupport | None = None,
) -> str:
    """The report as one Markdown file: the question, the header, the report's text,
    the sources it cites (in order of first citation), the sources it read but did
    not cite when ``include_consulted``, and its open questions. ``support`` is the
    report's own count; without it, it is counted from ``markdown`` the same way."""
    body, tail = split_report(markdown)
    by_number = {e.number: e for e in evidence}
    cited = first_cited(body, by_number)
    support = support or sentence_support(markdown)
    parts = []
    if question.strip():
        parts.append(f"# {neutralize_inline(question)}\n")
    parts.append(f"*{support_headline(support)}*\n")
    parts.append(neutralize_markdown(balance_fences(body)).strip() + "\n")
    parts.append(f"\n{SOURCES_HEADING}\n")
    parts += [_source_entry(by_number[n]) for n in cited] or ["No source is cited.\n"]
    if include_consulted:
        consulted = [e for n, e in sorted(by_number.items()) if n not in set(cited)]
        if consulted:
            parts.append("\n## Also consulted\n")
            parts += [_source_entry(e) for e in consulted]
    at = tail.find(OPEN_QUESTIONS_HEADING)
    if at >= 0:
        parts.append("\n" + neutralize_markdown(balance_fences(tail[at:])).strip() + "\n")
    return "\n".join(parts)


def markdown_document(markdown: str) -> QTextDocument:
    """A document of the (already neutralised) export Markdown: no HTML, no link, no image."""
    doc = QTextDocument()
    set_untrusted_markdown(doc, markdown)
    return doc


def report_html(markdown: str, title: str = "Fathom report") -> str:
    return standalone_html(markdown_document(markdown).toHtml(), title)


def write_pdf(markdown: str, path: Path, title: str = "Fathom report") -> Path:
    doc = markdown_document(markdown)
    writer = QPdfWriter(str(path))
    writer.setTitle(title)
    writer.setCreator("Fathom")
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setResolution(150)
    doc.print_(writer)
    return path


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
    text = report_markdown(question, markdown, evidence, include_consulted=include_consulted, support=support)
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
