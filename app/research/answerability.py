"""Does the library answer the question? Said plainly when it does not.

A small model writes an answer from whatever it is shown, near misses included. The
report says the documents do not answer the question when what the run found cannot
hold the answer, judged without the writer:

- a name or number of the question itself is in none of the passages the run found
  (asked about "Maiden Japan", nothing found mentions it): what was found is about
  something else.

(A report none of whose sentences its sources support is a failure of the writer, not
of the documents: the claim check's flags and header say so.)

The report then opens with that sentence and what is missing (a heading: not a claim to
check), and goes on with what the passages do say, flagged as the check found it; its
short answer is left empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.research.claim_check import ground

NOT_ANSWERED = "The passages found do not answer this question."


@dataclass(frozen=True)
class Answerability:
    answered: bool
    reason: str = ""  # why not, in a sentence


def judge(question: str, passages: Sequence[str]) -> Answerability:
    """Whether the run's ``passages`` (everything it found) can answer ``question``."""
    if not passages:
        return Answerability(False, "No passage was found relevant to it.")
    # a question's first word is often a verb ("List every …"), never a name alone
    grounding = ground(question, "\n".join(passages), lone_opener=False)
    missing = [*grounding.missing_numbers, *grounding.missing_names]
    if missing:
        named = ", ".join(f"“{m}”" for m in missing[:3])
        return Answerability(False, f"None of them mentions {named}.")
    return Answerability(True)


def lead(answerability: Answerability) -> str:
    """The heading a report that does not answer opens with (a heading: not one of the
    report's sentences, so neither counted nor checked)."""
    return f"### {NOT_ANSWERED} {answerability.reason} What the passages found do say:"
