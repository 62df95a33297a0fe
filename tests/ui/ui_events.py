"""A hand-built event sequence of a deep run (two rounds, a gap query, a report).

Used only by the deterministic tests of the tree model's bookkeeping; the
tests that prove the window works run the real engine.
"""

from __future__ import annotations

from app.core.events import (
    ChunkJudged,
    CitationChecked,
    EvidenceAdded,
    Finished,
    Notice,
    ReasoningDelta,
    Reflected,
    ReportDelta,
    ReportStarted,
    ResearchEvent,
    RoundStarted,
    RunStarted,
    SearchFinished,
    SubQueryPlanned,
    UsageUpdated,
)
from app.core.models import Chunk, Citation, Evidence, Hit, Report, Usage

RUN = "run-1"


def _chunk(i: int) -> Chunk:
    return Chunk(
        chunk_id=f"c{i}",
        doc_id=f"d{i % 3}",
        collection="docs",
        path=f"/docs/file{i % 3}.md",
        text=f"Chunk {i} says Milvus stores vectors.",
        title=f"File {i % 3}",
        page=i % 2 or None,
        chunk_no=i,
    )


def deep_run_events() -> list[ResearchEvent]:
    events: list[ResearchEvent] = [
        RunStarted(run_id=RUN, question="What is Milvus?", mode="deep", model="m")
    ]
    chunk_no = 0
    for round_no in (1, 2):
        rid = f"r{round_no}"
        events.append(RoundStarted(run_id=RUN, node_id=rid, round_no=round_no))
        for q in range(2):
            qid = f"{rid}q{q}"
            origin = "gap" if round_no == 2 else "decompose"
            events.append(
                SubQueryPlanned(
                    run_id=RUN,
                    node_id=qid,
                    parent_id=rid,
                    text=f"query {qid}",
                    round_no=round_no,
                    origin=origin,
                )
            )
            events.append(ReasoningDelta(run_id=RUN, node_id=qid, text=f"thinking about {qid} "))
            hits = []
            for _ in range(3):
                hits.append(
                    Hit(chunk=_chunk(chunk_no), score=1.0 / (chunk_no + 1), query=f"query {qid}")
                )
                chunk_no += 1
            events.append(SearchFinished(run_id=RUN, node_id=qid, hits=tuple(hits)))
            for k, hit in enumerate(hits):
                events.append(
                    ChunkJudged(
                        run_id=RUN,
                        node_id=qid,
                        chunk_id=hit.chunk.chunk_id,
                        relevant=k != 1,
                        reason="r",
                    )
                )
            events.append(
                UsageUpdated(
                    run_id=RUN, total=Usage(prompt_tokens=100 * chunk_no, completion_tokens=10)
                )
            )
        events.append(
            Reflected(
                run_id=RUN,
                node_id=f"{rid}x",
                parent_id=rid,
                summary="gaps remain",
                gap_queries=("more?",),
                done=round_no == 2,
            )
        )
    events.append(Notice(run_id=RUN, message="budget nearly spent", level="warning"))
    evidence = (
        Evidence(
            number=1,
            chunk_id="c0",
            subquery="query r1q0",
            quote="Chunk 0 says",
            path="/docs/file0.md",
        ),
        Evidence(
            number=2,
            chunk_id="c2",
            subquery="query r1q0",
            quote="Chunk 2 says",
            path="/docs/file2.md",
            page=1,
        ),
    )
    for e in evidence:
        events.append(EvidenceAdded(run_id=RUN, evidence=e))
    events.append(ReportStarted(run_id=RUN))
    text = "# Milvus\n\nMilvus stores vectors [1]. It also scales [2]. Made up [3].\n"
    for i in range(0, len(text), 7):
        events.append(ReportDelta(run_id=RUN, text=text[i : i + 7]))
    events.append(
        CitationChecked(
            run_id=RUN, citation=Citation(number=2, sentence="It also scales", supported=False)
        )
    )
    report = Report(
        markdown=text,
        evidence=evidence,
        citations=(
            Citation(number=1, sentence="s", supported=True),
            Citation(number=2, sentence="t", supported=False),
        ),
    )
    events.append(
        Finished(
            run_id=RUN,
            report=report,
            usage=Usage(prompt_tokens=1200, completion_tokens=80),
            stop_reason="completed",
            elapsed_s=3.5,
        )
    )
    return events
