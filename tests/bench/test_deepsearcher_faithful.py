"""The benchmark's DeepSearcher-faithful loop (deepsearcher_faithful.py), run through
the engine with a scripted model: it judges chunk by chunk and costs more than deep;
the product does not offer it as a mode."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "research"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from deepsearcher_faithful import MODE, run_faithful  # noqa: E402
from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, verdicts  # noqa: E402

from app.core.events import Failed, Finished, RunStarted, SearchFinished, SubQueryPlanned  # noqa: E402
from app.research.engine import ResearchEngine  # noqa: E402

QUESTION = "What is Milvus and how does it compare with other vector databases?"
REPORT = "Milvus is an open-source vector database built for similarity search [1]."
SCRIPT: dict[str, Any] = {
    "decompose": {
        "sub_queries": ["Milvus vector database features", "other vector databases compared"]
    },
    "judge": {"relevant": [1, 2]},
    "judge_chunk": {"relevant": True},
    "reflect": {"done": True, "summary": "enough", "gap_queries": []},
    "citation_check": verdicts(),
}


def of(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def test_faithful_variant_judges_each_chunk_and_costs_more() -> None:
    library = MemoryLibrary(list(MILVUS_CHUNKS))
    faithful = ScriptedModel(dict(SCRIPT), text=REPORT)
    events = await collect(
        ResearchEngine(faithful, library).run(QUESTION, mode=MODE, runner=run_faithful)
    )
    assert isinstance(events[0], RunStarted) and events[0].mode == MODE
    assert isinstance(events[-1], Finished)
    hits = sum(len(e.hits) for e in of(events, SearchFinished))
    assert len(faithful.calls_for("judge_chunk")) == hits > 3
    assert faithful.calls_for("judge") == []
    assert QUESTION not in [p.text for p in of(events, SubQueryPlanned)]
    # as in DeepSearcher, each per-chunk call lists the round's queries (not the question)
    first_round = [p.text for p in of(events, SubQueryPlanned) if p.round_no == 1]
    prompt = faithful.calls_for("judge_chunk")[0].messages[-1]["content"]
    assert all(f"- {q}" in prompt for q in first_round) and "<question>" not in prompt

    deep = ScriptedModel(dict(SCRIPT), text=REPORT)
    deep_events = await collect(ResearchEngine(deep, library).run(QUESTION))
    assert deep_events[-1].usage.total_tokens < events[-1].usage.total_tokens


async def test_the_product_has_no_faithful_mode() -> None:
    engine = ResearchEngine(ScriptedModel(dict(SCRIPT)), MemoryLibrary(list(MILVUS_CHUNKS)))
    events = await collect(engine.run(QUESTION, mode=MODE))
    assert (
        isinstance(events[-1], Failed) and f"Unknown research mode '{MODE}'" in events[-1].message
    )
