"""Model downloads and Ollama pulls that outlive the dialog that started them.

One owner for the window: a download runs in a worker thread (resumable, verified
by sha256, see :mod:`app.model_files.download`), an Ollama pull as a task on the loop;
both report progress as :class:`Transfer` values on the GUI thread, can be
cancelled, and — when asked — make the finished model the research model. The
window stays usable meanwhile (the starter model keeps answering).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from app.core.errors import FathomError
from app.core.settings import Settings
from app.model_files.catalog import CatalogEntry
from app.ui.tasks import TaskKeeper, run_blocking

if TYPE_CHECKING:
    from app.model_files.model_inventory import LocalBackend

SettingsWriter = Callable[[Settings], Awaitable[None]]


@dataclass(frozen=True)
class Transfer:
    """Where one download or pull stands (what the progress bar shows)."""

    key: str  # the catalog id, or "ollama:NAME"
    label: str
    done: int = 0
    total: int = 0
    speed_bps: float = 0.0
    eta_s: float | None = None
    status: str = ""

    def text(self) -> str:
        from app.ui.formatting import duration

        parts = [self.label]
        if self.total:
            parts.append(
                f"{self.done / 1024**3:.2f} of {self.total / 1024**3:.2f} GB ({self.percent}%)"
            )
        if self.speed_bps:
            parts.append(f"{self.speed_bps / 1024**2:.1f} MB/s")
        if self.eta_s is not None:
            parts.append(f"{duration(self.eta_s)} left")
        if self.status:
            parts.append(self.status)
        return " · ".join(parts)

    @property
    def percent(self) -> int:
        return int(self.done * 100 // self.total) if self.total else 0


class ModelDownloads(QObject):
    """Runs downloads and pulls; signals carry :class:`Transfer` and sentences."""

    progress = Signal(object)  # Transfer
    finished = Signal(str, str)  # key, what happened (a sentence)
    failed = Signal(str, str)  # key, why (a sentence; "" for a cancel)
    settingsChanged = Signal(object)  # Settings, when a finished model became the research model

    def __init__(
        self,
        tasks: TaskKeeper,
        models_dir: Callable[[], Path],
        settings: Callable[[], Settings],
        write_settings: SettingsWriter,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._tasks = tasks
        self._models_dir = models_dir
        self._settings = settings
        self._write_settings = write_settings
        self._cancels: dict[str, threading.Event] = {}
        self._pulls: dict[str, asyncio.Task[None]] = {}
        self.latest: dict[str, Transfer] = {}

    def busy(self, key: str) -> bool:
        return key in self._cancels or key in self._pulls

    def running(self) -> list[str]:
        return [*self._cancels, *self._pulls]

    # -- downloads of catalog files ----------------------------------------------------

    def download(self, entry: CatalogEntry, *, use_when_done: bool) -> asyncio.Task[None] | None:
        if self.busy(entry.id):
            return None
        cancel = threading.Event()
        self._cancels[entry.id] = cancel
        self._show(Transfer(entry.id, entry.name, 0, entry.size_bytes, status="starting"))
        return self._tasks.start(
            self._download(entry, cancel, use_when_done), f"download {entry.name}"
        )

    async def _download(
        self, entry: CatalogEntry, cancel: threading.Event, use_when_done: bool
    ) -> None:
        from app.model_files.download import DownloadCancelled, DownloadProgress, download_file

        loop = asyncio.get_running_loop()
        target = self._models_dir() / entry.file_name
        last = [0.0]

        def progress(p: DownloadProgress) -> None:  # a worker thread: hand the value to the loop
            now = time.monotonic()
            if now - last[0] < 0.1 and p.done < p.total:
                return
            last[0] = now
            transfer = Transfer(
                entry.id, entry.name, p.done, p.total or entry.size_bytes, p.speed_bps, p.eta_s
            )
            loop.call_soon_threadsafe(self._show, transfer)

        try:
            path = await run_blocking(
                lambda: download_file(
                    entry.url,
                    target,
                    sha256=entry.sha256,
                    size_bytes=entry.size_bytes,
                    progress=progress,
                    cancel=cancel,
                ),
                name=f"download {entry.name}",
            )
        except DownloadCancelled:
            self._end(entry.id)
            self.failed.emit(entry.id, "")
            return
        except (FathomError, OSError) as exc:
            self._end(entry.id)
            self.failed.emit(entry.id, f"{entry.name} was not downloaded: {exc}")
            return
        self._end(entry.id)
        message = f"{entry.name} is downloaded and verified (sha256)."
        if use_when_done:
            message += await self._use("llamacpp", str(path))
        self.finished.emit(entry.id, message)

    # -- Ollama pulls ------------------------------------------------------------------

    def pull(self, host: str, name: str, *, use_when_done: bool) -> asyncio.Task[None] | None:
        key = f"ollama:{name}"
        if self.busy(key):
            return None
        self._show(Transfer(key, f"Ollama: {name}", status="starting"))
        task = self._tasks.start(
            self._pull(host, name, key, use_when_done), f"pull {name} with Ollama"
        )
        self._pulls[key] = task
        return task

    async def _pull(self, host: str, name: str, key: str, use_when_done: bool) -> None:
        from app.model_files.ollama_admin import PullProgress, pull_ollama_model

        started = time.monotonic()

        def progress(p: PullProgress) -> None:
            elapsed = time.monotonic() - started
            speed = p.completed / elapsed if elapsed > 0.5 and p.completed else 0.0
            eta = (p.total - p.completed) / speed if speed and p.total > p.completed else None
            self._show(Transfer(key, f"Ollama: {name}", p.completed, p.total, speed, eta, p.status))

        try:
            await pull_ollama_model(host, name, progress=progress)
        except asyncio.CancelledError:
            self._end(key)
            self.failed.emit(key, "")
            return
        except FathomError as exc:
            self._end(key)
            self.failed.emit(key, f"Ollama did not pull {name}: {exc}")
            return
        self._end(key)
        message = f"Ollama has {name}."
        if use_when_done:
            message += await self._use("ollama", name)
        self.finished.emit(key, message)

    # -- shared ------------------------------------------------------------------------

    def cancel(self, key: str) -> None:
        """Stop a download (its part is kept, the next download resumes) or a pull."""
        if key in self._cancels:
            self._cancels[key].set()
        elif key in self._pulls:
            self._pulls[key].cancel()

    def cancel_all(self) -> None:
        for key in list(self.running()):
            self.cancel(key)

    async def _use(self, backend: LocalBackend, model: str) -> str:
        """Make the finished model the research model; the sentence that says how it went."""
        from app.model_files.model_inventory import settings_with_model

        settings = settings_with_model(self._settings(), backend, model)
        try:
            await self._write_settings(settings)
        except (FathomError, OSError) as exc:
            return f" It could not be made the research model: {exc}"
        self.settingsChanged.emit(settings)
        return " Research now uses it."

    def _show(self, transfer: Transfer) -> None:
        if (
            transfer.key in self._cancels
            or transfer.key in self._pulls
            or transfer.status == "starting"
        ):
            self.latest[transfer.key] = transfer
            self.progress.emit(transfer)

    def _end(self, key: str) -> None:
        self._cancels.pop(key, None)
        self._pulls.pop(key, None)
        self.latest.pop(key, None)
