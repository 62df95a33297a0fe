"""``fathom watch`` as a user runs it in a terminal: it catches up, indexes a file written
while it runs, turns a collection off and on, and Ctrl+C stops it cleanly."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fathom_process import in_the_background

from app.cli import main

WAIT_S = 120.0


class Lines:
    """A running command's stderr, line by line, waited on (never slept on)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self.ended = False
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert process.stderr is not None
        stream = process.stderr
        threading.Thread(
            target=lambda: [self._lines.put(line) for line in stream] + [self._lines.put(None)]
        ).start()

    def wait_for_end(self) -> None:
        while not self.ended:
            self.ended = self._lines.get(timeout=WAIT_S) is None

    def wait_for(self, text: str) -> str:
        while True:
            line = self._lines.get(timeout=WAIT_S)
            if line is None:
                self.ended = True
                raise AssertionError(f"the command ended before saying {text!r}: {self.seen}")
            self.seen.append(line)
            if text in line:
                return line


@contextlib.contextmanager
def watching(
    fathom_home: Path, *, background: bool = False
) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    """A running ``fathom watch`` and its stderr's lines; killed at the end if it still runs."""
    command = [sys.executable, "-m", "app", "watch"]
    env = {**os.environ, "FATHOM_HOME": str(fathom_home), "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        in_the_background(command) if background else command,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    ) as process:
        lines = Lines(process)
        try:
            yield process, lines
        finally:
            if process.poll() is None:
                process.kill()
            lines.wait_for_end()


def test_watch_follows_a_folder_and_stops_cleanly_on_ctrl_c(
    tmp_path: Path, fathom_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "harbour.txt").write_text(
        "The harbour wall was rebuilt in granite.\n", encoding="utf-8"
    )
    assert main(["ingest", str(folder), "-c", "notes", "--quiet"]) == 0
    capsys.readouterr()

    with watching(fathom_home) as (process, lines):
        lines.wait_for("Watching notes. Ctrl+C stops.")
        lines.wait_for("Collection 'notes': 0 indexed (0 new chunks), 1 unchanged")  # the catch-up
        (folder / "birds.txt").write_text(
            "A marmoset escaped from the ship's cabin.\n", encoding="utf-8"
        )
        lines.wait_for(f"indexed   {folder / 'birds.txt'}")
        lines.wait_for("Collection 'notes': 1 indexed")
        process.send_signal(signal.SIGINT)
        lines.wait_for("Stopping after the re-scan in progress")
        lines.wait_for("Stopped watching.")
        assert process.wait(timeout=WAIT_S) == 0

    assert main(["search", "marmoset", "-c", "notes", "--mode", "bm25"]) == 0
    assert "birds.txt" in capsys.readouterr().out


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is a POSIX signal")
def test_sigterm_stops_watch_started_in_the_background(
    tmp_path: Path, fathom_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A service manager's or a script's ``kill``: the command was started in the background,
    so it ignores Ctrl+C (before, SIGTERM was turned into that ignored SIGINT: it watched on)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "harbour.txt").write_text("The harbour wall is granite.\n", encoding="utf-8")
    assert main(["ingest", str(folder), "-c", "notes", "--quiet"]) == 0
    capsys.readouterr()

    with watching(fathom_home, background=True) as (process, lines):
        lines.wait_for("Collection 'notes': 0 indexed (0 new chunks), 1 unchanged")
        process.send_signal(signal.SIGTERM)
        lines.wait_for("Stopped at once.")
        assert process.wait(timeout=WAIT_S) == 130


def test_a_collection_turned_off_is_not_watched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "harbour.txt").write_text(
        "The harbour wall was rebuilt in granite.\n", encoding="utf-8"
    )
    assert main(["ingest", str(folder), "-c", "notes", "--quiet"]) == 0
    assert main(["watch", "--off", "-c", "notes"]) == 0
    assert "notes: not watched." in capsys.readouterr().err
    assert main(["collections", "--json"]) == 0
    assert main(["watch"]) == 1
    assert "There are no watched collections" in capsys.readouterr().err
    assert main(["watch", "--on", "-c", "notes"]) == 0
    assert main(["watch", "--off"]) == 2
    assert "Say which collection" in capsys.readouterr().err
