"""Plan mode's control flow with a scripted model over an in-memory library
(deterministic; the real model and Milvus run in test_modes_end_to_end.py)."""

from __future__ import annotations

from typing import Any

from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, make_chunk

from app.core.events import (
    EvidenceAdded,
    Finished,
    Notice,
    PlanWritten,
    RoundStarted,
    StepFinished,
    SubQueryPlanned,
)
from app.core.models import Budget
from app.research.engine import ResearchEngine

QUESTION = "Where is the company that makes Milvus based?"
CHUNKS = [
    *MILVUS_CHUNKS,
    make_chunk("z1", "Zilliz, the company behind Milvus, is based in Redwood City."),
]
REPORT = "Zilliz makes Milvus [1]. Zilliz is based in Redwood City [2]."


def of(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def steps(*queries: str) -> dict[str, Any]:
    return {"steps": [{"query": q, "purpose": "p"} for q in queries]}


async def run(model: ScriptedModel, budget: Budget | None = None) -> list[Any]:
    library = MemoryLibrary(list(CHUNKS), descriptions={"docs": "vector database manuals"})
    return await collect(
        ResearchEngine(model, library).run(QUESTION, mode="plan", budget=budget or Budget())
    )


async def test_later_steps_are_filled_from_earlier_findings() -> None:
    model = ScriptedModel(
        {
            "plan": steps("company that makes Milvus", "where is {{step_1}} based"),
            "step_finding": [
                {"relevant": [1], "finding": "Zilliz. It also runs a cloud.", "answered": False},
                {"relevant": [1], "finding": "Redwood City, California", "answered": True},
            ],
        },
        text=["A library of vector database manuals.", REPORT],
    )
    events = await run(model)
    final = events[-1]
    assert isinstance(final, Finished), final
    assert of(events, PlanWritten)[0].steps == (
        "company that makes Milvus",
        "where is {{step_1}} based",
    )
    planned = [p.text for p in of(events, SubQueryPlanned) if p.origin == "plan"]
    assert planned == ["company that makes Milvus", "where is Zilliz based"]
    # the first step also searches the original question
    assert [p.text for p in of(events, SubQueryPlanned) if p.origin == "original"] == [QUESTION]
    findings = of(events, StepFinished)
    assert [f.finding for f in findings] == [
        "Zilliz. It also runs a cloud.",
        "Redwood City, California",
    ]
    assert [f.answered for f in findings] == [False, True]
    # the planner saw the global view: description and the sample summary
    plan_prompt = model.calls_for("plan")[0].prompt
    assert (
        "vector database manuals" in plan_prompt
        and "A library of vector database manuals." in plan_prompt
    )
    # the step check saw the earlier finding; the report writer saw both (neither is a chunk's text)
    assert "Zilliz. It also runs a cloud." in model.calls_for("step_finding")[1].prompt
    writer = model.calls_for("text")[-1].prompt
    assert "Zilliz. It also runs a cloud." in writer and "Redwood City, California" in writer
    assert final.stop_reason == "completed"


async def test_the_run_stops_early_once_the_question_is_answered() -> None:
    model = ScriptedModel(
        {
            "plan": steps(
                "Zilliz Milvus company location", "Milvus index types", "Milvus hybrid search"
            ),
            "step_finding": {"relevant": [1], "finding": "Redwood City", "answered": True},
        },
        text=["summary", REPORT],
    )
    events = await run(model, Budget(max_rounds=5))
    assert len(of(events, RoundStarted)) == 1
    assert len(model.calls_for("step_finding")) == 1
    assert [p.text for p in of(events, SubQueryPlanned) if p.origin == "plan"] == [
        "Zilliz Milvus company location"
    ]
    final = events[-1]
    assert final.stop_reason == "completed"
    assert not any("not run" in q for q in final.report.open_questions)


async def test_an_answered_flag_without_a_finding_does_not_stop_the_run() -> None:
    model = ScriptedModel(
        {
            "plan": steps("Milvus company", "Milvus location"),
            "step_finding": {"relevant": [], "finding": "", "answered": True},
        },
        text=["summary", REPORT],
    )
    events = await run(model)
    assert len(of(events, StepFinished)) == 2


async def test_a_missing_placeholder_is_dropped_and_reported() -> None:
    model = ScriptedModel(
        {
            "plan": steps("Milvus {{step_2}} {{country}} hybrid search"),
            "step_finding": {"relevant": [1], "finding": "BM25", "answered": True},
        },
        text=["summary", REPORT],
    )
    events = await run(model)
    assert [p.text for p in of(events, SubQueryPlanned) if p.origin == "plan"] == [
        "Milvus hybrid search"
    ]
    assert any("step_2, country" in n.message for n in of(events, Notice))


async def test_citations_are_merged_by_chunk_id_across_steps() -> None:
    model = ScriptedModel(
        {
            "plan": steps("Zilliz Milvus Redwood City", "Zilliz company Milvus Redwood"),
            "step_finding": {"relevant": [1, 2], "finding": "", "answered": False},
        },
        text=["summary", REPORT],
    )
    events = await run(model)
    added = [e.evidence.chunk_id for e in of(events, EvidenceAdded)]
    assert len(added) == len(set(added))
    assert "z1" in added
    assert len(events[-1].report.evidence) == len(added)


async def test_nonsense_replies_degrade_to_searching_the_question() -> None:
    model = ScriptedModel(
        {"step_finding": "not an object"}, text=["", "Milvus is a vector database."]
    )
    library = MemoryLibrary(list(CHUNKS))
    events = await collect(ResearchEngine(model, library).run(QUESTION, mode="plan"))
    final = events[-1]
    assert isinstance(final, Finished), final
    # the question is searched first; the one-step fallback plan reuses those hits
    assert [p.text for p in of(events, SubQueryPlanned)] == [QUESTION, QUESTION]
    assert [p.origin for p in of(events, SubQueryPlanned)] == ["original", "plan"]
    assert len(library.search_calls) == 1
    assert final.report.evidence  # the top hits are kept, ranked, not thrown away
    assert any(n.level == "warning" and "plan" in n.message for n in of(events, Notice))


async def test_the_rounds_budget_stops_the_plan_and_lists_unrun_steps() -> None:
    model = ScriptedModel(
        {
            "plan": steps("Milvus company", "Milvus location", "Milvus founders"),
            "step_finding": {"relevant": [1], "finding": "Zilliz", "answered": False},
        },
        text=["summary", REPORT],
    )
    events = await run(model, Budget(max_rounds=1))
    final = events[-1]
    assert final.stop_reason == "max_rounds"
    assert len(of(events, StepFinished)) == 1
    assert "Plan step not run: Milvus location" in final.report.open_questions
    assert "Plan step not run: Milvus founders" in final.report.open_questions


async def test_a_run_stopped_before_any_step_still_cites_the_questions_hits() -> None:
    model = ScriptedModel({"plan": steps("Milvus company")}, text=["summary", REPORT])
    # the summary call uses the whole token budget: the plan call is refused
    events = await run(model, Budget(max_tokens=120))
    final = events[-1]
    assert isinstance(final, Finished), final
    assert final.stop_reason == "max_tokens"
    assert model.calls_for("plan") == []
    assert final.report.evidence and final.report.evidence[0].subquery == QUESTION
