"""Quote only what the answer rests on.

The writer's findings step picks the passages the answer rests on, but a small model
picks nearly all it is shown: measured on MuSiQue (Qwen2.5-0.5B, deep), 5.9 passages
quoted a report and 0.27 of them the gold supporting passages. The noise looks like
evidence. A picked passage stays quoted under the report only when something other
than the pick ties it to the answer, along the chain the answer follows:

- the chain starts at the passages *about* the question's most specific name (of the
  question's names the picked passages hold, the one the fewest of them hold:
  "Johnnycake, West Virginia" asks about Johnnycake, and a passage on West Virginia
  alone does not count): those whose title holds it where any does, else those that
  hold it at all (see :mod:`app.research.subject`);
- a passage a sentence of the report cites, when the claim check did not flag that
  sentence (a flagged sentence is no ground to quote), and it is tied to the start: it
  names the other's title or the other names its own, or both hold a name the question
  does not (the bridge: "… published by the American Psychological Association" and
  "Hall, the first president of the American Psychological Association");
- a passage a start names by its title, cited or not: the chain's next link ("written
  by Judith Viorst" names the passage "Judith Viorst", where the author's schooling is);
- a passage that holds the short answer (the chain's last link), tied so to a passage
  kept above.

The others stay in the report's evidence, listed under "Also consulted". When none is
tied so, the passages the report's flagged sentences cite are quoted, and failing those
the pick stands: the model's choice is then all there is to go on.

Pure functions of the texts; no model call.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from app.research.claim_check import fold, ground
from app.research.subject import about, most_specific, names_held, question_names
from app.research.writer_evidence import mentions, title_name

MIN_ANSWER_CHARS = 3  # a shorter answer ("no", "3") is found by chance in any passage


@dataclass(frozen=True)
class Picked:
    """A passage the findings step picked: its number, its document's title and text."""

    number: int
    title: str
    text: str


def holds(answer: str, text: str) -> bool:
    """Whether ``text`` holds ``answer`` as whole words (case, accents and a full stop
    aside; an answer under :data:`MIN_ANSWER_CHARS` is never looked for)."""
    words = " ".join(fold(answer).split()).strip(" .")
    if len(words) < MIN_ANSWER_CHARS:
        return False
    folded = " ".join(fold(text).split())
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", folded, re.IGNORECASE) is not None


def _holds(answer: str, passage: Picked) -> bool:
    return holds(answer, f"{passage.title} {passage.text}")


def _words(text: str) -> set[str]:
    return set(fold(text).lower().replace("'s", " ").split())


class _Chain:
    """Which picked passages are links of one chain, for one question."""

    def __init__(self, asked: Collection[str]) -> None:
        # the words of the question's own names: a name or title made of them ties nothing
        # (every passage that mentions the subject would be tied to it, "Kenji" of
        # "Akinoshu Kenji" to every Kenji)
        self._asked = set().union(*(_words(a) for a in asked))
        self._names: dict[int, set[str]] = {}

    def _names_of(self, passage: Picked) -> set[str]:
        """The names ``passage`` holds (title included) that are not the question's."""
        if passage.number not in self._names:
            grounding = ground(f"{passage.title}\n{passage.text}", "", lone_opener=False)
            self._names[passage.number] = {
                n for n in grounding.missing_names if not _words(n) <= self._asked
            }
        return self._names[passage.number]

    def names_title_of(self, one: Picked, other: Picked) -> bool:
        """Whether ``one`` names ``other``'s title (a title made of the question's own
        words aside): "… written by Judith Viorst" names the passage "Judith Viorst"."""
        return (
            one.number != other.number
            and not _words(title_name(other.title)) <= self._asked
            and mentions(one.text, other.title)
        )

    def tied(self, a: Picked, b: Picked, answer: str = "") -> bool:
        """Whether one of the two names the other's title, or both hold a name the
        question does not (the bridge) other than ``answer``: two passages that both
        say "Norway" are not a chain to the answer "Norway"."""
        if a.number == b.number:
            return True
        if self.names_title_of(a, b) or self.names_title_of(b, a):
            return True
        shared = self._names_of(a) & self._names_of(b)
        return any(not holds(answer, name) for name in shared)


def rested_on(
    question: str,
    picked: Sequence[Picked],
    cited: Collection[int],
    answer: str = "",
    cited_flagged: Collection[int] = (),
) -> list[int]:
    """The numbers of ``picked`` (in their order) to quote: the passages about the
    question's most specific name, those the report's unflagged sentences cite
    (``cited``) and those that hold ``answer``, each tied to the chain (see the module's
    text), and those a start names by title. When none is, those its flagged sentences
    cite (``cited_flagged``), else all."""
    asked = question_names(question)
    holding = [names_held(question, asked, p) for p in picked]
    specific = most_specific(holding)
    starts = [p for p, own in zip(picked, holding, strict=True) if own & specific]
    starts = [p for p in starts if about(question, specific, p)] or starts
    chain = _Chain(asked)
    keep = {p.number for p in starts}
    for p in picked:
        cited_on_chain = p.number in cited and (not starts or any(chain.tied(p, s) for s in starts))
        if cited_on_chain or any(chain.names_title_of(s, p) for s in starts):  # or the next link
            keep.add(p.number)
    kept = [p for p in picked if p.number in keep]
    # an answer the question itself holds ("Euro" for "which currency predated the Euro")
    # marks no link of the chain
    ends = answer and not holds(answer, question)
    for p in picked:
        if ends and _holds(answer, p) and (not kept or any(chain.tied(p, k, answer) for k in kept)):
            keep.add(p.number)
    return (
        [p.number for p in picked if p.number in keep]
        or [p.number for p in picked if p.number in cited_flagged]
        or [p.number for p in picked]
    )
