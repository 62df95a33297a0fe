"""hds: the Hybrid Deep Searcher protocol, for reasoning models.

Each turn the model sees the question and a rolling log of its earlier turns'
queries (rebuilt from what was parsed: nothing else it wrote is replayed) and
the search results so far. It thinks (``<think>``), then either asks for
searches — ``<|begin search queries|> q1; q2 <|end search queries|>`` — or
gives its final answer as ``\\boxed{…}`` or ``<answer>…</answer>``. Queries are
split, de-duplicated (also against earlier turns) and capped by the parallel
limit (``max_subqueries``) and the search calls left; their results come back
as ONE query-labelled block appended to the log, every hit fenced as a
document whose id is its number ``[n]`` in the evidence table. Turns are
capped by ``max_rounds``; when a budget runs out the model gets one
final-answer turn. The first turn always searches the
original question too, and a turn that neither searches nor answers is read
as a request to search the question (a tiny model's nonsense never ends the
run). The cited report is written from the evidence, with the answer on top.

BM25 suits generated queries well; the search mode is ``options.hds_search_mode``
(``hybrid`` by default, or ``bm25`` / ``dense``); ``options.hds_turn_tokens`` caps a turn.
"""

from __future__ import annotations

from typing import Any

from app.core.events import ROOT_NODE, ReasoningDelta, SubQueryOrigin
from app.core.models import Hit, Report
from app.research import phases, prompts
from app.research.budget import BudgetHit
from app.research.context import RunContext
from app.research.hds_protocol import (
    BEGIN_QUERIES,
    END_QUERIES,
    extract_answer,
    queries_turn,
    raw_queries,
    results_block,
    select_queries,
    split_think,
    strip_protocol,
)

FINAL_TOKENS = 256
HITS_PER_QUERY = 3
CHARS_PER_HIT = 500
LOG_CHARS = 9000  # the rolling log keeps its newest part within this size
HDS_NODE = "root"

SYSTEM = (
    "You answer the user's question by searching a private document library.",
    "You may think first inside <think> and </think>.",
    f"To search, write {BEGIN_QUERIES} then one or more short search queries separated by ; then "
    f"{END_QUERIES}, and stop writing. The search results will be added below, each result a document "
    "with a number as its id.",
    "Search again when facts are missing; each query should look for one fact.",
    "When the results answer the question, write the final answer as \\boxed{the answer}: only the answer, "
    "as short as possible.",
    prompts.DATA_RULE,
)

FINAL_INSTRUCTION = (
    "No more searches are possible. Using the search results above, write the final answer now as "
    "\\boxed{the answer}. If the results do not contain it, give your best answer and say it is uncertain."
)


def _messages(ctx: RunContext, log: str, extra: str = "") -> list[Any]:
    if len(log) > LOG_CHARS:
        log = "…" + log[-LOG_CHARS:]
    rule, earlier = ctx.earlier_prompt()  # a follow-up: the earlier answers, fenced
    parts = [
        earlier,
        prompts.question_block(ctx.question),
    ]  # (nothing before the question when not a follow-up)
    if log:
        parts.append("Your turns and the search results so far:\n" + log)
    parts.append(extra or "Continue: search, or give the final answer.")
    return [prompts.system(*SYSTEM, rule), prompts.user(*parts)]


def _visible_turn(text: str) -> str:
    """What stays in the log of a turn: no thinking, nothing after the query block
    (a model that writes its own 'results' does not get to keep them)."""
    _, visible = split_think(text)
    end = visible.find(END_QUERIES)
    if end != -1:
        visible = visible[: end + len(END_QUERIES)]
    return visible.strip()


async def _turn(
    ctx: RunContext,
    log: str,
    status: tuple[str, str],
    extra: str = "",
    max_tokens: int | None = None,
) -> str:
    """One turn of the model; ``status`` (phase, text) is what the status line says meanwhile."""
    limit = max_tokens or ctx.options.hds_turn_tokens
    text = await ctx.call_text(
        HDS_NODE, _messages(ctx, log, extra), temperature=0.1, max_tokens=limit, phase=status
    )
    reasoning, _ = split_think(text)
    if reasoning:
        ctx.emit(ReasoningDelta(run_id=ctx.run_id, node_id=HDS_NODE, text=reasoning))
    return text


async def _search(
    ctx: RunContext,
    queries: list[str],
    round_node: str,
    round_no: int,
    origins: list[SubQueryOrigin],
    *,
    top_k: int = 0,
) -> str:
    """Search the queries in one batched call (``top_k`` hits each; by default
    :data:`HITS_PER_QUERY`, within the budget's); every hit becomes evidence; the results block."""
    mode = ctx.options.hds_search_mode
    subqueries = [
        ctx.plan_subquery(q, parent_id=round_node, round_no=round_no, origin=o)
        for q, o in zip(queries, origins, strict=True)
    ]
    what = "question" if origins == ["original"] else "query"
    ctx.events.phase(phases.SEARCH, phases.searching(len(queries), what=what), node_id=round_node)
    results = await ctx.search(
        subqueries, mode=mode, top_k=top_k or min(HITS_PER_QUERY, ctx.budget.top_k)
    )
    labelled: list[tuple[str, list[tuple[int, Hit]]]] = []
    for sq, hits in zip(subqueries, results, strict=True):
        numbered = [(ctx.add_evidence(hit, sq.text).number, hit) for hit in hits]
        labelled.append((sq.text, numbered))
    return results_block(labelled, chars_per_hit=CHARS_PER_HIT)


async def run_mode(ctx: RunContext) -> Report:
    log = ""
    seen: list[str] = [
        ctx.question,
        *sorted(ctx.searched_before()),
    ]  # a follow-up repeats no earlier search
    answer: str | None = None
    try:
        # the question itself is searched first, with the budget's full top_k (as the
        # quick mode does); its results open the log
        log = await _search(ctx, [ctx.question], ROOT_NODE, 0, ["original"], top_k=ctx.budget.top_k)
        while answer is None:
            round_node, round_no = ctx.start_round()
            text = await _turn(ctx, log, (phases.THINK, phases.thinking(round_no)))
            visible = _visible_turn(text)
            candidates = raw_queries(visible)
            if not candidates:
                answer = extract_answer(text)
                if answer is None:  # neither searched nor answered: on to the final-answer turn
                    ctx.notice(
                        f"Turn {round_no} neither searched nor answered.", node_id=round_node
                    )
                # what the model wrote instead is data for its final turn, fenced like any other
                log += (
                    "\n" + prompts.fence("your last turn", visible, max_chars=600)
                    if visible
                    else ""
                )
                break
            picked = select_queries(
                candidates,
                seen=seen,
                max_parallel=max(1, ctx.budget.max_subqueries),
                remaining_calls=ctx.tracker.search_calls_left,
            )
            if picked.duplicates or picked.over_cap:
                ctx.notice(
                    f"Turn {round_no}: {picked.duplicates} repeated and {picked.over_cap} over-limit "
                    "search queries were skipped.",
                    node_id=round_node,
                )
            if not picked.queries:  # nothing new to search: the model has what it will get
                break
            seen += picked.queries
            block = await _search(
                ctx, list(picked.queries), round_node, round_no, ["hds"] * len(picked.queries)
            )
            log += f"\n{queries_turn(picked.queries)}\n{block}"
        ctx.stop("completed")
    except BudgetHit as hit:
        ctx.stop(hit.budget)
    if answer is None and len(ctx.evidence):
        # budget exhausted (or nothing new to search): one forced final-answer turn
        ctx.account.finishing = True
        text = await _turn(
            ctx,
            log,
            (phases.ANSWER, phases.FINAL_ANSWER),
            FINAL_INSTRUCTION,
            max_tokens=FINAL_TOKENS,
        )
        answer = extract_answer(text)
        if answer is None:
            visible = strip_protocol(text)
            answer = prompts.clip(visible, 200) if visible else None
    guidance = (
        "The search protocol's final answer was:\n" + prompts.fence("answer", answer)
        if answer
        else ""
    )
    report = await ctx.write_report(guidance=guidance, answer=answer or "")
    return report
