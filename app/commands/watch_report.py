"""What ``fathom watch`` says on the terminal: each re-scan's files and summary, a
re-scan that failed (the others go on), and a folder that is offline — said once when
it goes and once when it is back, not at every re-scan while it is away."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TextIO

from app.commands.ingest_progress import Display, summary
from app.core.events import FileDone, IngestEvent, IngestFinished
from app.ingest.file_errors import short_error
from app.ingest.folder_presence import offline_sentence
from app.ingest.pipeline.change_detection import OFFLINE


class WatchReport:
    """Turns the watch loop's events and failures into lines on ``out``."""

    def __init__(self, out: TextIO, *, quiet: bool = False) -> None:
        self.out = out
        self.display = Display(out, quiet=quiet)
        self._done: list[
            FileDone
        ] = []  # the files of the re-scan in progress that are worth a line
        self._offline_now: list[str] = []  # its folders that are offline
        self._offline_said: dict[str, set[str]] = {}  # collection → folders said to be offline

    def show(self, event: IngestEvent) -> None:
        if isinstance(event, FileDone):
            if event.status == "skipped" and event.reason == OFFLINE:
                self._offline_now.append(event.path)  # a folder, not a file: said once, below
            elif event.status != "unchanged":
                self._done.append(event)
                self.display.show(event)
        elif isinstance(event, IngestFinished):
            self._finished(event)

    def failed(self, collection: str, error: Exception) -> None:
        """A re-scan that raised: said in a sentence; the watch goes on."""
        self.display.clear()
        self._done.clear()
        self._offline_now.clear()
        self._say(
            f"Could not re-scan {collection}: {short_error(error).rstrip('.')}. "
            "Still watching it: it is tried again on its next change."
        )

    def _finished(self, event: IngestFinished) -> None:
        name = event.collection
        offline = set(self._offline_now)
        said = self._offline_said.get(name, set())
        if offline - said:
            self._say(f"{name}: {offline_sentence([Path(p) for p in sorted(offline - said)])}")
        back = sorted(said - offline)
        if back:
            which = (
                f"the folder {back[0]} is"
                if len(back) == 1
                else f"the folders {' and '.join(back)} are"
            )
            self._say(f"{name}: {which} back; what changed while it was away is picked up.")
        self._offline_said[name] = offline
        # an offline folder is not a skipped file; a re-scan that found nothing but offline folders has nothing to add
        counts = dataclasses.replace(event, skipped=event.skipped - len(self._offline_now))
        if not offline or any(
            (counts.indexed, counts.unchanged, counts.skipped, counts.failed, counts.removed)
        ):
            self._say(summary(name, counts, self._done))
        self._done.clear()
        self._offline_now.clear()

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)
