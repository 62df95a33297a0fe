"""An ingest's progress on the terminal (a bar on a terminal, a line per file elsewhere)
and its summary; shared by ``fathom ingest`` and ``fathom reindex``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from app.commands.terminal import format_duration, short_path

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from app.core.events import FileDone, IngestEvent, IngestFinished

SHOWN_REASONS = 20  # per kind in the summary; the rest are counted


async def follow(
    events: AsyncIterator[IngestEvent], display: Display
) -> tuple[IngestFinished | None, list[FileDone]]:
    """Show an ingest's events as they come; (its IngestFinished, the files it finished)."""
    from app.core.events import FileDone, IngestFinished

    finished: IngestFinished | None = None
    done: list[FileDone] = []
    try:
        async for event in events:
            display.show(event)
            if isinstance(event, FileDone):
                done.append(event)
            elif isinstance(event, IngestFinished):
                finished = event
    finally:
        display.clear()
    return finished, done


def summary(collection: str, finished: IngestFinished, done: list[Any]) -> str:
    """The counts (skipped files with why, in a few words), then every failed and
    skipped file with its reason."""
    from app.ingest.skip_reasons import skipped_phrase

    skipped = skipped_phrase(finished.skipped, [e.reason for e in done if e.status == "skipped"])
    lines = [
        f"Collection '{collection}': {finished.indexed} indexed ({finished.chunks} new chunks), "
        f"{finished.unchanged} unchanged, {skipped}, {finished.failed} failed, "
        f"{finished.removed} removed, in {format_duration(finished.elapsed_s)}."
    ]
    for status, title in (("failed", "Failed"), ("skipped", "Skipped")):
        items = [(e.path, e.reason) for e in done if e.status == status]
        if not items:
            continue
        lines.append(f"{title}:")
        for path, reason in items[:SHOWN_REASONS]:
            lines.append(f"  {short_path(path)}: {reason}")
        if len(items) > SHOWN_REASONS:
            lines.append(f"  … and {len(items) - SHOWN_REASONS} more")
    if finished.indexed + finished.unchanged == 0:
        lines.append("Nothing could be indexed.")
    return "\n".join(lines)


class Display:
    """A one-line progress bar on a terminal; plain lines per file elsewhere."""

    WIDTH = 28

    def __init__(self, out: TextIO, *, quiet: bool = False) -> None:
        self.out = out
        self.quiet = quiet
        self.tty = out.isatty()
        self._shown = False
        self._last_line = 0.0

    def show(self, event: IngestEvent) -> None:
        from app.core.events import FileDone, IngestProgress, IngestStarted

        if self.quiet:
            return
        if isinstance(event, IngestStarted):
            if not self.tty:
                files = "file" if event.total_files == 1 else "files"
                print(
                    f"Ingesting {event.total_files:,} {files} into '{event.collection}'.",
                    file=self.out,
                )
        elif isinstance(event, IngestProgress) and self.tty:
            self._bar(event)
        elif isinstance(event, FileDone) and not self.tty:
            note = f"; {event.reason}" if event.reason else ""
            detail = f" ({event.chunks} chunks{note})" if event.status == "indexed" else ""
            reason = (
                f": {event.reason}"
                if event.reason and event.status in ("failed", "skipped")
                else ""
            )
            print(
                f"{event.status:9} {short_path(event.path)}{detail}{reason}",
                file=self.out,
                flush=True,
            )

    def _columns(self) -> int:
        try:
            columns = os.get_terminal_size(self.out.fileno()).columns
        except (OSError, ValueError):
            columns = 0
        return columns if columns >= 40 else 100

    def _bar(self, event: Any) -> None:
        filled = int(self.WIDTH * event.fraction)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        eta = f" ETA {format_duration(event.eta_s)}" if event.eta_s else ""
        rate = f" {event.files_per_s:.1f} files/s" if event.files_per_s else ""
        current = event.ocr or (Path(event.current).name if event.current else "")
        line = f"[{bar}] {event.done_files}/{event.total_files} files, {event.chunks} chunks{rate}{eta} {current}"
        columns = self._columns()
        self.out.write("\r" + line[: columns - 1].ljust(columns - 1))
        self.out.flush()
        self._shown = True
        self._last_line = time.monotonic()

    def clear(self) -> None:
        if self._shown:
            self.out.write("\r" + " " * (self._columns() - 1) + "\r")
            self.out.flush()
            self._shown = False
