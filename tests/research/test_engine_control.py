"""Budgets, cancellation, failures and persistence of research runs, driven by a
scripted model (deterministic control flow)."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest
from scripted import BLOCK, MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, delayed, verdicts

from app.core.errors import ModelUnavailable, StoreError, StructuredOutputError
from app.core.events import (
    EvidenceAdded,
    Failed,
    Finished,
    ResearchEvent,
    RoundStarted,
    SearchFinished,
    SubQueryPlanned,
)
from app.core.models import Budget, Usage
from app.core.paths import app_paths
from app.research.engine import ResearchEngine
from app.research.tree import build_tree
from app.store.research_runs import RunStore

QUESTION = "What is Milvus and how does it compare with other vector databases?"
REPORT = "Milvus is an open-source vector database built for similarity search [1]."
SUPPORTED = verdicts()


def endless_gaps() -> Any:
    counter = itertools.count(1)

    def reflect(messages: Any, schema: Any) -> Any:
        n = next(counter)
        return {
            "done": False,
            "summary": "more",
            "gap_queries": [f"Milvus topic {n} alpha", f"Milvus topic {n} beta"],
        }

    return reflect


def script(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "decompose": {
            "sub_queries": [
                "Milvus features",
                "vector database comparison",
                "Milvus scale",
                "Milvus index",
            ]
        },
        "judge": {"relevant": [1]},
        "reflect": endless_gaps(),
        "citation_check": SUPPORTED,
    }
    base.update(overrides)
    return base


def of(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def store() -> RunStore:
    return RunStore.open(app_paths())


# -- budgets -------------------------------------------------------------------------


async def test_max_rounds_stops_after_that_many_rounds_and_still_reports() -> None:
    model = ScriptedModel(script(), text=REPORT)
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(
            QUESTION, budget=Budget(max_rounds=2)
        )
    )
    final = events[-1]
    assert isinstance(final, Finished) and final.stop_reason == "max_rounds"
    assert [r.round_no for r in of(events, RoundStarted)] == [1, 2]
    # round 1's reflection wrote the gap queries round 2 searched; after the last round
    # there is no reflection (its gap queries could never run), as in DeepSearcher
    assert len(model.calls_for("reflect")) == 1
    round_two = [
        s.text for s in of(events, SubQueryPlanned) if s.round_no == 2 and s.origin == "gap"
    ]
    assert round_two == ["Milvus topic 1 alpha", "Milvus topic 1 beta"]
    assert final.report.markdown.startswith("Milvus is")
    assert any("max_rounds" in q for q in final.report.open_questions)


async def test_max_subqueries_caps_each_round() -> None:
    model = ScriptedModel(
        script(reflect={"done": True, "summary": "", "gap_queries": []}), text=REPORT
    )
    library = MemoryLibrary(list(MILVUS_CHUNKS))
    events = await collect(
        ResearchEngine(model, library).run(QUESTION, budget=Budget(max_subqueries=2))
    )
    planned = of(events, SubQueryPlanned)
    assert [p.text for p in planned if p.origin != "bridge"] == [QUESTION, "Milvus features"]
    assert len([p for p in planned if p.origin == "bridge"]) <= 2  # the bridge hop has the same cap
    assert model.calls_for("decompose")[0].messages[0]["content"].count("at most 2") == 1
    assert events[-1].stop_reason == "completed"


async def test_max_search_calls_searches_only_what_is_left_then_stops() -> None:
    model = ScriptedModel(script(), text=REPORT)
    library = MemoryLibrary(list(MILVUS_CHUNKS))
    events = await collect(
        ResearchEngine(model, library).run(
            QUESTION,
            budget=Budget(max_subqueries=4, max_search_calls=6),
            options={"bridge_queries": False},
        )
    )
    final = events[-1]
    assert isinstance(final, Finished) and final.stop_reason == "max_search_calls"
    searched = [q for queries, _ in library.search_calls for q in queries]
    assert len(searched) == 6  # 4 in round 1, 2 of the 2 gap queries in round 2
    assert len(of(events, SearchFinished)) == 6
    assert len(of(events, RoundStarted)) == 2


async def test_max_search_calls_truncates_a_round() -> None:
    model = ScriptedModel(script(), text=REPORT)
    library = MemoryLibrary(list(MILVUS_CHUNKS))
    events = await collect(
        ResearchEngine(model, library).run(
            QUESTION, budget=Budget(max_subqueries=4, max_search_calls=3)
        )
    )
    assert events[-1].stop_reason == "max_search_calls"
    assert sum(len(q) for q, _ in library.search_calls) == 3
    assert len(of(events, RoundStarted)) == 1


async def test_max_tokens_stops_before_the_next_call() -> None:
    model = ScriptedModel(
        script(), text=REPORT, prompt_tokens=100, completion_tokens=20
    )  # 120 per call
    budget = Budget(max_tokens=300, max_concurrent_calls=1)
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(QUESTION, budget=budget)
    )
    final = events[-1]
    assert isinstance(final, Finished) and final.stop_reason == "max_tokens"
    research_calls = [
        c for c in model.calls if c.task not in ("findings", "text", "citation_check")
    ]
    assert len(research_calls) == 3  # 120, 240, 360 >= 300: no fourth research call
    assert [c.task for c in research_calls][:2] == ["decompose", "judge"]
    assert final.report.markdown.startswith("Milvus is")  # the report is still written


async def test_max_seconds_stops_a_slow_run_within_its_budget() -> None:
    model = delayed(ScriptedModel(script(), text=REPORT), 0.15)
    budget = Budget(max_seconds=1.0, max_rounds=50)
    start = time.monotonic()
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(QUESTION, budget=budget)
    )
    took = time.monotonic() - start
    final = events[-1]
    assert isinstance(final, Finished) and final.stop_reason == "max_seconds"
    assert took < 1.0 + 0.15 * 3 + 0.5  # the report's two calls may run past the budget
    assert final.report.evidence


async def test_max_seconds_cuts_a_hanging_model_call() -> None:
    model = ScriptedModel(script(judge=BLOCK), text=REPORT)
    start = time.monotonic()
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(
            QUESTION, budget=Budget(max_seconds=0.5)
        )
    )
    assert events[-1].stop_reason == "max_seconds"
    assert time.monotonic() - start < 1.5


# -- cancellation ----------------------------------------------------------------------


def cancellable_script() -> dict[str, Any]:
    # round 1 finds evidence, round 2's reflection hangs
    gaps = {"done": False, "summary": "", "gap_queries": ["Milvus hybrid search"]}
    return script(reflect=[gaps, BLOCK])


async def test_stop_ends_the_run_within_a_second_and_keeps_the_evidence() -> None:
    model = ScriptedModel(cancellable_script(), text=REPORT)
    runs = store()
    engine = ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS)), runs)
    events: list[ResearchEvent] = []
    stop_at: float | None = None
    async for event in engine.run(QUESTION, run_id="run-stop"):
        events.append(event)
        if stop_at is None and model.blocked.is_set():
            stop_at = time.monotonic()
            assert engine.stop("run-stop")
    assert stop_at is not None
    assert time.monotonic() - stop_at < 1.0
    final = events[-1]
    assert isinstance(final, Finished) and final.stop_reason == "cancelled"
    assert final.report.evidence and len(final.report.evidence) == len(of(events, EvidenceAdded))
    assert "stopped before it finished" in final.report.markdown
    summary = runs.get_run("run-stop")
    assert summary is not None and summary.status == "cancelled"
    assert [e.chunk_id for e in runs.load_evidence("run-stop")] == [
        e.chunk_id for e in final.report.evidence
    ]
    assert engine.active_runs == []


async def test_closing_the_iterator_cancels_and_persists_the_partial_run() -> None:
    model = ScriptedModel(cancellable_script(), text=REPORT)
    runs = store()
    engine = ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS)), runs)
    stream = engine.run(QUESTION, run_id="run-close")
    seen = 0
    async for _event in stream:
        seen += 1
        if model.blocked.is_set():
            break
    start = time.monotonic()
    await stream.aclose()  # type: ignore[attr-defined]
    assert time.monotonic() - start < 1.0
    persisted = runs.load_events("run-close")
    assert isinstance(persisted[-1], Finished) and persisted[-1].stop_reason == "cancelled"
    assert len(persisted) >= seen
    assert runs.load_evidence("run-close")


async def test_cancelling_the_consumer_task_keeps_the_evidence() -> None:
    model = ScriptedModel(cancellable_script(), text=REPORT)
    runs = store()
    engine = ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS)), runs)

    async def consume() -> None:
        async for _event in engine.run(QUESTION, run_id="run-task"):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(model.blocked.wait(), timeout=5)
    task.cancel()
    start = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - start < 1.0
    summary = runs.get_run("run-task")
    assert summary is not None and summary.status == "cancelled"
    assert runs.load_evidence("run-task")


# -- failures --------------------------------------------------------------------------


async def test_a_model_failure_mid_run_ends_with_failed_and_keeps_the_evidence() -> None:
    outage = ModelUnavailable(
        "The model server at 127.0.0.1:11434 stopped answering.", "Start Ollama again."
    )
    gaps = {"done": False, "summary": "", "gap_queries": ["Milvus hybrid search"]}
    model = ScriptedModel(script(judge={"relevant": [1, 2]}, reflect=[gaps, outage]), text=REPORT)
    runs = store()
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS)), runs).run(QUESTION, run_id="f1")
    )
    final = events[-1]
    assert isinstance(final, Failed)
    assert "stopped answering" in final.message and "Start Ollama again." in final.message
    assert "evidence found so far are saved" in final.message
    found = of(events, EvidenceAdded)
    assert found
    summary = runs.get_run("f1")
    assert (
        summary is not None
        and summary.status == "failed"
        and "stopped answering" in summary.message
    )
    assert [e.chunk_id for e in runs.load_evidence("f1")] == [e.evidence.chunk_id for e in found]


async def test_a_store_failure_mid_run_ends_with_failed_and_keeps_the_evidence() -> None:
    library = MemoryLibrary(list(MILVUS_CHUNKS))
    calls = itertools.count()

    def second_search_fails() -> None:
        if next(calls) == 1:
            library.fail_search = StoreError("The vector store could not be read (disk full).")

    library.on_search = second_search_fails
    runs = store()
    model = ScriptedModel(script(), text=REPORT)
    events = await collect(ResearchEngine(model, library, runs).run(QUESTION, run_id="f2"))
    assert isinstance(events[-1], Failed) and "disk full" in events[-1].message
    assert runs.load_evidence("f2")


async def test_a_reply_that_fails_its_format_still_counts_its_tokens() -> None:
    failed = StructuredOutputError(
        "bad reply", usage=Usage(400, 80, 0.0, "scripted", 2)
    )  # reply + repair
    model = ScriptedModel(
        script(decompose=failed), text=REPORT, prompt_tokens=100, completion_tokens=20
    )
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(
            QUESTION, budget=Budget(max_rounds=1)
        )
    )
    final = events[-1]
    assert isinstance(final, Finished)
    assert final.usage.calls == len(model.calls) + 1  # the failed decompose made two calls
    assert final.usage.prompt_tokens == 400 + 100 * (len(model.calls) - 1)


async def test_a_reply_of_the_wrong_shape_is_ignored() -> None:
    model = ScriptedModel(
        script(decompose=lambda m, s: {"sub_queries": 42}, judge="nonsense"), text=REPORT
    )
    library = MemoryLibrary(list(MILVUS_CHUNKS))
    events = await collect(
        ResearchEngine(model, library).run(QUESTION, budget=Budget(max_rounds=1))
    )
    assert isinstance(events[-1], Finished)
    assert library.search_calls[0][0] == [QUESTION]
    assert events[-1].report.evidence


async def test_an_unexpected_error_fails_the_run_with_a_sentence() -> None:
    model = ScriptedModel(script(judge=RuntimeError("boom")), text=REPORT)
    events = await collect(ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(QUESTION))
    assert isinstance(events[-1], Failed)
    assert events[-1].message.startswith(
        "The research run failed unexpectedly (RuntimeError: boom)."
    )


# -- persistence and replay ------------------------------------------------------------


async def test_replaying_a_persisted_run_rebuilds_the_same_tree() -> None:
    runs = store()
    model = ScriptedModel(script(), text=REPORT, reasoning="thinking about it")
    live = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS)), runs).run(
            QUESTION, run_id="replay", budget=Budget(max_rounds=2)
        )
    )
    persisted = runs.load_events("replay")
    assert persisted == live
    tree = build_tree(persisted)
    assert tree == build_tree(live)
    # the tree has the shape a person expects: rounds > sub-queries > judged chunks
    rounds = [n for n in tree.children if n.kind == "round"]
    assert len(rounds) == 2
    subqueries = [n for n in rounds[0].children if n.kind == "subquery"]
    assert subqueries[0].label == QUESTION
    assert {c.status for c in subqueries[0].children} <= {"relevant", "irrelevant"}
    assert any(c.status == "relevant" for c in subqueries[0].children)
    # a round's hits are judged in one call: its reasoning shows on the round
    assert "thinking about it" in rounds[0].reasoning
    assert tree.status == "finished" and tree.detail["stop_reason"] == "max_rounds"
    # reopening the store (a new process) lists the run with its report
    again = RunStore.open(app_paths())
    summary = again.list_runs()[0]
    assert summary.run_id == "replay" and summary.report_markdown == live[-1].report.markdown
    assert summary.total_tokens == live[-1].usage.total_tokens
    assert again.load_report("replay") == live[-1].report
    assert again.delete_run("replay") and again.load_events("replay") == []


async def test_a_report_that_loops_is_cut_and_its_tokens_still_counted() -> None:
    loop = "Milvus is an open-source vector database built for similarity search [1].\n" * 40
    model = ScriptedModel(
        script(reflect={"done": True, "summary": "", "gap_queries": []}), text=loop
    )
    events = await collect(ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(QUESTION))
    final = events[-1]
    assert isinstance(final, Finished)
    streamed = "".join(e.text for e in events if type(e).__name__ == "ReportDelta")
    assert streamed.count("similarity search") <= 4  # generation stopped after a few repeats
    assert final.report.markdown.count("similarity search") == 1
    assert final.usage.calls == len(model.calls)  # the cut call is counted (estimated)


async def test_one_subquery_per_round_searches_the_question_without_decomposing() -> None:
    model = ScriptedModel(
        script(reflect={"done": True, "summary": "", "gap_queries": []}), text=REPORT
    )
    library = MemoryLibrary(list(MILVUS_CHUNKS))
    engine = ResearchEngine(model, library)
    await collect(
        engine.run(QUESTION, budget=Budget(max_subqueries=1), options={"bridge_queries": False})
    )
    assert model.calls_for("decompose") == []
    assert library.search_calls == [([QUESTION], None)]
