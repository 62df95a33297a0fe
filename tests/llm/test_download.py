"""Model downloads over a real loopback HTTP server: resume, cancel, verification."""

from __future__ import annotations

import filecmp
import hashlib
import random
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from file_server import FileServer

from app.model_files.download import (
    ChecksumMismatch,
    DownloadCancelled,
    DownloadFailed,
    DownloadProgress,
    NoConnection,
    NotEnoughSpace,
    download_file,
    partial_path,
)

SMALL_SIZE = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def small() -> tuple[bytes, str]:
    """4 MiB of random bytes and their SHA-256."""
    data = random.Random(20240611).randbytes(SMALL_SIZE)
    return data, hashlib.sha256(data).hexdigest()


@pytest.fixture
def server() -> Iterator[FileServer]:
    with FileServer() as running:
        yield running


class Recorder:
    """A progress callback that keeps every report."""

    def __init__(self) -> None:
        self.reports: list[DownloadProgress] = []

    def __call__(self, report: DownloadProgress) -> None:
        self.reports.append(report)


def test_full_download_of_the_starter_model(
    server: FileServer, starter_model_path: Path, starter_sha256: str, tmp_path: Path
) -> None:
    size = starter_model_path.stat().st_size
    server.add("/models/starter.gguf", starter_model_path)
    dest = tmp_path / "models" / "starter.gguf"
    progress = Recorder()
    started = time.monotonic()
    result = download_file(
        server.url("/models/starter.gguf"),
        dest,
        sha256=starter_sha256.upper(),
        size_bytes=size,
        progress=progress,
    )
    elapsed = time.monotonic() - started
    assert result == dest
    assert filecmp.cmp(dest, starter_model_path, shallow=False)
    assert not partial_path(dest).exists()
    dones = [r.done for r in progress.reports]
    assert dones == sorted(dones)
    assert progress.reports[-1].done == progress.reports[-1].total == size
    assert all(r.total == size and r.resumed_from == 0 for r in progress.reports)
    assert len(progress.reports) <= 10 * elapsed + 2  # throttled: ~10 a second plus the last one
    assert progress.reports[-1].speed_bps > 0
    assert [(r.method, r.range) for r in server.seen()] == [("GET", None)]


def test_a_cut_download_resumes_with_a_range_request(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, digest = small
    server.add("/cut.bin", data, cut_after=1_500_000)
    dest = tmp_path / "cut.bin"
    progress = Recorder()
    download_file(
        server.url("/cut.bin"), dest, sha256=digest, progress=progress
    )  # size from the headers
    assert dest.read_bytes() == data
    assert not partial_path(dest).exists()
    assert [r.range for r in server.seen("/cut.bin", "GET")] == [None, "bytes=1500000-"]
    assert progress.reports[-1].done == progress.reports[-1].total == len(data)
    assert progress.reports[-1].resumed_from == 1_500_000


def test_too_many_cuts_fail_and_keep_the_part_for_the_next_call(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, digest = small
    server.add("/flaky.bin", data, cut_after=500_000, cuts=2)
    dest = tmp_path / "flaky.bin"
    with pytest.raises(DownloadFailed, match="interrupted 2 times"):
        download_file(
            server.url("/flaky.bin"), dest, sha256=digest, size_bytes=len(data), retries=1
        )
    assert partial_path(dest).stat().st_size == 1_000_000
    assert not dest.exists()
    download_file(server.url("/flaky.bin"), dest, sha256=digest, size_bytes=len(data), retries=0)
    assert dest.read_bytes() == data
    assert [r.range for r in server.seen("/flaky.bin", "GET")] == [
        None,
        "bytes=500000-",
        "bytes=1000000-",
    ]


def test_cancel_from_the_progress_callback_keeps_the_part_and_a_second_call_resumes(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, digest = small
    served = server.add(
        "/cancel.bin", data, delay_per_chunk_s=0.01
    )  # ~6 MB/s: progress reports in mid-body
    dest = tmp_path / "cancel.bin"
    cancel = threading.Event()

    def on_progress(report: DownloadProgress) -> None:
        if report.done > 1_000_000:
            cancel.set()

    with pytest.raises(DownloadCancelled) as caught:
        download_file(
            server.url("/cancel.bin"), dest, sha256=digest, progress=on_progress, cancel=cancel
        )
    assert "cancelled" in str(caught.value)
    kept = partial_path(dest).stat().st_size
    assert 1_000_000 < kept < len(data)
    assert not dest.exists()

    served.delay_per_chunk_s = 0.0
    progress = Recorder()
    download_file(
        server.url("/cancel.bin"), dest, sha256=digest, progress=progress, cancel=threading.Event()
    )
    assert dest.read_bytes() == data
    assert not partial_path(dest).exists()
    assert [r.range for r in server.seen("/cancel.bin", "GET")] == [None, f"bytes={kept}-"]
    assert progress.reports[-1].resumed_from == kept
    assert server.bytes_sent["/cancel.bin"] < len(data) + 1_000_000  # resumed, not sent twice


def test_a_wrong_checksum_deletes_the_file(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, _ = small
    server.add("/bad.bin", data)
    dest = tmp_path / "bad.bin"
    wrong = hashlib.sha256(b"something else").hexdigest()
    with pytest.raises(ChecksumMismatch) as caught:
        download_file(server.url("/bad.bin"), dest, sha256=wrong, size_bytes=len(data))
    message = str(caught.value)
    assert "deleted" in message
    assert wrong[:12] in message and hashlib.sha256(data).hexdigest()[:12] in message
    assert not dest.exists() and not partial_path(dest).exists()


def test_a_missing_file_fails_with_404_and_the_url(server: FileServer, tmp_path: Path) -> None:
    server.add("/gone.gguf", b"", status=404)
    dest = tmp_path / "gone.gguf"
    url = server.url("/gone.gguf")
    with pytest.raises(DownloadFailed) as caught:
        download_file(url, dest, sha256="0" * 64)
    assert "404" in str(caught.value) and url in str(caught.value)
    assert not dest.exists() and not partial_path(dest).exists()


def test_cancel_from_another_thread_is_quick_against_a_stalled_server(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, digest = small
    server.add("/slow.bin", data, delay_per_chunk_s=5.0)  # one 64 KiB chunk, then a long pause
    dest = tmp_path / "slow.bin"
    cancel = threading.Event()
    cancelled_at: list[float] = []

    def fire() -> None:
        cancelled_at.append(time.monotonic())
        cancel.set()

    # 0.3 s after the first report the client is blocked reading, waiting for the next chunk
    timer = threading.Timer(0.3, fire)
    first_report = threading.Event()

    def on_progress(_: DownloadProgress) -> None:
        if not first_report.is_set():
            first_report.set()
            timer.start()

    try:
        with pytest.raises(DownloadCancelled):
            download_file(
                server.url("/slow.bin"), dest, sha256=digest, progress=on_progress, cancel=cancel
            )
    finally:
        timer.cancel()
    returned_at = time.monotonic()
    assert cancelled_at, "cancelled before the timer fired"
    assert returned_at - cancelled_at[0] < 1.0
    assert 0 < partial_path(dest).stat().st_size < len(data)


def test_nothing_listening_is_no_connection(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    with pytest.raises(NoConnection) as caught:
        download_file(
            f"http://127.0.0.1:{port}/model.gguf", tmp_path / "model.gguf", sha256="0" * 64
        )
    assert "no connection" in str(caught.value)
    assert "offline" in str(caught.value)
    assert not partial_path(tmp_path / "model.gguf").exists()


def test_not_enough_space_is_checked_before_any_request(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, digest = small
    server.add("/huge.bin", data)
    huge = shutil.disk_usage(tmp_path).free + 10**12
    with pytest.raises(NotEnoughSpace) as caught:
        download_file(
            server.url("/huge.bin"), tmp_path / "huge.bin", sha256=digest, size_bytes=huge
        )
    assert str(tmp_path) in str(caught.value) and "GB" in str(caught.value)
    assert server.seen() == []


def test_a_server_that_ignores_range_restarts_from_zero(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, digest = small
    server.add("/norange.bin", data, ignore_range=True)
    dest = tmp_path / "norange.bin"
    partial_path(dest).write_bytes(b"\0" * 1_000_000)  # not even the right bytes: must be discarded
    progress = Recorder()
    download_file(
        server.url("/norange.bin"), dest, sha256=digest, size_bytes=len(data), progress=progress
    )
    assert dest.read_bytes() == data
    assert [r.range for r in server.seen("/norange.bin", "GET")] == ["bytes=1000000-"]
    assert progress.reports[-1].resumed_from == 0


def test_a_complete_part_answered_with_416_is_verified(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, digest = small
    server.add("/done.bin", data)
    dest = tmp_path / "done.bin"
    partial_path(dest).write_bytes(data)
    download_file(server.url("/done.bin"), dest, sha256=digest)  # size unknown: the server is asked
    assert dest.read_bytes() == data
    assert not partial_path(dest).exists()
    assert [r.range for r in server.seen("/done.bin")] == [f"bytes={len(data)}-"]


def test_a_redirect_is_followed(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, digest = small
    server.add("/repo/resolve/main/model.gguf", redirect_to="/cdn/blob")
    server.add("/cdn/blob", data)
    dest = tmp_path / "model.gguf"
    download_file(
        server.url("/repo/resolve/main/model.gguf"), dest, sha256=digest, size_bytes=len(data)
    )
    assert dest.read_bytes() == data
    assert [(r.method, r.path) for r in server.seen()] == [
        ("GET", "/repo/resolve/main/model.gguf"),
        ("GET", "/cdn/blob"),
    ]


def test_a_verified_file_already_there_needs_no_request(
    server: FileServer, small: tuple[bytes, str], tmp_path: Path
) -> None:
    data, digest = small
    server.add("/here.bin", data)
    dest = tmp_path / "here.bin"
    dest.write_bytes(data)
    assert download_file(server.url("/here.bin"), dest, sha256=digest, size_bytes=len(data)) == dest
    assert server.seen() == []
