"""Reading chunks out of the library: a search over several collections ranked as one
library, chunks by id for the source viewer, and a spread of chunks to sample.

Blocking calls (Milvus, embedding) run in threads; nothing here changes the library.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import Executor

import numpy as np

from app.core.collection_names import no_such_collection
from app.core.errors import CollectionNotFound
from app.core.ids import doc_id_of_chunk, make_chunk_id
from app.core.models import Chunk, DocumentStatus, Hit
from app.ingest.embedder import Embedder
from app.ingest.embedding_match import check_embedding_model
from app.store.catalog import Catalog
from app.store.vectors import SearchMode, VectorStore


class Retriever:
    """The library's read side; :class:`~app.ingest.library.Library` hands its calls here."""

    def __init__(
        self,
        catalog: Catalog,
        store: VectorStore,
        embedder: Callable[[], Embedder],
        embed_executor: Executor,
    ) -> None:
        self.catalog = catalog
        self.store = store
        self.embedder = embedder  # the one in use now (settings may change it)
        self.embed_executor = embed_executor

    async def search(
        self,
        queries: Sequence[str],
        *,
        collections: Sequence[str] | None = None,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
    ) -> list[list[Hit]]:
        """Embed all queries in one batch and search every collection in one batched
        call each; several collections are ranked as one library (result i answers
        query i)."""
        if not queries:
            return []
        known = {c.name: c for c in await asyncio.to_thread(self.catalog.collections)}
        if collections is None:
            names = [n for n, c in known.items() if c.chunks > 0]
        else:
            missing = [n for n in collections if n not in known]
            if missing:
                raise CollectionNotFound(no_such_collection(missing, known))
            names = list(dict.fromkeys(collections))
        names = [n for n in names if known[n].chunks > 0]
        if not names:
            return [[] for _ in queries]
        vectors = None
        # (a server without BM25 searches by meaning)
        if mode != "bm25" or not self.store.keyword_search_available:
            embedder = await asyncio.to_thread(self.embedder)
            for name in names:
                await asyncio.to_thread(check_embedding_model, known[name], embedder)
            vectors = await self.embed(list(queries), embedder)
        if len(names) == 1:
            return await asyncio.to_thread(
                self.store.search, names[0], list(queries), vectors, mode=mode, top_k=top_k
            )
        # several collections are ranked as one library (app/store/library_ranking.py)
        return await asyncio.to_thread(
            self.store.search_library, names, list(queries), vectors, mode=mode, top_k=top_k
        )

    async def embed(self, texts: list[str], embedder: Embedder | None = None) -> np.ndarray:
        """Vectors of ``texts`` by ``embedder`` (default: the one in use), on the embedding threads."""
        chosen = embedder if embedder is not None else await asyncio.to_thread(self.embedder)
        loop = asyncio.get_running_loop()
        return np.asarray(
            await loop.run_in_executor(self.embed_executor, chosen.embed, texts), dtype=np.float32
        )

    async def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id (any collection), e.g. for the source viewer; in the order asked,
        ids not found left out."""
        if not chunk_ids:
            return []
        docs = await asyncio.to_thread(
            self.catalog.documents_by_id, [doc_id_of_chunk(c) for c in chunk_ids]
        )
        by_collection: dict[str, list[str]] = {}
        for chunk_id in chunk_ids:
            doc = docs.get(doc_id_of_chunk(chunk_id))
            if doc is not None:
                by_collection.setdefault(doc.collection, []).append(chunk_id)
        found: dict[str, Chunk] = {}
        for name, ids in by_collection.items():
            try:
                chunks = await asyncio.to_thread(self.store.get_chunks, name, ids)
            except CollectionNotFound:
                continue
            found.update((c.chunk_id, c) for c in chunks)
        return [found[c] for c in chunk_ids if c in found]

    async def sample_chunks(self, collection: str, n: int = 8) -> list[Chunk]:
        """A spread of chunks: documents evenly across the collection (by path), a
        chunk from the start of each, more per document when there are few."""
        docs = await asyncio.to_thread(self.catalog.documents, collection, [DocumentStatus.INDEXED])
        docs = [d for d in docs if d.chunk_count > 0]
        if not docs or n <= 0:
            return []
        if len(docs) >= n:
            step = len(docs) / n
            picks = [(docs[int(i * step)], 0) for i in range(n)]
        else:
            picks = []
            per_doc = -(-n // len(docs))
            for doc in docs:
                stride = max(1, doc.chunk_count // per_doc)
                picks.extend((doc, k) for k in range(0, doc.chunk_count, stride)[:per_doc])
            picks = picks[:n]
        ids = [make_chunk_id(doc.doc_id, k) for doc, k in picks]
        return await self.get_chunks(ids)
