"""Which of the passages shown to the writer the answer can rest on, judged by their
words, without the writer.

A small model asked which passages the answer rests on names nearly all of them, and
the report then quotes near misses beside the evidence (a film of the same year, a
writer who shares a place's name). The passages a multi-hop answer rests on form a
chain from the question:

- an **anchor** holds one of the question's names ("Leland, North Carolina") and as
  many of its other words as the best such passage, give or take half (a writer
  named Leland is not about the films shot there);
- a **link** is a passage bridged to one already kept — one names the other's title,
  they are parts of one document, or they share a name the question does not hold
  ("American Psychological Association") — that adds a word of the question the
  kept ones lack (the list of films names *Maximum Overdrive*; its page says who
  *directed* it).

A question without names anchors on the passages that hold most of its words.
:func:`basis` returns the chain, anchors first, at most ``limit`` passages; the
report's writer walks it sentence by sentence, and the quotes under the report are
these passages (see :meth:`app.research.report.ReportWriter._findings`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.research.bridging import STOPWORDS, names
from app.research.claim_check import fold, ground, stem
from app.research.writer_evidence import Passage, linked

ANCHOR_SHARE = 0.5  # an anchor holds at least this share of the best anchor's question words
NAMELESS_SHARE = 0.8  # without names, an anchor holds nearly as many question words as the best
MAX_BASIS = 4  # passages of a chain (MuSiQue's questions take two to four hops)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


@dataclass(frozen=True)
class _Read:
    """One passage as the basis reads it."""

    passage: Passage
    names: frozenset[str]  # the question's names it holds
    words: frozenset[str]  # the question's content words (stems) it holds
    bridges: frozenset[str]  # its own names (folded, lower case), the question's left out


def _stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(fold(text)) if w.lower() not in STOPWORDS and len(w) > 2}


def _names(text: str) -> list[str]:
    """The names of ``text`` (:func:`app.research.bridging.names`), none running across a
    sentence's end ("Alabama. Today"), none of digits alone ("2013")."""
    pieces = (piece.strip(" .") for name in names(text) for piece in re.split(r"\.\s+", name))
    return [p for p in pieces if any(c.isalpha() for c in p) and not p.isdigit()]


def _question_names(question: str) -> list[str]:
    everything = ground(question, "", lone_opener=False)
    return list(everything.missing_names)


def _read(passage: Passage, question_names: Sequence[str], asked: set[str]) -> _Read:
    text = f"{passage.title}\n{passage.text}"
    missing = set(ground(" ; ".join(question_names), text).missing_names) if question_names else set()
    held = frozenset(n for n in question_names if n not in missing)
    asked_lower = {fold(n).lower() for n in question_names}
    own = {fold(n).lower() for n in [*_names(passage.text), passage.title] if n}
    bridges = frozenset(n for n in own if n not in asked_lower and not _stems(n) <= asked and len(n) >= 4)
    return _Read(passage, held, frozenset(_stems(text) & asked), bridges)


def _held(read: _Read) -> int:
    """How much of the question a passage holds: its names and its other words."""
    return len(read.names) + len(read.words)


def _bridged(a: _Read, b: _Read) -> bool:
    same_document = bool(a.passage.title) and a.passage.title == b.passage.title
    return same_document or linked(a.passage, b.passage) or bool(a.bridges & b.bridges)


def basis(question: str, passages: Sequence[Passage], limit: int = MAX_BASIS) -> list[int]:
    """The numbers of the passages the answer to ``question`` can rest on (see the
    module), anchors first (best first), then each link in the order it joined;
    ``[]`` when no passage holds a word of the question."""
    asked = _stems(question)
    question_names = _question_names(question)
    reads = [_read(p, question_names, asked) for p in passages]
    named = [r for r in reads if r.names]
    pool = named or [r for r in reads if r.words]
    if not pool or limit <= 0:
        return []
    best = max(_held(r) for r in pool)
    share = ANCHOR_SHARE if named else NAMELESS_SHARE
    anchors = sorted((r for r in pool if _held(r) >= share * best), key=lambda r: -_held(r))
    # a passage holding only some of the names another holds is about something else
    # that shares a name ("Good, West Virginia" beside "Johnnycake, West Virginia")
    anchors = [r for r in anchors if not any(r.names < other.names for other in anchors)]
    kept = anchors[:limit]
    covered = set().union(*(r.words for r in kept))
    while len(kept) < limit:
        links = [r for r in reads if r not in kept and r.words - covered and any(_bridged(r, k) for k in kept)]
        if not links:
            break
        step = max(links, key=lambda r: len(r.words - covered))
        kept.append(step)
        covered |= step.words
    return [r.passage.number for r in kept]
