"""Cite where a sentence's names come from.

A small model's report sentence often joins two links of a chain — "Hall, the
first president of the association that publishes the journal, …" — yet cites
only the passage of one. The claim check then rightly flags the other's name as
"not in its source", and the passage the name came from goes uncited. Here, before
the check, each prose sentence whose names or numbers its citations do not hold
also cites the fewest of the passages the writer saw (at most two, the chain first)
that hold them. Nothing else changes: the check still judges the whole sentence
against everything it now cites, and a name no passage holds stays missing (and
flagged).

An uncited sentence gains citations here only when its names and numbers are all
found, so a hedge such as "the documents do not say who founded Publix" is not
cited to the passage that merely mentions Publix unless it holds them all.

After the check, :func:`cite_chain` has each sentence that states the short answer,
and that the check supports, cite the passages the answer rests on (the quotes, see
:mod:`app.research.quote_choice`): the chain from the question's subject to the
answer. A small model's answer sentence cites the passage it took the answer from and
leaves out the link that leads there ("… was Stanley Hall [2]", the journal's
publisher in [1]). A sentence judged against more passages can only gain support, so
its verdict stands for the passages added.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from app.core.models import Citation
from app.research import citations as cit
from app.research.claim_check import ground
from app.research.quote_choice import holds

MAX_ADDED = 2  # passages added to one sentence


def _missing(claim: str, texts: Sequence[str]) -> set[str]:
    grounding = ground(claim, "\n".join(texts))
    return set(grounding.missing_names) | set(grounding.missing_numbers)


def _best(
    claim: str, missing: set[str], held: list[str], sources: Sequence[tuple[int, str]]
) -> tuple[int, str] | None:
    """The source (the first of the best, in the writer's order) that leaves the
    fewest of ``missing`` missing, if it finds one at all."""
    best: tuple[int, str] | None = None
    fewest = len(missing)
    for number, text in sources:
        left = len(_missing(claim, [*held, text]) & missing)
        if left < fewest:
            best, fewest = (number, text), left
    return best


def cite_names(markdown: str, sources: Sequence[tuple[int, str]]) -> tuple[str, int]:
    """``markdown`` with each prose sentence also citing the passages of ``sources``
    (number, text; in the writer's order) its uncited names and numbers come from;
    returns the text and how many citations were added."""
    texts = dict(sources)
    added = 0

    def cite(sentence: cit.Sentence, text: str) -> str:
        nonlocal added
        if text.rstrip().endswith("?"):
            return text
        held = [texts[n] for n in sentence.numbers if n in texts]
        if len(held) < len(
            sentence.numbers
        ):  # it cites a passage the writer was not shown: leave it
            return text
        missing = _missing(sentence.claim, held)
        extra: list[int] = []
        while missing and len(extra) < MAX_ADDED:
            others = [(n, t) for n, t in sources if n not in sentence.numbers and n not in extra]
            found = _best(sentence.claim, missing, held, others)
            if found is None:
                break
            extra.append(found[0])
            held.append(found[1])
            missing = _missing(sentence.claim, held)
        if not extra or (not sentence.numbers and missing):
            return text
        added += len(extra)
        return cit.with_citations(sentence, text, extra)

    return cit.map_sentences(markdown, cite), added


CHAIN_NOTE = "supported (with the passages its answer rests on)"


def cite_chain(
    markdown: str, answer: str, chain: Sequence[int], supported: Collection[str]
) -> tuple[str, list[Citation]]:
    """``markdown`` with each prose sentence that holds ``answer`` and whose claim is in
    ``supported`` (the check's supported sentences) also citing the passages of ``chain``
    it does not cite; returns the text and the citations added (supported, as their
    sentence is)."""
    added: list[Citation] = []
    if not answer or not chain:
        return markdown, added

    def cite(sentence: cit.Sentence, text: str) -> str:
        claim = sentence.claim
        if claim not in supported or not holds(answer, claim):
            return text
        extra = [n for n in chain if n not in sentence.numbers]
        if not extra:
            return text
        added.extend(Citation(n, claim, True, CHAIN_NOTE) for n in extra)
        return cit.with_citations(sentence, text, extra)

    return cit.map_sentences(markdown, cite), added
