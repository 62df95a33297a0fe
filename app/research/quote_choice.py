"""Quote only what the answer rests on.

The writer's findings step picks the passages the answer rests on, but a small model
picks nearly all it is shown: measured on MuSiQue (Qwen2.5-0.5B, deep), 5.9 passages
quoted a report and 0.27 of them the gold supporting passages. The noise looks like
evidence. A picked passage stays quoted under the report only when something other
than the pick ties it to the answer:

- a sentence of the report cites it (after :mod:`app.research.name_citations`: the
  passages its names come from);
- it holds the question's most specific name — of the question's names the picked
  passages hold, the one the fewest of them hold (the chain's first link is *about*
  what the question names; "Johnnycake, West Virginia" asks about Johnnycake, and a
  passage on West Virginia alone does not count);
- it holds the short answer, where the run gives one (the chain's last link).

The others stay in the report's evidence, listed under "Also consulted". When none is
tied so (no names, nothing cited), the pick stands: the model's choice is then all
there is to go on.

Pure functions of the texts; no model call.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from app.research.claim_check import fold, ground

MIN_ANSWER_CHARS = 3  # a shorter answer ("no", "3") is found by chance in any passage


@dataclass(frozen=True)
class Picked:
    """A passage the findings step picked: its number, its document's title and text."""

    number: int
    title: str
    text: str


def question_names(question: str) -> tuple[str, ...]:
    """The names and numbers the question itself holds (its first word, often a verb, is
    not taken for a name)."""
    grounding = ground(question, "", lone_opener=False)
    return (*grounding.missing_names, *grounding.missing_numbers)


def _names_held(question: str, names: Collection[str], passage: Picked) -> set[str]:
    grounding = ground(question, f"{passage.title}\n{passage.text}", lone_opener=False)
    return set(names) - {*grounding.missing_names, *grounding.missing_numbers}


def _most_specific(held: Sequence[set[str]]) -> set[str]:
    """Of the names some passage holds, those the fewest passages hold."""
    counts: dict[str, int] = {}
    for names in held:
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    fewest = min(counts.values(), default=0)
    return {name for name, count in counts.items() if count == fewest}


def _holds(answer: str, passage: Picked) -> bool:
    words = " ".join(fold(answer).split()).strip(" .")
    if len(words) < MIN_ANSWER_CHARS:
        return False
    text = " ".join(fold(f"{passage.title} {passage.text}").split())
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text, re.IGNORECASE) is not None


def rested_on(
    question: str, picked: Sequence[Picked], cited: Collection[int], answer: str = ""
) -> list[int]:
    """The numbers of ``picked`` (in their order) to quote: those the report's
    sentences cite (``cited``), that hold the most specific name of ``question`` or
    hold ``answer``; all of them when none does."""
    names = question_names(question)
    held = [_names_held(question, names, p) if names else set() for p in picked]
    specific = _most_specific(held)
    kept = [
        p.number
        for p, own in zip(picked, held, strict=True)
        if p.number in cited or own & specific or (answer and _holds(answer, p))
    ]
    return kept or [p.number for p in picked]
