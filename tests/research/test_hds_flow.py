"""HDS mode's control flow with a scripted model: the protocol turns, query caps,
the rolling log, and the forced final answer when a budget runs out."""

from __future__ import annotations

from typing import Any

from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, make_chunk

from app.core.events import Finished, Notice, ReasoningDelta, RoundStarted, SubQueryPlanned
from app.core.models import Budget
from app.research.engine import ResearchEngine

QUESTION = "Where is the company that makes Milvus based?"
CHUNKS = [
    *MILVUS_CHUNKS,
    make_chunk("z1", "Zilliz, the company behind Milvus, is based in Redwood City."),
]
REPORT = "Zilliz, the company behind Milvus, is based in Redwood City [1]."


def q(*queries: str) -> str:
    return "<|begin search queries|>" + "; ".join(queries) + "<|end search queries|>"


def of(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def run(
    model: ScriptedModel, budget: Budget, library: MemoryLibrary | None = None
) -> list[Any]:
    library = library or MemoryLibrary(list(CHUNKS))
    return await collect(ResearchEngine(model, library).run(QUESTION, mode="hds", budget=budget))


async def test_protocol_turns_search_log_and_answer() -> None:
    turns = [
        "<think>who makes it?</think>"
        + q("Milvus company", "milvus COMPANY")
        + "\n<|begin search results|>made up",
        q("Zilliz location"),
        "<think>found it</think> The company is based there. \\boxed{Redwood City}",
        REPORT,
    ]
    model = ScriptedModel({}, text=turns)
    library = MemoryLibrary(list(CHUNKS))
    events = await run(model, Budget(max_rounds=5), library)
    final = events[-1]
    assert isinstance(final, Finished), final
    assert final.stop_reason == "completed"
    assert final.report.answer == "Redwood City"
    # the question is searched before turn 1; each turn's de-duplicated queries in one library call
    assert [c[0] for c in library.search_calls] == [
        [QUESTION],
        ["Milvus company"],
        ["Zilliz location"],
    ]
    origins = [(p.text, p.origin) for p in of(events, SubQueryPlanned)]
    assert origins == [
        (QUESTION, "original"),
        ("Milvus company", "hds"),
        ("Zilliz location", "hds"),
    ]
    # turn 2's prompt is the rolling log: turn 1's queries and one labelled results block
    turn1 = model.calls[0].prompt
    assert f'Results for "{QUESTION}":' in turn1 and '<document id="1" title=' in turn1
    turn2 = model.calls[1].prompt
    assert 'Results for "Milvus company":' in turn2 and turn2.count("<|begin search results|>") == 2
    assert "made up" not in turn2 and "who makes it?" not in turn2
    turn3 = model.calls[2].prompt
    assert (
        'Results for "Zilliz location":' in turn3 and turn3.count("<|begin search results|>") == 3
    )
    assert [r.text for r in of(events, ReasoningDelta)][:2] == ["who makes it?", "found it"]
    # every hit the model saw is numbered evidence; the report cites it
    z1 = next(e for e in final.report.evidence if e.chunk_id == "z1")
    assert f'<document id="{z1.number}"' in turn3
    assert final.report.markdown.startswith("Zilliz")


async def test_queries_are_capped_by_the_parallel_limit() -> None:
    model = ScriptedModel(
        {}, text=[q("a1 Milvus", "a2 Milvus", "a3 Milvus", "a4 Milvus"), "\\boxed{x}", REPORT]
    )
    library = MemoryLibrary(list(CHUNKS))
    events = await run(model, Budget(max_subqueries=2), library)
    assert library.search_calls[1][0] == ["a1 Milvus", "a2 Milvus"]
    assert any("2 over-limit" in n.message for n in of(events, Notice))


async def test_search_budget_exhaustion_forces_a_final_answer() -> None:
    turns = [
        q("Milvus company", "Zilliz office", "Milvus founders"),
        "\\boxed{Redwood City}",
        REPORT,
    ]
    model = ScriptedModel({}, text=turns)
    library = MemoryLibrary(list(CHUNKS))
    events = await run(model, Budget(max_search_calls=2, max_rounds=5), library)
    final = events[-1]
    assert isinstance(final, Finished), final
    assert final.stop_reason == "max_search_calls"
    # the question, then only one of the turn's three queries: the calls left cap them
    assert [c[0] for c in library.search_calls] == [[QUESTION], ["Milvus company"]]
    assert len(of(events, RoundStarted)) == 1
    # the second turn is the forced final one
    assert "No more searches are possible" in model.calls[1].prompt
    assert final.report.answer == "Redwood City"


async def test_a_final_turn_without_a_box_gives_its_plain_text() -> None:
    turns = [q("Milvus company"), q("more searching") + " It is Redwood City.", REPORT]
    model = ScriptedModel({}, text=turns)
    events = await run(model, Budget(max_rounds=1))
    assert events[-1].report.answer == "It is Redwood City."


async def test_turn_budget_forces_a_final_answer_turn() -> None:
    turns = [q("Milvus company"), q("Zilliz location"), "\\boxed{Redwood City}", REPORT]
    model = ScriptedModel({}, text=turns)
    events = await run(model, Budget(max_rounds=2))
    final = events[-1]
    assert final.stop_reason == "max_rounds"
    assert len(of(events, RoundStarted)) == 2
    assert "No more searches are possible" in model.calls[2].prompt
    assert final.report.answer == "Redwood City"


async def test_nonsense_turns_still_search_the_question_and_end_with_an_answer() -> None:
    model = ScriptedModel({}, text=["blah blah", "still blah", "Milvus is a vector database."])
    library = MemoryLibrary(list(CHUNKS))
    events = await run(model, Budget(max_rounds=4), library)
    final = events[-1]
    assert isinstance(final, Finished), final
    assert [c[0] for c in library.search_calls] == [[QUESTION]]  # searched once, not repeated
    assert final.stop_reason == "completed"
    assert "No more searches are possible" in model.calls[1].prompt  # the final-answer turn
    assert final.report.answer == "still blah"  # its text, as no box was given
    assert final.report.evidence


async def test_repeated_queries_end_the_search() -> None:
    model = ScriptedModel({}, text=[q("Zilliz"), q("zilliz!", QUESTION), "\\boxed{Zilliz}", REPORT])
    library = MemoryLibrary(list(CHUNKS))
    events = await run(model, Budget(max_rounds=5), library)
    assert [c[0] for c in library.search_calls] == [[QUESTION], ["Zilliz"]]
    assert events[-1].report.answer == "Zilliz"


async def test_bm25_search_mode_can_be_chosen() -> None:
    model = ScriptedModel({}, text=[q("Zilliz"), "\\boxed{Zilliz}", REPORT])
    library = MemoryLibrary(list(CHUNKS))
    engine = ResearchEngine(model, library)
    events = await collect(engine.run(QUESTION, mode="hds", options={"hds_search_mode": "bm25"}))
    from app.core.events import SearchFinished

    assert {e.search_mode for e in of(events, SearchFinished)} == {"bm25"}
