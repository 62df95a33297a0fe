"""Does the library answer the question? Said plainly when it does not.

A small model writes an answer from whatever it is shown, near misses included. The
report says the documents do not answer the question when what the run found cannot
hold the answer, judged without the writer:

- a name or number of the question itself is in none of the passages the run found
  (titles included: asked about "Maiden Japan", nothing found mentions it): what was
  found is about something else. A word for a people or language ("European",
  "Italian") is not such a name where the question uses it to describe ("Which
  European city …") or the passages hold its place ("Europe", "Italy");
- the question's subject, one capitalised word, turns up only as a common word: asked
  about the play "Brand", the passages say "the brand was relaunched" but never
  "Brand" (in no title, never capitalised);
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
from app.research.evidence import EvidenceRegistry
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
    text = _text(found)
    grounding = ground(question, text, lone_opener=False)
    missing = [*grounding.missing_numbers, *_names(grounding.missing_names, question, text)]
    if missing:
        named = ", ".join(f"“{m}”" for m in missing[:3])
        return Answerability(False, f"None of them mentions {named}.")
    as_words = only_as_common_word(question, found)
    if as_words:
        named = ", ".join(f"“{n}”" for n in as_words[:3])
        words = ", ".join(f"“{n.lower()}”" for n in as_words[:3])
        return Answerability(False, f"None of them names {named}: only the word {words} turns up.")
    if similarity is not None and similarity < MIN_SIMILARITY:
        return Answerability(False, "None of them says anything close to what it asks.")
    if subject_similarity is not None and subject_similarity < MIN_SUBJECT_SIMILARITY:
        named = ", ".join(f"“{n}”" for n in sorted(subject(question, found))[:3])
        return Answerability(False, f"None of them is about {named}: they name it only in passing.")
    return Answerability(True)


def missing_names(question: str, found: Sequence[Found]) -> list[str]:
    """The question's names that no passage of ``found`` holds, titles included (a
    question's first word is not taken for a name alone; a word for a people is
    excused, see :func:`_people_word`)."""
    text = _text(found)
    return _names(ground(question, text, lone_opener=False).missing_names, question, text)


def found_in(evidence: EvidenceRegistry) -> list[Found]:
    """A run's evidence as the judgement reads it: each passage under its title."""
    return [Found(c.title or c.heading_path, evidence.text(n)) for n, c in evidence.chunks()]


def _text(found: Sequence[Found]) -> str:
    return "\n".join(f"{p.title}\n{p.text}" for p in found)


def _names(missing: Sequence[str], question: str, text: str) -> list[str]:
    return [n for n in missing if not _people_word(n, question, text)]


# a people's or language's word for a place ("European": Europe, "Italian": Italy,
# "Japanese": Japan, "German": Germany): the suffix off, then the place's own ending
_DEMONYM_SUFFIXES = ("ean", "ian", "ese", "an")
_PLACE_ENDINGS = ("", "e", "a", "y", "ia")
_WORD = re.compile(r"[^\W\d_]+")


def _people_word(name: str, question: str, text: str) -> bool:
    """Whether ``name`` is one word for a people or language ("European", "Italian")
    that the passages need not hold: the question uses it to describe ("a European
    city"), or the place it comes from ("Europe") is in ``text``."""
    word = name.lower()
    if not word.isalpha():
        return False
    roots = [word[: -len(s)] for s in _DEMONYM_SUFFIXES if word.endswith(s)]
    if not roots:
        return False
    if re.search(rf"(?<!\w){re.escape(name)}\s+[a-z]", question):
        return True
    words = {w.lower() for w in _WORD.findall(text)}
    return any(
        len(root) >= 4 and root + ending in words for root in roots for ending in _PLACE_ENDINGS
    )


def only_as_common_word(question: str, found: Sequence[Found]) -> list[str]:
    """The question's subject (:func:`app.research.subject.subject`), one capitalised
    word ("Brand", the play), where ``found`` holds it only as a lowercase word ("the
    brand was relaunched"): in no title, never capitalised in the text. A word that opens
    a sentence counts as the name (it cannot be told apart)."""
    out = []
    for name in sorted(subject(question, found)):
        if " " in name or not name[:1].isupper() or not name.isalpha():
            continue
        capital = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        lower = re.compile(rf"(?<!\w){re.escape(name.lower())}(?!\w)")
        titled = any(name.lower() in p.title.lower() for p in found)
        capitalised = any(capital.search(p.text) for p in found)
        if not titled and not capitalised and any(lower.search(p.text) for p in found):
            out.append(name)
    return out


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
