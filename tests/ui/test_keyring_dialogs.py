"""The API key in the settings and setup dialogs: honest about the keyring, never blocking.

With no OS keyring (keyring's fail backend) the dialogs say so, name
``FATHOM_API_KEY`` and offer no key field; nothing claims a key is stored.
With a working keyring (a small in-memory backend) the key is stored off the
GUI thread while the dialog is disabled and says so, and "stored" is shown
only once the keyring gave the key back. A keyring that refuses or loses the
key leaves the settings unsaved with a sentence.
"""

from __future__ import annotations

import asyncio
import functools
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import keyring
import keyring.errors
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail
from PySide6.QtWidgets import QDialogButtonBox

from app.core.paths import AppPaths, app_paths
from app.core.settings import Settings, load_settings, replace_setting, save_settings
from app.llm.keys import ENV_VAR, SERVICE, set_api_key
from app.llm.starter import starter_model_path
from app.ui.key_field import STORING
from app.ui.services import Services
from app.ui.settings_dialog import SettingsDialog
from app.ui.setup_dialog import SetupDialog
from app.ui.tasks import TaskKeeper

URL = "https://api.example.org/v1"
STORED = re.compile(r"\bstored\b", re.IGNORECASE)


class MemoryKeyring(KeyringBackend):
    """A keyring kept in memory that notes which thread calls it; ``gate`` holds
    ``set_password`` until the test opens it, ``keep=False`` loses what it is given."""

    priority = 1  # type: ignore[assignment]

    def __init__(
        self, *, keep: bool = True, refuse: bool = False, gate: threading.Event | None = None
    ) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}
        self.on_main_thread: list[bool] = []
        self.keep, self.refuse, self.gate = keep, refuse, gate
        self.storing = threading.Event()

    def _called(self) -> None:
        self.on_main_thread.append(threading.current_thread() is threading.main_thread())

    def get_password(self, service: str, username: str) -> str | None:
        self._called()
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self._called()
        self.storing.set()
        if self.gate is not None and not self.gate.wait(timeout=30):
            raise keyring.errors.PasswordSetError("the test never let the keyring answer")
        if self.refuse:
            raise keyring.errors.PasswordSetError("the keyring is locked")
        if self.keep:
            self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self._called()
        self.store.pop((service, username), None)


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


@contextmanager
def using(backend: KeyringBackend) -> Iterator[None]:
    """``backend`` as the keyring for a while; the previous one restored afterwards."""
    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        yield
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def no_keyring() -> Iterator[None]:
    with using(fail.Keyring()):
        yield


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    with using(backend):
        yield backend


@pytest.fixture
def gated_keyring() -> Iterator[tuple[MemoryKeyring, threading.Event]]:
    """A keyring whose ``set_password`` waits until the test opens the gate."""
    gate = threading.Event()
    backend = MemoryKeyring(gate=gate)
    try:
        with using(backend):
            yield backend, gate
    finally:
        gate.set()  # never leave a worker thread waiting


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _settings() -> Settings:
    settings = replace_setting(Settings(), "model.openai.base_url", URL)
    # an Ollama address where nothing listens: the setup's probe answers at once
    return replace_setting(settings, "model.ollama.host", f"http://127.0.0.1:{_free_port()}")


async def _write(paths: AppPaths, settings: Settings) -> None:
    await asyncio.to_thread(
        save_settings, settings, paths.settings_file
    )  # off the loop, as the window does


async def _no_models(_settings: Settings, _backend: str) -> list[str]:
    return []


def _settings_dialog(qtbot: Any, paths: AppPaths, errors: list[str]) -> SettingsDialog:
    dialog = SettingsDialog(
        _settings(),
        paths,
        _no_models,
        functools.partial(_write, paths),
        set_api_key,
        TaskKeeper(lambda name, exc: errors.append(f"{name}: {exc}")),
    )
    qtbot.addWidget(dialog)
    dialog.show()
    task = dialog.key_field.check_task
    assert task is not None
    qtbot.waitUntil(task.done, timeout=10_000)
    return dialog


def _setup_dialog(qtbot: Any, paths: AppPaths, errors: list[str]) -> SetupDialog:
    services = Services(_settings(), paths)
    dialog = SetupDialog(
        services,
        TaskKeeper(lambda name, exc: errors.append(f"{name}: {exc}")),
        starter=starter_model_path(),
    )
    qtbot.addWidget(dialog)
    dialog.show()
    task = dialog.key_field.check_task
    assert task is not None
    qtbot.waitUntil(lambda: task.done() and dialog.probe_task.done(), timeout=20_000)
    assert dialog.remote.isChecked() and dialog.use_starter.isChecked()
    return dialog


def _save_button(dialog: SettingsDialog | SetupDialog) -> Any:
    return dialog.buttons.button(QDialogButtonBox.StandardButton.Save)


@pytest.mark.parametrize("which", ["settings", "setup"])
def test_without_a_keyring_the_dialogs_say_so_and_never_say_stored(
    qtbot: Any, aloop: Any, no_keyring: None, which: str, starter_model_path: Path
) -> None:
    paths = app_paths().ensure()
    errors: list[str] = []
    dialog = (
        _settings_dialog(qtbot, paths, errors)
        if which == "settings"
        else _setup_dialog(qtbot, paths, errors)
    )
    field = dialog.key_field
    assert "No OS keyring" in field.status.text() and ENV_VAR in field.status.text()
    assert not field.edit.isEnabled()
    for shown in (
        field.status.text(),
        field.edit.placeholderText(),
        field.edit.toolTip(),
        dialog.error.text(),
    ):
        assert not STORED.search(shown), shown
    # the rest of the settings still save
    with qtbot.waitSignal(dialog.saved, timeout=5000):
        _save_button(dialog).click()
    saved, problem = load_settings(paths.settings_file)
    assert problem is None and saved.model.openai.base_url == URL
    assert errors == []


def test_the_settings_dialog_stores_the_key_off_the_gui_thread_while_it_waits(
    qtbot: Any, aloop: Any, gated_keyring: tuple[MemoryKeyring, threading.Event]
) -> None:
    backend, gate = gated_keyring
    paths = app_paths().ensure()
    errors: list[str] = []
    dialog = _settings_dialog(qtbot, paths, errors)
    assert dialog.key_field.status.text().startswith(f"No key is stored for {URL}")
    assert dialog.api_key.isEnabled()
    dialog.api_key.setText("sk-secret")
    saved: list[object] = []
    dialog.saved.connect(saved.append)
    _save_button(dialog).click()
    qtbot.waitUntil(backend.storing.is_set, timeout=5000)
    # the keyring has not answered: the window is alive, the dialog waits and says why
    qtbot.waitUntil(lambda: dialog.key_field.status.text() == STORING, timeout=2000)
    assert not dialog.buttons.isEnabled() and not dialog.api_key.isEnabled()
    assert not dialog.openai_url.isEnabled()
    dialog.reject()  # Esc while storing does not abandon the key half-way
    assert dialog.isVisible() and saved == []
    with qtbot.waitSignal(dialog.saved, timeout=10_000):
        gate.set()
    assert backend.store == {(SERVICE, URL): "sk-secret"}
    assert backend.on_main_thread and not any(backend.on_main_thread)
    assert "sk-secret" not in paths.settings_file.read_text(encoding="utf-8")

    again = _settings_dialog(qtbot, paths, errors)
    assert again.key_field.status.text().startswith(f"A key for {URL} is stored in the OS keyring")
    assert "unchanged" in again.api_key.placeholderText()
    assert not any(backend.on_main_thread)
    assert errors == []


@pytest.mark.parametrize(
    ("failure", "sentence"),
    [({"keep": False}, "did not keep the API key"), ({"refuse": True}, "refused")],
    ids=["loses-the-key", "refuses"],
)
def test_a_key_the_keyring_did_not_keep_is_never_called_stored(
    qtbot: Any, aloop: Any, failure: dict[str, bool], sentence: str
) -> None:
    backend = MemoryKeyring(**failure)
    with using(backend):
        paths = app_paths().ensure()
        errors: list[str] = []
        dialog = _settings_dialog(qtbot, paths, errors)
        dialog.api_key.setText("sk-secret")
        saved: list[object] = []
        dialog.saved.connect(saved.append)
        _save_button(dialog).click()
        task = dialog.save_task
        assert task is not None
        qtbot.waitUntil(task.done, timeout=10_000)
        assert sentence in dialog.error.text() and "Settings not saved" in dialog.error.text()
        assert saved == [] and dialog.isVisible() and not paths.settings_file.exists()
        assert not STORED.search(dialog.key_field.status.text().replace("No key is stored", ""))
        assert dialog.buttons.isEnabled() and dialog.api_key.isEnabled()
        assert dialog.api_key.text() == "sk-secret"  # kept, so the user can try again
        assert backend.store == {} and not any(backend.on_main_thread)
        assert errors == []


def test_the_setup_dialog_stores_the_key_in_the_keyring_off_the_gui_thread(
    qtbot: Any, aloop: Any, memory_keyring: MemoryKeyring, starter_model_path: Path
) -> None:
    paths = app_paths().ensure()
    errors: list[str] = []
    dialog = _setup_dialog(qtbot, paths, errors)
    assert dialog.remote_key.isEnabled()
    assert dialog.key_field.status.text().startswith(f"No key is stored for {URL}")
    dialog.remote_key.setText("sk-setup")
    with qtbot.waitSignal(dialog.saved, timeout=10_000):
        _save_button(dialog).click()
    assert memory_keyring.store == {(SERVICE, URL): "sk-setup"}
    assert memory_keyring.on_main_thread and not any(memory_keyring.on_main_thread)
    saved, problem = load_settings(paths.settings_file)
    assert problem is None and saved.model.openai.base_url == URL
    assert "sk-setup" not in paths.settings_file.read_text(encoding="utf-8")
    assert errors == []
