"""The one object the window, the CLI and the research engine use to reach the documents.

Catalog (SQLite) + vector store (Milvus) + embedder + converters, behind one
facade. Async methods run blocking work (Milvus Lite, embedding, Docling) in
executors so the event loop never stalls.

Opening takes the data dir's instance lock (a second Fathom gets
:class:`~app.core.errors.StoreLocked`) and finishes what a crash left
half-done (:meth:`app.store.ledger.Ledger.recover`). Every change that touches
the catalog and the vector store together goes through the ledger. Reading
(search, chunks by id, samples) is :class:`~app.ingest.retrieval.Retriever`'s;
ingesting is :class:`~app.ingest.pipeline.ingest_run.IngestPipeline`'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from app.core.errors import CollectionNotFound, StoreError, StoreLocked
from app.core.events import IngestEvent, IngestProgress, IngestStarted
from app.core.models import Chunk, Collection, Document, Hit
from app.core.paths import AppPaths
from app.core.private_folders import make_private
from app.core.settings import Settings
from app.ingest.chunking.tokens import chunk_token_limit
from app.ingest.convert.converter import ConverterConfig
from app.ingest.convert.limits import ConvertLimits
from app.ingest.convert.worker_pool import ConversionPool, ExecutorKind
from app.ingest.embedder import Embedder, make_embedder
from app.ingest.embedding_match import check_embedding_model
from app.ingest.folder_presence import offline_among
from app.ingest.indexing_state import IndexingState
from app.ingest.paths import absolute, display_path, is_under
from app.ingest.pipeline.ingest_run import IngestPipeline
from app.ingest.pipeline.machine import ingest_threads
from app.ingest.retrieval import Retriever
from app.store import reader_address
from app.store.catalog import Catalog
from app.store.consistency import CheckResult, check_library
from app.store.ledger import Ledger, Recovery
from app.store.lock import LOCKED_HINT, LOCKED_MESSAGE, InstanceLock, acquire_instance_lock
from app.store.vectors import SearchMode, VectorStore

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
        self.ledger = Ledger(catalog, store)
        self.recovery = Recovery()  # what the last open finished after a crash
        # what opening the store has to tell: an index moved from Milvus Lite 3.x, a
        # server without keyword search
        self.notices: list[str] = [store.moved.describe()] if store.moved is not None else []
        self.notices += [store.search_note] if store.search_note else []
        self._lock = lock
        self._embedder = embedder
        self._owns_embedder = embedder is None  # made here from the settings: closed here too
        self._threads = ingest_threads(settings.ingest.workers)  # 0: sized to the machine's cores
        self._workers = self._threads.embed
        self._embed_executor = ThreadPoolExecutor(
            max_workers=self._workers, thread_name_prefix="fathom-embed"
        )
        self._store_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fathom-store")
        self._converters: ConversionPool | None = None
        self._retriever = Retriever(catalog, store, self.embedder, self._embed_executor)
        self._converter_kind: ExecutorKind = converter_kind
        self._ingesting: set[str] = set()
        self._ingest_progress: dict[
            str, tuple[int, int | None]
        ] = {}  # collection: (files done, files in all)
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
        Finishes what a crash left half-done. ``embedder`` overrides the
        one the settings name (loaded lazily otherwise); ``converter_kind`` "thread"
        converts in threads instead of worker processes (for measurements)."""
        paths.ensure()
        # what an older Fathom (or a umask) left readable by others: tightened, and said
        made_before = paths.catalog_file.exists()
        opened = make_private([paths.data_dir, paths.config_dir], except_under=[paths.exports_dir])
        lock = acquire_instance_lock(paths)
        catalog: Catalog | None = None
        try:
            catalog = Catalog(paths.catalog_file)
            store = VectorStore.open(settings, paths, token=_server_token(settings, paths))
        except BaseException:
            if catalog is not None:
                catalog.close()
            lock.close()
            raise
        library = cls(
            settings,
            paths,
            catalog=catalog,
            store=store,
            lock=lock,
            embedder=embedder,
            converter_kind=converter_kind,
        )
        try:
            library.recovery = library.ledger.recover()
            library.recovery.research_runs_interrupted = _mark_interrupted_research(paths)
        except BaseException:
            library._close_sync()
            raise
        # so that `fathom search` can read while this process holds it
        if store.lite_path is not None:
            reader_address.publish(paths, store.lite_path)
        # the files opening made (all of a new library's; the search engine's logs)
        make_private(
            [paths.data_dir, paths.config_dir, paths.cache_dir], except_under=[paths.exports_dir]
        )
        if opened and made_before:
            library.notices.append(
                f"Made the library private to you: {opened:,} of its files and folders could be read by other "
                "users of this computer (folders are now 0700, files 0600)."
            )
        return library

    @classmethod
    def open_to_search(
        cls, settings: Settings, paths: AppPaths, *, embedder: Embedder | None = None
    ) -> Library:
        """Open the data dir to search it only: as :meth:`open` when no other Fathom
        holds it; else through the holder's Milvus Lite server, the catalog read
        read-only and nothing written (see :mod:`app.store.reader_address`). Raises
        StoreLocked when another Fathom holds it and serves no readers."""
        from app.store.milvus_connection import is_server_uri, resolve_milvus_uri

        try:
            return cls.open(settings, paths, embedder=embedder)
        except StoreLocked:
            uri = resolve_milvus_uri(settings, paths)
            address = None if is_server_uri(uri) else reader_address.find(paths, uri)
            if address is None:
                raise
        catalog = Catalog.open_read_only(paths.catalog_file)
        if catalog is None:  # the holder has made no collection yet: nothing to search
            raise StoreLocked(LOCKED_MESSAGE, LOCKED_HINT)
        try:
            store = VectorStore(address, served_lite=True)
        except BaseException:
            catalog.close()
            raise
        return cls(settings, paths, catalog=catalog, store=store, lock=None, embedder=embedder)

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
        close_embedder = getattr(self._embedder, "close", None) if self._owns_embedder else None
        try:
            if close_embedder is not None:
                close_embedder()  # a remote embedder's connection and its loop thread
            if self._lock is not None:
                reader_address.withdraw(self.paths)  # before the server it names stops
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

    async def use_settings(self, settings: Settings) -> None:
        """Take new settings; a changed embedding model is used from the next ingest or
        search on (collections built with the old one then ask for a re-index)."""
        if self._ingesting:
            raise StoreError(
                "Settings cannot change while documents are being indexed.",
                "Stop the indexing first.",
            )
        if settings.embedding == self.settings.embedding:
            if _converter_settings(settings) != _converter_settings(self.settings):
                await self._run(
                    self._drop_converters
                )  # the next ingest starts them with the new ones
            self.settings = settings
            return
        await self._run(self._drop_embedder)
        self.settings = settings

    def _drop_converters(self) -> None:
        if self._converters is not None:
            self._converters.shutdown()
            self._converters = None

    def _drop_embedder(self) -> None:
        old, owned = self._embedder, self._owns_embedder
        self._embedder, self._owns_embedder = None, True
        self._drop_converters()  # they chunk with the old model's tokenizer
        close = getattr(old, "close", None) if owned else None
        if close is not None:
            close()

    async def embedding_model(self) -> str:
        """The name of the embedding model in use (what new collections record)."""
        return (await self._run(self.embedder)).model_name

    async def collections_needing_reindex(self) -> list[Collection]:
        """Collections built with another embedding model than the one in use."""
        current = await self.embedding_model()
        return [
            c
            for c in await self.collections()
            if c.embedding_model and c.embedding_model != current
        ]

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
                max_tokens=chunk_token_limit(
                    embedder.max_tokens, self.settings.ingest.chunk_max_tokens
                ),
                docling_artifacts_path=self.settings.ingest.docling_artifacts_path,
                ocr=self.settings.ingest.ocr,
            )
            # Conversion is ~12% of the CPU that embedding takes (Markdown, native PDF text):
            # one converter per eight embedding threads keeps them fed (pipeline/machine.py).
            limits = ConvertLimits(
                memory_mb=self.settings.ingest.memory_per_file_mb,
                seconds=self.settings.ingest.seconds_per_file,
            )
            self._converters = ConversionPool(
                config, workers=self._threads.converters, kind=self._converter_kind, limits=limits
            )
        return self._converters

    # -- collections ------------------------------------------------------------------

    async def collections(self) -> list[Collection]:
        return await self._run(self.catalog.collections)

    async def collection(self, name: str) -> Collection:
        return await self._run(self.catalog.require_collection, name)

    async def create_collection(self, name: str, description: str = "") -> Collection:
        name = _clean_name(name)
        embedder = await self._run(self.embedder)
        existing = await self._run(self.catalog.collection, name)
        if existing is not None:
            await self._run(check_embedding_model, existing, embedder)
        dimension = await self._run(lambda: embedder.dimension)
        return await self._write(
            self.ledger.create_collection, name, description, embedder.model_name, dimension
        )

    async def set_description(self, name: str, description: str) -> None:
        await self._write(self.catalog.set_description, name, description.strip())

    async def set_watched(self, name: str, watched: bool) -> None:
        await self._write(self.catalog.set_watched, name, watched)

    async def roots(self, name: str) -> list[Path]:
        """The folders and files the collection was made from (what a re-scan walks)."""
        return [Path(r) for r in await self._run(self.catalog.roots, name)]

    async def offline_folders(self, name: str) -> list[Path]:
        """The collection's folders that are not there (an unplugged drive, an empty mount
        point) while documents under them are kept: what a re-scan now would call offline."""

        def look() -> list[Path]:
            roots = [Path(r) for r in self.catalog.roots(name)]
            return offline_among(roots, (row[1] for row in self.catalog.document_rows(name)))

        return await self._run(look)

    async def remove_collection(self, name: str) -> None:
        await self._run(self.catalog.require_collection, name)
        if name in self._ingesting:
            raise StoreError(f"Collection '{name}' is being ingested; stop the ingest first.")
        await self._write(self.ledger.remove_collection, name)

    async def documents_by_id(self, doc_ids: Sequence[str]) -> dict[str, Document]:
        """The catalog's records of these documents (ids not found left out)."""
        return await self._run(self.catalog.documents_by_id, list(dict.fromkeys(doc_ids)))

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
        if collection in self._ingesting:
            raise StoreError(f"Collection '{collection}' is being ingested; stop the ingest first.")
        await self._write(lambda: self.ledger.remove_document(doc, forget_root=True))

    async def reindex(self, collection: str) -> AsyncGenerator[IngestEvent, None]:
        """Embed every document of ``collection`` again with the embedding model the
        settings name now (after the model changed): the index is emptied, then the
        collection's folders and files are re-scanned. Interrupted, the next re-scan
        or re-index goes on where it stopped."""
        existing = await self._run(self.catalog.require_collection, collection)
        if collection in self._ingesting:
            raise StoreError(f"Collection '{collection}' is being ingested; stop the ingest first.")
        embedder = await self._run(self.embedder)
        dimension = await self._run(lambda: embedder.dimension)
        await self._write(
            self.ledger.reset_collection, existing.name, embedder.model_name, dimension
        )
        async with aclosing(self._rescan(existing.name, False)) as events:
            async for event in events:
                yield event

    # -- consistency ------------------------------------------------------------------

    async def check(self, collections: Sequence[str] | None = None) -> CheckResult:
        """Compare the catalog with the vector store, document by document (no changes)."""
        return await self._write(check_library, self.catalog, self.store, collections)

    async def repair(
        self, on_event: Callable[[IngestEvent], None] | None = None
    ) -> tuple[CheckResult, CheckResult]:
        """Find drift between catalog and vector store and fix it: orphan chunks and
        stray collections are deleted, documents with missing chunks are converted and
        embedded again (their ingest events go to ``on_event``). Returns the check
        before and the check after."""
        busy = sorted(self._ingesting)
        if busy:
            raise StoreError(
                f"Collection '{busy[0]}' is being ingested; repair when it has finished."
            )
        before = await self.check()
        if before.consistent:
            return before, before
        redo = await self._write(
            lambda: self.ledger.fix(before.drift, drop_orphan_collections=self.store.is_lite)
        )
        for name in sorted({d.collection for d in redo}):
            files = [Path(d.path) for d in redo if d.collection == name]
            await self.create_collection(name)
            async with aclosing(self._pipeline_run(name, files)) as events:
                async for event in events:
                    if on_event is not None:
                        on_event(event)
        return before, await self.check()

    async def find_documents(self, collection: str, path: Path) -> list[Document]:
        """Documents at ``path`` (a file) or under it (a folder)."""
        target = display_path(absolute(path))
        docs = await self.documents(collection)
        return [d for d in docs if is_under(d.path, target)]

    # -- ingest -----------------------------------------------------------------------

    async def ingest(
        self,
        paths: Sequence[Path],
        collection: str,
        *,
        description: str | None = None,
        retry: bool = False,
    ) -> AsyncGenerator[IngestEvent, None]:
        """Index files/folders into ``collection`` (created if missing); events as it goes.
        Ends with IngestFinished. Cancelling the iteration stops cleanly (resumable).
        ``retry``: read again the unchanged files the converter gave up on before."""
        name = _clean_name(collection)
        await self.create_collection(name, description or "")
        roots = [absolute(p) for p in paths]
        await self._write(self.catalog.add_roots, name, [display_path(r) for r in roots])
        async with aclosing(self._pipeline_run(name, roots, retry=retry)) as events:
            async for event in events:
                yield event

    def rescan(self, collection: str, *, retry: bool = False) -> AsyncGenerator[IngestEvent, None]:
        """Walk the collection's folders and files again: new and changed files are
        indexed, deleted ones removed, half-done ones redone; ``retry``: the unchanged
        files the converter gave up on before are read again too."""
        return self._rescan(collection, retry)

    async def _rescan(self, collection: str, retry: bool) -> AsyncGenerator[IngestEvent, None]:
        existing = await self._run(self.catalog.require_collection, collection)
        await self.create_collection(existing.name)
        roots = [Path(r) for r in await self._run(self.catalog.roots, collection)]
        async with aclosing(self._pipeline_run(collection, roots, retry=retry)) as events:
            async for event in events:
                yield event

    async def _pipeline_run(
        self, name: str, roots: list[Path], *, retry: bool = False
    ) -> AsyncGenerator[IngestEvent, None]:
        if name in self._ingesting:
            raise StoreError(
                f"Collection '{name}' is already being ingested.", "Wait for that ingest to finish."
            )
        self._ingesting.add(name)
        try:
            # Loading the tokenizer and starting the converter process take a moment:
            # done in a thread so the window never stalls on them.
            converters = await asyncio.to_thread(self._converter_pool)
            pipeline = IngestPipeline(
                ledger=self.ledger,
                embedder=self.embedder(),
                converters=converters,
                embed_executor=self._embed_executor,
                store_executor=self._store_executor,
                embed_workers=self._workers,
                max_file_mb=self.settings.ingest.max_file_mb,
                ocr=self.settings.ingest.ocr,
                retry_given_up=retry,
                links_outside=self.settings.ingest.follow_links_outside,
            )
            async with aclosing(pipeline.run(name, roots)) as events:
                async for event in events:
                    if isinstance(event, IngestStarted):
                        self._ingest_progress[name] = (0, event.total_files)
                    elif isinstance(event, IngestProgress):
                        self._ingest_progress[name] = (event.done_files, event.total_files)
                    yield event
        finally:
            self._ingesting.discard(name)
            self._ingest_progress.pop(name, None)

    async def indexing(self) -> list[IndexingState]:
        """The collections being indexed now, each with how many of its documents a
        search finds already (and how many it will have)."""
        states = []
        for name in sorted(self._ingesting):
            done, total = self._ingest_progress.get(name, (0, None))
            found = await self._run(self.catalog.collection, name)
            states.append(IndexingState.of(name, found.documents if found else 0, done, total))
        return states

    async def write_description(
        self, collection: str, model: ChatModel, *, samples: int = 8
    ) -> str:
        """Have ``model`` describe the collection from a sample of its chunks, and save it."""
        from app.ingest.describe import describe_collection

        chunks = await self.sample_chunks(collection, samples)
        text = await describe_collection(model, collection, chunks)
        await self.set_description(collection, text)
        return text

    # -- retrieval (:mod:`app.ingest.retrieval`) --------------------------------------

    async def search(
        self,
        queries: Sequence[str],
        *,
        collections: Sequence[str] | None = None,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
    ) -> list[list[Hit]]:
        """Search ``collections`` (all by default) for every query; result i answers query i."""
        return await self._retriever.search(
            queries, collections=collections, mode=mode, top_k=top_k
        )

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` by the embedding model in use (what the claim check
        compares a report's sentences with their passages by)."""
        return await self._retriever.embed(texts)

    async def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id, in the order asked; ids not found left out."""
        return await self._retriever.get_chunks(chunk_ids)

    async def sample_chunks(self, collection: str, n: int = 8) -> list[Chunk]:
        """A spread of ``n`` chunks across the collection's documents."""
        return await self._retriever.sample_chunks(collection, n)


def _server_token(settings: Settings, paths: AppPaths) -> str:
    """A Milvus server's token from the keyring (or FATHOM_MILVUS_TOKEN); none for Milvus Lite."""
    from app.llm.keys import get_milvus_token
    from app.store.milvus_connection import is_server_uri, resolve_milvus_uri

    uri = resolve_milvus_uri(settings, paths)
    return get_milvus_token(uri) if is_server_uri(uri) else ""


def _mark_interrupted_research(paths: AppPaths) -> int:
    """Research runs left 'running' by a crash (this process now holds the data dir)."""
    from app.store.research_runs import RunStore

    runs = RunStore.open(paths)
    try:
        return runs.mark_interrupted_runs()
    finally:
        runs.close()


def _clean_name(name: str) -> str:
    cleaned = " ".join(name.split())
    if not cleaned:
        raise StoreError(
            "A collection needs a name.", "Give it a name of at least one visible character."
        )
    if len(cleaned) > 200:
        raise StoreError("A collection name can be at most 200 characters.")
    return cleaned


def _converter_settings(settings: Settings) -> tuple[object, ...]:
    """What the converter processes were started with: a change restarts them."""
    ingest = settings.ingest
    return (
        ingest.chunk_max_tokens,
        ingest.docling_artifacts_path,
        ingest.ocr,
        ingest.memory_per_file_mb,
        ingest.seconds_per_file,
    )
