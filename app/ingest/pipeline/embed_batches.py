"""Converted files' chunks cut into embed calls across file boundaries: a call
takes ``EMBED_BATCH`` chunks, from the end of one file and the start of the
next as they come; a file's vectors are put back together when its last chunk
is embedded, whichever calls (and threads) embedded its parts.

A shorter call goes out only when a core would otherwise sit idle: while more
files are coming, when fewer calls run than the cores the converters leave
free (on two cores: no call at all, at the start or when the converter fell
behind; with one call running, the converter has the other core); and at the
end, when no more files are coming: the last chunks are shared by all the
threads, so that they finish together.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from app.ingest.pipeline.job import Job

# Chunks per embed call. The embedder sorts a call's chunks by length into runs of
# similar length (less padding), so larger calls embed a little faster per chunk:
# on the Milvus docs one thread took ~41 ms a chunk in calls of 16, ~35 in calls of 64,
# ~32 in calls of 128 or 256. 128 chunks take ~4 s on one core: the last calls of a
# run are split over the threads so none is left finishing alone.
EMBED_BATCH = 128
MIN_CALL = 32  # the shortest call sent while another runs (shorter ones cost ~25% more a chunk)


@dataclass
class _Waiting:
    """A converted file whose chunks are not all embedded yet."""

    job: Job
    next_piece: int = 0  # the first chunk not yet handed to an embed call
    parts: dict[int, np.ndarray] = field(default_factory=dict)  # first chunk -> its call's vectors
    embedded: int = 0

    @property
    def texts_left(self) -> int:
        return self.job.piece_count - self.next_piece


@dataclass
class EmbedCall:
    """The chunks of one embed call: ``(file, first chunk, count)`` slices, in order."""

    texts: list[str]
    slices: list[tuple[_Waiting, int, int]]


class Batcher:
    """Cuts the chunks of converted files into embed calls and puts the vectors
    back together per file. No I/O: the embed stage decides when to call."""

    def __init__(
        self, batch: int = EMBED_BATCH, min_call: int = MIN_CALL, short_below: int = 1
    ) -> None:
        self.batch = max(1, batch)
        self.min_call = max(1, min(min_call, self.batch))
        self.short_below = max(
            1, short_below
        )  # fewer calls running than this: a short call beats an idle core
        self._queue: deque[_Waiting] = deque()  # files with chunks not yet in a call, in order
        self.pending = 0  # chunks converted and not yet in a call

    def add(self, job: Job) -> None:
        """A converted file with at least one chunk."""
        assert job.piece_count > 0
        self._queue.append(_Waiting(job))
        self.pending += job.piece_count

    def call_size(self, *, free: int, busy: int, more_coming: bool) -> int:
        """How many chunks the next call should take (0: none now), with ``free``
        threads idle, ``busy`` embedding, and whether more files will be converted."""
        if free <= 0 or self.pending == 0:
            return 0
        if more_coming:
            if self.pending >= self.batch:
                return self.batch
            if busy == 0 or (busy < self.short_below and self.pending >= self.min_call):
                return self.pending  # a core would idle: a short call now
            return 0  # the converters use the other cores; a full call when they have made one
        # the last chunks: shared by all the threads, so that none finishes long after the others
        share = max(self.min_call, math.ceil(self.pending / (free + busy)))
        return min(self.batch, self.pending, share)

    def take(self, size: int) -> EmbedCall:
        """The next ``size`` chunks (or all that wait, if fewer), across file boundaries."""
        texts: list[str] = []
        slices: list[tuple[_Waiting, int, int]] = []
        while self._queue and len(texts) < size:
            waiting = self._queue[0]
            converted = waiting.job.converted
            assert converted is not None
            count = min(waiting.texts_left, size - len(texts))
            first = waiting.next_piece
            texts.extend(piece.embed_text for piece in converted.pieces[first : first + count])
            slices.append((waiting, first, count))
            waiting.next_piece += count
            if waiting.texts_left == 0:
                self._queue.popleft()
        self.pending -= len(texts)
        return EmbedCall(texts, slices)


def deliver(call: EmbedCall, vectors: np.ndarray) -> list[Job]:
    """Hand each file its part of ``vectors``; returns the files now fully embedded
    (their ``vectors`` set, in chunk order)."""
    done = []
    offset = 0
    for waiting, first, count in call.slices:
        waiting.parts[first] = vectors[offset : offset + count]
        waiting.embedded += count
        offset += count
        if waiting.embedded == waiting.job.piece_count:
            parts = [waiting.parts[start] for start in sorted(waiting.parts)]
            waiting.job.vectors = parts[0] if len(parts) == 1 else np.concatenate(parts)
            waiting.parts.clear()
            done.append(waiting.job)
    return done
