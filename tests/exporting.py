"""Export a report as the window does (the one exporter, Qt's PDF renderer), for tests
that start from a report's text and evidence rather than from a run."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from app.core.models import Evidence, Provenance, SentenceSupport
from app.export.content import ReportContent
from app.export.exporter import export
from app.ui.exporters import render_pdf


def export_report(
    path: Path,
    question: str,
    markdown: str,
    evidence: Iterable[Evidence],
    *,
    include_consulted: bool = False,
    support: SentenceSupport | None = None,
    provenance: Provenance | None = None,
) -> Path:
    """Write the report in the format ``path``'s suffix names (.md, .html, .pdf)."""
    content = ReportContent(
        question, markdown, tuple(evidence), support=support, provenance=provenance
    )
    return export(content, path, include_consulted=include_consulted, pdf=render_pdf)
