"""``fathom ingest PATH… --collection NAME``: add files and folders to a collection.

A progress bar on a terminal (stderr), one line per file otherwise; a summary
of indexed / unchanged / skipped / failed files with reasons at the end. The
exit status is non-zero only when nothing could be indexed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from app.core.events import FileDone, IngestEvent, IngestFinished
    from app.ingest.library import Library

SHOWN_REASONS = 20  # per kind in the summary; the rest are counted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to add")
    parser.add_argument("--collection", "-c", required=True, metavar="NAME", help="collection to add them to")
    parser.add_argument("--description", metavar="TEXT", help="what the collection holds (used to route questions)")
    parser.add_argument(
        "--describe", action="store_true", help="have the model write the description from a sample of chunks"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print only the summary")


def open_library(err: TextIO) -> Library | None:
    """The library of the data dir in force, or None after printing why not."""
    from app.core.errors import FathomError
    from app.core.paths import app_paths
    from app.core.settings import load_settings
    from app.ingest.library import Library

    paths = app_paths().ensure()
    settings, problem = load_settings(paths.settings_file)
    if problem:
        print(problem, file=err)
    try:
        library = Library.open(settings, paths)
    except FathomError as exc:
        print(str(exc), file=err)
        return None
    if library.recovery:
        print(f"Finished what an interrupted run left undone: {library.recovery.summary()}.", file=err)
    return library


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        print(
            "\nStopped. What was indexed is kept; run the same command again to continue.",
            file=sys.stderr,
        )
        return 130


async def _run(args: argparse.Namespace) -> int:
    from app.core.errors import FathomError

    err = sys.stderr
    library = open_library(err)
    if library is None:
        return 2
    try:
        try:
            events = library.ingest([Path(p) for p in args.paths], args.collection, description=args.description)
            finished, done = await follow(events, Display(err, quiet=args.quiet))
        except FathomError as exc:
            print(str(exc), file=err)
            return 2
        if finished is None:
            return 1
        print(summary(args.collection, finished, done), file=err)
        if args.describe and finished.indexed + finished.unchanged > 0:
            await _describe(library, args.collection, err)
    finally:
        await library.aclose()
    return 0 if finished.indexed + finished.unchanged > 0 else 1


async def follow(events: AsyncIterator[IngestEvent], display: Display) -> tuple[IngestFinished | None, list[FileDone]]:
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


async def _describe(library: Library, collection: str, err: TextIO) -> None:
    from app.core.errors import FathomError

    try:
        from app.llm.factory import make_chat_model

        model = make_chat_model(library.settings)
    except (FathomError, ImportError) as exc:
        print(f"No description written: {exc}", file=err)
        return
    try:
        text = await library.write_description(collection, model)
        print(f"Description: {text}", file=err)
    except FathomError as exc:
        print(f"No description written: {exc}", file=err)
    finally:
        await model.aclose()


def summary(collection: str, finished: IngestFinished, done: list[Any]) -> str:
    lines = [
        f"Collection '{collection}': {finished.indexed} indexed ({finished.chunks} new chunks), "
        f"{finished.unchanged} unchanged, {finished.skipped} skipped, {finished.failed} failed, "
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


def format_duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def short_path(path: str) -> str:
    """Relative to the current folder when under it."""
    try:
        cwd = os.getcwd()
    except OSError:
        return path
    if path.startswith(cwd.rstrip(os.sep) + os.sep):
        return path[len(cwd.rstrip(os.sep)) + 1 :]
    return path


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
                print(f"Ingesting {event.total_files} files into '{event.collection}'.", file=self.out)
        elif isinstance(event, IngestProgress) and self.tty:
            self._bar(event)
        elif isinstance(event, FileDone) and not self.tty:
            detail = f" ({event.chunks} chunks)" if event.status == "indexed" else ""
            reason = f": {event.reason}" if event.reason and event.status in ("failed", "skipped") else ""
            print(f"{event.status:9} {short_path(event.path)}{detail}{reason}", file=self.out, flush=True)

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
        current = Path(event.current).name if event.current else ""
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
