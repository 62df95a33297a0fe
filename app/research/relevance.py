"""Relevance picks: a judge's reply (``{"relevant": [ids]}``) made into ranked hits.

Rank, don't delete: the passages the model lists, in its order (ids out of
range and repeats dropped), are the relevant ones, best first; when it lists
none that is usable, the first retrieval hits are kept, and the
``ChunkJudged`` events say why. Used by the deep judge and the plan step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.events import ChunkJudged
from app.core.models import Hit
from app.research.run_events import RunEvents

KEPT_REASON = "kept: top retrieval hit (the model selected none)"


def ranked_picks(value: Any, count: int, keep_when_none: int) -> tuple[list[int], str]:
    """The 0-based indexes of the passages the reply picks among ``count`` (ids 1 to
    ``count``), best first, and a reason: "" when the model picked them, else
    :data:`KEPT_REASON` for the first ``keep_when_none`` kept in their place."""
    raw = value.get("relevant") if isinstance(value, dict) else None
    picked: list[int] = []
    for i in raw if isinstance(raw, list) else []:
        if (
            isinstance(i, int)
            and not isinstance(i, bool)
            and 1 <= i <= count
            and i - 1 not in picked
        ):
            picked.append(i - 1)
    if picked:
        return picked, ""
    return list(range(min(keep_when_none, count))), KEPT_REASON


def emit_judgements(
    events: RunEvents, judged: Sequence[tuple[str, Hit]], picked: Sequence[int], reason: str
) -> None:
    """One ``ChunkJudged`` per ``(sub-query node, hit)`` in ``judged``: a picked hit is
    relevant, scored by its rank (the best 1.0); the others score 0."""
    order = {index: rank for rank, index in enumerate(picked)}
    for index, (node_id, hit) in enumerate(judged):
        relevant = index in order
        events.emit(
            ChunkJudged(
                run_id=events.run_id,
                node_id=node_id,
                chunk_id=hit.chunk.chunk_id,
                relevant=relevant,
                score=round(1.0 - order[index] / len(judged), 4) if relevant else 0.0,
                reason=reason if relevant else "",
            )
        )
