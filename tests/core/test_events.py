"""Events are persisted and replayed: every event type must survive the round trip."""

from __future__ import annotations

import dataclasses

from app.core import events as ev
from app.core.models import (
    Budget,
    Chunk,
    Citation,
    EntityTable,
    Evidence,
    EvidenceStatus,
    Hit,
    IngestCounts,
    Report,
    TableCell,
    Usage,
)

CHUNK = Chunk(
    "c1", "d1", "docs", "/x/a.md", "text", title="A", headings=("H1", "H2"), page=4, chunk_no=2
)
EVIDENCE = Evidence(1, "c1", "what?", "quote", "/x/a.md", page=4, status=EvidenceStatus.SUPPORTING)
TABLE = EntityTable(
    "tool", ("name", "year"), (("Milvus", (TableCell("Milvus", 0.9, "c1"), TableCell())),)
)
SAMPLES: list[ev.Event] = [
    ev.RunStarted(
        run_id="r", question="q", mode="deep", collections=("a",), budget=Budget(max_rounds=2)
    ),
    ev.RoundStarted(run_id="r", node_id="n1", round_no=1),
    ev.PlanWritten(run_id="r", node_id="p", steps=("s1", "s2")),
    ev.SubQueryPlanned(run_id="r", node_id="q1", parent_id="n1", text="sub", collections=("a",)),
    ev.SearchFinished(run_id="r", node_id="q1", hits=(Hit(CHUNK, 0.7, "sub"),)),
    ev.ChunkJudged(run_id="r", node_id="q1", chunk_id="c1", relevant=True, score=0.9),
    ev.ReasoningDelta(run_id="r", node_id="q1", text="hmm"),
    ev.Reflected(
        run_id="r", node_id="f1", parent_id="n1", summary="s", gap_queries=("g",), done=False
    ),
    ev.StepFinished(run_id="r", node_id="q1", finding="f", answered=True),
    ev.EvidenceAdded(run_id="r", evidence=EVIDENCE),
    ev.ReportStarted(run_id="r"),
    ev.ReportDelta(run_id="r", text="# Hi [1]"),
    ev.CitationChecked(run_id="r", citation=Citation(1, "Hi [1]", supported=False, note="no")),
    ev.TableReady(run_id="r", table=TABLE),
    ev.UsageUpdated(run_id="r", total=Usage(10, 5, 1.5, "m", 2)),
    ev.Notice(run_id="r", message="careful", level="warning"),
    ev.PhaseChanged(
        run_id="r", phase="judge", text="Reading 12 passages", done=5, total=12, node_id="round1"
    ),
    ev.Finished(
        run_id="r",
        report=Report("# Hi", evidence=(EVIDENCE,), open_questions=("why",), table=TABLE),
        usage=Usage(1, 2),
        stop_reason="completed",
    ),
    ev.Failed(run_id="r", message="model died"),
    ev.IngestStarted(collection="c", total_files=3),
    ev.FileStarted(collection="c", path="/a"),
    ev.FileDone(collection="c", path="/a", status="failed", reason="encrypted"),
    ev.IngestProgress(collection="c", done_files=1, total_files=3, chunks=9, eta_s=None),
    ev.IngestFinished(
        collection="c",
        indexed=1,
        unchanged=0,
        skipped=1,
        failed=1,
        removed=0,
        chunks=9,
        elapsed_s=1.0,
        failures=(("/a", "encrypted"),),
    ),
]


def test_every_event_type_round_trips() -> None:
    covered = {type(event) for event in SAMPLES}
    every_type = {
        cls for cls in ev._EVENT_TYPES.values() if cls not in (ev.ResearchEvent, ev.IngestEvent)
    }
    # An event type added without a sample here would escape the persistence check.
    assert every_type - covered == set()
    for event in SAMPLES:
        assert ev.event_from_dict(ev.event_to_dict(event)) == event


def test_usage_adds_up() -> None:
    total = Usage(10, 5, 1.0, "a") + Usage(3, 2, 0.5, "b")
    assert (total.prompt_tokens, total.completion_tokens, total.calls) == (13, 7, 2)
    assert total.total_tokens == 20 and total.model == "a,b"


def test_an_ingest_s_counts_are_one_type_from_tally_to_event_to_catalog_row() -> None:
    counts = (
        IngestCounts()
        .counted("indexed", 4)
        .counted("indexed", 2)
        .counted("failed")
        .counted("unchanged")
    )
    assert counts == IngestCounts(indexed=2, chunks=6, failed=1, unchanged=1) and counts.done == 4
    assert counts.counted("no such status") == counts
    finished = ev.IngestFinished(collection="c", elapsed_s=1.0, **dataclasses.asdict(counts))
    assert finished.counts() == counts
    assert ev.event_from_dict(ev.event_to_dict(finished)) == finished
