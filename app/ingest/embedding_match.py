"""A collection is searched and filled only with the embedding model it was built with."""

from __future__ import annotations

from app.core.models import Collection
from app.ingest.embedder import Embedder
from app.store.vectors import mismatch_message


def check_embedding_model(collection: Collection, embedder: Embedder) -> None:
    """Raise the mismatch error when ``embedder`` is not the collection's model
    (a collection that records none takes any)."""
    if not collection.embedding_model:
        return
    if collection.embedding_model != embedder.model_name:
        # the names differ: no need to ask a remote model its dimension (it may be down)
        raise mismatch_message(
            collection.name,
            collection.embedding_model,
            collection.dimension,
            embedder.model_name,
            None,
        )
    if collection.dimension != embedder.dimension:
        raise mismatch_message(
            collection.name,
            collection.embedding_model,
            collection.dimension,
            embedder.model_name,
            embedder.dimension,
        )
