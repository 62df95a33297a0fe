"""The export's Markdown: one file that every other report format is rendered from.

The question, the header ("N of M sentences cited, K flagged"), the report's
own text, its Sources (the sources it cites, once each, in the order it first
cites them, each with its passage quoted), the sources read but not cited
("Also consulted") only when asked for, its Open questions, and its Provenance
(question, date, Fathom version, mode, budget, models, collections, how its
sentences were checked, each source's file as indexed); a starter model's report
says so under its question.

What the model wrote is made inert (:func:`neutralize_markdown`: no raw HTML,
no link, no image, no live URL). What a document wrote (titles, paths,
passages) and the question are quoted as literal text (:func:`quote_text`,
:func:`code_span`), so no content can end a quote, open a code block, start a
heading or a list, or look like a citation.
"""

from __future__ import annotations

import re
from pathlib import Path

from app.core.models import Evidence
from app.export.content import ReportContent
from app.export.md_fences import balance_fences, classify
from app.export.safe_markdown import code_span, neutralize_markdown, quote_text
from app.research.citations import (
    OPEN_QUESTIONS_HEADING,
    SOURCES_HEADING,
    first_cited,
    split_report,
    support_headline,
)
from app.research.provenance import STARTER_HEADER, describe

CONSULTED_HEADING = "## Also consulted"
PROVENANCE_HEADING = "## Provenance"
NO_SOURCE = "No source is cited."
# a heading in the model's text that reads like one of the export's own sections
_SECTION_LIKE = re.compile(
    r"^ {0,3}#{1,6}[ \t]+(?:sources|also consulted|open questions)[ \t#]*$", re.IGNORECASE
)


def source_entry(e: Evidence) -> str:
    """One list item: ``[n]``, the title in bold, the path (and page) in code, the passage quoted."""
    title = quote_text(e.title or Path(e.path).name) or "untitled"
    quote = quote_text(e.quote)
    return f"- [{e.number}] **{title}** — {code_span(e.location)}" + (
        f"\n\n  > {quote}\n" if quote else "\n"
    )


def _own_sections_as_text(body: str) -> str:
    """The model's text with a heading that reads like "## Sources" kept as plain text,
    so the export has one Sources section: its own."""
    out = []
    for line, kind, _fence in classify(body.splitlines(keepends=True)):
        if kind == "prose" and _SECTION_LIKE.match(line.rstrip("\r\n")):
            line = "\\" + line.lstrip(" ")
        out.append(line)
    return "".join(out)


def report_markdown(content: ReportContent, *, include_consulted: bool = False) -> str:
    """The whole report as one Markdown file (see the module)."""
    # a code block the model left open ends before the engine's sections, so they are found
    body, tail = split_report(balance_fences(content.markdown))
    by_number = {e.number: e for e in content.evidence}
    cited = first_cited(body, by_number)
    parts = []
    if content.question.strip():
        parts.append(f"# {quote_text(content.question)}\n")
    if content.provenance is not None and content.provenance.starter:
        parts.append(f"*{STARTER_HEADER}*\n")
    parts.append(f"*{support_headline(content.counted_support())}*\n")
    parts.append(neutralize_markdown(_own_sections_as_text(body)).strip() + "\n")
    parts.append(f"\n{SOURCES_HEADING}\n")
    parts += [source_entry(by_number[n]) for n in cited] or [f"{NO_SOURCE}\n"]
    if include_consulted:
        consulted = [e for n, e in sorted(by_number.items()) if n not in set(cited)]
        if consulted:
            parts.append(f"\n{CONSULTED_HEADING}\n")
            parts += [source_entry(e) for e in consulted]
    at = tail.find(OPEN_QUESTIONS_HEADING)
    if at >= 0:
        parts.append("\n" + neutralize_markdown(tail[at:]).strip() + "\n")
    if content.provenance is not None:
        parts.append(f"\n{PROVENANCE_HEADING}\n")
        parts += [f"- {quote_text(line)}" for line in describe(content.provenance)]
    return "\n".join(parts)
