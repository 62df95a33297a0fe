"""What the report writer reads, and in which order: the multi-hop chain first.

A multi-hop question ("who is the spouse of the Green performer?") is answered
by a chain of passages: one about the question's subject names a bridge ("Green
is an album by Steve Hillage"); the next is *about* that bridge ("Steve Hillage
… married Miquette Giraudy"). The run usually finds both, but the writer used to
read its evidence in the order it was found, round-robin over the sub-queries,
so the chain's second link could sit last or fall outside the writer's limit,
and a small model cites the first passages it reads.

:func:`writer_order` puts the chain first: passages linked one to the next (one
names the other's title — the bridge), grown from each passage in turn, the
chain that covers most of the question's words kept; the rest follow in the
usual spread order, up to the writer's limit. Evidence keeps its numbers: only
the order and the cut change.

:func:`chain_focus` gives each passage's neighbours' titles, so the snippet the
writer sees keeps the sentence that names the next link.

Pure functions of the evidence text; no model call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.research.bridging import STOPWORDS, words
from app.research.evidence import EvidenceRegistry

MIN_TITLE_CHARS = 3  # a title shorter than this names nothing reliably


@dataclass(frozen=True)
class Passage:
    """One evidence item as the ordering sees it."""

    number: int
    title: str
    text: str


def _content(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS and len(w) > 2}


def title_name(title: str) -> str:
    """A title as a name to look for in text: a trailing "(…)" dropped ("Green (Steve
    Hillage album)" → "Green"), spaces collapsed."""
    return " ".join(re.sub(r"\s*\([^)]*\)\s*$", "", title).split())


def mentions(text: str, title: str) -> bool:
    """Whether ``text`` names ``title`` as a whole phrase, in the title's own case (a
    name, "Green", and not the word "green")."""
    name = title_name(title)
    if len(name) < MIN_TITLE_CHARS or not _content(name):
        return False
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", " ".join(text.split())) is not None


def linked(a: Passage, b: Passage) -> bool:
    """Whether one of the two passages names the other (a hop of a chain)."""
    return mentions(a.text, b.title) or mentions(b.text, a.title)


def _overlap(question: set[str], passage: Passage) -> int:
    return len(question & _content(f"{passage.title} {passage.text}"))


def _grow(
    start: Passage, passages: Sequence[Passage], asked: set[str], max_links: int
) -> list[Passage]:
    rank = {p.number: i for i, p in enumerate(passages)}
    links = [start]
    while len(links) < max_links:
        candidates = [p for p in passages if p not in links and any(linked(p, q) for q in links)]
        if not candidates:
            break
        links.append(max(candidates, key=lambda p: (_overlap(asked, p), -rank[p.number])))
    return links


def chain(question: str, passages: Sequence[Passage], max_links: int = 4) -> list[int]:
    """The numbers of the multi-hop chain through ``passages`` (given best first).

    From each passage a chain grows by the passage linked to it so far that shares
    most words with the question (the earlier given wins a tie); the chain kept is
    the one whose passages together cover most of the question's words, then the
    one whose start is nearest the question (the first hop), then the longest,
    then the one whose start was given first."""
    asked = _content(question)
    best: tuple[tuple[int, int, int, int], list[Passage]] | None = None
    for i, start in enumerate(passages):
        links = _grow(start, passages, asked, max_links)
        covered = set().union(*(_content(f"{p.title} {p.text}") for p in links)) & asked
        key = (len(covered), _overlap(asked, start), len(links), -i)
        if best is None or key > best[0]:
            best = (key, links)
    return [] if best is None else [p.number for p in best[1]]


def writer_order(
    question: str,
    passages: Sequence[Passage],
    spread: Sequence[int],
    limit: int,
    standing: Mapping[int, float] | None = None,
) -> list[int]:
    """At most ``limit`` evidence numbers for the writer: the chain first (see
    :func:`chain`), then the rest by search ``standing`` (highest first; see
    ``EvidenceRegistry.note_ranks``), ties in ``spread`` order (the round-robin
    pick over the sub-queries, then evidence order). Without standings: the chain,
    then ``spread``."""
    if limit <= 0:
        return []
    first = chain(question, passages, max_links=min(limit, 4))
    # a chain of one passage is only "the passage nearest the question": it keeps its place
    ordered = first if len(first) > 1 else []
    if standing:
        place = {n: i for i, n in enumerate(spread)}
        rest = sorted(
            (p.number for p in passages),
            key=lambda n: (-standing.get(n, 0.0), place.get(n, len(place)), n),
        )
    else:
        rest = list(spread)
    ordered += [n for n in rest if n not in ordered]
    return ordered[:limit]


def chain_focus(number: int, passages: Sequence[Passage], chosen: Sequence[int]) -> str:
    """The titles of the chosen passages linked to passage ``number``: words the
    writer's snippet of it should keep (the sentence that names the next link)."""
    by_number = {p.number: p for p in passages}
    me = by_number.get(number)
    if me is None:
        return ""
    return " ".join(
        title_name(by_number[n].title).lower()
        for n in chosen
        if n != number and n in by_number and linked(me, by_number[n])
    )


def passages_of(evidence: EvidenceRegistry) -> list[Passage]:
    """The run's evidence as passages, in evidence order (each sub-query's best first)."""
    return [
        Passage(n, chunk.title or chunk.heading_path, chunk.text) for n, chunk in evidence.chunks()
    ]


def writer_numbers(question: str, evidence: EvidenceRegistry, limit: int) -> list[int]:
    """The evidence numbers the report writer reads, chain first, then by search
    standing (:func:`writer_order`)."""
    passages = passages_of(evidence)
    standing = {p.number: evidence.standing(p.number) for p in passages}
    spread = evidence.spread(limit)
    return writer_order(
        question, passages, spread, limit, standing if any(standing.values()) else None
    )
