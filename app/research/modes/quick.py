"""quick: retrieve then answer — one hybrid search of the question, every hit as
evidence, one cited report. The baseline every other mode must beat.

A name of the question that none of the hits holds is then looked up on its own
(:mod:`app.research.name_lookup`: a search each, no model call), so that one search
of a long question does not miss the passage about its subject."""

from __future__ import annotations

from app.core.models import Report
from app.research import name_lookup, phases
from app.research.answerability import found_in
from app.research.context import RunContext


async def run_mode(ctx: RunContext) -> Report:
    round_node, round_no = ctx.start_round()
    subquery = ctx.plan_subquery(
        ctx.question, parent_id=round_node, round_no=round_no, origin="original"
    )
    # a follow-up also searches, by rule, for what it asks beyond the earlier answers
    extra = [
        ctx.plan_subquery(q, parent_id=round_node, round_no=round_no)
        for q in ctx.follow_up_queries(1)
    ]
    searching = phases.searching(1 + len(extra), what="query" if extra else "question")
    ctx.events.phase(phases.SEARCH, searching, node_id=round_node)
    for sq, hits in zip([subquery, *extra], await ctx.search([subquery, *extra]), strict=True):
        for hit in hits:
            ctx.add_evidence(hit, sq.text)
    await look_up_missing_names(ctx, round_node, round_no)
    return await ctx.write_report()


async def look_up_missing_names(ctx: RunContext, round_node: str, round_no: int) -> None:
    """Search for each name of the question no passage found holds; keep the hits
    that name it."""
    found = found_in(ctx.evidence)
    if not found:  # nothing found at all: the library has nothing near the question
        return
    limit = min(name_lookup.MAX_NAMES, ctx.tracker.search_calls_left)
    names = name_lookup.names_to_look_up(ctx.question, found, limit)
    if not names:
        return
    lookups = [
        ctx.plan_subquery(name, parent_id=round_node, round_no=round_no, origin="name")
        for name in names
    ]
    ctx.events.phase(phases.SEARCH, phases.looking_up(len(names)), node_id=round_node)
    results = await ctx.search(lookups, top_k=name_lookup.TOP_K)
    for sq, hits in zip(lookups, results, strict=True):
        for hit in name_lookup.naming(hits, sq.text):
            ctx.add_evidence(hit, sq.text)
