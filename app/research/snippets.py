"""Snippets: a passage cut to the sentences that matter for a query.

A search engine shows a snippet, not the whole page, and a reader judges
relevance from it. The deep mode does the same to keep its prompts short: the
judge, the reflection and the report writer see each passage cut to its
sentences that share most content words with the question and the sub-query
that found it, in their original order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.llm.fencing import withhold_instructions
from app.research.bridging import STOPWORDS, sentences, words
from app.research.evidence import EvidenceRegistry


def focused(text: str, focus: str, max_chars: int) -> str:
    """``text`` cut to about ``max_chars`` by keeping its sentences that share most
    content words with ``focus``, in their original order (the best one always).

    A passage that addresses the assistant is withheld whole first
    (:func:`~app.llm.fencing.withhold_instructions`): a cut could keep its payload
    and drop the sentence that gives it away."""
    text = withhold_instructions(text)
    if len(text) <= max_chars:
        return text
    terms = {w for w in words(focus) if w not in STOPWORDS}
    pieces = sentences(text)
    ranked = sorted(range(len(pieces)), key=lambda i: (-len(set(words(pieces[i])) & terms), i))
    kept: list[int] = []
    used = 0
    for i in ranked:
        if used and used + len(pieces[i]) + 1 > max_chars:
            continue
        kept.append(i)
        used += len(pieces[i]) + 1
    return " … ".join(pieces[i].strip() for i in sorted(kept)) if len(kept) > 1 else pieces[kept[0]]


@dataclass(frozen=True)
class SourceView:
    """How much of the evidence a prompt shows: at most ``max_sources`` items
    (taken in turn from each sub-query, see ``EvidenceRegistry.spread``), each cut
    to ``chars`` characters — to its best sentences when ``focus`` is set, else
    to its start."""

    max_sources: int = 10
    chars: int = 1500
    focus: bool = False


FULL_VIEW = SourceView()


def evidence_excerpts(
    question: str,
    evidence: EvidenceRegistry,
    view: SourceView,
    numbers: Sequence[int] | None = None,
    focus_extra: Mapping[int, str] | None = None,
) -> list[tuple[int, str, str]]:
    """``(number, title, text)`` of the evidence a prompt shows under ``view``: the
    evidence ``numbers`` in their order, or by default ``view.max_sources`` of it
    spread over the sub-queries. With ``view.focus`` each text is cut to its
    sentences nearest the question, the sub-query that found it and its
    ``focus_extra`` words (later clipping to ``view.chars`` is then a no-op)."""
    out = []
    chosen = evidence.spread(view.max_sources) if numbers is None else numbers
    extra = focus_extra or {}
    for number in chosen:
        chunk = evidence.chunk(number)
        item = evidence.get(number)
        if chunk is None or item is None:
            continue
        title = chunk.title or chunk.heading_path or chunk.path
        focus = f"{question} {item.subquery} {extra.get(number, '')}"
        text = focused(chunk.text, focus, view.chars) if view.focus else chunk.text
        out.append((number, title, text))
    return out
