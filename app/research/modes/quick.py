"""quick: retrieve then answer — one hybrid search of the question, every hit as
evidence, one cited report. The baseline every other mode must beat."""

from __future__ import annotations

from app.core.models import Report
from app.research import phases
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
    return await ctx.write_report()
