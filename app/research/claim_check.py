"""The independent claim check: does a report sentence say what the passages it cites
say? Judged without the model that wrote it.

A small model passes nearly everything it is asked to grade, its own sentences above
all, so the verdict rests on evidence that does not depend on it:

- **names and numbers**: every number of the claim, and every name (a capitalised word
  or run of them, an acronym, a word with a capital or a digit inside), must be in the
  passages it cites — a swapped name or figure is the commonest wrong claim, and the
  easiest to show ("“1899” is not in its source");
- **words**: most of the claim's other content words (lightly stemmed) must be there;
- **meaning**: the claim must be close, in the embedding space of the library's own
  embedding model, to a sentence (or two running sentences) of a cited passage.

A sentence citing several passages is judged against them together (a claim drawn
from two passages cites both). The research model's own judgement
(:mod:`app.research.citation_check`) is one more vote where the model is up to it:
it can flag a sentence the signals above only half support, never pass one they reject.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.core.models import Citation
from app.research.citations import STOP_WORDS

# what the report's header says checked it
BY_WORDS = "word overlap"
BY_WORDS_AND_MEANING = "word and meaning overlap"
AND_MODEL = " and the research model"

MIN_COVERAGE = 0.5  # of the claim's other content words found in its passages
MIN_SIMILARITY = 0.5  # cosine of the claim to its nearest passage sentence (MiniLM)
CLOSE_SIMILARITY = (
    0.75  # this close, a claim in other words than its passage's (names and numbers kept) passes
)
# a claim the signals support only this weakly can be flagged by the research model's vote
FIRM_COVERAGE = 0.8
FIRM_SIMILARITY = 0.7
MAX_WINDOWS = 40  # passage sentences (and pairs of them) embedded per claim

Embed = Callable[[list[str]], Awaitable[np.ndarray]]

_TOKEN = re.compile(r"[^\W_](?:[\w'’.\-]*[^\W_])?")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NUMERIC = re.compile(r"(\d+(?:[.,]\d+)*)(?:st|nd|rd|th|s)?$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'“(]?[A-Z0-9])|\n+")
_CITATION = re.compile(r"\[\d{1,4}(?:\s*[,;]\s*\d{1,4})*\]")


def _word_list(*lines: str) -> list[str]:
    return " ".join(lines).split()


def _word_set(*lines: str) -> frozenset[str]:
    return frozenset(_word_list(*lines))


# the citations' stop words, and more of the same kind: what a report says of its sources
# and its connectives are not claims about the world
_STOP = STOP_WORDS | _word_set(
    "after again against although because before between both done down during either few having here",
    "hers him just many me much my neither nor off once only out own same shall since so through too",
    "until up upon us very while whose within without though",
    "according source sources document documents passage passages text states stated says said mentions",
    "mentioned notes noted indicates additionally furthermore moreover however therefore thus overall",
)
# sentence openers that are capitalised only because they open the sentence
_OPENERS = _STOP | _word_set(
    "finally based first second third next later today another one two three several various instead",
    "indeed meanwhile similarly likewise originally currently recently",
)
# names may join their capitalised words with these ("University of Oxford")
_JOINERS = _word_set("of the de da del di du van von der la le y")
# a name does not run across these (a list of names is several names)
_NAME_BREAK = re.compile(r"[,;:()\[\]\"“”]|\s[-–—]\s|\s(?:and|or|&)\s")
_COUNTING = _word_list(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen",
    "seventeen eighteen nineteen twenty",
)
_ORDINALS = _word_list("first second third fourth fifth sixth seventh eighth ninth tenth")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_COUNTING)} | {
    w: str(i) for i, w in enumerate(_ORDINALS, 1)
}
_SUFFIXES = ("ings", "ing", "edly", "ed", "ies", "es", "s", "ly")


@dataclass(frozen=True)
class Grounding:
    """What the words of a claim tell of its support in its passages."""

    missing_numbers: tuple[str, ...] = ()
    missing_names: tuple[str, ...] = ()
    coverage: float = 1.0  # share of the claim's other content words in the passages


@dataclass(frozen=True)
class ClaimVerdict:
    """The independent check's verdict on one sentence; ``reason`` says why it is flagged."""

    supported: bool
    reason: str
    grounding: Grounding
    similarity: float | None = None  # None: not measured (no embedding model)

    @property
    def firm(self) -> bool:
        """Supported beyond doubt by the signals (the research model's vote cannot flag it)."""
        close = self.similarity is None or self.similarity >= FIRM_SIMILARITY
        return self.supported and self.grounding.coverage >= FIRM_COVERAGE and close


def stem(word: str) -> str:
    word = word.lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    word = word.strip("'.-")
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _number(token: str) -> str | None:
    """The number a token stands for ("1,000" → "1000", "1980s" → "1980", "third" → "3"), or None."""
    lowered = token.lower()
    if lowered in _NUMBER_WORDS:
        return _NUMBER_WORDS[lowered]
    match = _NUMERIC.match(lowered)
    if match is None:
        return None
    value = match.group(1).replace(",", "")
    if "." in value:
        value = value.rstrip("0").rstrip(".") or "0"
    return value


def _vocabulary(text: str) -> tuple[set[str], set[str], set[str], str]:
    """(the lower-cased words, the stems, the numbers, the words in order one space apart
    with a space at each end) of a passage; a hyphenated or dotted token also counts by
    its parts."""
    lowered: set[str] = set()
    numbers: set[str] = set()
    tokens = _TOKEN.findall(text)
    for token in tokens:
        lowered.add(token.lower().replace("’", "'"))
        for part in re.split(r"[.\-']", token):
            if part:
                lowered.add(part.lower())
        number = _number(token)
        if number is not None:
            numbers.add(number)
        numbers.update(n.replace(",", "") for n in _NUMBER.findall(token))
    sequence = " " + " ".join(_plain(t) for t in tokens) + " "
    return lowered, {stem(w) for w in lowered}, numbers, sequence


def _is_name(token: str, first: bool, following: str | None, known: set[str]) -> bool:
    """Whether ``token`` is (part of) a name; ``known``: the passages' lower-cased words."""
    if any(c.isupper() for c in token[1:]) or (
        any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
    ):
        return _number(token) is None  # "IVF_FLAT", "Node.js", "SQ8"; not "1980s"
    if not token[:1].isupper():
        return False
    if first:  # capitalised because it opens the sentence: a name if one goes on after it, or if
        # the passages do not hold the word at all ("Walden is a community…"); not an opener or an adverb
        if token.lower() in _OPENERS or token.lower().endswith("ly"):
            return False
        return (following is not None and following[:1].isupper()) or token.lower() not in known
    return token.lower() not in _STOP


def _names(
    tokens: list[str], known: set[str], *, opens: bool = True, opener_names: bool = True
) -> list[list[str]]:
    """The names of a piece of a claim: runs of name-like tokens, joined by "of", "de", …
    inside a run; ``opens``: the piece opens the sentence (its first word is capitalised
    for that alone); ``opener_names`` False: that first word is never a name unless
    written like one inside ("IVF_FLAT")."""
    spans: list[list[str]] = []
    current: list[str] = []
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        joins = (
            bool(current)
            and token.lower() in _JOINERS
            and following is not None
            and _is_name(following, False, None, known)
        )
        opener = opens and i == 0
        if opener and not opener_names:
            name = any(c.isupper() for c in token[1:]) and _number(token) is None
        else:
            name = _is_name(token, opener, following, known)
        if name and current and _acronym(token) != _acronym(current[-1]):
            spans.append(current)  # an acronym is a name of its own: "EP" and "Maiden Japan"
            current = []
        if joins or name:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    if current:
        spans.append(current)
    return spans


def _acronym(token: str) -> bool:
    return len(token) >= 2 and token.isupper()


def fold(text: str) -> str:
    """``text`` without accents ("Aschenbrödel" → "Aschenbrodel"): a name is the same name
    however a writer spells its accents."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def ground(claim: str, passages: str, *, lone_opener: bool = True) -> Grounding:
    """How far the words of ``claim`` (a report sentence, citations removed) are in
    ``passages``; ``lone_opener`` False: its capitalised first word ("List …", "Compare
    Milvus …": a question's verb) is not taken for a name."""
    claim, passages = fold(claim), fold(passages)
    tokens = _TOKEN.findall(_CITATION.sub(" ", claim))
    lowered, stems, numbers, sequence = _vocabulary(passages)
    missing_numbers = []
    for token in tokens:
        number = _number(token)
        if number is not None and token.lower() not in _NUMBER_WORDS and number not in numbers:
            missing_numbers.append(token)
    missing_names = []
    named: set[str] = set()
    spans = [
        span
        for at, part in enumerate(_NAME_BREAK.split(_CITATION.sub(" ", claim)))
        for span in _names(_TOKEN.findall(part), lowered, opens=at == 0, opener_names=lone_opener)
    ]
    for span in spans:
        named.update(t.lower() for t in span)
        core = [t for t in span if t.lower() not in _JOINERS and _number(t) is None]
        if any(_absent(t, lowered, stems) for t in core) or not _in_sequence(core, sequence):
            missing_names.append(" ".join(span))
    content = {
        stem(t)
        for t in tokens
        if t.lower() not in _STOP and len(t) > 2 and t.lower() not in named and _number(t) is None
    }
    found = sum(1 for s in content if s in stems)
    return Grounding(
        missing_numbers=tuple(dict.fromkeys(missing_numbers)),
        missing_names=tuple(dict.fromkeys(missing_names)),
        coverage=found / len(content) if content else 1.0,
    )


def _plain(token: str) -> str:
    word = token.lower().replace("’", "'")
    return word[:-2] if word.endswith("'s") else word


def _in_sequence(core: list[str], sequence: str) -> bool:
    """Whether a name of several words is in the passages as one (its words in a row,
    "of"/"the" and the like between them allowed): "Maiden Japan", not "Iron Maiden …
    Japan"."""
    if len(core) < 2:
        return True
    words = [re.escape(_plain(t)) for t in core]
    joiners = "|".join(re.escape(j) for j in sorted(_JOINERS))
    between = r"(?: (?:" + joiners + r"))* "
    return re.search(" " + between.join(words) + " ", sequence) is not None


def _absent(token: str, lowered: set[str], stems: set[str]) -> bool:
    word = token.lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if word in lowered or stem(word) in stems:
        return False
    parts = [p for p in re.split(r"[.\-']", word) if p]
    return not parts or any(p not in lowered for p in parts)


def passage_windows(texts: Sequence[str], limit: int = MAX_WINDOWS) -> list[str]:
    """The sentences of the passages, and each two running sentences (a claim may join
    them), at most ``limit``."""
    windows: list[str] = []
    for text in texts:
        sentences = [" ".join(s.split()) for s in _SENTENCE.split(text) if len(s.split()) >= 3]
        windows.extend(sentences)
        windows.extend(f"{a} {b}" for a, b in itertools.pairwise(sentences))
    return list(dict.fromkeys(windows))[:limit] or [" ".join(" ".join(texts).split())[:1000]]


_BRACKETS = re.compile(r"[()\[\]]")


def _quoted(items: Sequence[str]) -> str:
    shown = ["“" + _BRACKETS.sub("", item) + "”" for item in items[:3]]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def verdict(
    claim: str, numbers: Sequence[int], passages: Sequence[str], similarity: float | None
) -> ClaimVerdict:
    """The verdict on ``claim`` citing ``numbers`` whose texts are ``passages``."""
    grounding = ground(claim, "\n".join(passages))
    where = "its source" if len(numbers) == 1 else "its sources"
    missing = grounding.missing_numbers or grounding.missing_names
    if missing:
        reason = f"{_quoted(missing)} {'is' if len(missing) == 1 else 'are'} not in {where}"
    elif grounding.coverage < MIN_COVERAGE and (
        similarity is None or similarity < CLOSE_SIMILARITY
    ):
        reason = f"most of its words are not in {where}"
    elif similarity is not None and similarity < MIN_SIMILARITY:
        reason = f"{where} {'says' if len(numbers) == 1 else 'say'} something else"
    else:
        return ClaimVerdict(True, "", grounding, similarity)
    return ClaimVerdict(False, reason, grounding, similarity)


async def similarities(
    claims: Sequence[str], passages: Sequence[Sequence[str]], embed: Embed
) -> list[float]:
    """For each claim, the cosine to the nearest of its passages' sentences (one embedding call)."""
    windows = [passage_windows(texts) for texts in passages]
    flat = [*claims, *(w for ws in windows for w in ws)]
    vectors = np.asarray(await embed(list(flat)), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    out: list[float] = []
    at = len(claims)
    for i, ws in enumerate(windows):
        block = vectors[at : at + len(ws)]
        at += len(ws)
        out.append(float(np.max(block @ vectors[i])) if len(block) else 0.0)
    return out


@dataclass(frozen=True)
class ClaimCheck:
    """The independent check of a report's cited sentences: each citation with its
    sentence's verdict, and what checked them (for the report's header)."""

    citations: tuple[Citation, ...]
    verdicts: Mapping[str, ClaimVerdict]  # by sentence (claim)
    checked_by: str


async def check_claims(
    pairs: Sequence[Citation], source_text: Callable[[int], str], embed: Embed | None
) -> ClaimCheck:
    """Judge every cited sentence of ``pairs`` (one Citation per sentence and number)
    against the passages it cites, together; ``embed`` the library's embedding model
    (None, or failing: words only)."""
    by_claim: dict[str, list[int]] = {}
    for pair in pairs:
        by_claim.setdefault(pair.sentence, []).append(pair.number)
    claims = list(by_claim)
    texts = [[source_text(n) for n in by_claim[c]] for c in claims]
    near: list[float | None] = [None] * len(claims)
    checked_by = BY_WORDS
    if embed is not None and claims:
        try:
            near = list(await similarities(claims, texts, embed))
            checked_by = BY_WORDS_AND_MEANING
        except Exception:  # an embedding server gone away: the words still count
            near = [None] * len(claims)
    verdicts = {
        c: verdict(c, by_claim[c], t, s) for c, t, s in zip(claims, texts, near, strict=True)
    }
    out = tuple(
        Citation(
            p.number,
            p.sentence,
            verdicts[p.sentence].supported,
            verdicts[p.sentence].reason or "supported",
        )
        for p in pairs
    )
    return ClaimCheck(citations=out, verdicts=verdicts, checked_by=checked_by)


def with_model_vote(check: ClaimCheck, votes: Sequence[Citation]) -> ClaimCheck:
    """The research model's verdicts (:func:`app.research.citation_check.check_citations`)
    as one more vote: a sentence the independent check supports only weakly is flagged
    when the model finds its source does not say it; a firm one stays supported, and a
    rejected one stays flagged, whatever the model says."""
    rejected = {(v.sentence, v.number) for v in votes if v.supported is False}
    if not votes:
        return check
    out = []
    for citation in check.citations:
        judged = check.verdicts[citation.sentence]
        if (
            judged.supported
            and not judged.firm
            and (citation.sentence, citation.number) in rejected
        ):
            note = "the research model finds its source does not say this"
            out.append(Citation(citation.number, citation.sentence, False, note))
        else:
            out.append(citation)
    return ClaimCheck(
        citations=tuple(out), verdicts=check.verdicts, checked_by=check.checked_by + AND_MODEL
    )
