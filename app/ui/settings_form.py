"""What the settings and setup dialogs share: saving off the loop.

Save stores a typed API key (and a Milvus token) in the OS keyring first (and saves nothing when
the keyring did not keep it), then writes the settings file through the
writer the dialog was given (an executor does the writing). The dialog is
busy meanwhile: Save and Cancel are disabled and closing waits for the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QWidget

from app.core.errors import FathomError
from app.core.settings import Settings
from app.ui.key_field import ApiKeyField, KeySaver, StateReader
from app.ui.tasks import TaskKeeper

SettingsWriter = Callable[[Settings], Awaitable[None]]


class SettingsForm(QDialog):
    """A dialog that saves settings; :attr:`saved` carries the new settings."""

    saved = Signal(object)

    def __init__(
        self,
        tasks: TaskKeeper,
        write: SettingsWriter,
        read_key_state: StateReader,
        save_key: KeySaver,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._tasks = tasks
        self._write_settings = write
        self._closed = False
        self._busy = False
        self.save_task: asyncio.Task[None] | None = None
        self.key_field = ApiKeyField(tasks, read_key_state, save_key)
        self.error = QLabel("")
        self.error.setObjectName("errorText")
        self.error.setWordWrap(True)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        self.finished.connect(self._on_finished)

    def save(
        self,
    ) -> None:  # pragma: no cover - each dialog checks its fields, then calls start_saving
        raise NotImplementedError

    def start_saving(
        self, new: Settings, key_url: str | None, more_keys: Sequence[tuple[ApiKeyField, str]] = ()
    ) -> None:
        """Save ``new`` in the background; with ``key_url``, store the typed key under it
        first (and each of ``more_keys``' typed secrets under its URL)."""
        if self.save_task is None or self.save_task.done():
            keys = [*([(self.key_field, key_url)] if key_url is not None else []), *more_keys]
            self.save_task = self._tasks.start(self._save(new, keys), "save the settings")

    async def _save(self, new: Settings, keys: list[tuple[ApiKeyField, str]]) -> None:
        for field, url in keys:  # nothing is written unless the keyring kept every one
            if not await field.store_before_saving(
                url, set_busy=self._set_busy, is_open=lambda: not self._closed, error=self.error
            ):
                return
        self._set_busy(True)
        try:
            await self._write_settings(new)
        except (FathomError, OSError) as exc:
            if not self._closed:
                self.error.setText(f"Settings not saved: {exc}")
            return
        finally:
            if not self._closed:
                self._set_busy(False)
        self.written(new)
        self.saved.emit(new)
        self.accept()

    def written(self, new: Settings) -> None:
        """The settings file now holds ``new`` (a dialog may keep them)."""

    def busy_widgets(self) -> list[QWidget]:
        """Besides the buttons, what is disabled while saving."""
        return []

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.buttons.setEnabled(not busy)
        for widget in self.busy_widgets():
            widget.setEnabled(not busy)

    def reject(self) -> None:
        if self._busy:
            return  # a key is being stored or the file written: wait for the answer
        super().reject()

    def _on_finished(self, _result: int) -> None:
        self._closed = True
        self.key_field.forget()
        for field in self.findChildren(ApiKeyField):  # a dialog's other secrets (a Milvus token)
            field.forget()
