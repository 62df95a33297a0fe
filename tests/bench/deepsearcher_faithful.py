"""The DeepSearcher-faithful deep loop: the benchmark's yardstick, not a product mode.

``bench_musique.py --modes deep-faithful`` runs it beside Fathom's deep mode
(:mod:`app.research.modes.deep`) to measure what deep saves. It reuses deep's
decomposition, routing, round planning and reflection prompt, and differs as
DeepSearcher does:

* one YES/NO relevance call per chunk with hard deletion; the call lists the
  searched query and the round's queries, not the question; every
  (query, chunk) pair is judged, with no memory of earlier verdicts;
* no forced search of the original question, no bridge hop;
* DeepSearcher's reflection: new queries or an empty list, over every chunk
  found, whole; the run stops only when there are none;
* a report that reads every accepted chunk.

Run it through the engine: ``engine.run(question, mode=MODE, runner=run_faithful)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from app.core.events import ChunkJudged
from app.core.models import Hit, Report, SubQuery
from app.research import prompts
from app.research.budget import BudgetHit
from app.research.context import RunContext
from app.research.modes.deep import (
    MAX_GAP_QUERIES,
    decompose,
    plan_round,
    reflect_messages,
    reflected,
)
from app.research.query_hygiene import clean_queries
from app.research.snippets import SourceView

MODE = "deep-faithful"  # the name its runs are recorded under
FAITHFUL_CHARS = 2000  # DeepSearcher shows whole chunks to its per-chunk judge and reflection
# DeepSearcher's summary reads every accepted chunk (here within the same prompt_chars share)
FAITHFUL_REPORT_VIEW = SourceView(max_sources=1000, chars=FAITHFUL_CHARS)

JUDGE_CHUNK_SCHEMA = prompts.object_schema("judge_chunk", {"relevant": {"type": "boolean"}})
FAITHFUL_REFLECT_SCHEMA = prompts.object_schema(
    "reflect", {"gap_queries": prompts.string_list(MAX_GAP_QUERIES)}
)
FAITHFUL_REFLECT_TASK = (
    "Decide whether more searches are needed to answer the question, given the queries already "
    f"searched and the documents found. If so, write at most {MAX_GAP_QUERIES} new search queries; "
    "if not, return an empty list."
)


class PartialJudgement(Exception):
    """Some judgements finished before one failed: keep those, then re-raise ``error``."""

    def __init__(self, kept: list[Hit], error: BaseException) -> None:
        super().__init__(str(error))
        self.kept = kept
        self.error = error


async def judge_each_chunk(
    ctx: RunContext, subquery: SubQuery, hits: Sequence[Hit], round_queries: Sequence[str]
) -> list[Hit]:
    """One YES/NO call per chunk, rejected chunks dropped. As in DeepSearcher, the
    call lists the searched query followed by all of the round's queries (not the
    original question)."""
    listed = "\n".join(f"- {prompts.neutralise(q)}" for q in [subquery.text, *round_queries])

    async def one(hit: Hit) -> bool:
        messages = [
            prompts.system(
                "Decide whether the document helps answer any of the query questions.",
                prompts.DATA_RULE,
                "Reply with relevant true or false.",
            ),
            prompts.user(
                f"Query questions:\n{listed}",
                prompts.fence(1, hit.chunk.text, max_chars=FAITHFUL_CHARS, title=hit.chunk.title),
            ),
        ]
        value = await ctx.call_structured(
            subquery.node_id,
            messages,
            JUDGE_CHUNK_SCHEMA,
            default={"relevant": False},
            max_tokens=16,
        )
        relevant = bool(value.get("relevant")) if isinstance(value, dict) else False
        ctx.emit(
            ChunkJudged(
                run_id=ctx.run_id,
                node_id=subquery.node_id,
                chunk_id=hit.chunk.chunk_id,
                relevant=relevant,
                score=1.0 if relevant else 0.0,
            )
        )
        return relevant

    outcomes = await asyncio.gather(*(one(hit) for hit in hits), return_exceptions=True)
    kept = [hit for hit, ok in zip(hits, outcomes, strict=True) if ok is True]
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    if errors:
        raise PartialJudgement(kept, errors[0])
    return kept


async def judge_round(
    ctx: RunContext, subqueries: Sequence[SubQuery], results: Sequence[list[Hit]]
) -> None:
    """Judge every (sub-query, chunk) pair concurrently (within the call limit) and add
    the relevant chunks to the evidence table in sub-query order, even when one call fails."""
    round_queries = [sq.text for sq in subqueries]
    outcomes = await asyncio.gather(
        *(
            judge_each_chunk(ctx, sq, list(hits), round_queries)
            for sq, hits in zip(subqueries, results, strict=True)
        ),
        return_exceptions=True,
    )
    error: BaseException | None = None
    for sq, outcome in zip(subqueries, outcomes, strict=True):
        if isinstance(outcome, PartialJudgement):
            error = error or outcome.error
            outcome = outcome.kept
        if isinstance(outcome, BaseException):
            error = error or outcome
            continue
        for hit in outcome:
            ctx.add_evidence(hit, sq.text)
    if error is not None:
        raise error


async def reflect(
    ctx: RunContext, round_node: str, searched: Sequence[str], seen: set[str]
) -> tuple[bool, list[str]]:
    """DeepSearcher's reflection over every chunk found, whole: new queries, or an
    empty list when no more research is needed (the only way it stops)."""
    numbered = ctx.evidence.chunks()
    per = max(150, min(FAITHFUL_CHARS, ctx.prompt_chars // max(1, len(numbered))))
    items = [(n, chunk.title, chunk.text) for n, chunk in numbered]
    docs = prompts.fence_many(items, max_chars=per, total_chars=ctx.prompt_chars)
    default: dict[str, Any] = {"gap_queries": []}
    messages = reflect_messages(ctx, searched, docs, FAITHFUL_REFLECT_TASK)
    value = await ctx.call_structured(
        round_node, messages, FAITHFUL_REFLECT_SCHEMA, default=default
    )
    if not isinstance(value, dict):
        value = default
    proposed = value.get("gap_queries", [])
    gaps = clean_queries(proposed if isinstance(proposed, list) else [], seen, MAX_GAP_QUERIES)
    return reflected(ctx, round_node, value, gaps, not gaps)


async def run_faithful(ctx: RunContext) -> Report:
    """The loop: decompose → (route, search, judge each chunk, reflect) per round → report."""
    ctx.source_view = FAITHFUL_REPORT_VIEW
    seen: set[str] = set()
    searched: list[str] = []
    queries: list[str] = []
    origin = "decompose"
    try:
        queries = await decompose(ctx, seen, keep_original=False)
        while queries:
            round_node, _, subqueries = await plan_round(ctx, queries, origin)
            results = await ctx.search(subqueries)
            searched += queries
            queries = []
            await judge_round(ctx, subqueries, results)
            ctx.check_budget()
            # gap queries need a round to run in: DeepSearcher does not reflect after its last iteration
            ctx.tracker.check_round_left()
            done, gaps = await reflect(ctx, round_node, searched, seen)
            if done:
                ctx.stop("completed")
                break
            queries, origin = ctx.cap_subqueries(gaps), "gap"
    except BudgetHit as hit:
        ctx.stop(hit.budget)
        ctx.open_questions += [f"Not searched: {q}" for q in queries]
    return await ctx.write_report()
