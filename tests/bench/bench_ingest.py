"""Ingest benchmark: milvus-docs + WhatisMilvus.pdf into a fresh data dir.

Prints files/s, chunks/s, embeddings/s, peak RSS (this process and its
children: the conversion workers and, with the native Milvus Lite, its
server), the event loop's worst stall during the ingest, and the
embedder's raw rate alone, measured in the same run on the very texts the
ingest embedded, in calls of the same size on as many threads as the ingest
embeds with. Target: end-to-end embeddings/s at >= 90% of the raw rate.

Where the time goes: how long every embedding thread had a call running (the
rest is start-up, a converter that fell behind, or the last calls), and the
CPU each part took; on a busy machine the CPU figures hold better than the rates.

    .venv/bin/python tests/bench/bench_ingest.py [--converter process|thread] [--limit N] [--raw-sample N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import psutil

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from app.core.events import IngestFinished  # noqa: E402
from app.core.paths import AppPaths  # noqa: E402
from app.core.settings import Settings  # noqa: E402
from app.ingest.embedder import OnnxMiniLMEmbedder  # noqa: E402
from app.ingest.library import Library  # noqa: E402
from app.ingest.pipeline import EMBED_BATCH  # noqa: E402
from app.ingest.pipeline.machine import ingest_threads  # noqa: E402

sys.path.insert(0, str(REPO / "tests"))
from locate_data import shared_data_dir  # noqa: E402

DATA = shared_data_dir()


class RecordingEmbedder:
    """The real embedder; keeps the texts it was asked to embed."""

    def __init__(self, inner: OnnxMiniLMEmbedder) -> None:
        self.inner = inner
        self.texts: list[str] = []
        self.calls: list[tuple[float, float, int]] = []  # (start, end, texts) of every call
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    seconds = 0.0
    cpu_seconds = (
        0.0  # CPU time of the calling threads (onnxruntime runs on them: 1 intra-op thread)
    )

    def embed(self, texts: list[str]) -> np.ndarray:
        start, cpu_start = time.perf_counter(), time.thread_time()
        vectors = self.inner.embed(texts)
        end = time.perf_counter()
        with self._lock:
            self.texts.extend(texts)
            self.seconds += end - start
            self.cpu_seconds += time.thread_time() - cpu_start
            self.calls.append((start, end, len(texts)))
        return vectors


def busy_seconds(
    calls: list[tuple[float, float, int]], threads: int, start: float, end: float
) -> float:
    """Seconds between ``start`` and ``end`` during which ``threads`` calls ran at once."""
    edges = sorted([(s, 1) for s, _, _ in calls] + [(e, -1) for _, e, _ in calls])
    running, since, busy = 0, start, 0.0
    for at, step in edges:
        if running >= threads:
            busy += max(0.0, min(at, end) - max(since, start))
        running += step
        since = at
    return busy


class RssSampler:
    """Peak resident memory of this process plus its children, sampled every 0.2 s,
    and the CPU each child took meanwhile (the conversion workers; with the native
    Milvus Lite, its server process too)."""

    def __init__(self) -> None:
        self.peak_main = 0
        self.peak_total = 0
        self.children_cpu: dict[int, tuple[str, float]] = {}  # pid -> (name, CPU seconds so far)
        self._cpu_before: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.2):
            try:
                main = me.memory_info().rss
                children = me.children(recursive=True)
                total = main + sum(c.memory_info().rss for c in children)
                for child in children:
                    times = child.cpu_times()
                    self.children_cpu[child.pid] = (child.name(), times.user + times.system)
            except psutil.Error:
                continue
            self.peak_main = max(self.peak_main, main)
            self.peak_total = max(self.peak_total, total)

    def cpu(self, milvus: bool) -> float:
        """CPU seconds of the Milvus server (``milvus``) or of the other children, since the start."""
        return sum(
            cpu - self._cpu_before.get(pid, 0.0)
            for pid, (name, cpu) in self.children_cpu.items()
            if (name == "milvus") == milvus
        )

    def __enter__(self) -> RssSampler:
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                times = child.cpu_times()
                self._cpu_before[child.pid] = times.user + times.system
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def loop_lag(stop: asyncio.Event, lags: list[float], every: float = 0.01) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(every)
        lags.append(time.perf_counter() - start - every)


def raw_rate(embedder: OnnxMiniLMEmbedder, texts: list[str], threads: int) -> tuple[float, float]:
    """Embeddings per second with ``threads`` threads in calls of the pipeline's size,
    and the CPU seconds a text took."""
    batches = [texts[i : i + EMBED_BATCH] for i in range(0, len(texts), EMBED_BATCH)]
    cpu = [0.0]
    lock = threading.Lock()

    def embed(batch: list[str]) -> None:
        start = time.thread_time()
        embedder.embed(batch)
        with lock:
            cpu[0] += time.thread_time() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(embed, batches))
    return len(texts) / (time.perf_counter() - start), cpu[0] / len(texts)


async def ingest(paths: list[Path], converter: str, raw_sample: int) -> dict[str, float]:
    home = Path(tempfile.mkdtemp(prefix="fathom-bench-"))
    app_paths = AppPaths(
        config_dir=home / "config", data_dir=home / "data", cache_dir=home / "cache"
    )
    inner = OnnxMiniLMEmbedder()
    inner.embed(["warm up"])
    recorder = RecordingEmbedder(inner)
    settings = Settings()
    library = Library.open(settings, app_paths, embedder=recorder, converter_kind=converter)  # type: ignore[arg-type]
    insert = library.store.insert
    insert_seconds = [0.0]

    def timed_insert(*args: object, **kwargs: object) -> None:
        start = time.perf_counter()
        insert(*args, **kwargs)  # type: ignore[arg-type]
        insert_seconds[0] += time.perf_counter() - start

    library.store.insert = timed_insert  # type: ignore[method-assign]
    lags: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(loop_lag(stop, lags))
    finished: IngestFinished | None = None
    me = psutil.Process()
    with RssSampler() as rss:
        cpu0 = me.cpu_times()
        start = time.perf_counter()
        async for event in library.ingest(paths, "bench"):
            if isinstance(event, IngestFinished):
                finished = event
        wall = time.perf_counter() - start
        cpu1 = me.cpu_times()
    stop.set()
    await ticker
    await library.aclose()
    assert finished is not None
    texts = recorder.texts
    if raw_sample and len(texts) > raw_sample:  # an even spread, to keep the run short
        step = len(texts) / raw_sample
        texts = [texts[int(i * step)] for i in range(raw_sample)]
    threads = ingest_threads(settings.ingest.workers).embed
    raw, raw_cpu_per_text = raw_rate(inner, texts, threads)
    lags.sort()
    calls = recorder.calls
    first_call = min((c[0] for c in calls), default=start) - start
    return {
        "files": finished.indexed,
        "failed": finished.failed + finished.skipped,
        "chunks": finished.chunks,
        "embedded": len(recorder.texts),
        "wall": wall,
        "raw": raw,
        "raw_cpu_per_text": raw_cpu_per_text,
        "threads": threads,
        "all_busy": busy_seconds(calls, threads, start, start + wall),
        "first_call": first_call,
        "calls": len(calls),
        "embed_s": recorder.seconds,
        "embed_cpu": recorder.cpu_seconds,
        "main_cpu": (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system),
        "workers_cpu": rss.cpu(milvus=False),
        "milvus_cpu": rss.cpu(milvus=True),
        "insert_s": insert_seconds[0],
        "rss_main": rss.peak_main / 2**20,
        "rss_total": rss.peak_total / 2**20,
        "lag_p50": statistics.median(lags) * 1000 if lags else 0.0,
        "lag_p99": lags[int(len(lags) * 0.99)] * 1000 if lags else 0.0,
        "lag_max": lags[-1] * 1000 if lags else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--converter", choices=("process", "thread"), default="process")
    parser.add_argument("--limit", type=int, default=0, help="only the first N Markdown files")
    parser.add_argument(
        "--raw-sample", type=int, default=1500, help="texts for the raw embedder rate (0: all)"
    )
    args = parser.parse_args()
    docs = DATA / "milvus-docs"
    if args.limit:
        folder = Path(tempfile.mkdtemp(prefix="fathom-bench-docs-"))
        for source in sorted(docs.rglob("*.md"))[: args.limit]:
            target = folder / source.relative_to(docs)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
        docs = folder
    paths = [docs, DATA / "pdf" / "WhatisMilvus.pdf"]
    r = asyncio.run(ingest(paths, args.converter, args.raw_sample))
    e2e = r["embedded"] / r["wall"]
    print(
        f"ingest of {docs.name} + WhatisMilvus.pdf, converter in {args.converter} pool, {os.cpu_count()} CPUs"
    )
    print(f"  files indexed        {r['files']:.0f} (not indexed: {r['failed']:.0f})")
    print(f"  chunks               {r['chunks']:.0f}")
    print(f"  wall time            {r['wall']:.1f} s")
    print(f"  files/s              {r['files'] / r['wall']:.2f}")
    print(f"  chunks/s             {r['chunks'] / r['wall']:.1f}")
    print(f"  embeddings/s (e2e)   {e2e:.1f}")
    print(
        f"  embeddings/s (raw)   {r['raw']:.1f}   (embedder alone on the same texts, same threads)"
    )
    print(f"  e2e / raw            {100 * e2e / r['raw']:.0f} %   (target >= 90 %)")
    print(
        f"  embedding threads    {r['threads']:.0f}, all busy {100 * r['all_busy'] / r['wall']:.0f} % of the wall "
        f"time; first call after {r['first_call']:.1f} s; {r['calls']:.0f} calls"
    )
    print(
        f"  time in embed calls  {r['embed_s']:.1f} s (summed over threads); in Milvus inserts {r['insert_s']:.1f} s"
    )
    total_cpu = r["main_cpu"] + r["workers_cpu"] + r["milvus_cpu"]
    milvus = f", Milvus server {r['milvus_cpu']:.0f} s" if r["milvus_cpu"] else ""
    print(
        f"  CPU                  {total_cpu:.0f} s: embedding {r['embed_cpu']:.0f} s, rest of main process "
        f"{r['main_cpu'] - r['embed_cpu']:.0f} s, conversion workers {r['workers_cpu']:.0f} s{milvus}"
    )
    print(
        f"  embedding CPU        {1000 * r['embed_cpu'] / r['embedded']:.1f} ms a chunk in the ingest, "
        f"{1000 * r['raw_cpu_per_text']:.1f} ms alone"
    )
    ceiling = r["raw_cpu_per_text"] * r["embedded"] / total_cpu
    print(
        f"  CPU-bound ceiling    {100 * ceiling:.0f} %   (raw embedding CPU / Fathom's CPU: the e2e/raw ratio "
        "an otherwise idle machine allows)"
    )
    print(
        f"  peak RSS             {r['rss_main']:.0f} MiB main, {r['rss_total']:.0f} MiB with workers"
    )
    print(
        f"  event-loop lag       p50 {r['lag_p50']:.1f} ms, p99 {r['lag_p99']:.1f} ms, max {r['lag_max']:.1f} ms"
    )


if __name__ == "__main__":
    main()
