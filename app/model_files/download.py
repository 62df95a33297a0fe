"""Download a model file with resume, progress, cancel and SHA-256 verification.

Synchronous (``httpx``): it runs in a worker thread, and the caller marshals the
progress reports to its own thread. Bytes go to ``<dest>.part``; a later call
resumes from what is on disk with ``Range: bytes=N-``. The SHA-256 is computed
while writing, and only a verified file is moved to ``dest``.

Cancel latency: the loop checks the event after every network read (64 KiB at
most), and while a response is streaming a watcher thread shuts the socket down
the moment the event is set, so a read blocked on a stalled server returns at
once instead of waiting for the next bytes or the read timeout.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import urlsplit

import httpx

from app.core.errors import FathomError

if TYPE_CHECKING:
    from _hashlib import HASH

SPACE_MARGIN_BYTES = 200 * 1024 * 1024
HASH_BLOCK_BYTES = 1024 * 1024
PROGRESS_INTERVAL_S = 0.1
SPEED_WINDOW_S = 3.0
MAX_BACKOFF_S = 1.0


@dataclass(frozen=True)
class DownloadProgress:
    done: int  # bytes of the final file present (including resumed bytes)
    total: int  # expected size (0 if unknown)
    speed_bps: float  # transfer rate over the last few seconds, bytes/s
    eta_s: float | None  # seconds left at that rate, None when unknown
    resumed_from: int  # bytes already there when this attempt started


class DownloadError(FathomError):
    """A model file could not be downloaded."""


class NoConnection(DownloadError):
    """The host could not be reached (no network, DNS failure, connection refused)."""


class DownloadCancelled(DownloadError):
    """The person cancelled; the partial file is kept so a later download resumes."""


class ChecksumMismatch(DownloadError):
    """The finished file is not the expected one; it was deleted."""


class NotEnoughSpace(DownloadError):
    """The target folder's disk cannot hold the rest of the file."""


class DownloadFailed(DownloadError):
    """HTTP error status, too many interruptions, wrong size, unwritable file."""


def partial_path(dest: Path) -> Path:
    """Where the bytes of ``dest`` collect until the file is verified."""
    return dest.with_name(dest.name + ".part")


def download_file(
    url: str,
    dest: Path,
    *,
    sha256: str,
    size_bytes: int = 0,
    progress: Callable[[DownloadProgress], None] | None = None,
    cancel: threading.Event | None = None,
    retries: int = 3,
    timeout_s: float = 30.0,
    headers: Mapping[str, str] | None = None,
    client: httpx.Client | None = None,
) -> Path:
    """Download ``url`` to ``dest`` and return ``dest`` once its SHA-256 matches.

    Resumes from ``dest.part`` when one exists; a connection cut mid-body is
    resumed up to ``retries`` times. Raises a :class:`DownloadError` subclass."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    job = _Download(
        url, dest, sha256.strip().lower(), size_bytes, progress, cancel, retries, timeout_s, headers
    )
    if dest.is_file() and _hash_file(dest, job.check_cancel)[0].hexdigest() == job.expected:
        return dest
    if client is not None:
        return job.run(client)
    with httpx.Client() as own_client:
        return job.run(own_client)


class _Interrupted(Exception):
    """One attempt ended early; the next one resumes from the disk."""


class _Download:
    def __init__(self, url: str, dest: Path, expected: str, size_bytes: int,
                 progress: Callable[[DownloadProgress], None] | None, cancel: threading.Event | None,
                 retries: int, timeout_s: float, headers: Mapping[str, str] | None) -> None:  # fmt: skip
        self.url = url
        self.dest = dest
        self.part = partial_path(dest)
        self.expected = expected
        self.size_bytes = max(0, size_bytes)
        self.cancel = cancel
        self.retries = max(0, retries)
        self.timeout = httpx.Timeout(timeout_s)
        self.headers = dict(headers or {})
        self.meter = _Meter(progress)
        self.hasher = hashlib.sha256()
        self.done = 0
        self.total = self.size_bytes

    # -- the whole download --------------------------------------------------

    def run(self, client: httpx.Client) -> Path:
        self.check_cancel()
        on_disk = self.part.stat().st_size if self.part.is_file() else 0
        if self.size_bytes and on_disk > self.size_bytes:
            self._discard_part()
            on_disk = 0
        if self.size_bytes:
            _check_space(self.dest.parent, self.size_bytes - on_disk)
        if on_disk:
            self.hasher, self.done = _hash_file(self.part, self.check_cancel)
        self.meter.start(self.done, self.total)
        if self.size_bytes and self.done == self.size_bytes:
            if self.hasher.hexdigest() == self.expected:
                return self._finish()
            self._discard_part()
        interruptions = 0
        while True:
            try:
                if self._attempt(client):
                    return self._finish()
            except _Interrupted as exc:
                interruptions += 1
                if interruptions > self.retries:
                    raise DownloadFailed(
                        f"The download of {self.dest.name} was interrupted {interruptions} times ({exc}).",
                        f"The {_mb(self.done)} downloaded so far is kept: try again to resume.",
                    ) from exc
                self._backoff(min(MAX_BACKOFF_S, 0.5 * (interruptions - 1)))

    # -- one request ---------------------------------------------------------

    def _attempt(self, client: httpx.Client) -> bool:
        """One request from ``self.done``; True when the body is complete."""
        self.check_cancel()
        headers = {**self.headers, "Accept-Encoding": "identity"}
        if self.done:
            headers["Range"] = f"bytes={self.done}-"
        try:
            with client.stream(
                "GET", self.url, headers=headers, timeout=self.timeout, follow_redirects=True
            ) as response:
                return self._receive(response)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise self._no_connection() from exc
        except (httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError) as exc:
            self.check_cancel()  # a cancel shuts the socket down: that read error is the cancel
            raise _Interrupted(_describe(exc)) from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise DownloadFailed(
                f"Could not download {self.dest.name} from {self.url}: {_describe(exc)}."
            ) from exc

    def _receive(self, response: httpx.Response) -> bool:
        status = response.status_code
        if status == 416 and self.done:
            return self._range_not_satisfiable(response)
        if status not in (200, 206):
            raise _http_failure(self.dest.name, self.url, status)
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise DownloadFailed(
                f"The server sent {self.dest.name} compressed ({encoding}); it cannot be resumed."
            )
        if status == 206 and self.done:
            start, total = _content_range(response.headers.get("Content-Range", ""))
            if start != self.done:
                self._discard_part()
                raise _Interrupted(f"the server resumed at byte {start}, not {self.done}")
            length = response.headers.get("Content-Length", "")
            total = total or (self.done + int(length) if length.isdigit() else 0)
        else:  # 200: a fresh start, or a server that ignores Range
            if self.done:
                self._discard_part()
            length = response.headers.get("Content-Length", "")
            total = int(length) if length.isdigit() else 0
        if self.size_bytes and total and total != self.size_bytes:
            raise DownloadFailed(
                f"The server offers {self.dest.name} as {total:,} bytes, but {self.size_bytes:,} were expected.",
                "The model list may be out of date for this file.",
            )
        if not self.size_bytes and total:
            self.total = total
            _check_space(self.dest.parent, total - self.done)
        self.meter.start(self.done, self.total)
        with _CancelWatch(self.cancel, response), self._open_part() as fh:
            for chunk in response.iter_raw():
                self.check_cancel()
                fh.write(chunk)
                self.hasher.update(chunk)
                self.done += len(chunk)
                self.meter.update(self.done)
        if self.total and self.done < self.total:  # a close-delimited body that ended early
            raise _Interrupted("the connection closed early")
        return True

    def _range_not_satisfiable(self, response: httpx.Response) -> bool:
        """416: the part may already hold the whole file; else start over."""
        _, total = _content_range(response.headers.get("Content-Range", ""))
        if self.hasher.hexdigest() == self.expected and (not total or total == self.done):
            self.total = self.total or self.done
            return True
        self._discard_part()
        raise _Interrupted("the server could not resume the partial file")

    # -- helpers -------------------------------------------------------------

    def _finish(self) -> Path:
        self.meter.update(self.done, force=True)
        got = self.hasher.hexdigest()
        wrong_size = bool(self.size_bytes) and self.done != self.size_bytes
        if wrong_size or got != self.expected:
            self._discard_part()
            size_note = (
                f" and has {self.done:,} bytes instead of {self.size_bytes:,}" if wrong_size else ""
            )
            raise ChecksumMismatch(
                f"The downloaded file {self.dest.name} is damaged: its SHA-256 is {got[:12]}… but should be "
                f"{self.expected[:12]}…{size_note}, so it was deleted.",
                "Try the download again.",
            )
        try:
            with self.part.open("ab") as fh:
                os.fsync(fh.fileno())
            os.replace(self.part, self.dest)
        except OSError as exc:
            raise DownloadFailed(f"Could not save {self.dest}: {exc.strerror or exc}.") from exc
        return self.dest

    def _open_part(self) -> BinaryIO:
        try:
            return self.part.open("ab" if self.done else "wb")
        except OSError as exc:
            raise DownloadFailed(f"Could not write {self.part}: {exc.strerror or exc}.") from exc

    def _discard_part(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.part.unlink()
        self.hasher = hashlib.sha256()
        self.done = 0

    def _backoff(self, seconds: float) -> None:
        if seconds > 0 and (self.cancel or threading.Event()).wait(seconds):
            self.check_cancel()

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            kept = f"The {_mb(self.done)} downloaded so far is kept: " if self.done else ""
            raise DownloadCancelled(
                f"The download of {self.dest.name} was cancelled.",
                f"{kept}starting it again resumes it.",
            )

    def _no_connection(self) -> NoConnection:
        host = urlsplit(self.url).hostname or self.url
        kept = (
            f" The {_mb(self.done)} downloaded so far is kept and the download resumes."
            if self.done
            else ""
        )
        return NoConnection(
            f"There is no connection to {host}: the model cannot be downloaded now.",
            f"Models already on this computer keep working offline; try again once you are online.{kept}",
        )


class _Meter:
    """Throttled progress reports (at most every 0.1 s, plus forced ones), with a
    speed measured over the last few seconds."""

    def __init__(self, report: Callable[[DownloadProgress], None] | None) -> None:
        self.report = report
        self.total = 0
        self.resumed_from = 0
        self.last_emit = float("-inf")
        self.samples: deque[tuple[float, int]] = deque()

    def start(self, done: int, total: int) -> None:
        self.total = total
        self.resumed_from = done
        self.samples.clear()
        self.samples.append((time.monotonic(), done))

    def update(self, done: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if self.report is None or (not force and now - self.last_emit < PROGRESS_INTERVAL_S):
            return
        self.last_emit = now
        self.samples.append((now, done))
        while len(self.samples) > 2 and self.samples[1][0] <= now - SPEED_WINDOW_S:
            self.samples.popleft()
        then, done_then = self.samples[0]
        speed = (done - done_then) / (now - then) if now > then and done >= done_then else 0.0
        eta = (self.total - done) / speed if speed > 0 and self.total >= done else None
        self.report(DownloadProgress(done, self.total, speed, eta, self.resumed_from))


class _CancelWatch:
    """While a body streams, shut its socket down as soon as ``cancel`` is set, so
    a read blocked on a stalled server fails at once (the loop then sees the cancel)."""

    def __init__(self, cancel: threading.Event | None, response: httpx.Response) -> None:
        self.cancel = cancel
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        self.sock = sock if isinstance(sock, socket.socket) else None
        self.finished = threading.Event()
        self.thread: threading.Thread | None = None

    def __enter__(self) -> _CancelWatch:
        if self.cancel is not None and self.sock is not None:
            self.thread = threading.Thread(
                target=self._watch, name="download-cancel-watch", daemon=True
            )
            self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.finished.set()
        if self.thread is not None:
            self.thread.join()

    def _watch(self) -> None:
        assert self.cancel is not None and self.sock is not None
        while not self.finished.is_set():
            if self.cancel.wait(0.05):
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(
                        self.sock, socket.SHUT_RDWR
                    )  # not SSLSocket's: no TLS close
                return


def _check_space(folder: Path, remaining: int) -> None:
    free = shutil.disk_usage(folder).free
    if free < remaining + SPACE_MARGIN_BYTES:
        raise NotEnoughSpace(
            f"Not enough disk space in {folder}: the download needs {_gb(remaining)} "
            f"(plus {_gb(SPACE_MARGIN_BYTES)} to spare) but only {_gb(free)} is free.",
            "Free some space or choose another folder for models.",
        )


def _hash_file(path: Path, check_cancel: Callable[[], None]) -> tuple[HASH, int]:
    """The running SHA-256 of ``path`` (read in 1 MiB blocks) and its length."""
    hasher = hashlib.sha256()
    length = 0
    with path.open("rb") as fh:
        while block := fh.read(HASH_BLOCK_BYTES):
            check_cancel()
            hasher.update(block)
            length += len(block)
    return hasher, length


def _content_range(value: str) -> tuple[int, int]:
    """``bytes START-END/TOTAL`` or ``bytes */TOTAL`` → (start, total); -1 / 0 when absent."""
    unit, _, spec = value.strip().partition(" ")
    if unit.lower() != "bytes":
        return -1, 0
    span, _, total_text = spec.partition("/")
    start_text = span.partition("-")[0]
    start = int(start_text) if start_text.isdigit() else -1
    return start, int(total_text) if total_text.isdigit() else 0


def _http_failure(name: str, url: str, status: int) -> DownloadFailed:
    if status == 404:
        return DownloadFailed(
            f"{name} was not found at {url} (HTTP 404).",
            "The model may have moved or been renamed.",
        )
    if status in (401, 403):
        return DownloadFailed(
            f"The server refused access to {name} at {url} (HTTP {status}).",
            "The model may need a sign-in token or an accepted licence on its page.",
        )
    return DownloadFailed(
        f"The download of {name} from {url} failed (HTTP {status}).", "Try again later."
    )


def _describe(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"
