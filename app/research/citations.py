"""Citations in a report's Markdown: find ``[n]``, resolve them against the
evidence table, bind uncited sentences to the chunk they repeat, list the
(sentence, number) pairs to check, flag the sentences found unsupported,
count cited and flagged sentences (:func:`sentence_support`), and renumber the
sources in order of first citation (:func:`renumber`).

Pure functions on text; the model's check of each cited sentence is
:mod:`app.research.citation_check`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from app.core.models import Citation, Evidence, SentenceSupport

# [3], [1, 2], [1;2] — not a Markdown link "[1](...)"
_LEADING_CITE = re.compile(
    r"^(\s*(?:[-*]\s+)?)(\[\d{1,4}(?:\s*[,;]\s*\d{1,4})*\])[:.]?\s+(\S.*?)\s*$"
)
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
STOP_WORDS = frozenset(_STOPWORDS.split())  # words that say nothing of a claim's content
UNSUPPORTED_MARK = "⚠"
# the sections the engine appends after the model's text
SOURCES_HEADING = "## Sources"
OPEN_QUESTIONS_HEADING = "## Open questions"
# what flag_unsupported adds after a sentence
_FLAG = re.compile(rf"{UNSUPPORTED_MARK} \*\(not supported by [^)]*\)\*")


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


def map_sentences(markdown: str, change: Callable[[Sentence, str], str]) -> str:
    """``markdown`` with each prose sentence replaced by ``change(sentence, text)``
    (headings, tables and code kept as they are)."""
    lines = []
    for line, prose in _prose_lines(markdown):
        if prose:
            prefix, parts = _split_line(line)
            for i in range(0, len(parts), 2):
                if parts[i].strip():
                    stripped = parts[i].strip()
                    parts[i] = parts[i].replace(
                        stripped,
                        change(Sentence(stripped, tuple(cited_numbers(stripped))), stripped),
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

    map_sentences(markdown, collect)
    return out


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in STOP_WORDS and len(w) > 2}


def _insert_before_end(sentence: str, addition: str) -> str:
    if sentence and sentence[-1] in ".!?":
        return f"{sentence[:-1]}{addition}{sentence[-1]}"
    return f"{sentence}{addition}"


def _coverage(words: set[str], numbers: Iterable[int], vocab: dict[int, set[str]]) -> float:
    covered: set[str] = set()
    for n in numbers:
        covered |= vocab.get(n, set())
    return len(words & covered) / len(words) if words else 0.0


def _completion(
    words: set[str], cited: Sequence[int], vocab: dict[int, set[str]], threshold: float
) -> tuple[int, ...]:
    """The fewest sources (one, else two) that, added to ``cited``, cover ``threshold``
    of ``words``; each must add a word the others lack. Ties go to the source given
    first (the writer's order: the chain first)."""
    others = [n for n in vocab if n not in cited]
    base = set(cited)
    best: tuple[int, ...] = ()
    best_score = 0.0
    for n in others:
        score = _coverage(words, base | {n}, vocab)
        if score > best_score and score > _coverage(words, base, vocab):
            best, best_score = (n,), score
    if best_score >= threshold:
        return best
    for i, a in enumerate(others):
        for b in others[i + 1 :]:
            score = _coverage(words, base | {a, b}, vocab)
            useful = score > max(
                _coverage(words, base | {a}, vocab), _coverage(words, base | {b}, vocab)
            )
            if useful and score >= threshold and score > best_score:
                best, best_score = (a, b), score
    return best if best_score >= threshold else ()


def bind_uncited(
    markdown: str, sources: Sequence[tuple[int, str]], threshold: float = 0.6
) -> tuple[str, int]:
    """Bind each prose sentence to the sources it restates; returns the text and how
    many citations were added.

    A sentence's content words must be covered (``threshold`` of them) by the
    sources it cites. When they are not — it cites nothing, or it joins two links of
    a chain but cites one — the fewest ``sources`` that complete the cover (one,
    else two: a claim drawn from two passages cites both) are cited after it."""
    vocab = {n: content_words(text) for n, text in sources}
    added = 0

    def bind(sentence: Sentence, text: str) -> str:
        nonlocal added
        words = content_words(sentence.claim)
        if len(words) < 3 or text.rstrip().endswith("?"):
            return text
        if sentence.numbers and _coverage(words, sentence.numbers, vocab) >= threshold:
            return text
        extra = _completion(words, sentence.numbers, vocab, threshold)
        if not extra:
            return text
        added += len(extra)
        return with_citations(sentence, text, extra)

    return map_sentences(markdown, bind), added


def with_citations(sentence: Sentence, text: str, extra: Sequence[int]) -> str:
    """``text`` (the sentence as written) citing ``extra`` as well: joined to its last
    citation ("[2]" -> "[2, 5]"), else before its full stop."""
    if sentence.numbers:
        last = list(CITE_RE.finditer(text))[-1]
        inner = last.group(1) + "".join(f", {n}" for n in extra)
        return f"{text[: last.start()]}[{inner}]{text[last.end() :]}"
    return _insert_before_end(text, " [" + ", ".join(str(n) for n in extra) + "]")


def citation_pairs(markdown: str) -> list[Citation]:
    """One unchecked Citation per distinct (sentence, number) pair, in order."""
    pairs = dict.fromkeys((s.claim, n) for s in sentences(markdown) for n in s.numbers)
    return [Citation(number=n, sentence=claim) for claim, n in pairs]


def flag_unsupported(markdown: str, citations: Sequence[Citation]) -> str:
    """Mark each sentence whose citation was judged unsupported or contradicted, with
    the check's reason where it gave one: "⚠ *(not supported by [3] — “1899” is not in
    its source)*"."""
    bad: dict[str, list[Citation]] = {}
    for citation in citations:
        if citation.supported is False:
            bad.setdefault(citation.sentence, []).append(citation)
    if not bad:
        return markdown

    def flag(sentence: Sentence, text: str) -> str:
        flagged = [c for c in bad.get(sentence.claim, []) if c.number in sentence.numbers]
        if not flagged:
            return text
        refs = ", ".join(f"[{n}]" for n in dict.fromkeys(c.number for c in flagged))
        reason = next((_reason(c.note) for c in flagged if _reason(c.note)), "")
        # " — ", not ":": "[3]:" would read as a Markdown link definition, not a citation
        return f"{text} {UNSUPPORTED_MARK} *(not supported by {refs}{' — ' + reason if reason else ''})*"

    return map_sentences(markdown, flag)


# a verdict that is a word, not a reason
_PLAIN_VERDICTS = frozenset({"", "supported", "unsupported", "contradicted", "not checked"})


def _reason(note: str) -> str:
    """A check's note as the reason in a flag (no brackets or parentheses: they would end it)."""
    if note in _PLAIN_VERDICTS:
        return ""
    return " ".join(re.sub(r"[()\[\]*]", "", note).split())


def without_flagged(markdown: str) -> str:
    """The report without its flagged sentences (what a short answer may rest on)."""
    kept: list[str] = []
    for line, prose in _prose_lines(markdown):
        if not prose or UNSUPPORTED_MARK not in line:
            kept.append(line)
            continue
        prefix, parts = _split_line(line)
        pieces = [p for p in parts[::2] if p.strip()]
        out = []
        for i, piece in enumerate(pieces):
            following = pieces[i + 1] if i + 1 < len(pieces) else ""
            flagged = _FLAG.search(piece) or following.startswith(UNSUPPORTED_MARK)
            if not flagged and not piece.startswith(UNSUPPORTED_MARK):
                out.append(piece)
        if out:
            kept.append(prefix + " ".join(out))
    return "\n".join(kept)


# the flag as it reads once rendered (its Markdown emphasis gone)
_FLAG_SHOWN = re.compile(rf"{UNSUPPORTED_MARK} \(not supported by ([^)]*)\)")


def flagged_spans(text: str) -> list[tuple[int, int, frozenset[int]]]:
    """Where the flagged sentences of a rendered paragraph are: (start, end, numbers) for
    each flag :func:`flag_unsupported` wrote, from the start of the sentence before it
    to the flag's end, with the numbers it names. A citation of one of those numbers in
    that span is the one found unsupported; the same number elsewhere (a supported
    sentence, a quote, the sources list) is not."""
    spans: list[tuple[int, int, frozenset[int]]] = []
    for match in _FLAG_SHOWN.finditer(text):
        head = text[: match.start()].rstrip()
        body = head[:-1] if head.endswith((".", "!", "?")) else head
        starts = [
            0,
            *(end.end() for end in _SENTENCE_END.finditer(body)),
            *(end for _, end, _ in spans),
        ]
        spans.append((max(starts), match.end(), frozenset(cited_numbers(match.group(1)))))
    return spans


def split_report(markdown: str) -> tuple[str, str]:
    """(the report's own text, the engine's sections from its last "## Sources" on).

    Only a heading outside code counts; without one, everything is the text."""
    at = -1
    pos = 0
    for line, _prose, in_code in _lines(markdown):
        if not in_code and line.strip() == SOURCES_HEADING:
            at = pos
        pos += len(line)
    if at < 0:
        return markdown, ""
    return markdown[:at], markdown[at:]


def _without_flags(text: str) -> str:
    return " ".join(_FLAG.sub(" ", text).split())


def sentence_support(
    markdown: str, citations: Sequence[Citation] = (), checked_by: str = ""
) -> SentenceSupport:
    """How many of the report's prose sentences cite a source, and how many are flagged;
    ``checked_by``: what checked them (empty: nothing independent of the writer).

    Only the report's own text counts (not the engine's Sources and Open questions;
    headings, tables, quotes and code are not sentences). A sentence is flagged
    when it carries the ⚠ mark (:func:`flag_unsupported`), or when ``citations``
    (the check's results) judge one of its citations unsupported."""
    bad = {(c.sentence, c.number) for c in citations if c.supported is False}
    body, _ = split_report(markdown)
    total = cited = flagged = 0
    last_flagged = True  # a flag with no sentence before it counts for nothing
    for sentence in sentences(body):
        # a flag follows its sentence's full stop, so it may open the next piece
        if sentence.text.startswith(UNSUPPORTED_MARK) and not last_flagged:
            flagged += 1
            last_flagged = True
        core = _without_flags(sentence.text)
        if not core:
            continue
        numbers = cited_numbers(core)
        total += 1
        cited += bool(numbers)
        claim = Sentence(core, tuple(numbers)).claim
        trailing = UNSUPPORTED_MARK in sentence.text and not sentence.text.startswith(
            UNSUPPORTED_MARK
        )
        last_flagged = trailing or any((claim, n) in bad for n in numbers)
        flagged += last_flagged
    return SentenceSupport(sentences=total, cited=cited, flagged=flagged, checked_by=checked_by)


def support_headline(support: SentenceSupport) -> str:
    """The report's header: "7 of 9 sentences supported, 2 flagged (checked by word and
    meaning overlap)" once an independent check ran; otherwise the cited sentences are
    counted and the report says it is not verified ("5 of 9 sentences cited, not
    verified"), never "0 flagged"."""
    noun = "sentence" if support.sentences == 1 else "sentences"
    if not support.checked_by:
        return f"{support.cited} of {support.sentences} {noun} cited, not verified"
    parts = [
        f"{support.supported} of {support.sentences} {noun} supported",
        f"{support.flagged} flagged",
    ]
    uncited = support.sentences - support.cited
    if uncited:
        parts.append(f"{uncited} {'cites' if uncited == 1 else 'cite'} no source")
    return ", ".join(parts) + f" (checked by {support.checked_by})"


def mark_uncited(markdown: str, mark: str) -> str:
    """The report with ``mark`` after each prose sentence of its own text that cites
    nothing (the engine's sections are left as they are)."""
    body, tail = split_report(markdown)

    def change(sentence: Sentence, text: str) -> str:
        core = _without_flags(text)
        return text if not core or cited_numbers(core) else f"{text} {mark}"

    marked = map_sentences(body, change)
    return marked.rstrip("\n") + body[len(body.rstrip("\n")) :] + tail


def renumber(markdown: str, order: Sequence[int]) -> str:
    """Every ``[n]`` outside code rewritten by ``order`` (old numbers, in their new
    order: ``order[0]`` becomes 1); a number not in ``order`` is left as it is."""
    new = {old: i for i, old in enumerate(order, start=1)}

    def fix(match: re.Match[str]) -> str:
        numbers = [int(p) for p in re.split(r"[,;]", match.group(1))]
        return "[" + ", ".join(str(new.get(n, n)) for n in numbers) + "]"

    return "".join(
        line if in_code else CITE_RE.sub(fix, line) for line, _prose, in_code in _lines(markdown)
    )


def _lines(markdown: str) -> list[tuple[str, bool, bool]]:
    """Each line (with its ending), whether it is prose, whether it is code or a fence."""
    out = []
    in_code = False
    for line in markdown.splitlines(keepends=True):
        fence_line = line.strip().startswith("```")
        if fence_line:
            in_code = not in_code
        out.append(
            (line, not in_code and not fence_line and _is_prose(line), in_code or fence_line)
        )
    return out


def first_cited(markdown: str, numbers: Iterable[int]) -> list[int]:
    """Those of ``numbers`` (the evidence) that the report's own text cites (outside
    code), in order of first citation."""
    known = set(numbers)
    body, _ = split_report(markdown)
    return [n for n in _cited_outside_code(body) if n in known]


def _cited_outside_code(markdown: str) -> list[int]:
    return cited_numbers("".join(line for line, _prose, in_code in _lines(markdown) if not in_code))


def sources_section(cited: Sequence[Evidence]) -> str:
    """The Sources list of a report: the cited evidence, once each, in the order given."""
    if not cited:
        return f"{SOURCES_HEADING}\n\nNo source is cited."
    lines = [SOURCES_HEADING, ""]
    for e in cited:
        title = f"{e.title} — " if e.title else ""
        lines.append(f"- [{e.number}] {title}{e.location}")
    return "\n".join(lines)


def citations_to_the_end(text: str) -> str:
    """``text`` with a line's leading citation moved to the end of its sentence ("[2] Hall
    was its first president." → "Hall was its first president [2]."): small models
    number their lines by the passages' ids."""
    lines = []
    for line in text.splitlines():
        match = _LEADING_CITE.match(line)
        if match is None or CITE_RE.search(match.group(3)):
            lines.append(line)
            continue
        lead, cite, rest = match.groups()
        stop = rest[-1] if rest[-1] in ".!?" else "."
        lines.append(f"{lead}{rest.rstrip('.!?').rstrip()} {cite}{stop}")
    return "\n".join(lines)
