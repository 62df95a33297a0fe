"""Conversions run off the event loop: a :class:`Converter` in each of a few worker
processes (Docling holds the GIL for most of its work; a thread would stall the
event loop), or threads when measuring. A worker that dies is replaced.

While OCR reads a file's pages, the worker reports each page on a queue; a listener
thread here hands it to the ``on_page`` the file's ``convert`` was given, on its
event loop (the ingest's progress then counts pages, not only files). The result
comes back by another way (the executor's), and can overtake the reports: so the
worker ends a file's reports with a mark, and ``convert`` returns only once the mark
is through — every report of a file is heard before its result."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from app.core.errors import IngestError
from app.ingest.convert.converter import Converter, ConverterConfig
from app.ingest.convert.results import ConvertOutcome
from app.ingest.file_errors import short_error

ExecutorKind = Literal["process", "thread"]
# (read, to read, unit) of one file; unit: "page" OCR read, "message" of a mail archive, "pdf" text pages
PageReport = Callable[[int, int, str], None]
REPORTS_END = "end"  # the unit of the mark after a file's last report
REPORTS_WAIT_S = 10.0  # how long a result waits for its file's reports at most (a lost mark)


class ConversionPool:
    """Converters in ``workers`` processes (default) or threads, created once and
    reused; ``convert`` awaits one file without blocking the event loop."""

    def __init__(self, config: ConverterConfig, workers: int = 2, kind: ExecutorKind = "process") -> None:
        self.config = config
        self.workers = max(1, workers)
        self.kind = kind
        self._executor: Executor | None = None
        self._starting = asyncio.Lock()
        self._pages: Any = None  # the queue workers report OCR pages on: (path, read, total)
        self._on_page: dict[str, PageReport] = {}  # path → where its pages are reported
        self._reports_end: dict[str, Callable[[], None]] = {}  # path → told when its reports are through

    def _ensure(self) -> Executor:
        if self._executor is None:
            if self.kind == "process":
                context = multiprocessing.get_context("spawn")
                self._pages = context.Queue()
                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=context,
                    initializer=_init_worker,
                    initargs=(self.config, self._pages),
                )
            else:
                self._pages = queue.SimpleQueue()
                self._executor = ThreadPoolExecutor(
                    max_workers=self.workers,
                    thread_name_prefix="fathom-convert",
                    initializer=_init_thread_worker,
                    initargs=(self.config, self._pages),
                )
            threading.Thread(target=self._listen, args=(self._pages,), name="fathom-ocr-pages", daemon=True).start()
        return self._executor

    def _listen(self, pages: Any) -> None:
        """Hand each page report to its file's ``on_page`` until the pool shuts down."""
        while True:
            report = pages.get()
            if report is None:
                return
            path, read, total, unit = report
            if unit == REPORTS_END:
                ended = self._reports_end.get(path)
                if ended is not None:
                    ended()
                continue
            on_page = self._on_page.get(path)
            if on_page is not None:
                on_page(read, total, unit)

    async def start(self) -> None:
        """Start the workers from a helper thread: spawning a process (and sending it
        the tokenizer) can take seconds on a busy machine, never on the event loop."""
        async with self._starting:
            if self._executor is None:
                await asyncio.to_thread(self._start_blocking)

    def _start_blocking(self) -> None:
        executor = self._ensure()
        if self.kind == "process":
            pings = [executor.submit(_ping) for _ in range(self.workers)]
            for ping in pings:
                ping.result()

    async def convert(self, path: Path, on_page: PageReport | None = None) -> ConvertOutcome:
        """Convert one file; ``on_page`` (called on this event loop) hears of each page OCR reads."""
        loop = asyncio.get_running_loop()
        await self.start()
        fn: Callable[[str], ConvertOutcome] = _convert_in_worker if self.kind == "process" else _convert_in_thread
        key = str(path)
        reports_through = asyncio.Event()
        if on_page is not None:
            self._on_page[key] = lambda read, total, unit: _call_soon(loop, on_page, read, total, unit)
            self._reports_end[key] = lambda: _call_soon(loop, reports_through.set)
        try:
            outcome = await loop.run_in_executor(self._ensure(), fn, key)
            if on_page is not None:
                try:
                    await asyncio.wait_for(reports_through.wait(), REPORTS_WAIT_S)
                except TimeoutError:
                    pass  # the mark was lost: the result matters more than a page count
            return outcome
        except Exception as exc:
            from concurrent.futures.process import BrokenProcessPool

            if isinstance(exc, BrokenProcessPool):
                # a worker died (out of memory, a crash in a native parser): start fresh
                self.shutdown()
                return ConvertOutcome(error="The converter crashed on this file (it may be damaged or too large).")
            raise
        finally:
            self._on_page.pop(key, None)
            self._reports_end.pop(key, None)

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
            self._pages.put(None)  # the listener's end
            self._pages = None


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the loop closed meanwhile: nobody is listening
        pass


# -- in a worker process ----------------------------------------------------------

_worker_converter: Converter | None = None
_worker_pages: Any = None
GC_THRESHOLD = 10_000  # allocations before a young-generation collection (Python's default: 700)


def _init_worker(config: ConverterConfig, pages: Any) -> None:
    global _worker_converter, _worker_pages
    _worker_pages = pages
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _worker_converter = Converter(config)
    # Docling makes hundreds of thousands of short-lived objects a document: the cyclic
    # collector took 10% of conversion CPU on the Milvus docs at Python's default
    # threshold (700), 2% at this one.
    gc.set_threshold(GC_THRESHOLD, 10, 10)


def _ping() -> int:
    return os.getpid()


def _convert_in_worker(path: str) -> ConvertOutcome:
    converter = _worker_converter
    if converter is None:  # pragma: no cover - the initializer always runs first
        raise RuntimeError("conversion worker not initialised")
    return _outcome(converter, path, _worker_pages, in_process=True)


# -- in a worker thread -----------------------------------------------------------

_thread_local_converters: dict[int, tuple[Converter, Any]] = {}


def _init_thread_worker(config: ConverterConfig, pages: Any) -> None:
    _thread_local_converters[threading.get_ident()] = (Converter(config), pages)


def _convert_in_thread(path: str) -> ConvertOutcome:
    converter, pages = _thread_local_converters[threading.get_ident()]
    return _outcome(converter, path, pages, in_process=False)


def _outcome(converter: Converter, path: str, pages: Any, *, in_process: bool) -> ConvertOutcome:
    """Convert, and turn any failure into the sentence that goes back to the pipeline;
    each page OCR reads (each message of a mail archive) is reported on ``pages`` as
    (path, read, total, unit)."""
    converter.pages.on_page = lambda read, total, unit: pages.put((path, read, total, unit))
    try:
        return _convert_or_say_why(converter, path, in_process=in_process)
    finally:
        pages.put((path, 0, 0, REPORTS_END))  # after the file's last report, on the same queue


def _convert_or_say_why(converter: Converter, path: str, *, in_process: bool) -> ConvertOutcome:
    try:
        return ConvertOutcome(document=converter.convert(Path(path)))
    except IngestError as exc:
        return ConvertOutcome(error=str(exc))
    except MemoryError as exc:
        if not in_process:  # a thread (measurements only) has always called it unexpected
            return ConvertOutcome(error=f"Conversion failed unexpectedly: {short_error(exc)}.")
        return ConvertOutcome(error="The file is too large to convert in the memory available.")
    except Exception as exc:
        return ConvertOutcome(error=f"Conversion failed unexpectedly: {short_error(exc)}.")
