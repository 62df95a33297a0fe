"""deep: DeepSearcher's loop, made cheaper and more faithful.

decompose the question into sub-queries (structured output; the original
question is always one of the searches) → route them to collections by
description (only when there are several) → search all sub-queries of a round
in one batched hybrid call → judge the hits with ONE call per sub-query (ranked;
when the model rejects everything the top hits are kept) → bridge hop: follow
the names in the round's best new evidence with rule-written queries, searched
in one batched call and judged in ONE call (``options.bridge_queries``,
on by default) → reflect: stop, or
up to 3 new gap queries that are not repeats → repeat until done or a budget
runs out → write the cited report. The judge, the reflection and the report
writer see snippets (:mod:`app.research.snippets`), not whole passages.

It does not reflect after the last round the budget allows (its gap queries
could never run), as in DeepSearcher. Routing is :mod:`app.research.routing`,
query de-duplication :mod:`app.research.query_hygiene`. The benchmark's
DeepSearcher-faithful variant (``tests/bench/deepsearcher_faithful.py``) reuses
these steps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from app.core.events import ChunkJudged, Reflected, SubQueryOrigin
from app.core.models import Chunk, Hit, Report, SubQuery
from app.llm.base import Message
from app.research import phases, prompts
from app.research.bridging import bridge_queries
from app.research.budget import BudgetHit
from app.research.context import RunContext
from app.research.query_hygiene import clean_queries, normalise_query
from app.research.relevance import emit_judgements, ranked_picks
from app.research.routing import route
from app.research.snippets import SourceView, evidence_excerpts, focused

MAX_GAP_QUERIES = 3
BRIDGE_SOURCES = 2  # bridge queries follow the names in this many of a round's best new chunks
# a bridge query is narrow (the question's missing words plus one name): over 40 MuSiQue
# questions 27 of the 34 new gold paragraphs it found were in its top 3, so it asks for 3
BRIDGE_TOP_K = 3
KEEP_WHEN_ALL_REJECTED = 2
# Prompt tokens are the cost of a local run (a laptop CPU reads them slowly), so deep
# shows snippets, as a search engine does: the judge sees each passage's title and
# its sentences nearest the queries; the reflection and the report writer see such
# snippets of the evidence, spread over the sub-queries that found it.
JUDGE_CHARS = 120
REFLECT_VIEW = SourceView(max_sources=6, chars=120, focus=True)
REPORT_VIEW = SourceView(max_sources=6, chars=240, focus=True)


# -- schemas (the title names the task) ----------------------------------------


def decompose_schema(max_items: int) -> dict[str, Any]:
    return prompts.object_schema(
        "decompose", {"sub_queries": prompts.string_list(max(1, max_items), min_items=1)}
    )


def judge_schema(max_items: int) -> dict[str, Any]:
    return prompts.object_schema("judge", {"relevant": prompts.int_list(max_items)})


REFLECT_SCHEMA = prompts.object_schema(
    "reflect",
    {
        "done": {"type": "boolean"},
        "summary": {"type": "string", "maxLength": 400},
        "gap_queries": prompts.string_list(MAX_GAP_QUERIES),
    },
)

# -- steps ----------------------------------------------------------------------


async def decompose(ctx: RunContext, seen: set[str], *, keep_original: bool = True) -> list[str]:
    """The first round's queries: the question itself (when ``keep_original``) plus sub-queries."""
    cap = max(1, ctx.budget.max_subqueries)
    if cap == 1 and keep_original:  # only the question itself fits: no call needed
        return clean_queries([*ctx.follow_up_queries(1), ctx.question], seen, 1)
    rule, earlier_answers = ctx.earlier_prompt()  # a follow-up: the earlier answers, fenced
    messages = [
        prompts.system(
            "You plan searches over a private document library.",
            f"Break the user's question into at most {cap} short, self-contained search queries that "
            "together cover everything the question asks. Use the question's own subject and terms. "
            "Do not answer the question.",
            prompts.DATA_RULE if earlier_answers else "",
            rule,
        ),
        prompts.user(earlier_answers, prompts.question_block(ctx.question)),
    ]
    ctx.events.phase(phases.DECOMPOSE, phases.splitting(cap))
    value = await ctx.call_structured(
        "root", messages, decompose_schema(cap), default={"sub_queries": []}
    )
    proposed = value.get("sub_queries", []) if isinstance(value, dict) else []
    proposed = proposed if isinstance(proposed, list) else []
    first = [ctx.question, *ctx.follow_up_queries()] if keep_original else []
    queries = clean_queries([*first, *proposed], seen, cap)
    return queries or clean_queries([*ctx.follow_up_queries(1), ctx.question], set(), 1)


def _passages(hits: Sequence[Hit], max_chars: int, focus: str) -> str:
    """Numbered, fenced passages, each cut to its sentences that share most words
    with ``focus`` (see :func:`~app.research.snippets.focused`)."""
    return "\n".join(
        prompts.fence(
            i, focused(hit.chunk.text, focus, max_chars), max_chars=max_chars, title=hit.chunk.title
        )
        for i, hit in enumerate(hits, start=1)
    )


async def judge(ctx: RunContext, subquery: SubQuery, hits: Sequence[Hit]) -> list[Hit]:
    """ONE call per sub-query: the relevant hits, best first. When the model rejects
    everything (or says nothing usable), the top retrieval hits are kept, ranked."""
    (kept,) = await judge_group(ctx, [subquery], [hits], keep_when_none=KEEP_WHEN_ALL_REJECTED)
    return kept


async def judge_group(
    ctx: RunContext,
    subqueries: Sequence[SubQuery],
    hit_lists: Sequence[Sequence[Hit]],
    *,
    keep_when_none: int,
) -> list[list[Hit]]:
    """ONE call judging the hits of several sub-queries (passages numbered across
    them): the relevant hits of each, best first. When the model picks nothing
    usable, the first ``keep_when_none`` hits overall are kept, ranked."""
    flat = [(i, hit) for i, hits in enumerate(hit_lists) for hit in hits]
    if not flat:
        return [[] for _ in hit_lists]
    per = min(JUDGE_CHARS, max(80, ctx.prompt_chars // len(flat)))
    if len(subqueries) == 1 and normalise_query(subqueries[0].text) == normalise_query(
        ctx.question
    ):
        queries = ""  # the question itself was the search
    elif len(subqueries) == 1:
        queries = f"Search query: {prompts.neutralise(subqueries[0].text)}"
    else:
        queries = "Search queries:\n" + "\n".join(
            f"- {prompts.neutralise(sq.text)}" for sq in subqueries
        )
    messages = [
        prompts.system(
            "You judge search results for a research question.",
            prompts.DATA_RULE,
            "List the ids of the documents that help answer the search query or the question, "
            "most helpful first. Leave out documents that do not help.",
        ),
        prompts.user(
            prompts.question_block(ctx.question),
            queries,
            _passages(
                [hit for _, hit in flat],
                per,
                focus=" ".join([ctx.question, *(sq.text for sq in subqueries)]),
            ),
        ),
    ]
    node = subqueries[0].node_id if len(subqueries) == 1 else subqueries[0].parent_id
    value = await ctx.call_structured(node, messages, judge_schema(len(flat)), default=None)
    picked, reason = ranked_picks(value, len(flat), keep_when_none)
    emit_judgements(
        ctx.events, [(subqueries[owner].node_id, hit) for owner, hit in flat], picked, reason
    )
    kept: list[list[Hit]] = [[] for _ in hit_lists]
    for index in picked:
        owner, hit = flat[index]
        kept[owner].append(hit)
    return kept


async def judge_round(
    ctx: RunContext,
    subqueries: Sequence[SubQuery],
    results: Sequence[list[Hit]],
    *,
    verdicts: dict[str, bool],
    grouped: bool = False,
) -> None:
    """Judge every sub-query's hits (concurrently, within the call limit, or in ONE
    call when ``grouped``) and add the relevant ones to the evidence table in
    sub-query order, even when one call fails.

    Each chunk is judged once per run: a chunk already judged (in an earlier
    round, or under an earlier sub-query of this round) keeps its verdict and is
    not shown to the model again. ``verdicts`` (chunk id -> relevant) carries that
    memory between rounds.

    The status line says how many passages are read, and counts them as each
    call returns.
    """
    assigned: set[str] = set()
    fresh_lists = []
    for hits in results:
        fresh = [
            h for h in hits if h.chunk.chunk_id not in verdicts and h.chunk.chunk_id not in assigned
        ]
        assigned.update(h.chunk.chunk_id for h in fresh)
        fresh_lists.append(fresh)
    total = sum(len(fresh) for fresh in fresh_lists)
    if total:
        node = subqueries[0].parent_id if subqueries else "root"
        ctx.events.phase(phases.JUDGE, phases.reading(total), total=total, node_id=node)
    read = 0

    def counted(passages: int) -> None:
        nonlocal read
        read += passages
        ctx.events.count(read)

    outcomes: list[Any]
    if grouped:
        outcomes = list(
            await judge_group(ctx, subqueries, fresh_lists, keep_when_none=KEEP_WHEN_ALL_REJECTED)
        )
        counted(total)
    else:

        async def judged(sq: SubQuery, fresh: list[Hit]) -> list[Hit]:
            try:
                return await judge(ctx, sq, fresh)
            finally:
                counted(len(fresh))

        outcomes = await asyncio.gather(
            *(judged(sq, fresh) for sq, fresh in zip(subqueries, fresh_lists, strict=True)),
            return_exceptions=True,
        )
    error: BaseException | None = None
    for sq, fresh, outcome in zip(subqueries, fresh_lists, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            error = error or outcome
            continue
        kept_ids = {h.chunk.chunk_id for h in outcome}
        for hit in fresh:
            verdicts[hit.chunk.chunk_id] = hit.chunk.chunk_id in kept_ids
        for hit in outcome:
            ctx.add_evidence(hit, sq.text)
    for sq, hits, fresh in zip(subqueries, results, fresh_lists, strict=True):
        fresh_ids = {h.chunk.chunk_id for h in fresh}
        for hit in hits:
            chunk_id = hit.chunk.chunk_id
            if chunk_id in fresh_ids or chunk_id not in verdicts:
                continue
            ctx.emit(
                ChunkJudged(
                    run_id=ctx.run_id,
                    node_id=sq.node_id,
                    chunk_id=chunk_id,
                    relevant=verdicts[chunk_id],
                    score=0.0,
                    reason="judged earlier in this run",
                )
            )
    if error is not None:
        raise error


async def bridge_hop(
    ctx: RunContext,
    round_node: str,
    round_no: int,
    sources: Sequence[Chunk],
    seen: set[str],
    verdicts: dict[str, bool],
) -> list[str]:
    """Follow the names in this round's best new evidence: bridge queries written by
    rule (:mod:`app.research.bridging`, no model call), searched in one batched
    call and judged in ONE call. Returns the queries searched."""
    limit = max(1, ctx.budget.max_subqueries)
    # names come from the text the model would see: a passage that tries to
    # instruct the assistant is withheld before a name is taken from it
    passages = [
        (
            prompts.neutralise(chunk.title),
            prompts.withhold_instructions(prompts.neutralise(chunk.text)),
        )
        for chunk in sources[:BRIDGE_SOURCES]
    ]
    queries = clean_queries(bridge_queries(ctx.question, passages, limit=limit + 3), seen, limit)
    queries = queries[: ctx.tracker.search_calls_left]
    if not queries:
        return []
    subqueries = [
        ctx.plan_subquery(q, parent_id=round_node, round_no=round_no, origin="bridge")
        for q in queries
    ]
    ctx.events.phase(phases.BRIDGE, phases.following(len(queries)), node_id=round_node)
    results = await ctx.search(subqueries, top_k=min(BRIDGE_TOP_K, ctx.budget.top_k))
    await judge_round(ctx, subqueries, results, verdicts=verdicts, grouped=True)
    return queries


def reflect_messages(
    ctx: RunContext, searched: Sequence[str], docs: str, task: str
) -> list[Message]:
    """The reflection's prompt: the question, the queries already searched (the
    question itself named, not repeated) and the fenced evidence ``docs``."""
    asked = normalise_query(ctx.question)
    listed = [f"- {prompts.neutralise(q)}" for q in searched if normalise_query(q) != asked]
    if len(listed) < len(searched):  # the question is shown above: named, not repeated
        listed.insert(0, "- the question itself")
    done_list = "\n".join(listed)
    return [
        prompts.system("You review research progress.", prompts.DATA_RULE, task),
        prompts.user(prompts.question_block(ctx.question), f"Already searched:\n{done_list}", docs),
    ]


def reflected(
    ctx: RunContext, round_node: str, value: dict[str, Any], gaps: list[str], done: bool
) -> tuple[bool, list[str]]:
    """Emit the reflection's node; ``(done, the gap queries to search next)``."""
    node_id = ctx.new_node_id("reflect")
    ctx.emit(
        Reflected(
            run_id=ctx.run_id,
            node_id=node_id,
            parent_id=round_node,
            summary=str(value.get("summary", ""))[:400],
            gap_queries=() if done else tuple(gaps),
            done=done,
        )
    )
    return done, [] if done else gaps


REFLECT_TASK = (
    "Decide whether the documents found so far answer the question completely (done). "
    f"If not, write at most {MAX_GAP_QUERIES} new search queries for the missing facts, each different "
    "from the queries already searched, and a one-sentence summary of what is still missing."
)


async def reflect(
    ctx: RunContext, round_node: str, searched: Sequence[str], seen: set[str]
) -> tuple[bool, list[str]]:
    """Stop, or up to 3 new gap queries (repeats removed)."""
    items = evidence_excerpts(ctx.question, ctx.evidence, REFLECT_VIEW)
    docs = prompts.fence_many(items, max_chars=REFLECT_VIEW.chars, total_chars=ctx.prompt_chars)
    default: dict[str, Any] = {"done": True, "summary": "", "gap_queries": []}
    messages = reflect_messages(ctx, searched, docs, REFLECT_TASK)
    ctx.events.phase(phases.REFLECT, phases.REFLECTING, node_id=round_node)
    value = await ctx.call_structured(round_node, messages, REFLECT_SCHEMA, default=default)
    if not isinstance(value, dict):
        value = default
    proposed = value.get("gap_queries", [])
    gaps = clean_queries(proposed if isinstance(proposed, list) else [], seen, MAX_GAP_QUERIES)
    return reflected(ctx, round_node, value, gaps, bool(value.get("done")) or not gaps)


# -- the loop -------------------------------------------------------------------


async def plan_round(
    ctx: RunContext, queries: Sequence[str], origin: SubQueryOrigin
) -> tuple[str, int, list[SubQuery]]:
    """Start a round and plan its sub-queries, each routed to its collections:
    ``(round node, round number, sub-queries)``."""
    round_node, round_no = ctx.start_round()
    collections = await route(ctx, queries, node_id=round_node)
    subqueries = [
        ctx.plan_subquery(
            q,
            parent_id=round_node,
            round_no=round_no,
            origin="original" if q == ctx.question and origin == "decompose" else origin,
            collections=c,
        )
        for q, c in zip(queries, collections, strict=True)
    ]
    return round_node, round_no, subqueries


async def run_mode(ctx: RunContext) -> Report:
    ctx.source_view = REPORT_VIEW
    seen: set[str] = ctx.searched_before()  # a follow-up does not repeat its thread's searches
    verdicts: dict[str, bool] = {}
    searched: list[str] = []
    queries: list[str] = []
    origin: SubQueryOrigin = "decompose"
    try:
        queries = await decompose(ctx, seen, keep_original=True)
        while queries:
            round_node, round_no, subqueries = await plan_round(ctx, queries, origin)
            ctx.events.phase(phases.SEARCH, phases.searching(len(subqueries)), node_id=round_node)
            results = await ctx.search(subqueries)
            searched += queries
            queries = []
            known = len(ctx.evidence)
            await judge_round(ctx, subqueries, results, verdicts=verdicts, grouped=True)
            if ctx.options.bridge_queries:
                ctx.check_budget()
                found = [
                    chunk for _, chunk in ctx.evidence.chunks()[known:]
                ]  # this round's, best first
                searched += await bridge_hop(ctx, round_node, round_no, found, seen, verdicts)
            ctx.check_budget()
            # gap queries need a round to run in: with none left, the loop ends here
            # without a reflection (DeepSearcher does not reflect after its last iteration)
            ctx.tracker.check_round_left()
            done, gaps = await reflect(ctx, round_node, searched, seen)
            if done:
                ctx.stop("completed")
                break
            queries, origin = ctx.cap_subqueries(gaps), "gap"
    except BudgetHit as hit:
        ctx.stop(hit.budget)
        ctx.open_questions += [f"Not searched: {q}" for q in queries]
    return await ctx.write_report(chained=True)
