"""What an ingest run tells its watcher: files started and done, counts, and an
IngestProgress with rate and time left at most every ``PROGRESS_INTERVAL_S``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from app.core.events import (
    FileDone,
    FileStarted,
    FileStatus,
    IngestEvent,
    IngestFinished,
    IngestProgress,
    IngestStarted,
)
from app.core.models import IngestCounts

PROGRESS_INTERVAL_S = 0.25  # at most this often an IngestProgress
# no time left is said until the rate rests on this many files and seconds after the first
# (the first file pays for starting the converters: a rate from it alone is far off)
ETA_MIN_FILES = 5
ETA_MIN_S = 10.0


@dataclass
class Tally:
    """One run's counts so far, and why each failed file failed."""

    counts: IngestCounts = field(default_factory=IngestCounts)
    failures: list[tuple[str, str]] = field(default_factory=list)

    def count(self, path: str, status: str, chunks: int, reason: str) -> None:
        self.counts = self.counts.counted(status, chunks)
        if status == "failed":
            self.failures.append((path, reason))


class Progress:
    """Counts one run's files and emits its events. Rate and time left are over
    the "work": the files that need converting, from when they are known."""

    def __init__(self, collection: str, emit: Callable[[IngestEvent], None]) -> None:
        self.collection = collection
        self.emit = emit
        self.tally = Tally()
        self.total = 0
        self.started = time.monotonic()
        self.work_total = 0
        self.work_done = 0
        self.work_started: float | None = None
        self.first_done_at: float | None = None  # when the first file was through
        self.current = ""
        self.ocr = ""
        self.ocr_path = ""  # the file ``ocr`` speaks of
        self.converting: set[str] = set()
        self.last_progress = 0.0

    def run_started(self, total: int) -> None:
        self.total = total
        self.emit(IngestStarted(collection=self.collection, total_files=total))

    def work_known(self, work_total: int) -> None:
        self.work_total = work_total
        self.work_started = time.monotonic()
        self.update(force=True)

    def file_started(self, path: str) -> None:
        self.current = path
        self.converting.add(path)
        self.emit(FileStarted(collection=self.collection, path=path))

    def page_read(self, path: str, read: int, total: int, unit: str = "page") -> None:
        """OCR read page ``read`` of ``total`` of this file (slow: seconds a page), or the
        mail reader message ``read`` of an archive's ``total``, or a long PDF's pages; said
        at once. The conversion pool hands a file's reports over before its result; one
        that still comes after (its end mark lost, the wait given up) is old news and is
        dropped."""
        if path not in self.converting:
            return
        self.ocr_path = path
        if read >= total:
            self.ocr = ""
        elif unit == "message":
            self.ocr = f"{Path(path).name}: message {read:,} of {total:,}"
        elif unit == "pdf":  # a long PDF's text, read a window of pages at a time
            self.ocr = f"{Path(path).name}: page {read:,} of {total:,}"
        else:
            self.ocr = f"{Path(path).name}: OCR, page {read} of {total}"
        self.update(force=True)

    def conversion_ended(self, path: str) -> None:
        """The file is converted (or failed): its page count is no longer said, also when
        its last report never came (a worker that died mid-file sends none)."""
        self.converting.discard(path)
        if self.ocr_path == path and self.ocr:
            self.ocr = ""
            self.update(force=True)

    def work_finished(self) -> None:
        """One file that needed converting is through (stored, or failed)."""
        self.work_done += 1
        if self.work_done == 1:
            self.first_done_at = time.monotonic()

    def file_done(self, path: str, status: FileStatus, chunks: int = 0, reason: str = "") -> None:
        self.tally.count(path, status, chunks, reason)
        self.emit(
            FileDone(
                collection=self.collection, path=path, status=status, chunks=chunks, reason=reason
            )
        )
        self.update()

    def update(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_progress < PROGRESS_INTERVAL_S:
            return
        self.last_progress = now
        rate = 0.0
        eta: float | None = None
        if self.work_started is not None and self.work_done:
            spent = now - self.work_started
            rate = self.work_done / spent if spent > 0 else 0.0
            eta = self._time_left(now)
        elif self.work_total == 0:
            eta = 0.0
        self.emit(
            IngestProgress(
                collection=self.collection,
                done_files=self.tally.counts.done,
                total_files=self.total,
                chunks=self.tally.counts.chunks,
                current=self.current,
                ocr=self.ocr,
                files_per_s=rate,
                eta_s=eta,
            )
        )

    def _time_left(self, now: float) -> float | None:
        """Seconds left at the rate since the first file was through; None ("estimating")
        until that rate rests on :data:`ETA_MIN_FILES` files and :data:`ETA_MIN_S` seconds."""
        left = self.work_total - self.work_done
        if left <= 0:
            return 0.0
        if self.first_done_at is None:
            return None
        since, through = now - self.first_done_at, self.work_done - 1
        if through < ETA_MIN_FILES or since < ETA_MIN_S:
            return None
        return left * since / through

    def run_finished(self) -> None:
        self.update(force=True)
        t = self.tally
        self.emit(
            IngestFinished(
                collection=self.collection,
                **asdict(t.counts),
                elapsed_s=time.monotonic() - self.started,
                failures=tuple(t.failures),
            )
        )
