"""No orphans, no hangs (issue 36): a converter process ends with the ingest that
started it, however that ends, and a file swapped for a named pipe after the scan is
named, not waited on for ever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from fathom_process import INSTALLED, in_the_background
from hostile_corpus import nested_divs_html
from ingest_files import paths_in

import app.ingest.pipeline.ingest_run as ingest_run
from app.core.errors import IngestError
from app.core.events import FileDone, IngestFinished
from app.core.settings import Settings
from app.ingest.convert import Converter
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library
from app.ingest.regular_files import NOT_REGULAR
from app.ingest.scan import ScanResult


def _converter_when(
    ingest: psutil.Process, when: str, deadline_s: float = 60
) -> list[psutil.Process]:
    """The ingest's descendants once its converter exists ("starting": still importing its
    readers) or is busy ("busy": starting or reading; the file takes minutes)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        family = ingest.children(recursive=True)
        converters = [p for p in family if "spawn_main" in " ".join(_command(p))]
        if converters and (
            when == "starting" or any(p.cpu_percent(interval=0.2) > 50 for p in converters)
        ):
            return ingest.children(recursive=True)
        time.sleep(0.05)
    raise AssertionError(f"no converter {when}")


def _stacks(ingest: subprocess.Popen[str]) -> str:
    """Every thread's stack of a process that did not end (it was started with
    PYTHONFAULTHANDLER=1, so SIGABRT prints them), and what it wrote to stderr."""
    ingest.send_signal(signal.SIGABRT)
    try:
        _out, err = ingest.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # a worker still holds the pipe
        ingest.kill()
        _out, err = ingest.communicate()
    return err[-8000:]


def _command(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


@pytest.mark.skipif(sys.platform == "win32", reason="kill -9 and SIGTERM are POSIX signals")
@pytest.mark.parametrize(
    ("how", "when", "background"),
    [
        (signal.SIGKILL, "starting", False),
        (signal.SIGKILL, "busy", False),
        (signal.SIGTERM, "starting", False),
        (signal.SIGTERM, "busy", False),
        # before, SIGTERM was turned into a SIGINT, which such a command ignores: it went on
        (signal.SIGTERM, "busy", True),
    ],
    ids=[
        "kill-9-starting",
        "kill-9-busy",
        "sigterm-starting",
        "sigterm-busy",
        "sigterm-background",
    ],
)
def test_no_conversion_process_outlives_its_ingest(
    tmp_path: Path, how: signal.Signals, when: str, background: bool
) -> None:
    """Stopped while its converter starts (SIGTERM then waited for it to be ready: 30 s
    and more on a loaded machine) or while it reads a file that takes minutes; and SIGTERM
    stops a command started in the background, which ignores Ctrl+C."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "nest.html").write_bytes(nested_divs_html(100_000))  # minutes of reading
    # faulthandler: a SIGABRT makes the process print every thread's stack (see below)
    env = {**os.environ, "FATHOM_HOME": str(tmp_path / "home"), "PYTHONFAULTHANDLER": "1"}
    command = [*INSTALLED, "ingest", str(docs), "--collection", "deep"]
    ingest = subprocess.Popen(
        in_the_background(command) if background else command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        family = _converter_when(psutil.Process(ingest.pid), when)
        ingest.send_signal(how)
        # the pipes reach their end only once no process holds them: a worker that lived on
        # held the terminal's output open (a script waiting for it hung)
        try:
            _out, err = ingest.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"not ended 30 s after {how.name}; where it was:\n{_stacks(ingest)}")
        _gone, alive = psutil.wait_procs(family, timeout=10)
        assert alive == [], [(p.pid, p.name()) for p in alive]
        if how == signal.SIGTERM:  # stopped as Ctrl+C stops it
            assert ingest.returncode == 130, err
            assert "What was indexed is kept" in err
    finally:
        if ingest.poll() is None:
            ingest.kill()
            ingest.communicate()


def test_a_pipe_is_not_read_by_the_converter(tmp_path: Path, converter: Converter) -> None:
    fifo = tmp_path / "notes.txt"
    os.mkfifo(fifo)
    with pytest.raises(IngestError, match="Not a regular file"):
        converter.convert(fifo)  # before: blocked for ever in open()


async def test_a_file_swapped_for_a_pipe_after_the_scan_is_named_and_the_rest_indexed(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    swapped = docs / "swapped.txt"
    swapped.write_text("The wombat ledger is kept in the shed.\n", encoding="utf-8")
    (docs / "tides.md").write_text(
        "# Tides\n\nThe spring tide peaks at 5.2 metres.\n", encoding="utf-8"
    )
    real_scan = ingest_run.scan

    def scan_then_swap(*args: object, **kwargs: object) -> ScanResult:
        result = real_scan(*args, **kwargs)  # type: ignore[arg-type]
        swapped.unlink()
        os.mkfifo(swapped)
        return result

    monkeypatch.setattr(ingest_run, "scan", scan_then_swap)
    library = Library.open(Settings(), paths_in(tmp_path / "home"), embedder=embedder)
    try:
        events = [e async for e in library.ingest([docs], "notes")]
        done = {Path(e.path).name: e for e in events if isinstance(e, FileDone)}
        assert done["swapped.txt"].reason == NOT_REGULAR, done["swapped.txt"]
        assert done["tides.md"].status == "indexed"
        assert isinstance(events[-1], IngestFinished)
    finally:
        await library.aclose()


async def test_a_stopped_ingest_neither_waits_for_its_files_nor_starts_the_queued_one(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    """One worker reading a slow file, a second file waiting for it: a stop kills the
    reading and the waiting file is never started (before, asyncio's shutdown waited for
    both to be read, minutes each)."""
    import asyncio

    from app.ingest.chunking.tokens import chunk_token_limit
    from app.ingest.convert import ConversionPool, ConverterConfig
    from app.ingest.convert.limits import ConvertLimits

    slow = [tmp_path / "first.html", tmp_path / "second.html"]
    for path in slow:
        path.write_bytes(nested_divs_html(100_000))
    config = ConverterConfig(
        tokenizer_json=embedder.tokenizer.to_str(),
        max_tokens=chunk_token_limit(embedder.max_tokens, 256),
    )
    pool = ConversionPool(config, workers=1, limits=ConvertLimits(seconds=600))

    def workers() -> list[psutil.Process]:
        """The worker processes alive (a killed one not yet reaped is a zombie: ended)."""
        alive = []
        for child in psutil.Process().children():
            try:
                if child.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(
                    child.cmdline()
                ):
                    alive.append(child)
            except psutil.Error:
                continue
        return alive

    try:
        await pool.start()
        reading = [asyncio.create_task(pool.convert(path)) for path in slow]
        await asyncio.sleep(1.0)  # both handed to the pool: one read, one waiting for the worker
        assert not any(task.done() for task in reading)
        started = time.monotonic()
        for task in reading:
            task.cancel()
        await asyncio.gather(*reading, return_exceptions=True)
        deadline = time.monotonic() + 10
        while workers() and time.monotonic() < deadline:  # noqa: ASYNC110 - polling the OS, no event to wait on
            await asyncio.sleep(0.1)
        assert workers() == [] and time.monotonic() - started < 10
        await asyncio.sleep(
            1.0
        )  # the waiting file's helper thread, had it gone on, starts a worker now
        assert workers() == [], "the file that was waiting was started after the stop"
    finally:
        pool.shutdown()
