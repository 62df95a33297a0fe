"""The ingest pipeline: scan → hash → convert → embed → store, as a stream of events.

Stages and where they run:

- scanning and hashing: a thread (file I/O);
- conversion and chunking: :class:`~app.ingest.convert.ConversionPool` worker
  processes (Docling holds the GIL), a few files in flight;
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
import hashlib
import os
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import Executor
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from app.core.events import (
    FileDone,
    FileStarted,
    IngestEvent,
    IngestFinished,
    IngestProgress,
    IngestStarted,
)
from app.core.ids import make_chunk_id, make_doc_id
from app.core.models import Chunk, Document, DocumentStatus
from app.ingest.convert import ConversionPool, ConvertedDocument
from app.ingest.embedder import Embedder
from app.ingest.scan import ScannedFile, ScanResult, absolute, display_path, scan
from app.store.ledger import DocumentWrite, Ledger

T = TypeVar("T")

EMBED_BATCH = 64  # chunks per embed call (the embedder sorts them by length inside)
PROGRESS_INTERVAL_S = 0.25  # at most this often an IngestProgress
HASH_BLOCK = 1 << 20
EMPTY_FILE = "The file is empty; there is nothing to index."


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass
class _Job:
    """One file on its way through the pipeline."""

    file: ScannedFile
    path: str
    doc_id: str
    content_hash: str
    previous: Document | None
    converted: ConvertedDocument | None = None
    vectors: np.ndarray | None = None


@dataclass
class _Tally:
    indexed: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    removed: int = 0
    chunks: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def done(self) -> int:
        return self.indexed + self.unchanged + self.skipped + self.failed + self.removed


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
        self.tally = _Tally()
        self.total = 0
        self.started = time.monotonic()
        self.work_total = 0
        self.work_done = 0
        self.work_started: float | None = None
        self.current = ""
        self.last_progress = 0.0
        self.outbox: asyncio.Queue[IngestEvent | None] = asyncio.Queue()
        self.ready: asyncio.Queue[_Job | None] = asyncio.Queue(maxsize=max(4, 2 * pipeline.converters.workers))
        self.store_lock = asyncio.Lock()
        self.claimed_hashes: dict[str, str] = {}  # content hash -> path indexed in this run

    # -- plumbing -------------------------------------------------------------------

    async def _in(self, executor: Executor | None, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)

    async def _store(self, fn: Callable[..., T], *args: Any) -> T:
        async with self.store_lock:
            return await self._in(self.p.store_executor, fn, *args)

    def _emit(self, event: IngestEvent) -> None:
        self.outbox.put_nowait(event)

    def _done(self, path: str, status: str, chunks: int = 0, reason: str = "") -> None:
        tally = self.tally
        if status == "indexed":
            tally.indexed += 1
            tally.chunks += chunks
        elif status == "unchanged":
            tally.unchanged += 1
        elif status == "skipped":
            tally.skipped += 1
        elif status == "failed":
            tally.failed += 1
            tally.failures.append((path, reason))
        elif status == "removed":
            tally.removed += 1
        self._emit(FileDone(collection=self.collection, path=path, status=status, chunks=chunks, reason=reason))
        self._progress()

    def _progress(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_progress < PROGRESS_INTERVAL_S:
            return
        self.last_progress = now
        rate = 0.0
        eta: float | None = None
        if self.work_started is not None and self.work_done:
            spent = now - self.work_started
            rate = self.work_done / spent if spent > 0 else 0.0
            left = self.work_total - self.work_done
            eta = left / rate if rate > 0 else None
        elif self.work_total == 0:
            eta = 0.0
        self._emit(
            IngestProgress(
                collection=self.collection,
                done_files=self.tally.done,
                total_files=self.total,
                chunks=self.tally.chunks,
                current=self.current,
                files_per_s=rate,
                eta_s=eta,
            )
        )

    # -- the run --------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[IngestEvent, None]:
        run_id = await self._store(self.p.catalog.start_run, self.collection)
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
                main.cancel()
                await asyncio.gather(main, return_exceptions=True)
            t = self.tally
            await self._in(
                self.p.store_executor,
                lambda: self.p.catalog.finish_run(
                    run_id,
                    status,
                    indexed=t.indexed,
                    unchanged=t.unchanged,
                    skipped=t.skipped,
                    failed=t.failed,
                    removed=t.removed,
                    chunks=t.chunks,
                ),
            )

    async def _main(self) -> None:
        warm_up = asyncio.create_task(self.p.converters.start())  # workers start while we scan
        try:
            await self._work()
        finally:
            if not warm_up.done():
                warm_up.cancel()
            await asyncio.gather(warm_up, return_exceptions=True)

    async def _work(self) -> None:
        scanned: ScanResult = await asyncio.to_thread(scan, self.roots, self.p.max_file_mb)
        known = {d.path: d for d in await asyncio.to_thread(self.p.catalog.documents, self.collection)}
        seen = {display_path(f.path) for f in scanned.files} | {s.path for s in scanned.skipped}
        root_texts = [display_path(r) for r in self.roots]
        gone = [
            doc for path, doc in known.items() if path not in seen and any(is_under(path, root) for root in root_texts)
        ]
        self.total = len(scanned.files) + len(scanned.skipped) + len(gone)
        self._emit(IngestStarted(collection=self.collection, total_files=self.total))

        for doc in gone:
            await self._remove(doc)
        for skipped in scanned.skipped:
            await self._record_skipped(skipped.path, skipped.reason, known.get(skipped.path))

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
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self._progress(force=True)
        t = self.tally
        self._emit(
            IngestFinished(
                collection=self.collection,
                indexed=t.indexed,
                unchanged=t.unchanged,
                skipped=t.skipped,
                failed=t.failed,
                removed=t.removed,
                chunks=t.chunks,
                elapsed_s=time.monotonic() - self.started,
                failures=tuple(t.failures),
            )
        )

    # -- deciding what each file needs ----------------------------------------------

    async def _produce(self, files: list[ScannedFile], known: dict[str, Document]) -> None:
        """Hash files in order, settle the unchanged and duplicate ones, and send the
        rest to conversion (a few in flight; results go to the embed lanes)."""
        limit = asyncio.Semaphore(self.p.converters.workers + 1)
        converting: set[asyncio.Task[None]] = set()
        jobs: list[_Job] = []
        for scanned_file in files:
            path = display_path(scanned_file.path)
            previous = known.get(path)
            if scanned_file.size == 0:
                await self._record_skipped(path, EMPTY_FILE, previous, scanned_file)
                continue
            try:
                content_hash = await asyncio.to_thread(self._hash_if_needed, scanned_file, previous)
            except OSError as exc:
                reason = _read_error(exc)
                await self._record_failed(path, make_doc_id(self.collection, path), scanned_file, reason, previous)
                continue
            if (
                previous is not None
                and previous.status is DocumentStatus.INDEXED
                and previous.content_hash == content_hash
            ):
                self.claimed_hashes.setdefault(content_hash, path)
                if previous.size != scanned_file.size or previous.mtime != scanned_file.mtime:
                    updated = replace(previous, size=scanned_file.size, mtime=scanned_file.mtime)
                    await self._store(self.p.ledger.refresh, updated)
                self._done(path, "unchanged", previous.chunk_count)
                continue
            original = await asyncio.to_thread(self._duplicate_of, content_hash, path, known)
            if original is not None:
                reason = f"Same content as {original}, already in this collection."
                await self._record_skipped(path, reason, previous, scanned_file, content_hash)
                continue
            self.claimed_hashes[content_hash] = path
            jobs.append(
                _Job(
                    file=scanned_file,
                    path=path,
                    doc_id=make_doc_id(self.collection, path),
                    content_hash=content_hash,
                    previous=previous,
                )
            )
        self.work_total = len(jobs)
        self.work_started = time.monotonic()
        self._progress(force=True)
        try:
            for job in jobs:
                await limit.acquire()
                task = asyncio.create_task(self._convert(job, limit))
                converting.add(task)
                task.add_done_callback(converting.discard)
            if converting:
                await asyncio.gather(*list(converting))
        finally:
            pending = list(converting)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _produce_all(self, files: list[ScannedFile], known: dict[str, Document], lanes: int) -> None:
        await self._produce(files, known)
        for _ in range(lanes):
            await self.ready.put(None)

    def _hash_if_needed(self, scanned_file: ScannedFile, previous: Document | None) -> str:
        if (
            previous is not None
            and previous.status is DocumentStatus.INDEXED
            and previous.size == scanned_file.size
            and previous.mtime == scanned_file.mtime
            and previous.content_hash
        ):
            return previous.content_hash  # same size and time: trust the recorded hash
        return file_hash(scanned_file.path)

    def _duplicate_of(self, content_hash: str, path: str, known: dict[str, Document]) -> str | None:
        claimed = self.claimed_hashes.get(content_hash)
        if claimed is not None and claimed != path:
            return claimed
        for doc in known.values():
            if (
                doc.content_hash == content_hash
                and doc.path != path
                and doc.status is DocumentStatus.INDEXED
                and os.path.exists(doc.path)
            ):
                return doc.path
        return None

    # -- conversion -------------------------------------------------------------------

    async def _convert(self, job: _Job, limit: asyncio.Semaphore) -> None:
        # the slot is held until the result is handed on: back-pressure when embedding lags
        try:
            self.current = job.path
            self._emit(FileStarted(collection=self.collection, path=job.path))
            outcome = await self.p.converters.convert(job.file.path)
            if outcome.document is None:
                self.work_done += 1
                await self._record_failed(job.path, job.doc_id, job.file, outcome.error, job.previous, job.content_hash)
                return
            job.converted = outcome.document
            await self.ready.put(job)
        finally:
            limit.release()

    # -- embedding and storing ------------------------------------------------------

    async def _embed_lane(self) -> None:
        finished = False
        while not finished:
            first = await self.ready.get()
            if first is None:
                return
            batch = [first]
            size = len(first.converted.pieces) if first.converted else 0
            while size < EMBED_BATCH:
                try:
                    more = self.ready.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if more is None:
                    finished = True
                    break
                batch.append(more)
                size += len(more.converted.pieces) if more.converted else 0
            await self._embed(batch)
            await self._write(batch)

    async def _embed(self, batch: list[_Job]) -> None:
        texts = [piece.embed_text for job in batch if job.converted for piece in job.converted.pieces]
        parts = []
        for start in range(0, len(texts), EMBED_BATCH * 2):
            part = texts[start : start + EMBED_BATCH * 2]
            parts.append(await self._in(self.p.embed_executor, self.p.embedder.embed, part))
        vectors = np.concatenate(parts) if parts else np.zeros((0, self.p.embedder.dimension), np.float32)
        offset = 0
        for job in batch:
            n = len(job.converted.pieces) if job.converted else 0
            job.vectors = vectors[offset : offset + n]
            offset += n

    async def _write(self, batch: list[_Job]) -> None:
        await self._store(self._write_blocking, batch)
        for job in batch:
            self.work_done += 1
            n = len(job.converted.pieces) if job.converted else 0
            self._done(job.path, "indexed", n)

    def _write_blocking(self, batch: list[_Job]) -> None:
        writes = []
        for job in batch:
            assert job.converted is not None and job.vectors is not None
            writes.append(
                DocumentWrite(
                    document=self._document(job, DocumentStatus.INDEXED),
                    previous=job.previous,
                    chunks=self._chunks(job),
                    vectors=job.vectors,
                )
            )
        self.p.ledger.index(self.collection, writes)

    def _chunks(self, job: _Job) -> list[Chunk]:
        assert job.converted is not None
        title = job.converted.title
        return [
            Chunk(
                chunk_id=make_chunk_id(job.doc_id, n),
                doc_id=job.doc_id,
                collection=self.collection,
                path=job.path,
                text=piece.text,
                title=title,
                headings=piece.headings,
                page=piece.page,
                chunk_no=n,
            )
            for n, piece in enumerate(job.converted.pieces)
        ]

    def _document(self, job: _Job, status: DocumentStatus) -> Document:
        return Document(
            doc_id=job.doc_id,
            collection=self.collection,
            path=job.path,
            content_hash=job.content_hash,
            size=job.file.size,
            mtime=job.file.mtime,
            status=status,
            title=job.converted.title if job.converted else "",
        )

    # -- files that end without chunks ---------------------------------------------

    async def _record_failed(
        self,
        path: str,
        doc_id: str,
        scanned_file: ScannedFile,
        reason: str,
        previous: Document | None,
        content_hash: str = "",
    ) -> None:
        doc = Document(
            doc_id=doc_id,
            collection=self.collection,
            path=path,
            content_hash=content_hash,
            size=scanned_file.size,
            mtime=scanned_file.mtime,
            status=DocumentStatus.FAILED,
            error=reason,
        )
        await self._store(self._settle_without_chunks, doc, previous)
        self._done(path, "failed", reason=reason)

    async def _record_skipped(
        self,
        path: str,
        reason: str,
        previous: Document | None,
        scanned_file: ScannedFile | None = None,
        content_hash: str = "",
    ) -> None:
        doc = Document(
            doc_id=make_doc_id(self.collection, path),
            collection=self.collection,
            path=path,
            content_hash=content_hash,
            size=scanned_file.size if scanned_file else 0,
            mtime=scanned_file.mtime if scanned_file else 0.0,
            status=DocumentStatus.SKIPPED,
            error=reason,
        )
        await self._store(self._settle_without_chunks, doc, previous)
        self._done(path, "skipped", reason=reason)

    def _settle_without_chunks(self, doc: Document, previous: Document | None) -> None:
        self.p.ledger.settle(self.collection, doc, previous)

    async def _remove(self, doc: Document) -> None:
        # the file left the disk; its ingest root (when it is this file) stays, so the
        # folder or file comes back if it reappears
        await self._store(lambda: self.p.ledger.remove_document(doc, forget_root=False))
        self._done(doc.path, "removed", reason="The file is no longer on disk.")


def _read_error(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "Fathom has no permission to read this file. Change its permissions or copy it elsewhere."
    return f"The file could not be read ({exc.strerror or exc})."
