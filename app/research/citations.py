"""Citations in a report's Markdown: find ``[n]``, resolve them against the
evidence table, bind uncited sentences to the chunk they repeat, list the
(sentence, number) pairs to check, and flag the sentences found unsupported.

Pure functions on text; the model's check of each cited sentence is
:mod:`app.research.citation_check`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from app.core.models import Citation

# [3], [1, 2], [1;2] — not a Markdown link "[1](...)"
CITE_RE = re.compile(r"\[(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\](?!\()")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-']+")
_STOPWORDS = (
    "a an the and or but of to in on for with by from as at is are was were be been being it "
    "its this that these those which who whom what when where why how not no yes can could may "
    "might will would should do does did has have had than then there their they them he she "
    "his her we you your our i also such into about over under more most other some any all "
    "each "
)
_STOP = frozenset(_STOPWORDS.split())
UNSUPPORTED_MARK = "⚠"


@dataclass(frozen=True)
class Sentence:
    text: str
    numbers: tuple[int, ...]

    @property
    def claim(self) -> str:
        text = " ".join(CITE_RE.sub("", self.text).split())
        return re.sub(r" ([.,;:!?])", r"\1", text)


def cited_numbers(text: str) -> list[int]:
    """Every cited number, in order of first appearance."""
    seen: dict[int, None] = {}
    for match in CITE_RE.finditer(text):
        for part in re.split(r"[,;]", match.group(1)):
            seen.setdefault(int(part), None)
    return list(seen)


def resolve_citations(markdown: str, valid: Iterable[int]) -> tuple[str, int]:
    """Drop citations to numbers not in ``valid``; returns the text and how many were removed."""
    allowed = set(valid)
    removed = 0

    def fix(match: re.Match[str]) -> str:
        nonlocal removed
        numbers = [int(p) for p in re.split(r"[,;]", match.group(1))]
        kept = [n for n in numbers if n in allowed]
        removed += len(numbers) - len(kept)
        return "[" + ", ".join(str(n) for n in kept) + "]" if kept else ""

    text = CITE_RE.sub(fix, markdown)
    if removed:
        text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)
        text = re.sub(r"[ \t]{2,}", " ", text)
    return text, removed


def _is_prose(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(("#", "```", "|", ">"))


_LIST_PREFIX = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def _prose_lines(markdown: str) -> list[tuple[str, bool]]:
    """Each line with whether it is prose (not a heading, table, quote or code)."""
    out = []
    in_code = False
    for line in markdown.splitlines():
        fence_line = line.strip().startswith("```")
        if fence_line:
            in_code = not in_code
        out.append((line, not in_code and not fence_line and _is_prose(line)))
    return out


def _split_line(line: str) -> tuple[str, list[str]]:
    """A prose line as (list prefix, [sentence, space, sentence, space, …])."""
    match = _LIST_PREFIX.match(line)
    prefix = match.group(0) if match else ""
    return prefix, re.split(r"(?<=[.!?])(\s+)", line[len(prefix) :])


def _map_sentences(markdown: str, change: Callable[[Sentence, str], str]) -> str:
    lines = []
    for line, prose in _prose_lines(markdown):
        if prose:
            prefix, parts = _split_line(line)
            for i in range(0, len(parts), 2):
                if parts[i].strip():
                    stripped = parts[i].strip()
                    parts[i] = parts[i].replace(
                        stripped, change(Sentence(stripped, tuple(cited_numbers(stripped))), stripped)
                    )
            line = prefix + "".join(parts)
        lines.append(line)
    return "\n".join(lines)


def sentences(markdown: str) -> list[Sentence]:
    """The prose sentences of a report (headings, tables and code skipped)."""
    out: list[Sentence] = []

    def collect(sentence: Sentence, text: str) -> str:
        out.append(sentence)
        return text

    _map_sentences(markdown, collect)
    return out


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP and len(w) > 2}


def best_source(claim: str, sources: Sequence[tuple[int, str]], threshold: float = 0.6) -> int | None:
    """The source whose text contains most of the claim's content words, if enough do."""
    words = content_words(claim)
    if len(words) < 3:
        return None
    best, best_score = None, 0.0
    for number, text in sources:
        score = len(words & content_words(text)) / len(words)
        if score > best_score:
            best, best_score = number, score
    return best if best_score >= threshold else None


def _insert_before_end(sentence: str, addition: str) -> str:
    if sentence and sentence[-1] in ".!?":
        return f"{sentence[:-1]}{addition}{sentence[-1]}"
    return f"{sentence}{addition}"


def bind_uncited(markdown: str, sources: Sequence[tuple[int, str]], threshold: float = 0.6) -> tuple[str, int]:
    """Cite uncited prose sentences that restate one source (most of their content
    words appear in it); returns the text and how many citations were added."""
    added = 0

    def bind(sentence: Sentence, text: str) -> str:
        nonlocal added
        if sentence.numbers or text.rstrip().endswith("?"):
            return text
        number = best_source(text, sources, threshold)
        if number is None:
            return text
        added += 1
        return _insert_before_end(text, f" [{number}]")

    return _map_sentences(markdown, bind), added


def citation_pairs(markdown: str) -> list[Citation]:
    """One unchecked Citation per distinct (sentence, number) pair, in order."""
    pairs = dict.fromkeys((s.claim, n) for s in sentences(markdown) for n in s.numbers)
    return [Citation(number=n, sentence=claim) for claim, n in pairs]


def flag_unsupported(markdown: str, citations: Sequence[Citation]) -> str:
    """Mark each sentence whose citation was judged unsupported or contradicted."""
    bad: dict[str, list[int]] = {}
    for citation in citations:
        if citation.supported is False:
            bad.setdefault(citation.sentence, []).append(citation.number)
    if not bad:
        return markdown

    def flag(sentence: Sentence, text: str) -> str:
        numbers = [n for n in bad.get(sentence.claim, []) if n in sentence.numbers]
        if not numbers:
            return text
        refs = ", ".join(f"[{n}]" for n in numbers)
        return f"{text} {UNSUPPORTED_MARK} *(not supported by {refs})*"

    return _map_sentences(markdown, flag)
