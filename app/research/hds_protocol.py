"""The Hybrid Deep Searcher text protocol (hds mode).

A reasoning model thinks in ``<think>…</think>``, asks for searches with
``<|begin search queries|> q1; q2 <|end search queries|>``, reads the results
as one query-labelled block appended to a rolling log, and ends with
``\\boxed{answer}`` or ``<answer>…</answer>``. These are the pure parts:
parsing the queries (split, de-duplicate, cap), reading the answer, and
formatting the log: a turn's queries, and the results block, where every hit
is fenced as data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.core.models import Hit
from app.llm.fencing import fence, neutralise

BEGIN_QUERIES = "<|begin search queries|>"
END_QUERIES = "<|end search queries|>"
BEGIN_RESULTS = "<|begin search results|>"
END_RESULTS = "<|end search results|>"

_QUERY_BLOCK = re.compile(
    re.escape(BEGIN_QUERIES) + r"(.*?)(?:" + re.escape(END_QUERIES) + r"|$)", re.DOTALL
)
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_ANSWER_TAG = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL | re.IGNORECASE)
_BOXED = "\\boxed{"
_MAX_QUERY_CHARS = 300


@dataclass(frozen=True)
class QueryCap:
    """Why queries were dropped: ``duplicates`` repeated earlier ones, ``over_cap`` exceeded a limit."""

    queries: tuple[str, ...]
    duplicates: int = 0
    over_cap: int = 0


def split_think(text: str) -> tuple[str, str]:
    """(reasoning inside ``<think>``, the rest)."""
    reasoning = "\n".join(m.group(1).strip() for m in _THINK.finditer(text))
    rest = _THINK.sub(" ", text)
    return reasoning, rest.strip()


def raw_queries(text: str) -> list[str]:
    """Every query inside every ``<|begin search queries|>`` block, split on ``;`` and newlines."""
    queries: list[str] = []
    for block in _QUERY_BLOCK.finditer(text):
        for piece in re.split(r"[;\n]", block.group(1)):
            query = piece.strip().strip("-*•").strip().strip("\"'").strip()
            query = re.sub(r"^\d+[.)]\s+", "", query)
            if query:
                queries.append(query[:_MAX_QUERY_CHARS])
    return queries


_RESULTS_BLOCK = re.compile(
    re.escape(BEGIN_RESULTS) + r".*?(?:" + re.escape(END_RESULTS) + r"|$)", re.DOTALL
)


def strip_protocol(text: str) -> str:
    """The visible text without thinking, query blocks or (made-up) result blocks."""
    _, visible = split_think(text)
    visible = _QUERY_BLOCK.sub(" ", visible)
    visible = _RESULTS_BLOCK.sub(" ", visible)
    return " ".join(visible.split())


def normalise_query(query: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", query.casefold()).split())


def select_queries(
    candidates: Iterable[str], *, seen: Iterable[str] = (), max_parallel: int, remaining_calls: int
) -> QueryCap:
    """De-duplicate (against each other and earlier turns), then cap by both limits."""
    known = {normalise_query(q) for q in seen}
    kept: list[str] = []
    duplicates = over = 0
    limit = max(0, min(max_parallel, remaining_calls))
    for query in candidates:
        key = normalise_query(query)
        if not key or key in known:
            duplicates += 1
            continue
        known.add(key)
        if len(kept) >= limit:
            over += 1
            continue
        kept.append(query)
    return QueryCap(queries=tuple(kept), duplicates=duplicates, over_cap=over)


def _boxed_contents(text: str) -> list[str]:
    """Contents of each ``\\boxed{…}``, with nested braces balanced."""
    found: list[str] = []
    start = text.find(_BOXED)
    while start != -1:
        i = start + len(_BOXED)
        depth = 1
        j = i
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        found.append(text[i : j - 1] if depth == 0 else text[i:])
        start = text.find(_BOXED, j)
    return found


def _clean_answer(answer: str) -> str:
    answer = re.sub(r"\\text\{([^{}]*)\}", r"\1", answer)
    return " ".join(answer.split()).strip()


def extract_answer(text: str) -> str | None:
    """The final answer: the last ``\\boxed{}``, else the last ``<answer>``; None when absent.

    Reasoning inside ``<think>`` is ignored, so a boxed draft there is not an answer.
    """
    _, visible = split_think(text)
    boxed = [b for b in _boxed_contents(visible) if b.strip()]
    if boxed:
        return _clean_answer(boxed[-1])
    tagged = [m.group(1) for m in _ANSWER_TAG.finditer(visible) if m.group(1).strip()]
    if tagged:
        return _clean_answer(tagged[-1])
    return None


def queries_turn(queries: Sequence[str]) -> str:
    """A turn's searches as the log shows them: the protocol block, rebuilt from the
    parsed queries (what the model wrote around them, and any "results" it made up,
    are not kept)."""
    return f"{BEGIN_QUERIES} {'; '.join(neutralise(q) for q in queries)} {END_QUERIES}"


def results_block(
    results: Sequence[tuple[str, Sequence[tuple[int, Hit]]]], *, chars_per_hit: int = 500
) -> str:
    """One block with every query's results, each hit fenced as a document whose id
    is its evidence number ``n`` (cited ``[n]``)."""
    lines = [BEGIN_RESULTS]
    for query, hits in results:
        lines.append(f'Results for "{neutralise(query)}":')
        if not hits:
            lines.append("(nothing found)")
        for number, hit in hits:
            title = hit.chunk.title or hit.chunk.path.rsplit("/", 1)[-1]
            lines.append(
                fence(
                    number, " ".join(hit.chunk.text.split()), max_chars=chars_per_hit, title=title
                )
            )
    lines.append(END_RESULTS)
    return "\n".join(lines)
