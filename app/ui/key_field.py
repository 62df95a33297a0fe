"""The API-key field of the settings and setup dialogs.

A password line edit and one sentence under it saying where the key lives,
read from the keyring itself: whether an OS keyring exists at all, whether it
holds a key for this endpoint. Where there is no keyring the field is
disabled and says so (and names ``FATHOM_API_KEY``); it never says "stored"
for a key the keyring did not give back.

Keyring calls can block (D-Bus, a locked keyring waiting for a password), so
they run in an executor; the field is disabled and says what it is doing
while they run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QLineEdit, QVBoxLayout, QWidget

from app.core.errors import FathomError
from app.llm.keys import KeyringState, keyring_state, set_api_key
from app.ui.tasks import TaskKeeper, run_blocking

StateReader = Callable[[str], KeyringState]
KeySaver = Callable[[str, str], None]

CHECKING = "Checking the OS keyring…"
STORING = "Storing the key in the OS keyring…"


class ApiKeyField(QWidget):
    """``edit`` for the key, ``status`` for the sentence; :meth:`check` and :meth:`store` are async."""

    stateChanged = Signal(object)  # KeyringState

    def __init__(
        self,
        tasks: TaskKeeper,
        read_state: StateReader = keyring_state,
        save_key: KeySaver = set_api_key,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._tasks = tasks
        self._read_state = read_state
        self._save_key = save_key
        self.state: KeyringState | None = None
        self.check_task: asyncio.Task[None] | None = None
        self._gone = False
        self.edit = QLineEdit()
        self.edit.setObjectName("apiKey")
        self.edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.status = QLabel("")
        self.status.setObjectName("keyStatus")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit)
        layout.addWidget(self.status)

    def text(self) -> str:
        return self.edit.text()

    def forget(self) -> None:
        """The dialog closed: stop touching the widgets when a keyring call returns."""
        self._gone = True
        if self.check_task is not None:
            self.check_task.cancel()

    def not_needed(self, sentence: str) -> None:
        """No key applies (a Milvus Lite file needs no token): the field is off and says why."""
        if self.check_task is not None and not self.check_task.done():
            self.check_task.cancel()
        self.state = None
        self.edit.clear()
        self.edit.setEnabled(False)
        self.edit.setPlaceholderText("")
        self.status.setText(sentence)

    # -- checking ---------------------------------------------------------
    def check(self, base_url: str) -> asyncio.Task[None]:
        """Read the keyring's state for ``base_url`` in the background."""
        if self.check_task is not None and not self.check_task.done():
            self.check_task.cancel()
        self.check_task = self._tasks.start(self.refresh(base_url), "check the OS keyring")
        return self.check_task

    async def refresh(self, base_url: str) -> None:
        self.edit.setEnabled(False)
        self.edit.setPlaceholderText("")
        self.status.setText(CHECKING)
        state = await run_blocking(self._read_state, base_url, name="read the OS keyring")
        if self._gone:
            return
        self._show(state, base_url)

    def _show(self, state: KeyringState, base_url: str) -> None:
        self.state = state
        self.status.setText(state.sentence(base_url))
        self.edit.setEnabled(state.available)
        if not state.available:
            self.edit.clear()
            self.edit.setPlaceholderText("no OS keyring on this system")
        elif state.has_key:
            self.edit.setPlaceholderText("unchanged (a key is stored in the OS keyring)")
        else:
            self.edit.setPlaceholderText("none stored; type a key to keep it in the OS keyring")
        self.stateChanged.emit(state)

    # -- storing ----------------------------------------------------------
    async def store_before_saving(
        self,
        base_url: str,
        *,
        set_busy: Callable[[bool], None],
        is_open: Callable[[], bool],
        error: QLabel,
    ) -> bool:
        """A dialog's save: store the typed key (the dialog busy meanwhile); True when the
        keyring kept it and the dialog is still open, so the settings may be written."""
        set_busy(True)
        error.setText("")
        try:
            await self.store(base_url)
        except FathomError as exc:
            if is_open():
                error.setText(f"Settings not saved: {exc}")
            return False
        finally:
            if is_open():
                set_busy(False)
        return is_open()

    async def store(self, base_url: str) -> None:
        """Store the typed key under ``base_url``, off the loop; raises FathomError when the
        keyring did not keep it (the field then says so, and keeps the typed key)."""
        key = self.edit.text()
        self.edit.setEnabled(False)
        self.status.setText(STORING)
        try:
            await run_blocking(
                self._save_key, base_url, key, name="store the key in the OS keyring"
            )
        except BaseException:
            if not self._gone:
                self.edit.setEnabled(True)
                self.status.setText(self.state.sentence(base_url) if self.state else "")
            raise
        if self._gone:
            return
        self.edit.clear()
        self.edit.setEnabled(True)
        self.state = KeyringState(
            True,
            self.state.backend if self.state else "",
            True,
            self.state.env_key if self.state else False,
        )
        self.status.setText(self.state.sentence(base_url))
        self.edit.setPlaceholderText("unchanged (a key is stored in the OS keyring)")
