"""What a question is about: its names, the most specific of them, and the passages
that are about that name rather than mentioning it in passing.

A multi-hop question names its subject ("What country was the author of *Brand* a
citizen of?"); the chain that answers it starts at a passage *about* that subject. Of
the question's names the passages found hold, the most specific is the one the fewest
of them hold ("Johnnycake, West Virginia": Johnnycake, not West Virginia). A passage
is about a name when its document's title (or heading) holds it; the word also turns up
in passages about other things ("Brand" in a sentence on a clothing brand), and those
are near misses, not the start of an answer.

Pure functions of the texts; no model call. Used by the choice of quotes
(:mod:`app.research.quote_choice`) and by the judgement whether the documents answer
at all (:mod:`app.research.answerability`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from app.research.claim_check import ground


class Titled(Protocol):
    """A passage as the subject sees it: its document's title (or heading) and its text
    (answerability's Found, quote_choice's Picked)."""

    @property
    def title(self) -> str: ...

    @property
    def text(self) -> str: ...


def question_names(question: str) -> tuple[str, ...]:
    """The names and numbers the question itself holds (its first word, often a verb, is
    not taken for a name)."""
    grounding = ground(question, "", lone_opener=False)
    return (*grounding.missing_names, *grounding.missing_numbers)


def held(question: str, names: Collection[str], text: str) -> set[str]:
    """Those of the question's ``names`` that ``text`` holds (as the claim check finds
    names: accents, case of joiners and a possessive aside)."""
    if not names:
        return set()
    grounding = ground(question, text, lone_opener=False)
    return set(names) - {*grounding.missing_names, *grounding.missing_numbers}


def names_held(question: str, names: Collection[str], passage: Titled) -> set[str]:
    """The question's ``names`` that ``passage`` holds, its title included."""
    return held(question, names, f"{passage.title}\n{passage.text}")


def most_specific(held_by_each: Sequence[set[str]]) -> set[str]:
    """Of the names some passage holds, those the fewest passages hold."""
    counts: dict[str, int] = {}
    for names in held_by_each:
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    fewest = min(counts.values(), default=0)
    return {name for name, count in counts.items() if count == fewest}


def subject(question: str, passages: Sequence[Titled]) -> set[str]:
    """The question's most specific names among those ``passages`` hold (empty: the
    question names nothing they hold)."""
    names = question_names(question)
    if not names:
        return set()
    return most_specific([names_held(question, names, p) for p in passages])


def about(question: str, names: Collection[str], passage: Titled) -> bool:
    """Whether ``passage``'s title (or heading) holds one of ``names``: the passage is
    about it, not mentioning it in passing."""
    return bool(held(question, names, passage.title)) if passage.title.strip() else False
