"""Routing: which collections each search query goes to.

One structured call shows the model every collection's name and description
(fenced: they are the user's or a model's words) and the numbered queries; it
answers with collection ids per query. A query it leaves out, or routes
nowhere valid, searches the run's whole scope. With one collection or none
there is nothing to choose and no call is made.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.core.events import ROOT_NODE
from app.core.models import Collection
from app.research import phases, prompts
from app.research.context import RunContext

ROUTE_SCHEMA = prompts.object_schema(
    "route",
    {
        "routes": {
            "type": "array",
            "items": prompts.object_schema(
                "route_item", {"query": {"type": "integer"}, "collections": prompts.int_list(16)}
            ),
        }
    },
)


async def route(
    ctx: RunContext, queries: Sequence[str], *, node_id: str = ROOT_NODE
) -> list[tuple[str, ...]]:
    """Collections for each query: skipped (scope as is) when there is one collection or none;
    the status line says so under ``node_id`` (the round)."""
    collections: list[Collection] = await ctx.collections()
    if len(collections) <= 1:
        return [() for _ in queries]
    # a collection's name and description are the user's (or a model's) words: fenced
    listing = "\n".join(
        prompts.fence(i, c.description or "(no description)", max_chars=300, title=c.name)
        for i, c in enumerate(collections, start=1)
    )
    numbered = "\n".join(f"{i}. {prompts.neutralise(q)}" for i, q in enumerate(queries, start=1))
    messages = [
        prompts.system(
            "You choose where to search. For each numbered query, list the ids of the collections "
            "whose descriptions fit it. When unsure, list every collection.",
            prompts.DATA_RULE,
        ),
        prompts.user(f"Collections:\n{listing}", f"Queries:\n{numbered}"),
    ]
    ctx.events.phase(phases.ROUTE, phases.choosing_collections(len(queries)), node_id=node_id)
    value = await ctx.call_structured("root", messages, ROUTE_SCHEMA, default={"routes": []})
    chosen: dict[int, tuple[str, ...]] = {}
    for item in value.get("routes", []) if isinstance(value, dict) else []:
        if not isinstance(item, dict) or not isinstance(item.get("query"), int):
            continue
        picks = [
            c
            for c in item.get("collections", [])
            if isinstance(c, int) and 1 <= c <= len(collections)
        ]
        names = tuple(dict.fromkeys(collections[c - 1].name for c in picks))
        if names:
            chosen.setdefault(item["query"], names)
    return [chosen.get(i, ()) for i in range(1, len(queries) + 1)]
