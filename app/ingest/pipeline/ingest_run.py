"""The ingest pipeline: scan → hash → convert → embed → store, as a stream of events.

This module schedules the stages; each step lives in its own module:
:mod:`.change_detection` (which files need work), :mod:`.embed_batches`,
:mod:`.document_steps` (the writes), :mod:`.progress` (the events),
:mod:`.machine` (how many threads).

Stages, all running at once, each handing on to the next through a queue:

- scanning and hashing: a thread (file I/O);
- conversion and chunking: :class:`~app.ingest.convert.worker_pool.ConversionPool`
  worker processes (Docling holds the GIL). They run ahead of the embedder: the
  next files are converted while the current ones embed, until about two calls
  per embedding thread wait (``LOOKAHEAD_CALLS``);
- embedding: ``embed_workers`` threads (onnxruntime releases the GIL), each
  call ``EMBED_BATCH`` chunks taken across file boundaries, a new call started
  the moment a thread is free;
- catalog and Milvus writes: one writer, on one store thread, so writes never
  interleave; it takes every file embedded meanwhile in one transition (one
  flush), while the embedding threads go on.

The event loop only moves small objects between stages, so it stays free.

Every write that touches the catalog and Milvus together is a transition of
:class:`~app.store.ledger.Ledger` (a document is ``writing`` while its chunks
go to Milvus, flushed before it is ``indexed``), so a crash at any point is
finished by the next start. Chunk ids (``app/core/ids.py``) are stable, so
redoing a document writes exactly the chunks an uninterrupted run would have.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncGenerator, Sequence
from concurrent.futures import Executor
from contextlib import aclosing
from pathlib import Path
from typing import Any

import numpy as np

from app.core.errors import IngestError
from app.core.events import IngestEvent
from app.core.ids import make_doc_id
from app.core.models import Document
from app.ingest.convert.results import ConvertOutcome
from app.ingest.convert.text_files import NO_TEXT
from app.ingest.convert.worker_pool import ConversionPool
from app.ingest.embedder import Embedder
from app.ingest.file_errors import EMPTY_FILE, short_error, unreadable
from app.ingest.paths import absolute, display_path
from app.ingest.pipeline.change_detection import (
    OFFLINE,
    content_hash_of,
    duplicate_of,
    given_up_before,
    gone_documents,
    is_unchanged,
    looks_unchanged,
    offline_roots,
)
from app.ingest.pipeline.document_steps import DocumentSteps
from app.ingest.pipeline.embed_batches import EMBED_BATCH, Batcher, EmbedCall, deliver
from app.ingest.pipeline.job import Job
from app.ingest.pipeline.progress import Progress
from app.ingest.scan import ScannedFile, ScanResult, scan
from app.store.ledger import Ledger

LOOKAHEAD_CALLS = 2  # chunks converted ahead of the embedder: this many calls per embedding thread
WRITE_GROUP = 64  # at most this many files in one write (one flush)


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
        ocr: bool = True,
        retry_given_up: bool = False,
        links_outside: bool = False,
    ) -> None:
        self.ledger = ledger
        self.catalog = ledger.catalog  # reads and ingest-run bookkeeping
        self.embedder = embedder
        self.converters = converters
        self.embed_executor = embed_executor
        self.store_executor = store_executor
        self.embed_workers = max(1, embed_workers)
        self.max_file_mb = max_file_mb
        self.ocr = ocr  # images are scanned in (and read by OCR) only when it is on
        # an unchanged file the converter gave up on (killed past a limit, crashed) is read
        # again only when asked: otherwise every re-scan and watch event would
        self.retry_given_up = retry_given_up
        self.links_outside = links_outside  # follow symbolic links that point outside the folder

    async def run(
        self, collection: str, roots: Sequence[Path]
    ) -> AsyncGenerator[IngestEvent, None]:
        """Index ``roots`` into ``collection``; documents under a root that are gone
        from disk are removed. Yields events, IngestFinished last."""
        run = _Run(self, collection, [absolute(r) for r in roots])
        async with aclosing(run.events()) as events:
            async for event in events:
                yield event


class _Run:
    def __init__(self, pipeline: IngestPipeline, collection: str, roots: list[Path]) -> None:
        self.pipeline = pipeline
        self.collection = collection
        self.roots = roots
        self.outbox: asyncio.Queue[IngestEvent | None] = asyncio.Queue()
        self.progress = Progress(collection, self.outbox.put_nowait)
        self.steps = DocumentSteps(
            pipeline.ledger, collection, pipeline.store_executor, self.progress
        )
        self.claimed_hashes: dict[str, str] = {}  # content hash -> path indexed in this run
        # a short call goes out only when a core would idle: fewer calls run than the cores the converters leave
        self.batcher = Batcher(short_below=pipeline.embed_workers - pipeline.converters.workers)
        # chunks converted ahead
        self.lookahead = LOOKAHEAD_CALLS * EMBED_BATCH * pipeline.embed_workers
        self.unconverted = 0  # files still to be converted (or being converted)
        self._warm_up: asyncio.Task[None] | None = None  # the converter workers starting
        self.embedded: asyncio.Queue[Job | None] = asyncio.Queue(maxsize=4 * WRITE_GROUP)
        # a file converted, a call ended, or none left to convert
        self.wake_embedder = asyncio.Event()
        self.room_ahead = asyncio.Event()  # the embedder took chunks: the converter may go on

    async def events(self) -> AsyncGenerator[IngestEvent, None]:
        run_id = await self.steps.store(self.pipeline.catalog.start_run, self.collection)
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
            tally = self.progress.tally
            await asyncio.get_running_loop().run_in_executor(
                self.pipeline.store_executor,
                lambda: self.pipeline.catalog.finish_run(run_id, status, tally.counts),
            )

    async def _main(self) -> None:
        try:
            await self._work()
        finally:
            if self._warm_up is not None:
                await _cancel_and_wait([self._warm_up])

    def _warm_up_converters(self) -> None:
        """Start the converter workers (in the background, once): only a run with files to
        convert needs them, and starting them costs seconds of a core."""
        if self._warm_up is None:
            self._warm_up = asyncio.create_task(self.pipeline.converters.start())

    async def _work(self) -> None:
        known = {
            doc.path: doc
            for doc in await asyncio.to_thread(self.pipeline.catalog.documents, self.collection)
        }
        if not known:  # a new collection: the workers start while we scan
            self._warm_up_converters()
        scanned: ScanResult = await asyncio.to_thread(
            functools.partial(
                scan,
                self.roots,
                self.pipeline.max_file_mb,
                ocr=self.pipeline.ocr,
                links_outside=self.pipeline.links_outside,
            )
        )
        if any(not looks_unchanged(f, known.get(display_path(f.path))) for f in scanned.files):
            self._warm_up_converters()  # while files are hashed; a re-scan that finds nothing new starts none
        offline = offline_roots(known, scanned, self.roots)
        # said for each such folder (not recorded as a document); nothing under it is taken for deleted
        shown = sorted(display_path(root) for root in offline)
        scanned.skipped = [s for s in scanned.skipped if s.path not in shown]
        gone = gone_documents(known, scanned, [root for root in self.roots if root not in offline])
        self.progress.run_started(
            len(scanned.files) + len(scanned.skipped) + len(gone) + len(shown)
        )
        for path in shown:
            self.progress.file_done(path, "skipped", reason=OFFLINE)

        for doc in gone:
            await self.steps.removed(doc)
        for skipped in scanned.skipped:
            await self.steps.skipped(skipped.path, skipped.reason, known.get(skipped.path))

        jobs = await self._decide(scanned.files, known)
        self.unconverted = len(jobs)
        self.progress.work_known(len(jobs))
        tasks = [
            asyncio.create_task(self._convert_all(jobs), name="ingest-convert"),
            asyncio.create_task(self._embed_stage(), name="ingest-embed"),
            asyncio.create_task(self._write_stage(), name="ingest-write"),
        ]
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

    async def _decide(self, files: list[ScannedFile], known: dict[str, Document]) -> list[Job]:
        """Hash files in order and settle the empty, unchanged and duplicate ones;
        returns the files to convert."""
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
            except (
                IngestError
            ) as exc:  # no longer a regular file (swapped for a pipe since the scan)
                await self.steps.skipped(path, str(exc), previous, scanned_file)
                continue
            if is_unchanged(previous, content_hash):
                self.claimed_hashes.setdefault(content_hash, path)
                await self.steps.unchanged(path, previous, scanned_file)
                continue
            if not self.pipeline.retry_given_up and given_up_before(previous, content_hash):
                await self.steps.failed(path, scanned_file, previous.error, previous, content_hash)
                continue
            original = await asyncio.to_thread(
                duplicate_of, content_hash, path, known, self.claimed_hashes
            )
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
        return jobs

    # -- conversion, ahead of the embedder ----------------------------------------------

    async def _convert_all(self, jobs: list[Job]) -> None:
        """Convert ``jobs`` in order, a file queued behind each worker's, while fewer
        than ``lookahead`` converted chunks wait for the embedder."""
        slots = asyncio.Semaphore(self.pipeline.converters.workers + 1)
        converting: set[asyncio.Task[None]] = set()
        failures: list[BaseException] = []

        def ended(task: asyncio.Task[None]) -> None:
            converting.discard(task)
            if not task.cancelled() and (exc := task.exception()) is not None:
                failures.append(exc)

        try:
            for job in jobs:
                await slots.acquire()
                while self.batcher.pending >= self.lookahead and not failures:
                    self.room_ahead.clear()
                    await self.room_ahead.wait()
                if failures:
                    raise failures[0]
                task = asyncio.create_task(
                    self._convert(job, slots), name=f"ingest-convert:{job.path}"
                )
                converting.add(task)
                task.add_done_callback(ended)
            while converting:
                await asyncio.wait(list(converting))
            if failures:
                raise failures[0]
        finally:
            await _cancel_and_wait(list(converting))

    async def _convert(self, job: Job, slots: asyncio.Semaphore) -> None:
        try:
            self.progress.file_started(job.path)
            try:
                outcome = await self.pipeline.converters.convert(
                    job.file.path, on_page=functools.partial(self.progress.page_read, job.path)
                )
            except Exception as exc:  # the pool failed, not the file's reader: said for this file
                outcome = ConvertOutcome(
                    error=f"Conversion failed unexpectedly: {short_error(exc)}."
                )
            finally:
                self.progress.conversion_ended(job.path)
            document = outcome.document
            if document is None or not document.pieces:
                self.progress.work_finished()
                await self.steps.failed(
                    job.path, job.file, outcome.error or NO_TEXT, job.previous, job.content_hash
                )
                return
            job.converted = document
            self.batcher.add(job)
        finally:
            self.unconverted -= 1
            self.wake_embedder.set()
            slots.release()

    # -- embedding, then writing ---------------------------------------------------------

    async def _embed_stage(self) -> None:
        """Keep every embedding thread busy with a call; hand each file on to the
        writer once all its chunks are embedded."""
        loop = asyncio.get_running_loop()
        threads = self.pipeline.embed_workers
        calls: dict[asyncio.Future[np.ndarray], EmbedCall] = {}
        try:
            while True:
                for future in [f for f in calls if f.done()]:
                    for job in deliver(calls.pop(future), future.result()):
                        await self.embedded.put(job)
                while size := self.batcher.call_size(
                    free=threads - len(calls), busy=len(calls), more_coming=self.unconverted > 0
                ):
                    call = self.batcher.take(size)
                    future = loop.run_in_executor(
                        self.pipeline.embed_executor, self.pipeline.embedder.embed, call.texts
                    )
                    future.add_done_callback(lambda _: self.wake_embedder.set())
                    calls[future] = call
                    self.room_ahead.set()
                if not calls and self.unconverted == 0 and self.batcher.pending == 0:
                    break
                await self.wake_embedder.wait()
                self.wake_embedder.clear()
        finally:
            for future in calls:
                future.cancel()  # a call already running ends in its thread; its vectors are dropped
        await self.embedded.put(None)

    async def _write_stage(self) -> None:
        """Write embedded files through the ledger: each write takes every file that
        is waiting (one flush for all), so a slow store never holds up embedding."""
        ended = False
        while not ended:
            first = await self.embedded.get()
            if first is None:
                return
            group = [first]
            while len(group) < WRITE_GROUP:
                try:
                    more = self.embedded.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if more is None:
                    ended = True
                    break
                group.append(more)
            await self.steps.index(group)


async def _cancel_and_wait(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` (a finished one is left as it is) and wait until all have ended."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
