"""Each file's end, written through the ledger one write at a time: indexed with
its chunks, unchanged, skipped, failed, or removed; then counted in the progress."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any, TypeVar

from app.core.events import FileStatus
from app.core.models import Document, DocumentStatus
from app.ingest.pipeline.job import Job, document_without_chunks, indexed_write
from app.ingest.pipeline.progress import Progress
from app.ingest.scan import ScannedFile
from app.store.ledger import Ledger

# how a file left without chunks ended, as its ingest run counts it
ENDED_AS: dict[DocumentStatus, FileStatus] = {
    DocumentStatus.FAILED: "failed",
    DocumentStatus.SKIPPED: "skipped",
}

T = TypeVar("T")


class DocumentSteps:
    """One collection's catalog and Milvus writes during a run, never interleaved
    (a lock, and one store thread)."""

    def __init__(
        self, ledger: Ledger, collection: str, store_executor: Executor, progress: Progress
    ) -> None:
        self.ledger = ledger
        self.collection = collection
        self.store_executor = store_executor
        self.progress = progress
        self._lock = asyncio.Lock()

    async def store(self, fn: Callable[..., T], *args: Any) -> T:
        async with self._lock:
            return await asyncio.get_running_loop().run_in_executor(self.store_executor, fn, *args)

    async def index(self, batch: list[Job]) -> None:
        await self.store(self._index_blocking, batch)
        for job in batch:
            self.progress.work_finished()
            note = job.converted.note if job.converted else ""
            self.progress.file_done(job.path, "indexed", job.piece_count, reason=note)

    def _index_blocking(self, batch: list[Job]) -> None:
        self.ledger.index(self.collection, [indexed_write(job, self.collection) for job in batch])

    async def unchanged(self, path: str, previous: Document, scanned_file: ScannedFile) -> None:
        """Indexed with this content already; a new size or time is recorded."""
        if previous.size != scanned_file.size or previous.mtime != scanned_file.mtime:
            updated = replace(previous, size=scanned_file.size, mtime=scanned_file.mtime)
            await self.store(self.ledger.refresh, updated)
        self.progress.file_done(path, "unchanged", previous.chunk_count)

    async def failed(
        self,
        path: str,
        scanned_file: ScannedFile,
        reason: str,
        previous: Document | None,
        content_hash: str = "",
    ) -> None:
        await self._without_chunks(
            path, DocumentStatus.FAILED, reason, previous, scanned_file, content_hash
        )

    async def skipped(
        self,
        path: str,
        reason: str,
        previous: Document | None,
        scanned_file: ScannedFile | None = None,
        content_hash: str = "",
    ) -> None:
        await self._without_chunks(
            path, DocumentStatus.SKIPPED, reason, previous, scanned_file, content_hash
        )

    async def _without_chunks(
        self,
        path: str,
        status: DocumentStatus,
        reason: str,
        previous: Document | None,
        scanned_file: ScannedFile | None,
        content_hash: str,
    ) -> None:
        doc = document_without_chunks(
            self.collection, path, status, reason, scanned_file, content_hash
        )
        await self.store(self.ledger.settle, self.collection, doc, previous)
        self.progress.file_done(path, ENDED_AS[status], reason=reason)

    async def removed(self, doc: Document) -> None:
        # the file left the disk; its ingest root (when it is this file) stays, so the
        # folder or file comes back if it reappears
        await self.store(lambda: self.ledger.remove_document(doc, forget_root=False))
        self.progress.file_done(doc.path, "removed", reason="The file is no longer on disk.")
