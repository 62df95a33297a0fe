"""The one object the window, the CLI and the research engine use to reach the documents.

Catalog (SQLite) + vector store (Milvus) + embedder + converters, behind one
facade. Async methods run blocking work (Milvus Lite, embedding, Docling) in
executors so the event loop never stalls.

Opening takes the data dir's instance lock (a second Fathom gets
:class:`~app.core.errors.StoreLocked`) and repairs what a crash left: a
document still ``pending`` may have some of its chunks in Milvus; they are
deleted and the document is redone by the next ingest or rescan.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from app.core.errors import CollectionNotFound, StoreError
from app.core.events import IngestEvent
from app.core.models import Chunk, Collection, Document, DocumentStatus, Hit
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.ingest.chunking import chunk_token_limit
from app.ingest.convert import ConversionPool, ConverterConfig, ExecutorKind
from app.ingest.embedder import Embedder, make_embedder
from app.ingest.pipeline import IngestPipeline, doc_id_of_chunk, make_chunk_id
from app.ingest.scan import absolute, display_path
from app.store.catalog import Catalog
from app.store.lock import InstanceLock, acquire_instance_lock
from app.store.vectors import SearchMode, VectorStore, mismatch_message

if TYPE_CHECKING:
    from app.llm.base import ChatModel

T = TypeVar("T")

_log = logging.getLogger(__name__)


class Library:
    """Catalog (SQLite) + vector store (Milvus) + embedder, behind one facade."""

    def __init__(
        self,
        settings: Settings,
        paths: AppPaths,
        *,
        catalog: Catalog,
        store: VectorStore,
        lock: InstanceLock | None,
        embedder: Embedder | None = None,
        converter_kind: ExecutorKind = "process",
    ) -> None:
        self.settings = settings
        self.paths = paths
        self.catalog = catalog
        self.store = store
        self._lock = lock
        self._embedder = embedder
        workers = max(1, settings.ingest.workers)
        self._workers = workers
        self._embed_executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fathom-embed")
        self._store_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fathom-store")
        self._converters: ConversionPool | None = None
        self._converter_kind: ExecutorKind = converter_kind
        self._ingesting: set[str] = set()
        self._closed = False

    @classmethod
    def open(
        cls,
        settings: Settings,
        paths: AppPaths,
        *,
        embedder: Embedder | None = None,
        converter_kind: ExecutorKind = "process",
    ) -> Library:
        """Open (and lock) the data dir; raises StoreLocked if another Fathom has it.
        Repairs half-ingested documents left by a crash. ``embedder`` overrides the
        one the settings name (loaded lazily otherwise); ``converter_kind`` "thread"
        converts in threads instead of worker processes (for measurements)."""
        paths.ensure()
        lock = acquire_instance_lock(paths)
        catalog: Catalog | None = None
        try:
            catalog = Catalog(paths.catalog_file)
            store = VectorStore.open(settings, paths)
        except BaseException:
            if catalog is not None:
                catalog.close()
            lock.close()
            raise
        library = cls(
            settings, paths, catalog=catalog, store=store, lock=lock, embedder=embedder, converter_kind=converter_kind
        )
        try:
            library.repair()
        except BaseException:
            library._close_sync()
            raise
        return library

    def repair(self) -> list[Document]:
        """Undo what a crash left half-done; returns the documents that will be redone.

        A pending document's chunks are deleted from Milvus (it stays pending, so
        the next ingest or rescan redoes it). After an interrupted ingest run, the
        collection's chunk count is also checked against the catalog, and any
        document whose chunks Milvus does not fully hold is marked pending too.
        """
        redo: list[Document] = []
        for doc in self.catalog.pending_documents():
            if self.store.has_collection(doc.collection):
                self.store.delete_document(doc.collection, doc.doc_id)
            redo.append(doc)
        if redo:
            self.catalog.save_documents([replace(d, chunk_count=0) for d in redo])
        interrupted = {run.collection for run in self.catalog.runs(limit=50) if run.status == "running"}
        self.catalog.mark_interrupted_runs()
        for name in sorted(interrupted):
            redo.extend(self._check_counts(name))
        if redo:
            _log.info("repaired %d half-ingested documents", len(redo))
        return redo

    def _check_counts(self, name: str) -> list[Document]:
        if self.catalog.collection(name) is None or not self.store.has_collection(name):
            return []
        indexed = self.catalog.documents(name, [DocumentStatus.INDEXED])
        expected = sum(d.chunk_count for d in indexed)
        if self.store.count(name) == expected:
            return []
        in_store = self.store.doc_ids(name)
        for doc_id in in_store - {d.doc_id for d in indexed}:
            self.store.delete_document(name, doc_id)  # chunks of a document not (or no longer) indexed
        suspects = []
        for doc in indexed:
            if doc.doc_id not in in_store or len(self.store.document_chunk_ids(name, doc.doc_id)) != doc.chunk_count:
                suspects.append(doc)
        for doc in suspects:
            self.store.delete_document(name, doc.doc_id)
        self.catalog.save_documents(
            [replace(d, status=DocumentStatus.PENDING, chunk_count=0, content_hash="") for d in suspects]
        )
        return suspects

    async def aclose(self) -> None:
        if self._closed:
            return
        await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._converters is not None:
            self._converters.shutdown()
        self._embed_executor.shutdown(wait=True, cancel_futures=True)
        self._store_executor.shutdown(wait=True, cancel_futures=True)
        try:
            self.store.close()
        finally:
            self.catalog.close()
            if self._lock is not None:
                self._lock.close()

    # -- helpers --------------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._store_executor, fn, *args)

    def embedder(self) -> Embedder:
        """The embedder in use (created on first call; loading the model is lazy too)."""
        if self._embedder is None:
            self._embedder = make_embedder(self.settings)
        return self._embedder

    def _converter_pool(self) -> ConversionPool:
        if self._converters is None:
            embedder = self.embedder()
            config = ConverterConfig(
                tokenizer_json=embedder.tokenizer.to_str(),
                max_tokens=chunk_token_limit(embedder.max_tokens, self.settings.ingest.chunk_max_tokens),
                docling_artifacts_path=self.settings.ingest.docling_artifacts_path,
            )
            # Conversion is ~10% of the CPU that embedding takes (Markdown, native PDF text):
            # one converter per two embedding workers keeps the embedders fed.
            converters = max(1, self._workers // 2)
            self._converters = ConversionPool(config, workers=converters, kind=self._converter_kind)
        return self._converters

    def _check_model(self, collection: Collection, embedder: Embedder) -> None:
        if not collection.embedding_model:
            return
        if collection.embedding_model != embedder.model_name or collection.dimension != embedder.dimension:
            raise mismatch_message(
                collection.name,
                collection.embedding_model,
                collection.dimension,
                embedder.model_name,
                embedder.dimension,
            )

    # -- collections ------------------------------------------------------------------

    async def collections(self) -> list[Collection]:
        return await self._run(self.catalog.collections)

    async def collection(self, name: str) -> Collection:
        return await self._run(self.catalog.require_collection, name)

    async def create_collection(self, name: str, description: str = "") -> Collection:
        name = _clean_name(name)
        embedder = await self._run(self.embedder)
        model, dimension = embedder.model_name, await self._run(lambda: embedder.dimension)
        existing = await self._run(self.catalog.collection, name)
        if existing is not None:
            self._check_model(existing, embedder)
            if description and description != existing.description:
                await self._write(self.catalog.set_description, name, description)
            if not existing.embedding_model:
                await self._write(self.catalog.set_embedding, name, model, dimension)
        else:
            await self._write(self.catalog.create_collection, name, description, model, dimension)
        await self._write(self.store.ensure_collection, name, dimension, model)
        return await self._run(self.catalog.require_collection, name)

    async def set_description(self, name: str, description: str) -> None:
        await self._write(self.catalog.set_description, name, description.strip())

    async def remove_collection(self, name: str) -> None:
        await self._run(self.catalog.require_collection, name)
        if name in self._ingesting:
            raise StoreError(f"Collection '{name}' is being ingested; stop the ingest first.")

        def remove() -> None:
            self.store.drop_collection(name)
            self.catalog.delete_collection(name)

        await self._write(remove)

    async def documents(self, collection: str) -> list[Document]:
        await self._run(self.catalog.require_collection, collection)
        return await self._run(self.catalog.documents, collection)

    async def remove_document(self, collection: str, doc_id: str) -> None:
        """Remove one document (its chunks and its catalog entry). A document inside
        a folder that was ingested comes back on the next rescan of that folder
        unless the file is gone; a file ingested on its own is forgotten for good."""
        doc = await self._run(self.catalog.document, doc_id)
        if doc is None or doc.collection != collection:
            raise CollectionNotFound(f"Collection '{collection}' has no document with id {doc_id}.")

        def remove() -> None:
            self.catalog.save_documents([replace(doc, status=DocumentStatus.PENDING)])
            if self.store.has_collection(collection):
                self.store.delete_document(collection, doc_id)
            self.catalog.delete_documents([doc_id])
            self.catalog.remove_root(collection, doc.path)

        await self._write(remove)

    async def find_documents(self, collection: str, path: Path) -> list[Document]:
        """Documents at ``path`` (a file) or under it (a folder)."""
        from app.ingest.pipeline import is_under

        target = display_path(absolute(path))
        docs = await self.documents(collection)
        return [d for d in docs if is_under(d.path, target)]

    # -- ingest -----------------------------------------------------------------------

    async def ingest(
        self, paths: Sequence[Path], collection: str, *, description: str | None = None
    ) -> AsyncGenerator[IngestEvent, None]:
        """Index files/folders into ``collection`` (created if missing); events as it goes.
        Ends with IngestFinished. Cancelling the iteration stops cleanly (resumable)."""
        name = _clean_name(collection)
        await self.create_collection(name, description or "")
        roots = [absolute(p) for p in paths]
        await self._write(self.catalog.add_roots, name, [display_path(r) for r in roots])
        async with aclosing(self._pipeline_run(name, roots)) as events:
            async for event in events:
                yield event

    def rescan(self, collection: str) -> AsyncGenerator[IngestEvent, None]:
        """Walk the collection's folders and files again: new and changed files are
        indexed, deleted ones removed, half-done ones redone."""
        return self._rescan(collection)

    async def _rescan(self, collection: str) -> AsyncGenerator[IngestEvent, None]:
        existing = await self._run(self.catalog.require_collection, collection)
        await self.create_collection(existing.name)
        roots = [Path(r) for r in await self._run(self.catalog.roots, collection)]
        async with aclosing(self._pipeline_run(collection, roots)) as events:
            async for event in events:
                yield event

    async def _pipeline_run(self, name: str, roots: list[Path]) -> AsyncGenerator[IngestEvent, None]:
        if name in self._ingesting:
            raise StoreError(f"Collection '{name}' is already being ingested.", "Wait for that ingest to finish.")
        self._ingesting.add(name)
        try:
            # Loading the tokenizer and starting the converter process take a moment:
            # done in a thread so the window never stalls on them.
            converters = await asyncio.to_thread(self._converter_pool)
            pipeline = IngestPipeline(
                catalog=self.catalog,
                store=self.store,
                embedder=self.embedder(),
                converters=converters,
                embed_executor=self._embed_executor,
                store_executor=self._store_executor,
                embed_workers=self._workers,
                max_file_mb=self.settings.ingest.max_file_mb,
            )
            async with aclosing(pipeline.run(name, roots)) as events:
                async for event in events:
                    yield event
        finally:
            self._ingesting.discard(name)

    async def write_description(self, collection: str, model: ChatModel, *, samples: int = 8) -> str:
        """Have ``model`` describe the collection from a sample of its chunks, and save it."""
        from app.ingest.describe import describe_collection

        chunks = await self.sample_chunks(collection, samples)
        text = await describe_collection(model, collection, chunks)
        await self.set_description(collection, text)
        return text

    # -- retrieval --------------------------------------------------------------------

    async def search(
        self,
        queries: Sequence[str],
        *,
        collections: Sequence[str] | None = None,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
    ) -> list[list[Hit]]:
        """Embed all queries in one batch, search every collection in one batched call
        each, merge per query by score; result i answers query i."""
        if not queries:
            return []
        known = {c.name: c for c in await self.collections()}
        if collections is None:
            names = [n for n, c in known.items() if c.chunks > 0]
        else:
            missing = [n for n in collections if n not in known]
            if missing:
                listing = ", ".join(sorted(known)) or "none yet"
                raise CollectionNotFound(f"There is no collection named '{missing[0]}' (collections: {listing}).")
            names = list(dict.fromkeys(collections))
        names = [n for n in names if known[n].chunks > 0]
        if not names:
            return [[] for _ in queries]
        vectors = None
        if mode != "bm25":
            embedder = await self._run(self.embedder)
            for name in names:
                self._check_model(known[name], embedder)
            vectors = await asyncio.get_running_loop().run_in_executor(
                self._embed_executor, embedder.embed, list(queries)
            )
        per_collection = await asyncio.gather(
            *(
                self._run(lambda n=name: self.store.search(n, list(queries), vectors, mode=mode, top_k=top_k))
                for name in names
            )
        )
        merged: list[list[Hit]] = []
        for i in range(len(queries)):
            hits = [hit for result in per_collection for hit in result[i]]
            hits.sort(key=lambda h: h.score, reverse=True)
            merged.append(hits[:top_k])
        return merged

    async def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id (any collection), e.g. for the source viewer; in the order asked,
        ids not found left out."""
        if not chunk_ids:
            return []
        docs = await self._run(self.catalog.documents_by_id, [doc_id_of_chunk(c) for c in chunk_ids])
        by_collection: dict[str, list[str]] = {}
        for chunk_id in chunk_ids:
            doc = docs.get(doc_id_of_chunk(chunk_id))
            if doc is not None:
                by_collection.setdefault(doc.collection, []).append(chunk_id)
        found: dict[str, Chunk] = {}
        for name, ids in by_collection.items():
            try:
                chunks = await self._run(self.store.get_chunks, name, ids)
            except CollectionNotFound:
                continue
            found.update((c.chunk_id, c) for c in chunks)
        return [found[c] for c in chunk_ids if c in found]

    async def sample_chunks(self, collection: str, n: int = 8) -> list[Chunk]:
        """A spread of chunks: documents evenly across the collection (by path), a
        chunk from the start of each, more per document when there are few."""
        docs = await self._run(self.catalog.documents, collection, [DocumentStatus.INDEXED])
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


def _clean_name(name: str) -> str:
    cleaned = " ".join(name.split())
    if not cleaned:
        raise StoreError("A collection needs a name.", "Give it a name of at least one visible character.")
    if len(cleaned) > 200:
        raise StoreError("A collection name can be at most 200 characters.")
    return cleaned
