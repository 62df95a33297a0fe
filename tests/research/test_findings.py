"""The writer's findings step (option ``findings``): ONE structured call binds each
helpful passage to the fact it gives and reads the short answer from those facts;
the report writer then reads the findings, fenced, instead of the passages. Control
flow with a scripted model; the step is measured on MuSiQue with a real model
(``bench_musique.py --findings``)."""

from __future__ import annotations

from typing import Any

from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, verdicts

from app.core.events import Finished, Notice
from app.research.engine import ResearchEngine

QUESTION = "What is Milvus?"
OPTIONS = {"findings": True, "short_answer": True}


def base_script(findings: Any) -> dict[str, Any]:
    return {
        "decompose": {"sub_queries": ["Milvus vector database"]},
        "judge": {"relevant": [1, 2]},
        "reflect": {"done": True, "summary": "", "gap_queries": []},
        "findings": findings,
        "citation_check": verdicts(),
    }


async def test_findings_are_what_the_writer_reads_and_the_answer_comes_from_them() -> None:
    def findings(messages: list[Any], schema: dict[str, Any]) -> Any:
        shown = schema["properties"]["findings"]["items"]["properties"]["source"]["enum"]
        assert len(shown) >= 2 and "<document" in messages[-1]["content"]  # the passages, fenced
        return {
            "findings": [
                {"source": shown[0], "fact": "Milvus is a vector database."},
                {"source": 999, "fact": "A source that was not shown."},  # dropped
                {"source": shown[0], "fact": "A second fact for the same source."},  # one per source
            ],
            "answer": "a vector database",
        }

    model = ScriptedModel(base_script(findings), text="Milvus is a vector database [1].")
    events = await collect(ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(QUESTION, options=OPTIONS))
    final = events[-1]
    assert isinstance(final, Finished)
    text_calls = [c for c in model.calls if c.kind != "structured"]
    writer = text_calls[-1].messages[-1]["content"]  # the writer's user message
    assert "Milvus is a vector database." in writer and "A source that was not shown" not in writer
    assert "A second fact" not in writer
    assert writer.count("<document") == 1  # the findings, not the passages
    assert final.report.answer == "a vector database"
    assert len(final.report.answer_from) == 1
    assert not [c for c in model.calls if c.task == "short_answer"]  # no second call for the answer


async def test_an_unusable_findings_reply_falls_back_to_the_passages() -> None:
    script = {**base_script({"findings": [], "answer": ""}), "short_answer": {"answer": "a database"}}
    model = ScriptedModel(script, text="Milvus is a vector database [1].")
    events = await collect(ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(QUESTION, options=OPTIONS))
    final = events[-1]
    assert isinstance(final, Finished)
    writer = [c for c in model.calls if c.kind != "structured"][-1].messages[-1]["content"]
    assert writer.count("<document") >= 2  # the passages themselves
    assert final.report.answer == "a database"
    assert not [e for e in events if isinstance(e, Notice) and e.level == "error"]
