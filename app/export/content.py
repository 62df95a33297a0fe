"""What an export is made of: one run's question, report text, evidence and table."""

from __future__ import annotations

from dataclasses import dataclass

from app.core.models import Citation, EntityTable, Evidence, Provenance, Report, SentenceSupport
from app.research.citations import sentence_support


@dataclass(frozen=True)
class ReportContent:
    """A run as exported: ``markdown`` is the report as the engine wrote it (its own
    Sources and Open questions included); ``evidence`` is every source it read,
    numbered as the report cites them."""

    question: str
    markdown: str
    evidence: tuple[Evidence, ...] = ()
    support: SentenceSupport | None = None
    citations: tuple[Citation, ...] = ()
    table: EntityTable | None = None
    provenance: Provenance | None = None  # what the report was made from and by

    @property
    def title(self) -> str:
        return " ".join(self.question.split()) or "Fathom report"

    def counted_support(self) -> SentenceSupport:
        """The report's own count of cited and flagged sentences, or one made the same way."""
        return self.support or sentence_support(self.markdown, self.citations)


def content_of(question: str, report: Report) -> ReportContent:
    return ReportContent(
        question=question,
        markdown=report.markdown,
        evidence=report.evidence,
        support=report.support,
        citations=report.citations,
        table=report.table,
        provenance=report.provenance,
    )
