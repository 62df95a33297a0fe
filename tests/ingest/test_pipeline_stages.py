"""The ingest's stages run at once: the next files convert while the current ones
embed, embed calls take full batches across file boundaries, writing documents
never holds up embedding, and every file ends with a FileDone even when the
conversion pool itself fails.

Real conversion worker processes, the real MiniLM embedder and Milvus Lite; what
each stage did when is recorded as it happens (timestamps, counters) and never
waited for with sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from ingest_files import paths_in

from app.core.events import FileDone, IngestEvent, IngestFinished, IngestProgress
from app.core.ids import make_doc_id
from app.core.models import DocumentStatus
from app.core.settings import Settings
from app.ingest.chunking import chunk_token_limit
from app.ingest.chunking.piece import ChunkPiece
from app.ingest.convert import ConversionPool, ConverterConfig
from app.ingest.convert.results import ConvertedDocument, ConvertOutcome
from app.ingest.convert.worker_pool import PageReport
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library
from app.ingest.pipeline import EMBED_BATCH, IngestPipeline
from app.ingest.pipeline.embed_batches import Batcher, deliver
from app.ingest.pipeline.job import Job
from app.ingest.pipeline.machine import cpu_cores, ingest_threads
from app.ingest.scan import ScannedFile
from app.store.ledger import DocumentWrite, Ledger

COLLECTION = "stages"
GATE_TIMEOUT_S = 120.0  # a gate not opened by then fails the test (it never just waits)


class RecordingEmbedder:
    """The real embedder; records every call's start, end and size, as it happens."""

    def __init__(self, inner: OnnxMiniLMEmbedder) -> None:
        self.inner = inner
        self.calls: list[tuple[float, float, int]] = []
        self.started = 0
        self.changed = threading.Condition()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        with self.changed:
            self.started += 1
            self.changed.notify_all()
        vectors = self.inner.embed(texts)
        with self.changed:
            self.calls.append((start, time.perf_counter(), len(texts)))
        return vectors


class RecordingPool(ConversionPool):
    """Real conversion workers; records when each file's conversion ended. A file
    named in ``broken`` makes the pool itself raise, as a pool that cannot start would."""

    def __init__(self, config: ConverterConfig, broken: frozenset[str] = frozenset()) -> None:
        super().__init__(config, workers=1)
        self.broken = broken
        self.ended: dict[str, float] = {}

    async def convert(self, path: Path, on_page: PageReport | None = None) -> ConvertOutcome:
        if path.name in self.broken:
            raise RuntimeError("the conversion workers could not be started")
        outcome = await super().convert(path, on_page)
        self.ended[path.name] = time.perf_counter()
        return outcome


class WriteWaitsForEmbedding(Ledger):
    """The first write waits, on the store thread, until the embedder is embedding (a
    call still running, or another one started): it goes on only if embedding does not
    wait for writes. (A call that started before the write is caught by the first.)"""

    def __init__(self, ledger: Ledger, embedder: RecordingEmbedder) -> None:
        super().__init__(ledger.catalog, ledger.store)
        self.embedder = embedder
        self.embedding_went_on: bool | None = None

    def index(self, collection: str, writes: Sequence[DocumentWrite]) -> None:
        if self.embedding_went_on is None:
            with self.embedder.changed:
                self.embedding_went_on = self.embedder.changed.wait_for(
                    lambda: self.embedder.started > len(self.embedder.calls), timeout=GATE_TIMEOUT_S
                )
        super().index(collection, writes)


@dataclass
class Run:
    events: list[IngestEvent] = field(default_factory=list)

    @property
    def finished(self) -> IngestFinished:
        last = self.events[-1]
        assert isinstance(last, IngestFinished)
        return last

    def done(self, status: str) -> list[FileDone]:
        return [e for e in self.events if isinstance(e, FileDone) and e.status == status]


def copy_docs(shared_data: Path, target: Path, count: int) -> list[Path]:
    """The first ``count`` Milvus docs (by path), as the ingest bench takes them."""
    docs = shared_data / "milvus-docs"
    copied = []
    for source in sorted(docs.rglob("*.md"))[:count]:
        dest = target / source.relative_to(docs)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(source.read_bytes())
        copied.append(dest)
    return copied


def converter_config(embedder: OnnxMiniLMEmbedder) -> ConverterConfig:
    return ConverterConfig(
        tokenizer_json=embedder.tokenizer.to_str(),
        max_tokens=chunk_token_limit(embedder.max_tokens, 256),
    )


@asynccontextmanager
async def library_at(home: Path, embedder: OnnxMiniLMEmbedder) -> AsyncIterator[Library]:
    library = Library.open(Settings(), paths_in(home), embedder=embedder)
    try:
        await library.create_collection(COLLECTION)
        yield library
    finally:
        await library.aclose()


async def ingest(
    library: Library,
    folder: Path,
    *,
    embedder: RecordingEmbedder,
    converters: ConversionPool,
    threads: int,
    ledger: Ledger | None = None,
) -> Run:
    run = Run()
    with (
        ThreadPoolExecutor(threads, thread_name_prefix="test-embed") as embed_executor,
        ThreadPoolExecutor(1, thread_name_prefix="test-store") as store_executor,
    ):
        pipeline = IngestPipeline(
            ledger=ledger or library.ledger,
            embedder=embedder,  # type: ignore[arg-type]
            converters=converters,
            embed_executor=embed_executor,
            store_executor=store_executor,
            embed_workers=threads,
            max_file_mb=50,
        )
        try:
            run.events = [event async for event in pipeline.run(COLLECTION, [folder])]
        finally:
            converters.shutdown()
    return run


async def test_the_next_files_convert_while_the_current_ones_embed_in_full_calls(
    tmp_path: Path, shared_data: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    files = copy_docs(shared_data, tmp_path / "docs", 24)
    recorder = RecordingEmbedder(embedder)
    pool = RecordingPool(converter_config(embedder))
    async with library_at(tmp_path / "home", embedder) as library:
        run = await ingest(
            library, tmp_path / "docs", embedder=recorder, converters=pool, threads=2
        )
        assert run.finished.indexed == len(files) and run.finished.failed == 0
        assert library.store.count(COLLECTION) == run.finished.chunks

    calls = sorted(recorder.calls)
    first_start, first_end, _ = calls[0]
    # conversion runs ahead: files were converted while the first call embedded
    converted_meanwhile = [
        name for name, end in pool.ended.items() if first_start < end < first_end
    ]
    assert converted_meanwhile, (
        f"no file was converted while the first embed call ran: {pool.ended}, {calls}"
    )
    # both threads embedded at once
    assert any(later[0] < earlier[1] for earlier, later in itertools.pairwise(calls)), calls

    # calls are cut across file boundaries, at most EMBED_BATCH chunks each; short ones only
    # at the start (a thread idle while the first files convert) and the end (shared out)
    sizes = [n for _, _, n in calls]
    chunks = run.finished.chunks
    assert sum(sizes) == chunks > 2 * EMBED_BATCH, sizes
    assert max(sizes) == EMBED_BATCH
    assert len(calls) <= math.ceil(chunks / EMBED_BATCH) + 2 * 2 + 1, sizes
    # a full call holds more chunks than any one file has: it took chunks of several files
    largest_file = max(e.chunks for e in run.done("indexed"))
    assert largest_file < EMBED_BATCH


async def test_embedding_goes_on_while_documents_are_written(
    tmp_path: Path, shared_data: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    files = copy_docs(
        shared_data, tmp_path / "docs", 24
    )  # more than two calls: some left after the first write
    recorder = RecordingEmbedder(embedder)
    async with library_at(tmp_path / "home", embedder) as library:
        gated = WriteWaitsForEmbedding(library.ledger, recorder)
        run = await ingest(
            library,
            tmp_path / "docs",
            embedder=recorder,
            converters=RecordingPool(converter_config(embedder)),
            threads=1,  # one embedding thread: only a writer beside it lets it go on
            ledger=gated,
        )
        assert gated.embedding_went_on, "the embedder waited for the first write to finish"
        assert run.finished.indexed == len(files)
        docs = await library.documents(COLLECTION)
        assert all(d.status is DocumentStatus.INDEXED for d in docs)
        assert (
            library.store.count(COLLECTION)
            == sum(d.chunk_count for d in docs)
            == run.finished.chunks
        )


async def test_a_conversion_pool_that_fails_is_reported_for_the_file_and_the_rest_is_indexed(
    tmp_path: Path, shared_data: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    files = copy_docs(shared_data, tmp_path / "docs", 4)
    broken = files[1].name
    recorder = RecordingEmbedder(embedder)
    pool = RecordingPool(converter_config(embedder), broken=frozenset({broken}))
    async with library_at(tmp_path / "home", embedder) as library:
        run = await ingest(
            library, tmp_path / "docs", embedder=recorder, converters=pool, threads=2
        )
        (failed,) = run.done("failed")
        assert Path(failed.path).name == broken
        assert (
            failed.reason
            == "Conversion failed unexpectedly: the conversion workers could not be started."
        )
        assert run.finished.indexed == len(files) - 1 and run.finished.failed == 1
        (doc,) = [d for d in await library.documents(COLLECTION) if Path(d.path).name == broken]
        assert doc.status is DocumentStatus.FAILED and "could not be started" in doc.error


class LatePageReports(RecordingPool):
    """Page reports travel by their own queue: this pool says page 1 of 3 during the
    conversion, page 2 only after the result is back, and page 3 never (its report was
    dropped because the file's listener had already gone), as a busy machine can."""

    async def convert(self, path: Path, on_page: PageReport | None = None) -> ConvertOutcome:
        assert on_page is not None
        on_page(1, 3, "page")
        outcome = await super().convert(path, None)
        asyncio.get_running_loop().call_soon(on_page, 2, 3, "page")
        return outcome


async def test_a_page_report_that_comes_after_its_file_is_converted_is_not_shown(
    tmp_path: Path, shared_data: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    (file,) = copy_docs(shared_data, tmp_path / "docs", 1)
    async with library_at(tmp_path / "home", embedder) as library:
        run = await ingest(
            library,
            tmp_path / "docs",
            embedder=RecordingEmbedder(embedder),
            converters=LatePageReports(converter_config(embedder)),
            threads=1,
        )
    assert run.finished.indexed == 1
    progress = [e for e in run.events if isinstance(e, IngestProgress)]
    said = [e.ocr for e in progress if e.ocr]
    assert said == [f"{file.name}: OCR, page 1 of 3"], said  # the late report is old news
    assert progress[-1].ocr == ""  # converted: no page count left on screen


# -- cutting chunks into calls (no I/O) ---------------------------------------------------


def job_with(name: str, chunks: int) -> Job:
    pieces = tuple(ChunkPiece(text=f"{name} {n}", embed_text=f"{name} {n}") for n in range(chunks))
    return Job(
        file=ScannedFile(path=Path(name), size=1, mtime=0.0),
        path=name,
        doc_id=make_doc_id(COLLECTION, name),
        content_hash=name,
        previous=None,
        converted=ConvertedDocument(title=name, pieces=pieces),
    )


def vectors_for(texts: list[str]) -> np.ndarray:
    """A vector per text that says which text it is: [file number, chunk number]."""
    return np.array(
        [[float(t.split()[0][1:]), float(t.split()[1])] for t in texts], dtype=np.float32
    )


def test_calls_take_chunks_across_files_and_each_file_gets_its_vectors_in_order() -> None:
    batcher = Batcher(batch=8)
    jobs = [job_with("f0", 3), job_with("f1", 11), job_with("f2", 2)]
    for job in jobs:
        batcher.add(job)
    first, second, third = batcher.take(8), batcher.take(8), batcher.take(8)
    assert first.texts == ["f0 0", "f0 1", "f0 2", *[f"f1 {n}" for n in range(5)]]
    assert second.texts == [*[f"f1 {n}" for n in range(5, 11)], "f2 0", "f2 1"]
    assert third.texts == [] and batcher.pending == 0

    # the calls end out of order: each file is whole only once all its chunks are back
    assert deliver(second, vectors_for(second.texts)) == [jobs[2]]
    assert deliver(first, vectors_for(first.texts)) == [jobs[0], jobs[1]]
    for number, job in enumerate(jobs):
        assert job.vectors is not None
        assert job.vectors.tolist() == [[float(number), float(n)] for n in range(job.piece_count)]


def test_a_short_call_goes_out_only_when_a_core_would_idle() -> None:
    two_cores = Batcher(batch=128, min_call=32, short_below=2 - 1)  # two threads, one converter
    two_cores.add(job_with("f0", 10))
    # the first file: no call running, so a short call rather than an idle core
    assert two_cores.call_size(free=2, busy=0, more_coming=True) == 10
    two_cores.take(10)
    two_cores.add(job_with("f1", 20))
    two_cores.add(job_with("f2", 20))
    # a call runs and the converter has the other core: wait for a full call
    assert two_cores.call_size(free=1, busy=1, more_coming=True) == 0
    two_cores.add(job_with("f3", 200))
    assert two_cores.call_size(free=1, busy=1, more_coming=True) == 128
    assert two_cores.call_size(free=0, busy=2, more_coming=True) == 0

    eight_cores = Batcher(batch=128, min_call=32, short_below=8 - 1)
    eight_cores.add(job_with("f0", 10))
    assert eight_cores.call_size(free=3, busy=5, more_coming=True) == 0  # too short to be worth it
    eight_cores.add(job_with("f1", 30))
    assert eight_cores.call_size(free=3, busy=5, more_coming=True) == 40  # cores would idle
    assert (
        eight_cores.call_size(free=1, busy=7, more_coming=True) == 0
    )  # the converter has the last one


def test_the_last_chunks_are_shared_by_all_threads() -> None:
    batcher = Batcher(batch=128, min_call=32)
    batcher.add(job_with("f0", 300))
    assert batcher.call_size(free=2, busy=0, more_coming=False) == 128  # enough for two full calls
    batcher.take(128)
    batcher.take(128)
    assert batcher.pending == 44
    # one thread is free, one busy: the free one takes half of what is left
    assert batcher.call_size(free=1, busy=1, more_coming=False) == 32  # at least a call's worth
    batcher.take(32)
    assert batcher.call_size(free=1, busy=1, more_coming=False) == 12
    batcher.take(12)
    assert batcher.call_size(free=2, busy=0, more_coming=False) == 0


# -- threads sized to the machine ------------------------------------------------------


def test_one_embedding_thread_per_core_and_a_converter_per_eight() -> None:
    assert ingest_threads(0, cores=2) == ingest_threads(cores=2)
    assert (ingest_threads(0, cores=2).embed, ingest_threads(0, cores=2).converters) == (2, 1)
    assert (ingest_threads(0, cores=1).embed, ingest_threads(0, cores=1).converters) == (1, 1)
    assert (ingest_threads(0, cores=16).embed, ingest_threads(0, cores=16).converters) == (16, 2)
    assert ingest_threads(3, cores=16).embed == 3  # asked for in the settings
    assert ingest_threads(256, cores=2).converters == 2  # never more processes than cores
    assert 1 <= cpu_cores() <= (os.cpu_count() or 1)
