"""table: deep-seek's entity census.

Search the question wide, by keyword (BM25) and by meaning (dense) → plan
the entity type, the attribute columns and a few more search queries
(structured) and search them wide too → extract entity mentions chunk by chunk: each chunk is
shown with numbered sentence markers and the model answers with entity names
and marker ranges, never copied text; a name the chunk does not contain is
dropped → merge duplicate entities by normalised name → fill each entity's
cells in one call: value, confidence 0–1 and which chunk says so; a value its
chunk does not contain is dropped (empty cell) or, when only partly there,
kept with low confidence → ``TableReady`` and a cited report that starts with
the table. CSV/JSON export lives in :mod:`app.research.entity_table`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from app.core.events import ROOT_NODE, ChunkJudged, PlanWritten, SubQueryOrigin, TableReady
from app.core.models import Chunk, EntityTable, Hit, Report, TableCell
from app.research import phases, prompts
from app.research.budget import BudgetHit
from app.research.context import RunContext, SearchRequest
from app.research.entity_table import (
    Mention,
    MergedEntity,
    build_table,
    checked_cell,
    merge_mentions,
    plan_columns,
    support_ratio,
    table_to_markdown,
    tidy_table_report,
)
from app.research.report import WRITER_RULES
from app.research.sentence_markers import mark_sentences, parse_ranges, quote_for, split_sentences

MAX_COLUMNS = 5
MAX_ENTITIES_PER_CHUNK = 6
CHUNKS_PER_ENTITY = 3
CELL_CHARS = 900
MARKED_CHARS = 2400
KEEP_WHEN_EMPTY = 3


def table_plan_schema(max_queries: int) -> dict[str, Any]:
    return prompts.object_schema(
        "table_plan",
        {
            "entity_type": {"type": "string", "maxLength": 60},
            "columns": prompts.string_list(MAX_COLUMNS, min_items=1),
            "queries": prompts.string_list(max(1, max_queries)),
        },
    )


EXTRACT_SCHEMA = prompts.object_schema(
    "extract_entities",
    {
        "entities": {
            "type": "array",
            "maxItems": MAX_ENTITIES_PER_CHUNK,
            "items": prompts.object_schema(
                "mention",
                {
                    "name": {"type": "string", "maxLength": 80},
                    "start": {"type": "integer"},
                    "end": {"type": "integer"},
                },
            ),
        }
    },
)


def fill_schema(columns: Sequence[str]) -> dict[str, Any]:
    cell = prompts.object_schema(
        "cell",
        {
            "column": {"type": "string", "enum": list(columns)},
            "value": {"type": "string", "maxLength": 120},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "source": {"type": "integer"},
        },
    )
    return prompts.object_schema(
        "fill_cells", {"cells": {"type": "array", "items": cell, "maxItems": len(columns)}}
    )


# -- plan -------------------------------------------------------------------------


def _strings(value: Any, limit: int, max_chars: int = 80) -> list[str]:
    out: list[str] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, str):
            text = " ".join(item.split())[:max_chars].strip(" .:;,")
            if text and text.casefold() not in {o.casefold() for o in out}:
                out.append(text)
        if len(out) >= limit:
            break
    return out


async def plan_table(ctx: RunContext) -> tuple[str, list[str], list[str]]:
    """(entity type, columns, search queries); a reply that makes no sense gives a
    one-column table of the question's entities, searched by the question."""
    max_queries = max(1, ctx.budget.max_subqueries - 1)
    rule, earlier_answers = ctx.earlier_prompt()  # a follow-up: the earlier answers, fenced
    messages = [
        prompts.system(
            "You plan a table that answers the user's question from a private document library.",
            "Name the kind of entity that the table lists (one row per entity), up to "
            f"{MAX_COLUMNS} attribute columns the question asks about, and up to {max_queries} short "
            "search queries that would find such entities. Use the question's own terms.",
            prompts.DATA_RULE if earlier_answers else "",
            rule,
        ),
        prompts.user(earlier_answers, prompts.question_block(ctx.question)),
    ]
    default = {"entity_type": "", "columns": [], "queries": []}
    schema = table_plan_schema(max_queries)
    ctx.events.phase(phases.PLAN, phases.PLANNING_TABLE)
    value = await ctx.call_structured("root", messages, schema, default=default)
    if not isinstance(value, dict):
        value = default
    entity_type = value.get("entity_type") if isinstance(value.get("entity_type"), str) else ""
    # the entity type and the columns go into later prompts' instructions: no markup in them
    entity_type = prompts.neutralise(" ".join(str(entity_type).split())[:60]) or "entity"
    planned = [prompts.neutralise(c) for c in _strings(value.get("columns"), MAX_COLUMNS)]
    columns = plan_columns(entity_type, planned, reserved=schema["properties"]) or ["description"]
    queries = _strings(value.get("queries"), max_queries, max_chars=300)
    return entity_type, columns, queries


# -- search wide --------------------------------------------------------------------


async def search_wide(ctx: RunContext, parent_id: str, texts: Sequence[str]) -> list[list[Hit]]:
    """Every text by keyword (BM25) and by meaning (dense): the ranked hit lists."""
    texts = ctx.cap_subqueries(list(texts)) if texts else []
    ranked: list[list[Hit]] = []
    if texts:
        what = "question" if list(texts) == [ctx.question] else "query"
        ctx.events.phase(phases.SEARCH, phases.searching(len(texts), what=what), node_id=parent_id)
    for mode in ("bm25", "dense"):
        ctx.check_budget()
        requests = []
        for text in texts[: ctx.tracker.search_calls_left]:
            origin: SubQueryOrigin = "original" if text == ctx.question else "table"
            sq = ctx.plan_subquery(text, parent_id=parent_id, origin=origin)
            requests.append(SearchRequest(node_id=sq.node_id, text=text))
        if not requests:
            break
        ranked += await ctx.search(requests, mode=mode)  # type: ignore[arg-type]
    return ranked


def interleave(ranked: Sequence[Sequence[Hit]]) -> list[Hit]:
    """Hits merged by chunk id, best ranks of every list first."""
    merged: dict[str, Hit] = {}
    depth = max((len(r) for r in ranked), default=0)
    for rank in range(depth):
        for hits in ranked:
            if rank < len(hits):
                merged.setdefault(hits[rank].chunk.chunk_id, hits[rank])
    return list(merged.values())


# -- mentions -----------------------------------------------------------------------


async def extract_mentions(ctx: RunContext, entity_type: str, chunk: Chunk) -> list[Mention]:
    """Entity names in one chunk, each with the marker range that mentions it."""
    marked = mark_sentences(chunk.text[:MARKED_CHARS])
    if not marked.sentences:
        return []
    messages = [
        prompts.system(
            f"You find every {entity_type} named in a document.",
            prompts.DATA_RULE,
            "Each sentence of the document starts with a number in angle brackets. For each "
            f"{entity_type} the document names, give its name as written and the numbers of the first "
            "and last sentences about it (start and end). Give numbers, do not copy sentences. "
            "Give an empty list when there is none.",
        ),
        prompts.user(
            prompts.question_block(ctx.question),
            prompts.fence(
                chunk.chunk_id, marked.text, max_chars=MARKED_CHARS + 400, title=chunk.title
            ),
        ),
    ]
    value = await ctx.call_structured("root", messages, EXTRACT_SCHEMA, default={"entities": []})
    items = value.get("entities", []) if isinstance(value, dict) else []
    mentions: list[Mention] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        name = " ".join(item["name"].split())[:80]
        # a name the chunk does not contain is invented: drop it
        if not name or support_ratio(name, chunk.text) < 1.0:
            continue
        ranges = parse_ranges(item, len(marked.sentences))
        quote = quote_for(marked, ranges) if ranges else _sentence_with(marked.sentences, name)
        mentions.append(Mention(name=name, chunk_id=chunk.chunk_id, quote=quote))
    return mentions


def _sentence_with(sentences: Sequence[str], value: str) -> str:
    """The sentence that best contains ``value`` (for a cell's quote)."""
    if not sentences:
        return ""
    return max(sentences, key=lambda s: support_ratio(value, s))


# -- cells ----------------------------------------------------------------------


async def fill_row(
    ctx: RunContext,
    entity: MergedEntity,
    entity_type: str,
    columns: Sequence[str],
    chunks: dict[str, Chunk],
) -> tuple[TableCell, ...]:
    """One call per entity: a value, a confidence and a source per column; checked against the source."""
    sources = [chunks[c] for c in entity.chunk_ids if c in chunks][:CHUNKS_PER_ENTITY]
    if not sources:
        return tuple(TableCell() for _ in columns)
    docs = "\n".join(
        prompts.fence(i, c.text, max_chars=CELL_CHARS, title=c.title)
        for i, c in enumerate(sources, 1)
    )
    messages = [
        prompts.system(
            f"You fill one row of a table about a {entity_type}.",
            prompts.DATA_RULE,
            "For each column, give the value as the documents state it, your confidence from 0 to 1, and "
            "the id of the document that states it. Leave a column out when no document states it; "
            "never guess.",
        ),
        prompts.user(
            # the entity's name was read from a document: data, like the documents
            prompts.fence("row", f"{entity_type}: {entity.name}\nColumns: " + "; ".join(columns)),
            docs,
        ),
    ]
    value = await ctx.call_structured("root", messages, fill_schema(columns), default={"cells": []})
    items = value.get("cells", []) if isinstance(value, dict) else []
    cells: dict[str, TableCell] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        column, raw, source = item.get("column"), item.get("value"), item.get("source")
        if column not in columns or not isinstance(raw, str) or column in cells:
            continue
        if (
            not isinstance(source, int)
            or isinstance(source, bool)
            or not 1 <= source <= len(sources)
        ):
            source = 1 + max(range(len(sources)), key=lambda i: support_ratio(raw, sources[i].text))
        chunk = sources[source - 1]
        confidence = item.get("confidence", 0.5)
        quote = _sentence_with(split_sentences(chunk.text), raw)
        cell = checked_cell(
            raw,
            confidence if isinstance(confidence, (int, float)) else 0.5,
            chunk.chunk_id,
            chunk.text,
            quote,
        )
        if cell.value:
            cells[str(column)] = cell
    return tuple(cells.get(c, TableCell()) for c in columns)


def _table_markdown(ctx: RunContext, table: EntityTable) -> str:
    numbers = {}
    for _, cells in table.rows:
        for cell in cells:
            number = ctx.evidence.number_of(cell.chunk_id) if cell.chunk_id else None
            if number is not None:
                numbers[cell.chunk_id] = number
    return table_to_markdown(table, numbers)


async def run_mode(ctx: RunContext) -> Report:
    max_chunks = ctx.options.table_max_chunks
    max_rows = ctx.options.table_max_rows
    entity_type, columns = "entity", ["description"]
    entities: list[MergedEntity] = []
    rows: list[tuple[str, tuple[TableCell, ...]]] = []
    chunks: dict[str, Chunk] = {}
    first: list[Hit] = []
    try:
        # the question itself is searched first, wide: a run cut short still has evidence
        ranked = await search_wide(ctx, ROOT_NODE, [ctx.question])
        first = interleave(ranked)
        entity_type, columns, queries = await plan_table(ctx)
        plan_node = ctx.new_node_id("plan")
        ctx.emit(
            PlanWritten(
                run_id=ctx.run_id,
                node_id=plan_node,
                steps=(f"Find every {entity_type}", *(f"Fill column: {c}" for c in columns)),
            )
        )
        ctx.start_round(plan_node)
        more = [q for q in queries if q.casefold() != ctx.question.casefold()]
        ranked += await search_wide(ctx, plan_node, more[: max(0, ctx.budget.max_subqueries - 1)])
        hits = interleave(ranked)[:max_chunks]
        chunks = {h.chunk.chunk_id: h.chunk for h in hits}
        mentions: list[Mention] = []
        ctx.events.phase(
            phases.EXTRACT, phases.finding_entities(len(hits)), total=len(hits), node_id=plan_node
        )
        for read, hit in enumerate(hits, 1):
            found = await extract_mentions(ctx, entity_type, hit.chunk)
            ctx.events.count(read)
            mentions += found
            ctx.emit(
                ChunkJudged(
                    run_id=ctx.run_id,
                    node_id=plan_node,
                    chunk_id=hit.chunk.chunk_id,
                    relevant=bool(found),
                    score=float(len(found)),
                    reason=", ".join(m.name for m in found)[:200],
                )
            )
        entities = merge_mentions(mentions)
        if len(entities) > max_rows:
            ctx.open_questions.append(
                f"{len(entities) - max_rows} more {entity_type} entries were found but not enriched: "
                + ", ".join(e.name for e in entities[max_rows:])[:300]
            )
            entities = entities[:max_rows]
        if entities:
            ctx.events.phase(
                phases.FILL, phases.filling(len(entities)), total=len(entities), node_id=plan_node
            )
        for entity in entities:
            cells = await fill_row(ctx, entity, entity_type, columns, chunks)
            rows.append((entity.name, cells))
            ctx.events.count(len(rows))
        ctx.stop("completed")
    except BudgetHit as stop:
        ctx.stop(stop.budget)
        missing = [e.name for e in entities[len(rows) :]]
        if missing:
            ctx.open_questions.append("Cells not filled (budget): " + ", ".join(missing)[:300])
    rows += [(e.name, tuple(TableCell() for _ in columns)) for e in entities[len(rows) :]]
    table = build_table(entity_type, columns, rows)
    # evidence: every chunk a cell cites, then the chunks that only named an entity
    for name, cells in table.rows:
        for column, cell in zip(table.columns, cells, strict=True):
            if cell.chunk_id in chunks:
                ctx.add_evidence(
                    Hit(chunk=chunks[cell.chunk_id], score=cell.confidence), f"{name}: {column}"
                )
    for entity in entities:
        for chunk_id in entity.chunk_ids:
            if chunk_id in chunks:
                ctx.add_evidence(
                    Hit(chunk=chunks[chunk_id], score=0.0), f"{entity_type}: {entity.name}"
                )
    if not len(ctx.evidence):  # nothing enriched: the question's own best hits are the evidence
        for best in first[:KEEP_WHEN_EMPTY]:
            ctx.add_evidence(best, ctx.question)
    ctx.emit(TableReady(run_id=ctx.run_id, table=table))
    table_md = _table_markdown(ctx, table) if table.rows else f"No {entity_type} was found."
    # the table's names and values were read from the documents: data, fenced
    guidance = (
        f"A table of {entity_type} was built from the documents:\n"
        + prompts.fence("table", table_md, max_chars=3000)
        + "\nSummarise what the table shows and what it leaves empty."
    )
    preface = f"## {entity_type.capitalize()} table\n\n{table_md}"
    report = await ctx.write_report(guidance=guidance, preface=preface)
    # the table once (above), and no line of the prompt in the summary a small model writes under it
    instructions = [guidance, *WRITER_RULES]
    report = tidy_table_report(report, len(preface.strip().splitlines()), instructions)
    return dataclasses.replace(report, table=table)
