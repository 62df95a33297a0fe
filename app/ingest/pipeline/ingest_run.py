"""The ingest pipeline: scan → hash → convert → embed → store, as a stream of events.

This module schedules the stages; each step lives in its own module:
:mod:`.change_detection` (which files need work), :mod:`.embed_batches`,
:mod:`.document_steps` (the writes), :mod:`.progress` (the events).

Stages and where they run:

- scanning and hashing: a thread (file I/O);
- conversion and chunking: :class:`~app.ingest.convert.worker_pool.ConversionPool`
  worker processes (Docling holds the GIL), a few files in flight;
- embedding: ``embed_workers`` threads (onnxruntime releases the GIL), chunks of
  several files batched into one call;
- catalog and Milvus writes: one store thread, so writes never interleave.

The event loop only moves small objects between stages, so it stays free.

Every write that touches the catalog and Milvus together is a transition of
:class:`~app.store.ledger.Ledger` (a document is ``writing`` while its chunks
go to Milvus, flushed before it is ``indexed``), so a crash at any point is
finished by the next start. Chunk ids (``app/core/ids.py``) are stable, so
redoing a document writes exactly the chunks an uninterrupted run would have.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from concurrent.futures import Executor
from contextlib import aclosing
from pathlib import Path
from typing import Any

from app.core.events import IngestEvent
from app.core.ids import make_doc_id
from app.core.models import Document
from app.ingest.convert.worker_pool import ConversionPool
from app.ingest.embedder import Embedder
from app.ingest.file_errors import EMPTY_FILE, unreadable
from app.ingest.paths import absolute, display_path
from app.ingest.pipeline.change_detection import content_hash_of, duplicate_of, gone_documents, is_unchanged
from app.ingest.pipeline.document_steps import DocumentSteps
from app.ingest.pipeline.embed_batches import embed_batch, take_batch
from app.ingest.pipeline.job import Job
from app.ingest.pipeline.progress import Progress
from app.ingest.scan import ScannedFile, ScanResult, scan
from app.store.ledger import Ledger


class IngestPipeline:
    """One ingest run into one collection (the collection must already exist,
    in the catalog and in the store, built with ``embedder``'s model)."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        embedder: Embedder,
        converters: ConversionPool,
        embed_executor: Executor,
        store_executor: Executor,
        embed_workers: int,
        max_file_mb: float,
    ) -> None:
        self.ledger = ledger
        self.catalog = ledger.catalog  # reads and ingest-run bookkeeping
        self.embedder = embedder
        self.converters = converters
        self.embed_executor = embed_executor
        self.store_executor = store_executor
        self.embed_workers = max(1, embed_workers)
        self.max_file_mb = max_file_mb

    async def run(self, collection: str, roots: Sequence[Path]) -> AsyncGenerator[IngestEvent, None]:
        """Index ``roots`` into ``collection``; documents under a root that are gone
        from disk are removed. Yields events, IngestFinished last."""
        run = _Run(self, collection, [absolute(r) for r in roots])
        async with aclosing(run.events()) as events:
            async for event in events:
                yield event


class _Run:
    def __init__(self, pipeline: IngestPipeline, collection: str, roots: list[Path]) -> None:
        self.p = pipeline
        self.collection = collection
        self.roots = roots
        self.outbox: asyncio.Queue[IngestEvent | None] = asyncio.Queue()
        self.progress = Progress(collection, self.outbox.put_nowait)
        self.steps = DocumentSteps(pipeline.ledger, collection, pipeline.store_executor, self.progress)
        self.ready: asyncio.Queue[Job | None] = asyncio.Queue(maxsize=max(4, 2 * pipeline.converters.workers))
        self.claimed_hashes: dict[str, str] = {}  # content hash -> path indexed in this run

    async def events(self) -> AsyncGenerator[IngestEvent, None]:
        run_id = await self.steps.store(self.p.catalog.start_run, self.collection)
        status = "cancelled"
        main = asyncio.create_task(self._main(), name=f"ingest:{self.collection}")
        main.add_done_callback(lambda _: self.outbox.put_nowait(None))
        try:
            while True:
                event = await self.outbox.get()
                if event is None:
                    break
                yield event
            await main  # raises what the run raised
            status = "finished"
        except Exception:
            status = "failed"
            raise
        finally:
            if not main.done():
                await _cancel_and_wait([main])
            t = self.progress.tally
            await asyncio.get_running_loop().run_in_executor(
                self.p.store_executor,
                lambda: self.p.catalog.finish_run(run_id, status, **t.counts()),
            )

    async def _main(self) -> None:
        warm_up = asyncio.create_task(self.p.converters.start())  # workers start while we scan
        try:
            await self._work()
        finally:
            await _cancel_and_wait([warm_up])

    async def _work(self) -> None:
        scanned: ScanResult = await asyncio.to_thread(scan, self.roots, self.p.max_file_mb)
        known = {d.path: d for d in await asyncio.to_thread(self.p.catalog.documents, self.collection)}
        gone = gone_documents(known, scanned, self.roots)
        self.progress.run_started(len(scanned.files) + len(scanned.skipped) + len(gone))

        for doc in gone:
            await self.steps.removed(doc)
        for skipped in scanned.skipped:
            await self.steps.skipped(skipped.path, skipped.reason, known.get(skipped.path))

        lanes = [asyncio.create_task(self._embed_lane(), name=f"ingest-embed-{i}") for i in range(self.p.embed_workers)]
        producer = asyncio.create_task(self._produce_all(scanned.files, known, len(lanes)), name="ingest-produce")
        tasks = [producer, *lanes]
        try:
            # the first failure (a store or embedder error) stops everything, no stage left waiting
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()
            await asyncio.gather(*tasks)
        finally:
            await _cancel_and_wait(tasks)
        self.progress.run_finished()

    # -- deciding what each file needs ----------------------------------------------

    async def _produce(self, files: list[ScannedFile], known: dict[str, Document]) -> None:
        """Hash files in order, settle the unchanged and duplicate ones, and send the
        rest to conversion (a few in flight; results go to the embed lanes)."""
        limit = asyncio.Semaphore(self.p.converters.workers + 1)
        converting: set[asyncio.Task[None]] = set()
        jobs: list[Job] = []
        for scanned_file in files:
            path = display_path(scanned_file.path)
            previous = known.get(path)
            if scanned_file.size == 0:
                await self.steps.skipped(path, EMPTY_FILE, previous, scanned_file)
                continue
            try:
                content_hash = await asyncio.to_thread(content_hash_of, scanned_file, previous)
            except OSError as exc:
                await self.steps.failed(path, scanned_file, str(unreadable(exc)), previous)
                continue
            if is_unchanged(previous, content_hash):
                self.claimed_hashes.setdefault(content_hash, path)
                await self.steps.unchanged(path, previous, scanned_file)
                continue
            original = await asyncio.to_thread(duplicate_of, content_hash, path, known, self.claimed_hashes)
            if original is not None:
                reason = f"Same content as {original}, already in this collection."
                await self.steps.skipped(path, reason, previous, scanned_file, content_hash)
                continue
            self.claimed_hashes[content_hash] = path
            jobs.append(
                Job(
                    file=scanned_file,
                    path=path,
                    doc_id=make_doc_id(self.collection, path),
                    content_hash=content_hash,
                    previous=previous,
                )
            )
        self.progress.work_known(len(jobs))
        try:
            for job in jobs:
                await limit.acquire()
                task = asyncio.create_task(self._convert(job, limit))
                converting.add(task)
                task.add_done_callback(converting.discard)
            if converting:
                await asyncio.gather(*list(converting))
        finally:
            await _cancel_and_wait(list(converting))

    async def _produce_all(self, files: list[ScannedFile], known: dict[str, Document], lanes: int) -> None:
        await self._produce(files, known)
        for _ in range(lanes):
            await self.ready.put(None)

    # -- conversion, then embedding and storing -----------------------------------------

    async def _convert(self, job: Job, limit: asyncio.Semaphore) -> None:
        # the slot is held until the result is handed on: back-pressure when embedding lags
        try:
            self.progress.file_started(job.path)
            outcome = await self.p.converters.convert(job.file.path)
            if outcome.document is None:
                self.progress.work_finished()
                await self.steps.failed(job.path, job.file, outcome.error, job.previous, job.content_hash)
                return
            job.converted = outcome.document
            await self.ready.put(job)
        finally:
            limit.release()

    async def _embed_lane(self) -> None:
        finished = False
        while not finished:
            batch, finished = await take_batch(self.ready)
            if not batch:
                return
            await embed_batch(batch, self.p.embedder, self.p.embed_executor)
            await self.steps.index(batch)


async def _cancel_and_wait(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` (a finished one is left as it is) and wait until all have ended."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
