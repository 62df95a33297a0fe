"""Table mode's control flow with a scripted model over an in-memory library:
marker ranges become the chunk's own quotes, duplicate entities merge, cells the
evidence does not support stay empty, and the table is exported."""

from __future__ import annotations

import json
from typing import Any

from scripted import MemoryLibrary, ScriptedModel, collect, make_chunk

from app.core.events import Finished, SearchFinished, SubQueryPlanned, TableReady
from app.core.models import Budget, TableCell
from app.research.engine import ResearchEngine
from app.research.entity_table import table_to_csv, table_to_json

QUESTION = "Which vector databases are mentioned, and who makes each?"
CHUNKS = [
    make_chunk("a", "Milvus is a vector database. It is made by Zilliz. It was released in 2019."),
    make_chunk(
        "b", "Qdrant is a vector database written in Rust. The Milvus project is open source."
    ),
    make_chunk("c", "Bananas grow in the tropics."),
]
PLAN = {
    "entity_type": "vector database",
    "columns": ["maker", "language"],
    "queries": ["vector database"],
}


def of(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def extract(messages: list[Any], schema: dict[str, Any]) -> dict[str, Any]:
    prompt = "\n".join(m["content"] for m in messages)
    if 'id="a"' in prompt:
        return {
            "entities": [
                {"name": "Milvus", "start": 1, "end": 2},
                {"name": "Pinecone", "start": 1, "end": 1},
            ]
        }
    if 'id="b"' in prompt:
        return {
            "entities": [
                {"name": "Qdrant", "start": 1, "end": 1},
                {"name": "the Milvus", "start": 2, "end": 9},
            ]
        }
    return {"entities": []}


def fill(messages: list[Any], schema: dict[str, Any]) -> dict[str, Any]:
    prompt = "\n".join(m["content"] for m in messages)
    if "vector database: Milvus" in prompt:
        return {
            "cells": [
                {"column": "maker", "value": "Zilliz", "confidence": 0.9, "source": 1},
                {
                    "column": "language",
                    "value": "Go and C++",
                    "confidence": 0.8,
                    "source": 1,
                },  # invented
            ]
        }
    return {"cells": [{"column": "language", "value": "Rust", "confidence": 0.7, "source": 7}]}


async def run(model: ScriptedModel, budget: Budget | None = None) -> list[Any]:
    library = MemoryLibrary(list(CHUNKS))
    return await collect(
        ResearchEngine(model, library).run(QUESTION, mode="table", budget=budget or Budget())
    )


async def test_table_run_extracts_merges_and_fills_honest_cells() -> None:
    model = ScriptedModel(
        {"table_plan": PLAN, "extract_entities": extract, "fill_cells": fill},
        text="Two databases were found [1].",
    )
    events = await run(model)
    final = events[-1]
    assert isinstance(final, Finished), final
    # searched wide: every query by keyword and by meaning
    modes = {e.search_mode for e in of(events, SearchFinished)}
    assert modes == {"bm25", "dense"}
    assert {p.text for p in of(events, SubQueryPlanned)} == {QUESTION, "vector database"}
    # the extraction prompt shows numbered sentence markers
    first = model.calls_for("extract_entities")[0].prompt
    assert "<1> " in first and "<2> " in first
    table = of(events, TableReady)[0].table
    assert final.report.table == table
    assert table.entity_type == "vector database" and table.columns == ("maker", "language")
    # "the Milvus" merged with "Milvus"; "Pinecone" is not in its chunk, so it was dropped
    assert [name for name, _ in table.rows] == ["Milvus", "Qdrant"]
    milvus, qdrant = (cells for _, cells in table.rows)
    assert milvus[0].value == "Zilliz" and milvus[0].confidence == 0.9 and milvus[0].chunk_id == "a"
    assert milvus[0].quote == "It is made by Zilliz."
    assert milvus[1] == TableCell()  # "Go and C++" is in no chunk: left empty, not invented
    assert qdrant[0] == TableCell()  # the model gave no maker
    assert qdrant[1].value == "Rust" and qdrant[1].chunk_id == "b"  # a bad source id is re-pointed
    # the report starts with the table, cells cite their evidence numbers
    number = next(e.number for e in final.report.evidence if e.chunk_id == "a")
    assert final.report.markdown.startswith("## Vector database table")
    assert f"| Milvus | Zilliz [{number}] |  |" in final.report.markdown
    assert all(e.chunk_id in {"a", "b"} for e in final.report.evidence)
    # exports
    assert table_to_csv(table).splitlines()[1].startswith("Milvus,Zilliz,0.90,a,")
    assert json.loads(table_to_json(table))["rows"][1]["cells"]["language"]["value"] == "Rust"


async def test_mentions_keep_the_chunks_own_sentences() -> None:
    quotes: list[str] = []

    def capture(messages: list[Any], schema: dict[str, Any]) -> dict[str, Any]:
        prompt = "\n".join(m["content"] for m in messages)
        if "vector database: Milvus" in prompt:
            quotes.append(prompt)
        return {"cells": []}

    model = ScriptedModel(
        {"table_plan": PLAN, "extract_entities": extract, "fill_cells": capture}, text="ok"
    )
    events = await run(model)
    table = of(events, TableReady)[0].table
    assert all(cell == TableCell() for _, cells in table.rows for cell in cells)
    assert quotes  # Milvus's row was filled from the chunks that mention it
    assert 'id="1"' in quotes[0] and 'id="2"' in quotes[0]


async def test_nonsense_plan_gives_a_one_column_table_of_the_question() -> None:
    model = ScriptedModel({"extract_entities": {"entities": "garbage"}}, text="Nothing.")
    events = await run(model)
    final = events[-1]
    assert isinstance(final, Finished), final
    table = of(events, TableReady)[0].table
    assert table.entity_type == "entity" and table.columns == ("description",)
    assert table.rows == ()
    assert {p.text for p in of(events, SubQueryPlanned)} == {QUESTION}


async def test_token_budget_stops_filling_and_keeps_the_rows() -> None:
    model = ScriptedModel(
        {"table_plan": PLAN, "extract_entities": extract, "fill_cells": fill},
        text="ok",
        prompt_tokens=200,
        completion_tokens=0,
    )
    # plan + 2 extractions (the banana chunk is never found) = 600 tokens: no fill call is allowed
    events = await run(model, Budget(max_tokens=600))
    final = events[-1]
    assert final.stop_reason == "max_tokens"
    table = of(events, TableReady)[0].table
    assert [name for name, _ in table.rows] == ["Milvus", "Qdrant"]
    assert all(cell == TableCell() for _, cells in table.rows for cell in cells)
    assert any("Cells not filled" in q for q in final.report.open_questions)
