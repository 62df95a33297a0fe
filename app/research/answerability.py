"""Does the library answer the question? Said plainly when it does not.

A small model writes an answer from whatever it is shown, near misses included. The
report says the documents do not answer the question when what the run found cannot
hold the answer, judged without the writer:

- a name or number of the question itself is in none of the passages the run found
  (titles included: asked about "Maiden Japan", nothing found mentions it): what was
  found is about something else;
- no sentence found is close in meaning to the question (cosine of the library's
  embedding model below :data:`MIN_SIMILARITY` for every sentence, titled): the
  passages are on neighbouring subjects only;
- the passages name the question's subject (its most specific name, see
  :mod:`app.research.subject`) only in passing: none is about it (the name in its
  document's title or heading), and every sentence that names it is far in meaning
  from the question (cosine below :data:`MIN_SUBJECT_SIMILARITY`). Asked "What country was the author of Brand a
  citizen of?" of a library without the play, the search finds "Brand" in sentences
  on other things; the answer written from them would be a near miss.

The first two were measured over MuSiQue questions 20–99 (a probe of the run's hits, with and without the
questions' supporting paragraphs): the two signals say "not answered" for 0.84 of the
questions whose passages were withheld, and for 0.12 of those asked of the whole
library — nearly all of them questions whose search missed a supporting paragraph
(1 of 37 where it found them all).

(A report none of whose sentences its sources support is a failure of the writer, not
of the documents: the claim check's flags and header say so.)

The report then opens with that sentence and what is missing (a heading: not a claim to
check), and goes on with what the passages do say, flagged as the check found it; its
short answer is left empty.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.research.claim_check import Embed, ground
from app.research.subject import about, held, subject

NOT_ANSWERED = "The passages found do not answer this question."
# below this cosine (MiniLM) between the question and every titled sentence found, the
# passages are on neighbouring subjects only
MIN_SIMILARITY = 0.44
# below this cosine between the question and every sentence that names its subject (where
# no passage is about it), the name is only mentioned in passing; lower than
# MIN_SIMILARITY: a multi-hop question's other words pull its cosine down (measured on
# MuSiQue questions 20–99, tests/bench/bench_answerability.py: the sentences naming the
# subject of an answerable question came no lower than 0.30)
MIN_SUBJECT_SIMILARITY = 0.25
MAX_SENTENCES = 400  # embedded per judgement (a deep run finds a few dozen passages)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Found:
    """A passage the run found: its document's title and its text."""

    title: str
    text: str


@dataclass(frozen=True)
class Answerability:
    answered: bool
    reason: str = ""  # why not, in a sentence


def judge(
    question: str,
    passages: Sequence[Found | str],
    similarity: float | None = None,
    subject_similarity: float | None = None,
) -> Answerability:
    """Whether the run's ``passages`` (everything it found) can answer ``question``;
    ``similarity``: the question's cosine to the nearest sentence found (None: not
    measured, see :func:`nearest`); ``subject_similarity``: to the nearest sentence
    naming the question's subject where no passage is about it (None: not measured or
    not needed, see :func:`nearest_naming_subject`)."""
    if not passages:
        return Answerability(False, "No passage was found relevant to it.")
    found = [p if isinstance(p, Found) else Found("", p) for p in passages]
    # a question's first word is often a verb ("List every …"), never a name alone
    grounding = ground(
        question, "\n".join(f"{p.title}\n{p.text}" for p in found), lone_opener=False
    )
    missing = [*grounding.missing_numbers, *grounding.missing_names]
    if missing:
        named = ", ".join(f"“{m}”" for m in missing[:3])
        return Answerability(False, f"None of them mentions {named}.")
    if similarity is not None and similarity < MIN_SIMILARITY:
        return Answerability(False, "None of them says anything close to what it asks.")
    if subject_similarity is not None and subject_similarity < MIN_SUBJECT_SIMILARITY:
        named = ", ".join(f"“{n}”" for n in sorted(subject(question, found))[:3])
        return Answerability(False, f"None of them is about {named}: they name it only in passing.")
    return Answerability(True)


def _sentences(found: Sequence[Found]) -> list[str]:
    out: list[str] = []
    for p in found:
        pieces = [" ".join(s.split()) for s in _SENTENCE.split(p.text) if len(s.split()) >= 3]
        whole = [" ".join(p.text.split())[:1000]] if p.text.strip() else []
        out.extend(f"{p.title}: {s}" if p.title else s for s in pieces or whole)
    return list(dict.fromkeys(out))[:MAX_SENTENCES]


async def nearest(question: str, found: Sequence[Found], embed: Embed | None) -> float | None:
    """The question's cosine to the nearest sentence of ``found`` (each led by its
    document's title), or None without an embedding model (or when it fails)."""
    return await _nearest(question, _sentences(found), embed)


async def nearest_naming_subject(
    question: str, found: Sequence[Found], embed: Embed | None
) -> float | None:
    """The question's cosine to the nearest sentence of ``found`` that names the
    question's subject (each led by its document's title), when none of ``found`` is
    about it; None when one is about it, the question names no subject ``found``
    holds, no whole sentence names it, or without an embedding model."""
    names = subject(question, found)
    if not names or any(about(question, names, p) for p in found):
        return None
    naming = [s for s in _sentences(found) if held(question, names, s)]
    return await _nearest(question, naming, embed)


async def _nearest(question: str, sentences: Sequence[str], embed: Embed | None) -> float | None:
    if embed is None or not sentences:
        return None
    try:
        vectors = np.asarray(await embed([question, *sentences]), dtype=np.float32)
    except Exception:  # an embedding server gone away: the words still judge
        return None
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return float(np.max(vectors[1:] @ vectors[0]))


def lead(answerability: Answerability) -> str:
    """The heading a report that does not answer opens with (a heading: not one of the
    report's sentences, so neither counted nor checked)."""
    return f"### {NOT_ANSWERED} {answerability.reason} What the passages found do say:"
