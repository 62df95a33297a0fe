"""The status line's phases, with a scripted model (control flow; the real model's
run is timed in test_no_silent_phase.py): every model call of every mode runs
under a phase that says what it does, in order, with its counts, and counts are
throttled."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Sequence
from typing import Any

import pytest
from scripted import (
    MILVUS_CHUNKS,
    MemoryLibrary,
    ScriptedModel,
    collect,
    delayed,
    make_chunk,
    verdicts,
)
from silent_gaps import longest_gap

from app.commands.ask import Progress
from app.core.events import CitationChecked, Finished, PhaseChanged, ReportDelta, ResearchEvent
from app.core.models import Budget
from app.llm.base import Message
from app.research import phases, run_events
from app.research.engine import ResearchEngine
from app.research.model_calls import new_words
from app.research.run_events import PHASE_COUNT_INTERVAL_S, RunEvents

QUESTION = "What is Milvus and how does it compare with other vector databases?"
REPORT = "Milvus is an open-source vector database [1]. It supports hybrid search with BM25 [2]."

# the phase a model call of each task (the schema's title; "text" for a streamed reply) must run under
PHASE_OF_TASK = {
    "decompose": {phases.DECOMPOSE},
    "route": {phases.ROUTE},
    "judge": {phases.JUDGE},
    "reflect": {phases.REFLECT},
    "citation_check": {phases.CHECK},
    "plan": {phases.PLAN},
    "step_finding": {phases.STEP},
    "table_plan": {phases.PLAN},
    "extract_entities": {phases.EXTRACT},
    "fill_cells": {phases.FILL},
    "short_answer": {phases.SHORT_ANSWER},
    "findings": {phases.WRITE},
    "text": {phases.WRITE, phases.THINK, phases.ANSWER, phases.SURVEY},
}


@pytest.fixture
def timeline(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every event the run emits, in order, with a model call's task (a str) where it happened."""
    seen: list[Any] = []
    real = RunEvents.emit

    def emit(self: RunEvents, event: ResearchEvent) -> None:
        seen.append(event)
        real(self, event)

    monkeypatch.setattr(RunEvents, "emit", emit)
    return seen


def watched(model: ScriptedModel, seen: list[Any]) -> ScriptedModel:
    original = model._reply

    async def reply(task: str, messages: Sequence[Message], schema: dict[str, Any] | None) -> Any:
        seen.append(task)
        return await original(task, messages, schema)

    model._reply = reply  # type: ignore[method-assign]
    return model


def calls_under_phases(seen: list[Any]) -> list[tuple[str, str]]:
    """(task, the phase the status line showed when the call started), per model call."""
    current = ""
    out = []
    for item in seen:
        if isinstance(item, PhaseChanged):
            current = item.phase
        elif isinstance(item, str):
            out.append((item, current))
    return out


def phase_order(events: list[Any]) -> list[str]:
    order: list[str] = []
    for e in events:
        if isinstance(e, PhaseChanged) and (not order or order[-1] != e.phase):
            order.append(e.phase)
    return order


def lines(events: list[Any]) -> list[str]:
    return [e.line for e in events if isinstance(e, PhaseChanged)]


def assert_every_call_announced(seen: list[Any]) -> None:
    calls = calls_under_phases(seen)
    assert calls
    wrong = [(task, phase) for task, phase in calls if phase not in PHASE_OF_TASK[task]]
    assert wrong == [], f"model calls under the wrong phase (task, phase shown): {wrong}"


# -- the event and its throttle ----------------------------------------------------


def test_the_status_line_shows_a_count_once_one_item_is_done() -> None:
    start = PhaseChanged(run_id="r", phase="judge", text="Reading 12 passages", total=12)
    assert start.line == "Reading 12 passages"
    assert PhaseChanged(
        run_id="r", phase="judge", text="Reading 12 passages", done=5, total=12
    ).line == ("Reading 12 passages — 5 of 12")
    assert PhaseChanged(
        run_id="r", phase="reflect", text="Deciding what is still missing"
    ).line == ("Deciding what is still missing")


def test_counts_are_throttled_but_a_phase_start_and_its_last_count_never_are() -> None:
    now = [100.0]
    sent: list[PhaseChanged] = []
    events = RunEvents("r", lambda e: sent.append(e), clock=lambda: now[0])  # type: ignore[arg-type]
    events.phase("judge", "Reading 10 passages", total=10)
    for done in range(1, 10):  # ten counts within a tenth of a second: one is sent
        now[0] += 0.01
        events.count(done)
    assert [e.done for e in sent] == [0]
    now[0] += PHASE_COUNT_INTERVAL_S
    events.count(9)
    events.count(10)  # the last count goes out at once
    assert [e.done for e in sent] == [0, 9, 10]
    events.phase("judge", "Reading 10 passages", done=10, total=10)  # the same again: nothing
    events.phase("reflect", "Deciding what is still missing")  # a new phase, however soon
    assert [e.phase for e in sent] == ["judge", "judge", "judge", "reflect"]


def test_words_are_counted_across_streamed_pieces() -> None:
    pieces = ["Mil", "vus is", " a vec", "tor data", "base", ".\n", "It"]
    last, words = " ", 0
    for piece in pieces:
        words += new_words(piece, last)
        last = piece[-1]
    assert words == 6  # Milvus is a vector database. It


def test_phase_texts_are_plain_english() -> None:
    assert phases.splitting(3) == "Splitting the question into up to 3 sub-questions"
    assert phases.searching(3) == "Searching 3 sub-questions"
    assert phases.searching(1, what="question") == "Searching the library for the question"
    assert phases.searching(2, what="query") == "Searching 2 queries"
    assert phases.looking_up(1) == "Looking up 1 name nothing found mentions"
    assert phases.looking_up(2) == "Looking up 2 names nothing found mentions"
    assert phases.reading(1) == "Reading 1 passage"
    assert phases.checking(8) == "Checking 8 citations"
    assert (
        phases.writing("Writing the final answer", 3)
        == "Writing the final answer — 3 words written"
    )


# -- every mode ------------------------------------------------------------------


def deep_script() -> dict[str, Any]:
    return {
        "decompose": {
            "sub_queries": ["Milvus vector database features", "other vector databases compared"]
        },
        "route": {"routes": []},
        "judge": {"relevant": [1, 2]},
        "reflect": [
            {"done": False, "summary": "more", "gap_queries": ["Milvus index types"]},
            {"done": True},
        ],
        "citation_check": verdicts(),
    }


async def test_deep_says_each_phase_in_order_with_its_counts(
    timeline: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the judge calls answer at once; a busy machine must not space them past the throttle
    monkeypatch.setattr(run_events, "PHASE_COUNT_INTERVAL_S", 3600.0)
    chunks = [
        *MILVUS_CHUNKS,
        make_chunk("m1", "Milvus manual: index types and hybrid search.", collection="manuals"),
    ]
    model = watched(ScriptedModel(deep_script(), text=REPORT), timeline)
    events = await collect(
        ResearchEngine(model, MemoryLibrary(chunks)).run(QUESTION, budget=Budget(max_rounds=2))
    )
    assert isinstance(events[-1], Finished)
    assert_every_call_announced(timeline)
    assert phase_order(events) == [
        # round 1 (the bridge searches find only passages judged already: nothing more to read)
        *("decompose", "route", "search", "judge", "bridge", "reflect"),
        *(
            "route",
            "search",
        ),  # round 2: the gap query, whose hits were all judged (the last round: no reflection)
        *("write", "check"),
    ]
    shown = lines(events)
    assert shown[0] == "Splitting the question into up to 4 sub-questions"
    assert "Searching 3 sub-questions" in shown and "Deciding what is still missing" in shown
    reading = [e for e in events if isinstance(e, PhaseChanged) and e.phase == "judge"]
    first = reading[0]
    assert first.text == f"Reading {first.total} passages" and first.done == 0
    assert [r.done for r in reading[1:]] == [
        first.total
    ]  # the count ends at the total (steps in between dropped)
    # the report streams under "Writing the report"; its citations are checked after it, with a count
    kinds = [type(e) for e in events]
    write = next(
        i for i, e in enumerate(events) if isinstance(e, PhaseChanged) and e.phase == "write"
    )
    check = next(
        i for i, e in enumerate(events) if isinstance(e, PhaseChanged) and e.phase == "check"
    )
    deltas = [i for i, k in enumerate(kinds) if k is ReportDelta]
    assert write < deltas[0] and deltas[-1] < check < kinds.index(CitationChecked)
    assert len(deltas) > 5  # token by token, not the whole report at once
    checked = kinds.count(CitationChecked)
    assert checked >= 2 and events[check].line == f"Checking {checked} citations"


async def test_quick_plan_table_and_hds_announce_every_model_call(timeline: list[Any]) -> None:
    library_chunks = [
        *MILVUS_CHUNKS,
        make_chunk("z1", "Zilliz, the company behind Milvus, is based in Redwood City."),
    ]
    runs: dict[str, ScriptedModel] = {
        "quick": ScriptedModel({"citation_check": verdicts()}, text=REPORT),
        "plan": ScriptedModel(
            {
                "plan": {
                    "steps": [{"query": "company that makes Milvus"}, {"query": "{{step_1}} base"}]
                },
                "step_finding": {"relevant": [1], "finding": "Zilliz", "answered": False},
                "citation_check": verdicts(),
            },
            text=["A library of vector database manuals.", REPORT],
        ),
        "table": ScriptedModel(
            {
                "table_plan": {
                    "entity_type": "vector database",
                    "columns": ["maker"],
                    "queries": ["vector database"],
                },
                "extract_entities": {"entities": [{"name": "Milvus", "start": 1, "end": 1}]},
                "fill_cells": {
                    "cells": [
                        {"column": "maker", "value": "Zilliz", "confidence": 0.9, "source": 1}
                    ]
                },
                "citation_check": verdicts(),
            },
            text=REPORT,
        ),
        "hds": ScriptedModel(
            {"citation_check": verdicts()},
            text=[
                "<|begin search queries|>Zilliz location<|end search queries|>",
                "\\boxed{Redwood City}",
                REPORT,
            ],
        ),
    }
    expected = {
        "quick": ["search", "write", "check"],
        "plan": ["search", "survey", "plan", "step", "write", "check"],
        "table": ["search", "plan", "search", "extract", "fill", "write", "check"],
        "hds": ["search", "think", "search", "think", "write", "check"],
    }
    for mode, model in runs.items():
        timeline.clear()
        watched(model, timeline)
        library = MemoryLibrary(
            list(library_chunks), descriptions={"docs": "vector database manuals"}
        )
        events = await collect(
            ResearchEngine(model, library).run(QUESTION, mode=mode, budget=Budget(max_rounds=3))
        )
        assert isinstance(events[-1], Finished), (mode, events[-1])
        assert_every_call_announced(timeline)
        assert phase_order(events) == expected[mode], mode
        assert any(isinstance(e, ReportDelta) for e in events)


async def test_a_streamed_reply_nobody_sees_counts_its_words(timeline: list[Any]) -> None:
    turn = "Let me think about where the company is based first. " * 3 + "\\boxed{Redwood City}"
    model = ScriptedModel({"citation_check": verdicts()}, text=[turn, REPORT])
    library = MemoryLibrary(list(MILVUS_CHUNKS))
    events = await collect(
        ResearchEngine(model, library).run(QUESTION, mode="hds", budget=Budget(max_rounds=2))
    )
    thinking = [e for e in events if isinstance(e, PhaseChanged) and e.phase == "think"]
    assert thinking[0].line == "Deciding what to search next (turn 1)"
    # the scripted model streams faster than the throttle: the count goes out when 0.25 s have passed
    assert all(e.text.startswith("Deciding what to search next (turn 1) — ") for e in thinking[1:])


async def test_a_model_call_that_shows_nothing_keeps_the_status_line_alive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        run_events, "KEEP_ALIVE_S", 0.2
    )  # the real 1 s, scaled down with the scripted delay
    monkeypatch.setattr(run_events, "KEEP_ALIVE_CHECK_S", 0.02)
    # a sentence the independent check supports only weakly: the research model is asked too
    weak = "Milvus is an open-source vector database built for similarity search, more than rival engines manage [1]."
    model = delayed(
        ScriptedModel({"citation_check": verdicts()}, text=weak), 0.7
    )  # silent before its reply
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(QUESTION, mode="quick")
    )
    assert isinstance(events[-1], Finished)
    waits = [e for e in events if isinstance(e, PhaseChanged) and e.waited_s]
    assert [e.line for e in waits][:1] == [
        "Noting what each source says (1 s)"
    ]  # the findings step
    assert "Writing the report (1 s)" in [e.line for e in waits]
    assert {e.phase for e in waits} == {"write", "check"}  # every call waited; the search did not
    assert longest_gap(events).seconds < 0.5  # 0.2 s and the check's tick, not the 0.7 s calls
    assert longest_gap(events, progress_only=True).seconds > 0.6  # what the keep-alive covered
    # once the report streams, nothing more is said about waiting until the next call
    first_delta = next(i for i, e in enumerate(events) if isinstance(e, ReportDelta))
    check = next(
        i for i, e in enumerate(events) if isinstance(e, PhaseChanged) and e.phase == "check"
    )
    assert not any(isinstance(e, PhaseChanged) and e.waited_s for e in events[first_delta:check])


class SlowToWeighLibrary(MemoryLibrary):
    """Embeds slowly when the report weighs whether the passages answer the question
    (the one embedding call that starts with the question itself)."""

    async def embed(self, texts: list[str]) -> object:
        if texts and texts[0] == QUESTION:
            await asyncio.sleep(0.7)
        return await super().embed(texts)


async def test_weighing_whether_the_passages_answer_keeps_the_status_line_alive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(run_events, "KEEP_ALIVE_S", 0.2)  # scaled down with the slow embedding
    monkeypatch.setattr(run_events, "KEEP_ALIVE_CHECK_S", 0.02)
    model = ScriptedModel({"citation_check": verdicts()}, text=REPORT)
    events = await collect(
        ResearchEngine(model, SlowToWeighLibrary(list(MILVUS_CHUNKS))).run(QUESTION, mode="quick")
    )
    assert isinstance(events[-1], Finished)
    weighing = [e for e in events if isinstance(e, PhaseChanged) and e.text == phases.WEIGHING]
    assert weighing and weighing[0].waited_s == 0  # said when it starts
    assert any(e.waited_s for e in weighing)  # and again while the embedding takes its time
    assert longest_gap(events).seconds < 0.5  # not the 0.7 s the embedding took


def test_fathom_ask_prints_a_line_when_a_phase_starts_not_for_its_counts() -> None:
    out = io.StringIO()
    progress = Progress(out)
    for event in [
        PhaseChanged(run_id="r", phase="judge", text="Reading 12 passages", total=12),
        PhaseChanged(run_id="r", phase="judge", text="Reading 12 passages", done=5, total=12),
        PhaseChanged(run_id="r", phase="judge", text="Reading 12 passages", done=12, total=12),
        PhaseChanged(run_id="r", phase="reflect", text="Deciding what is still missing"),
        PhaseChanged(run_id="r", phase="write", text="Writing the report"),
        ReportDelta(run_id="r", text="Milvus is"),
    ]:
        progress.show(event)
    assert out.getvalue().splitlines() == [
        "… Reading 12 passages",
        "… Deciding what is still missing",
        "… Writing the report",
    ]
    quiet = io.StringIO()
    Progress(quiet, quiet=True).show(
        PhaseChanged(run_id="r", phase="write", text="Writing the report")
    )
    assert quiet.getvalue() == ""
