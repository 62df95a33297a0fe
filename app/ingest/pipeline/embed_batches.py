"""Converted files gathered into embed calls: the chunks of several small files go
to the embedder together, a large file's in parts; the vectors go back per file."""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor

import numpy as np

from app.ingest.embedder import Embedder
from app.ingest.pipeline.job import Job

EMBED_BATCH = 64  # chunks per embed call (the embedder sorts them by length inside)


async def take_batch(ready: asyncio.Queue[Job | None]) -> tuple[list[Job], bool]:
    """Wait for one converted file, then take those already waiting, up to about
    EMBED_BATCH chunks. Returns the batch (empty once the queue has ended) and
    whether the end of the queue was reached."""
    first = await ready.get()
    if first is None:
        return [], True
    batch = [first]
    size = first.piece_count
    while size < EMBED_BATCH:
        try:
            more = ready.get_nowait()
        except asyncio.QueueEmpty:
            break
        if more is None:
            return batch, True
        batch.append(more)
        size += more.piece_count
    return batch, False


async def embed_batch(batch: list[Job], embedder: Embedder, executor: Executor) -> None:
    """Embed every chunk of ``batch`` in the executor; each job gets its own vectors."""
    loop = asyncio.get_running_loop()
    texts = [piece.embed_text for job in batch if job.converted for piece in job.converted.pieces]
    parts = []
    for start in range(0, len(texts), EMBED_BATCH * 2):
        part = texts[start : start + EMBED_BATCH * 2]
        parts.append(await loop.run_in_executor(executor, embedder.embed, part))
    vectors = np.concatenate(parts) if parts else np.zeros((0, embedder.dimension), np.float32)
    offset = 0
    for job in batch:
        n = job.piece_count
        job.vectors = vectors[offset : offset + n]
        offset += n
