"""Conversions run off the event loop: a :class:`Converter` in each of a few worker
processes (Docling holds the GIL for most of its work; a thread would stall the
event loop), or threads when measuring.

Each worker process reads one file at a time, under limits (``limits.py``): a
watchdog here reads its resident memory and the time the file has taken, and kills
it past either; on Linux the worker's address space has a ceiling of its own as a
backstop. A killed or crashed worker is replaced, and only the file it was reading
is named for it: the other workers' files go on.

While OCR reads a file's pages, the worker reports each page on a queue; a listener
thread here hands it to the ``on_page`` the file's ``convert`` was given, on its
event loop (the ingest's progress then counts pages, not only files). The result
comes back by another way (the worker's pipe), and can overtake the reports: so the
worker ends a file's reports with a mark, and ``convert`` returns only once the mark
is through — every report of a file is heard before its result."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

import psutil

from app.core.errors import IngestError
from app.ingest.convert.converter import Converter, ConverterConfig
from app.ingest.convert.limits import ConvertLimits, crashed, too_long, too_much_memory
from app.ingest.convert.results import ConvertOutcome
from app.ingest.file_errors import short_error

ExecutorKind = Literal["process", "thread"]
# (read, to read, unit) of one file; unit: "page" OCR read, "message" of a mail archive, "pdf" text pages
PageReport = Callable[[int, int, str], None]
REPORTS_END = "end"  # the unit of the mark after a file's last report
REPORTS_WAIT_S = 10.0  # how long a result waits for its file's reports at most (a lost mark)
WATCH_S = 0.1  # how often the watchdog reads a worker's memory and the time its file has taken
PARENT_WATCH_S = 0.5  # how often a worker checks that the process that started it is alive
OCR_PAGE = "page"  # the unit of a page OCR has read (each earns the file more time)


class ConversionPool:
    """Converters in ``workers`` processes (default) or threads, created once and
    reused; ``convert`` awaits one file without blocking the event loop. Processes
    read each file under ``limits``; threads (measurements only) have none."""

    def __init__(
        self,
        config: ConverterConfig,
        workers: int = 2,
        kind: ExecutorKind = "process",
        limits: ConvertLimits | None = None,
    ) -> None:
        self.config = config
        self.workers = max(1, workers)
        self.kind = kind
        self.limits = limits or ConvertLimits()
        self._threads: ThreadPoolExecutor | None = None
        self._idle: queue.Queue[_Worker | None] | None = (
            None  # None: a slot whose worker is yet to start
        )
        self._started = False
        self._start_lock = threading.Lock()
        self._pages: Any = None  # the queue workers report OCR pages on: (path, read, total)
        self._on_page: dict[str, PageReport] = {}  # path → where its pages are reported
        self._reports_end: dict[
            str, Callable[[], None]
        ] = {}  # path → told when its reports are through
        self._ocr_pages: dict[str, int] = {}  # path → pages OCR has read of it (each earns time)
        self._busy: dict[str, _Worker] = {}  # path → the worker reading it
        self._abandoned: set[str] = set()  # paths whose reading was stopped (not to be started)
        self._stopping = threading.Lock()  # _busy and _abandoned change together under it
        # the warm-up was cancelled: stop waiting for workers
        self._start_cancelled = threading.Event()

    @property
    def started(self) -> bool:
        """Whether the workers were asked for (processes start then, or at the first file)."""
        return self._started

    def _ensure(self) -> None:
        with self._start_lock:
            if self._started:
                return
            if self.kind == "process":
                context = multiprocessing.get_context("spawn")
                self._pages = context.Queue()
                self._idle = queue.Queue()
                for _ in range(self.workers):
                    self._idle.put(None)
            else:
                self._pages = queue.SimpleQueue()
                self._threads = ThreadPoolExecutor(
                    max_workers=self.workers,
                    thread_name_prefix="fathom-convert",
                    initializer=_init_thread_worker,
                    initargs=(self.config, self._pages),
                )
            threading.Thread(
                target=self._listen, args=(self._pages,), name="fathom-ocr-pages", daemon=True
            ).start()
            self._started = True

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
            if unit == OCR_PAGE and path in self._ocr_pages:
                self._ocr_pages[path] += 1
            on_page = self._on_page.get(path)
            if on_page is not None:
                on_page(read, total, unit)

    async def start(self) -> None:
        """Start the workers from a helper thread: spawning a process (and sending it
        the tokenizer) can take seconds on a busy machine, never on the event loop.
        Cancelled, it stops waiting at once (the workers go on starting by themselves):
        a stopped ingest must not wait for them to be ready before it ends."""
        self._start_cancelled.clear()
        try:
            await asyncio.to_thread(self._start_blocking)
        except asyncio.CancelledError:
            self._start_cancelled.set()
            raise

    def _start_blocking(self) -> None:
        self._ensure()
        if self.kind != "process" or self._idle is None:
            return
        idle = self._idle
        taken: list[_Worker | None] = []  # the slots idle now (a busy worker has started already)
        while True:
            try:
                taken.append(idle.get_nowait())
            except queue.Empty:
                break
        try:
            for i, worker in enumerate(taken):
                if worker is None or not worker.alive():
                    taken[i] = self._new_worker()
            for worker in taken:
                if worker is not None:
                    with contextlib.suppress(
                        EOFError, OSError
                    ):  # died starting: its next file says so
                        worker.wait_ready(until=self._start_cancelled)
        finally:
            for worker in taken:
                idle.put(worker if worker is not None and worker.alive() else None)

    def _new_worker(self) -> _Worker:
        return _Worker(self.config, self._pages, self.limits)

    async def convert(self, path: Path, on_page: PageReport | None = None) -> ConvertOutcome:
        """Convert one file; ``on_page`` (called on this event loop) hears of each page OCR reads."""
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(self._ensure)
        key = str(path)
        reports_through = asyncio.Event()
        if on_page is not None:
            self._on_page[key] = lambda read, total, unit: _call_soon(
                loop, on_page, read, total, unit
            )
            self._reports_end[key] = lambda: _call_soon(loop, reports_through.set)
        self._ocr_pages[key] = 0
        self._abandoned.discard(key)  # (a stop that came after an earlier reading of it ended)
        try:
            if self.kind == "process":
                try:
                    outcome, reports_sent = await asyncio.to_thread(self._convert_in_process, key)
                except asyncio.CancelledError:
                    # stopped (Ctrl+C, SIGTERM, Stop): the file is not waited for, nor its worker
                    self._abandon(key)
                    raise
            else:
                assert self._threads is not None
                outcome = await loop.run_in_executor(self._threads, _convert_in_thread, key)
                reports_sent = True
            if on_page is not None and reports_sent:
                try:
                    await asyncio.wait_for(reports_through.wait(), REPORTS_WAIT_S)
                except TimeoutError:
                    pass  # the mark was lost: the result matters more than a page count
            return outcome
        finally:
            self._on_page.pop(key, None)
            self._reports_end.pop(key, None)
            self._ocr_pages.pop(key, None)

    def _convert_in_process(self, key: str) -> tuple[ConvertOutcome, bool]:
        """In a helper thread: read ``key`` in an idle worker under the limits; a worker
        killed or lost is replaced. Returns the outcome, and whether the worker lived
        to end the file's reports."""
        idle = self._idle
        taken, worker = self._take_idle(idle, key)
        if not taken:  # stopped (or shut down) while it waited for a worker: nothing was read
            self._abandoned.discard(key)
            return ConvertOutcome(
                error="Conversion failed unexpectedly: the converters were shut down."
            ), False
        assert idle is not None
        try:
            if worker is None or not worker.alive():
                worker = None
                worker = self._new_worker()
            try:
                size = os.stat(key).st_size
            except OSError:
                size = 0
            with self._stopping:
                self._busy[key] = worker
                stopped = key in self._abandoned
            if stopped:  # stopped just as it got its worker: no process is left for it
                worker.stop()
                return ConvertOutcome(
                    error="Conversion failed unexpectedly: the reading was stopped."
                ), False
            outcome, finished = worker.read(
                key, lambda: self.limits.seconds_for(size, self._ocr_pages.get(key, 0))
            )
            return outcome, finished
        finally:
            with self._stopping:
                self._busy.pop(key, None)
                stopped = key in self._abandoned
                self._abandoned.discard(key)
            if stopped and worker is not None:
                # a stop may have killed it even after it handed its file back: never
                # give another file a worker that is dying (that file would be blamed)
                worker.stop()
            if self._idle is idle:
                idle.put(worker if worker is not None and worker.alive() else None)
            elif worker is not None:  # shut down meanwhile
                worker.stop()

    def _take_idle(
        self, idle: queue.Queue[_Worker | None] | None, key: str
    ) -> tuple[bool, _Worker | None]:
        """An idle slot (its worker, or None when it has none yet), waiting for one; (False,
        None) once ``key`` is abandoned or the pool shut down meanwhile."""
        while idle is not None and self._idle is idle and key not in self._abandoned:
            try:
                return True, idle.get(timeout=WATCH_S)
            except queue.Empty:
                continue
        return False, None

    def _abandon(self, key: str) -> None:
        """Give up ``key``: kill the worker reading it, if one is (its helper thread then
        ends at once), or let the helper thread waiting for a worker give up waiting."""
        with self._stopping:
            self._abandoned.add(key)
            worker = self._busy.get(key)
        if worker is not None:
            worker.kill()  # not waited for here: its helper thread sees it end and cleans up

    def shutdown(self) -> None:
        with self._start_lock:
            if not self._started:
                return
            if self._threads is not None:
                self._threads.shutdown(wait=False, cancel_futures=True)
                self._threads = None
            if self._idle is not None:
                idle, self._idle = self._idle, None
                while True:
                    try:
                        worker = idle.get_nowait()
                    except queue.Empty:
                        break
                    if worker is not None:
                        worker.stop()
            self._pages.put(None)  # the listener's end
            self._pages = None
            self._started = False


class _Worker:
    """One worker process reading one file at a time, and its watchdog."""

    def __init__(self, config: ConverterConfig, pages: Any, limits: ConvertLimits) -> None:
        context = multiprocessing.get_context("spawn")
        self.limits = limits
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_worker_main,
            args=(config, pages, child, limits.address_space_bytes),
            name="fathom-convert",
            daemon=True,
        )
        self.process.start()
        child.close()
        self._ready = False

    def alive(self) -> bool:
        return self.process.is_alive()

    def wait_ready(self, until: threading.Event | None = None) -> None:
        """Wait until the worker has built its converter (raises if it died doing so), or
        until ``until`` is set (the wait given up; the worker goes on starting)."""
        while not self._ready:
            if until is not None and until.is_set():
                return
            if until is None or self.conn.poll(WATCH_S):
                self.conn.recv()
                self._ready = True

    def read(self, path: str, allowed_s: Callable[[], float]) -> tuple[ConvertOutcome, bool]:
        """Have the worker read ``path``: its outcome, and whether it finished the file
        (False: it died, or the watchdog killed it, and the outcome says so)."""
        try:
            self.wait_ready()
            self.conn.send(path)
        except (EOFError, OSError):
            self.stop()
            return ConvertOutcome(error=crashed()), False
        started = time.monotonic()
        watched = psutil.Process(self.process.pid)
        while True:
            try:
                if self.conn.poll(WATCH_S):
                    outcome: ConvertOutcome = self.conn.recv()
                    return outcome, True
            except (EOFError, OSError):
                self.stop()
                return ConvertOutcome(error=crashed()), False
            try:
                resident = watched.memory_info().rss
            except psutil.Error:
                resident = 0
            if resident > self.limits.memory_bytes:
                self.stop()
                return ConvertOutcome(error=too_much_memory(self.limits)), False
            allowed = allowed_s()
            if time.monotonic() - started > allowed:
                self.stop()
                return ConvertOutcome(error=too_long(allowed)), False

    def kill(self) -> None:
        """End the process now, without waiting (its pipe then reads as closed)."""
        with contextlib.suppress(OSError, ValueError):
            self.process.kill()

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


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


def _worker_main(config: ConverterConfig, pages: Any, conn: Connection, address_space: int) -> None:
    """A worker process: build the converter, say so, then read each path sent until the pipe closes."""
    _end_with_parent()
    _limit_address_space(address_space)
    _init_worker(config, pages)
    conn.send("ready")
    while True:
        try:
            path = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(_convert_in_worker(path))


def _end_with_parent() -> None:
    """End this worker when the process that started it is gone (killed, say), even in the
    middle of a file: nothing else would (a kill -9 of ``fathom ingest`` left its converter
    running for good, holding the terminal's output open)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(PARENT_WATCH_S)
            if os.getppid() != parent:  # adopted by another: the parent died
                os._exit(1)

    threading.Thread(target=watch, name="fathom-parent-watch", daemon=True).start()


def _limit_address_space(limit: int) -> None:
    """The operating system's ceiling on this process's memory, where it has one (Linux)."""
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):  # Windows; macOS refuses an address-space limit
        pass


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
