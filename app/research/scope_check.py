"""Whether a run's scope is complete: a collection still being indexed is searched
for what it holds so far, and the run says so at its start (a warning ``Notice``,
shown in the window and printed by ``fathom ask``) instead of searching it silently."""

from __future__ import annotations

from typing import Protocol

from app.core.events import Notice
from app.core.models import Scope
from app.ingest.indexing_state import IndexingState


class _Indexing(Protocol):
    async def indexing(self) -> list[IndexingState]: ...


async def partial_scope_notice(library: _Indexing, scope: Scope, run_id: str) -> Notice | None:
    """A warning when a collection of ``scope`` (all collections when it names none) is
    still being indexed; None when every collection in it is complete."""
    states = [
        s
        for s in await library.indexing()
        if not scope.collections or s.collection in scope.collections
    ]
    if not states:
        return None
    sentences = "; ".join(s.partial_sentence() for s in states)
    return Notice(
        run_id=run_id,
        level="warning",
        message=f"Partial: {sentences}. This run searches only what is indexed so far.",
    )
