"""Stopping a run waits until its work has really ended (nothing left running
behind it, however long the clean-up takes), and keeps every piece of
evidence it found: in the final report and in the history."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, verdicts

from app.core.events import EvidenceAdded, Finished, ResearchEvent
from app.core.models import Budget
from app.core.paths import app_paths
from app.llm.base import Message
from app.research.engine import ResearchEngine
from app.store.research_runs import RunStore

QUESTION = "What is Milvus and how does it compare with other vector databases?"
REPORT = "Milvus is an open-source vector database built for similarity search [1]."
UNWIND_S = 1.0  # longer than any fixed grace period a stop might give up after


def script() -> dict[str, Any]:
    gaps = {"done": False, "summary": "", "gap_queries": ["Milvus hybrid search"]}
    return {
        "decompose": {"sub_queries": ["Milvus features", "vector database comparison"]},
        "judge": {"relevant": [1, 2]},
        "reflect": gaps,
        "citation_check": verdicts(),
    }


class SlowToStop(ScriptedModel):
    """The reflection hangs; cancelled, it takes UNWIND_S to clean up (as a call
    that must release a server connection does)."""

    def __init__(self) -> None:
        super().__init__(script(), text=REPORT)
        self.unwound = False

    async def _reply(
        self, task: str, messages: Sequence[Message], schema: dict[str, Any] | None
    ) -> Any:
        if task == "reflect":
            self.blocked.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await asyncio.sleep(UNWIND_S)
                self.unwound = True
                raise
        return await super()._reply(task, messages, schema)


def mode_task(run_id: str) -> asyncio.Task[Any] | None:
    return next((t for t in asyncio.all_tasks() if t.get_name() == f"research-{run_id}"), None)


def saved(run_id: str) -> tuple[Any, list[Any], list[Any]]:
    runs = RunStore.open(app_paths())
    try:
        return runs.get_run(run_id), runs.load_events(run_id), runs.load_evidence(run_id)
    finally:
        runs.close()


async def test_stop_waits_for_a_slow_clean_up_and_keeps_the_evidence() -> None:
    model = SlowToStop()
    engine = ResearchEngine(
        model, MemoryLibrary(list(MILVUS_CHUNKS)), history=app_paths().ensure().catalog_file
    )
    events: list[ResearchEvent] = []
    work: asyncio.Task[Any] | None = None
    done_at_end: bool | None = None
    async for event in engine.run(QUESTION, run_id="slow"):
        events.append(event)
        if work is None and model.blocked.is_set():
            work = mode_task("slow")
            assert work is not None and not work.done()
            assert engine.stop("slow")
        if isinstance(event, Finished):
            done_at_end = work is not None and work.done()  # as the end is told, the work is over
    assert done_at_end is True and model.unwound
    assert mode_task("slow") is None and engine.active_runs == []
    final = events[-1]
    assert isinstance(final, Finished) and final.stop_reason == "cancelled"
    found = [e.evidence.chunk_id for e in events if isinstance(e, EvidenceAdded)]
    assert found and [e.chunk_id for e in final.report.evidence] == found
    for evidence in final.report.evidence:
        assert evidence.quote[:40] in final.report.markdown  # shown in the partial report
    summary, stored_events, stored_evidence = saved("slow")
    assert summary is not None and summary.status == "cancelled"
    assert stored_events == events  # what the user saw is what History replays
    assert [e.chunk_id for e in stored_evidence] == found


async def test_closing_the_stream_waits_for_the_clean_up_too() -> None:
    model = SlowToStop()
    engine = ResearchEngine(
        model, MemoryLibrary(list(MILVUS_CHUNKS)), history=app_paths().ensure().catalog_file
    )
    stream = engine.run(QUESTION, run_id="closed")
    async for _event in stream:
        if model.blocked.is_set():
            break
    work = mode_task("closed")
    assert work is not None
    await stream.aclose()  # type: ignore[attr-defined]
    assert work.done() and model.unwound
    summary, stored_events, stored_evidence = saved("closed")
    assert summary is not None and summary.status == "cancelled"
    final = stored_events[-1]
    assert (
        isinstance(final, Finished) and final.stop_reason == "cancelled" and final.report.evidence
    )
    assert [e.chunk_id for e in stored_evidence] == [e.chunk_id for e in final.report.evidence]


@pytest.mark.slow
async def test_stopping_a_run_of_the_real_model_ends_its_work_and_keeps_the_evidence(
    starter_llm: Any,
) -> None:
    engine = ResearchEngine(
        starter_llm, MemoryLibrary(list(MILVUS_CHUNKS)), history=app_paths().ensure().catalog_file
    )
    budget = Budget(max_rounds=3, max_subqueries=2, top_k=3, max_seconds=300)
    events: list[ResearchEvent] = []
    work: asyncio.Task[Any] | None = None
    asked_at = 0.0
    done_at_end: bool | None = None
    async for event in engine.run(
        QUESTION, run_id="real", budget=budget, options={"report_max_tokens": 60}
    ):
        events.append(event)
        if work is None and isinstance(event, EvidenceAdded):  # midway: something found, more to do
            work = mode_task("real")
            assert work is not None and not work.done(), "the run ended before it could be stopped"
            asked_at = time.monotonic()
            assert engine.stop("real")
        if isinstance(event, Finished):
            done_at_end = work is not None and work.done()
    took = time.monotonic() - asked_at
    assert done_at_end is True and mode_task("real") is None
    final = events[-1]
    assert isinstance(final, Finished) and final.stop_reason == "cancelled"
    assert took < 5.0, f"stopping took {took:.1f} s"  # an in-flight generation stops within a token
    found = [e.evidence.chunk_id for e in events if isinstance(e, EvidenceAdded)]
    assert found and [e.chunk_id for e in final.report.evidence] == found
    summary, stored_events, stored_evidence = saved("real")
    assert summary is not None and summary.status == "cancelled"
    assert stored_events == events
    assert [e.chunk_id for e in stored_evidence] == found
    # the model is free again: the next call is answered, not queued behind a leftover generation
    reply = await asyncio.wait_for(
        starter_llm.chat([{"role": "user", "content": "Say yes."}], max_tokens=4), 60
    )
    assert reply.usage.completion_tokens >= 1
