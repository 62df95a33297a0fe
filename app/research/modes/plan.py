"""plan: AutoRAG-style Deep Search.

Read a global view of the data (each collection's description and a short
summary of a spread of its chunks) → write a step plan (structured) whose
query templates may use ``{{step_N}}`` placeholders → run the steps in order:
fill the template from earlier findings, search it, and in ONE call per step
pick the relevant hits, state the step's finding and say whether the question
is already answered → stop early when it is → write the cited report.

Evidence is merged by chunk id (a chunk found by two steps keeps one ``[n]``).
The original question is always searched first (its top hits are evidence,
so a run cut short by a budget still has something to cite), and a plan the
model cannot write degrades to one step: the question itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.events import ROOT_NODE, PlanWritten, SearchFinished, StepFinished
from app.core.models import Hit, Report, SubQuery
from app.research import phases, prompts
from app.research.budget import BudgetHit
from app.research.context import RunContext
from app.research.placeholders import fill_placeholders
from app.research.relevance import emit_judgements, ranked_picks

MAX_COLLECTIONS_VIEWED = 4
SAMPLE_CHUNKS = 4
SAMPLE_CHARS = 250
SUMMARY_TOKENS = 80
FINDING_CHARS = 300
PASSAGE_CHARS = 700
KEEP_WHEN_NONE_PICKED = 2
KEEP_ORIGINAL = 3  # top hits of the original question kept as evidence
MAX_STEP_QUERY_CHARS = 300


def plan_schema(max_steps: int) -> dict[str, Any]:
    step = prompts.object_schema(
        "plan_step",
        {
            "query": {"type": "string", "maxLength": MAX_STEP_QUERY_CHARS},
            "purpose": {"type": "string", "maxLength": 200},
        },
    )
    return prompts.object_schema(
        "plan",
        {"steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max(1, max_steps)}},
    )


def finding_schema(max_items: int) -> dict[str, Any]:
    return prompts.object_schema(
        "step_finding",
        {
            "relevant": prompts.int_list(max(1, max_items)),
            "finding": {"type": "string", "maxLength": FINDING_CHARS},
            "answered": {"type": "boolean"},
        },
    )


# -- global view ------------------------------------------------------------------


async def global_view(ctx: RunContext) -> str:
    """Each collection's name, description and a model-written summary of sampled chunks."""
    collections = (await ctx.collections())[:MAX_COLLECTIONS_VIEWED]
    parts: list[str] = []
    ctx.events.phase(phases.SURVEY, phases.surveying(len(collections)))
    for number, collection in enumerate(collections, 1):
        try:
            async with ctx.events.kept_alive():
                sample = await ctx.library.sample_chunks(collection.name, SAMPLE_CHUNKS)
        except Exception as exc:  # the view is an aid: a failing sample must not end the run
            ctx.notice(f"Could not sample collection {collection.name} ({exc}).", level="warning")
            sample = []
        summary = ""
        if sample:
            docs = prompts.fence_many(
                [(i, c.title or c.heading_path, c.text) for i, c in enumerate(sample, 1)],
                max_chars=SAMPLE_CHARS,
                total_chars=SAMPLE_CHARS * SAMPLE_CHUNKS,
            )
            messages = [
                prompts.system(
                    "Describe in two sentences what kind of documents these are and which topics they cover.",
                    prompts.DATA_RULE,
                ),
                prompts.user(docs),
            ]
            status = (phases.SURVEY, phases.summarising(number, len(collections)))
            summary = await ctx.call_text(
                "root", messages, temperature=0.1, max_tokens=SUMMARY_TOKENS, phase=status
            )
        # the name and description are the user's words, the summary a model's reading of
        # the documents: all of it is data
        view = f"Description: {prompts.clip(collection.description or '(no description)', 300)}"
        if summary.strip():
            view += f"\nSummary of a sample: {prompts.clip(summary, 400)}"
        parts.append(
            prompts.fence(f"collection {number}", view, max_chars=800, title=collection.name)
        )
    return "\n".join(parts) or "(no collections)"


# -- the plan ---------------------------------------------------------------------


def plan_steps(value: Any, max_steps: int) -> list[str]:
    """Query templates from the model's plan; nonsense and repeats are dropped."""
    steps = value.get("steps", []) if isinstance(value, dict) else []
    out: list[str] = []
    seen: set[str] = set()
    for step in steps if isinstance(steps, list) else []:
        query = step.get("query") if isinstance(step, dict) else step
        if not isinstance(query, str):
            continue
        query = " ".join(query.split())[:MAX_STEP_QUERY_CHARS]
        key = query.casefold()
        if query and key not in seen:
            seen.add(key)
            out.append(query)
        if len(out) >= max_steps:
            break
    return out


async def write_plan(ctx: RunContext, view: str, max_steps: int) -> list[str]:
    rule, earlier_answers = ctx.earlier_prompt()  # a follow-up: the earlier answers, fenced
    messages = [
        prompts.system(
            "You plan research over a private document library.",
            f"Write at most {max_steps} search steps, in the order they must run, that together answer "
            "the user's question. Each step has a short search query and its purpose. When a step "
            "needs what an earlier step found, write the placeholder {{step_N}} in its query, where N "
            "is that earlier step's number; it is replaced by that step's finding. Use the question's "
            "own terms. Do not answer the question.",
            prompts.DATA_RULE,
            rule,
        ),
        prompts.user(
            f"Library overview:\n{view}", earlier_answers, prompts.question_block(ctx.question)
        ),
    ]
    ctx.events.phase(phases.PLAN, phases.PLANNING)
    value = await ctx.call_structured(
        "root", messages, plan_schema(max_steps), default={"steps": []}
    )
    return plan_steps(value, max_steps) or [ctx.question]


# -- steps ------------------------------------------------------------------------


async def run_step(
    ctx: RunContext,
    subquery: SubQuery,
    hits: Sequence[Hit],
    findings: dict[int, str],
    place: tuple[int, int] = (1, 1),
) -> tuple[str, bool, list[Hit]]:
    """One call: the relevant hits (ranked), the step's finding, and whether the question is answered.
    ``place`` is the step's number and the plan's length, for the status line."""
    if not hits:
        return "", False, []
    ctx.events.phase(
        phases.STEP,
        phases.step(*place, phases.reading(len(hits)).lower()),
        node_id=subquery.node_id,
    )
    steps_found = "\n".join(f"Step {n}: {f}" for n, f in sorted(findings.items()) if f)
    per = max(200, min(PASSAGE_CHARS, ctx.prompt_chars // len(hits)))
    passages = "\n".join(
        prompts.fence(i, h.chunk.text, max_chars=per, title=h.chunk.title)
        for i, h in enumerate(hits, 1)
    )
    messages = [
        prompts.system(
            "You carry out one step of a research plan.",
            prompts.DATA_RULE,
            "List the ids of the documents that help with this step, most helpful first. State the "
            "step's finding in one short sentence or phrase taken from the documents (empty when they "
            "do not say). Set answered to true only when the findings so far fully answer the question.",
        ),
        prompts.user(
            prompts.question_block(ctx.question),
            f"This step's search: {prompts.neutralise(subquery.text)}",
            "Findings of earlier steps:\n" + prompts.fence("findings", steps_found)
            if steps_found
            else "",
            passages,
        ),
    ]
    default = {"relevant": [], "finding": "", "answered": False}
    value = await ctx.call_structured(
        subquery.node_id, messages, finding_schema(len(hits)), default=default
    )
    if not isinstance(value, dict):
        value = default
    picked, reason = ranked_picks(value, len(hits), KEEP_WHEN_NONE_PICKED)  # rank, don't delete
    emit_judgements(ctx.events, [(subquery.node_id, hit) for hit in hits], picked, reason)
    finding = value.get("finding", "")
    finding = " ".join(finding.split())[:FINDING_CHARS] if isinstance(finding, str) else ""
    answered = value.get("answered") is True and bool(finding)
    return finding, answered, [hits[i] for i in picked]


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


def _guidance(findings: dict[int, str]) -> str:
    lines = [f"- Step {n}: {f}" for n, f in sorted(findings.items()) if f]
    if not lines:
        return ""
    return (
        "Findings of the plan's steps (check them against the documents before using them):\n"
        + prompts.fence("findings", "\n".join(lines))
    )


async def run_mode(ctx: RunContext) -> Report:
    findings: dict[int, str] = {}
    templates: list[str] = []
    done = 0
    try:
        max_steps = max(1, ctx.budget.max_subqueries)
        # the original question is always searched, first: a plan cut short by a budget still has evidence
        original = ctx.plan_subquery(ctx.question, parent_id=ROOT_NODE, origin="original")
        ctx.events.phase(phases.SEARCH, phases.searching(1, what="question"))
        (hits,) = await ctx.search([original])
        searched = {_key(ctx.question): hits}
        for hit in hits[:KEEP_ORIGINAL]:
            ctx.add_evidence(hit, ctx.question)
        view = await global_view(ctx)
        templates = await write_plan(ctx, view, max_steps)
        plan_node = ctx.new_node_id("plan")
        ctx.emit(PlanWritten(run_id=ctx.run_id, node_id=plan_node, steps=tuple(templates)))
        for number, template in enumerate(templates, 1):
            _, round_no = ctx.start_round(plan_node)
            filled = fill_placeholders(template, findings)
            text = filled.text or ctx.question
            step = ctx.plan_subquery(text, parent_id=plan_node, round_no=round_no, origin="plan")
            place = (number, len(templates))
            ctx.events.phase(phases.STEP, phases.step(*place, "searching"), node_id=step.node_id)
            if filled.missing:
                ctx.notice(
                    f"Step {number}: nothing to fill in for {', '.join(filled.missing)}; searched without it.",
                    level="warning",
                    node_id=step.node_id,
                )
            # the same search again: reuse its hits, spend no search call
            if _key(text) in searched:
                hits = searched[_key(text)]
                ctx.emit(SearchFinished(run_id=ctx.run_id, node_id=step.node_id, hits=tuple(hits)))
            else:
                (hits,) = await ctx.search([step])
                searched[_key(text)] = hits
            finding, answered, kept = await run_step(ctx, step, hits, findings, place)
            for hit in kept:
                ctx.add_evidence(hit, step.text)
            findings[number] = finding
            done = number
            ctx.emit(
                StepFinished(
                    run_id=ctx.run_id, node_id=step.node_id, finding=finding, answered=answered
                )
            )
            if answered:
                break
        ctx.stop("completed")
    except BudgetHit as hit:
        ctx.stop(hit.budget)
    open_questions = (
        [f"Plan step not run: {t}" for t in templates[done:]]
        if ctx.stop_reason != "completed"
        else []
    )
    return await ctx.write_report(guidance=_guidance(findings), open_questions=open_questions)
