"""quick: retrieve then answer — one hybrid search of the question, every hit as
evidence, one cited report. The baseline every other mode must beat."""

from __future__ import annotations

from app.core.models import Report
from app.research import phases
from app.research.context import RunContext


async def run_mode(ctx: RunContext) -> Report:
    round_node, round_no = ctx.start_round()
    subquery = ctx.plan_subquery(ctx.question, parent_id=round_node, round_no=round_no, origin="original")
    ctx.events.phase(phases.SEARCH, phases.searching(1, what="question"), node_id=round_node)
    (hits,) = await ctx.search([subquery])
    for hit in hits:
        ctx.add_evidence(hit, subquery.text)
    return await ctx.write_report()
