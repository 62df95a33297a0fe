"""The one sentence for a collection name that is no collection."""

from __future__ import annotations

from app.core.collection_names import no_such_collection


def test_names_that_are_no_collection_are_said_with_the_collections_there_are() -> None:
    assert no_such_collection(["pdff"], ["pdf", "docs"]) == (
        "There is no collection named 'pdff' (collections: docs, pdf)."
    )
    assert no_such_collection(["a", "b"], []) == (
        "There are no collections named 'a', 'b' (collections: none yet)."
    )
