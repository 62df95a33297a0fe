"""The Milvus server's token in Settings: kept in the OS keyring under the Milvus URI
(never in the settings file), asked of the keyring off the GUI thread, honest when
there is no keyring, and not offered for Milvus Lite (a file needs no token)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from keyring.backends import fail
from test_keyring_dialogs import MemoryKeyring, using

from app.core.paths import AppPaths, app_paths
from app.core.settings import Settings, load_settings, replace_setting, save_settings
from app.llm.keys import MILVUS_TOKEN_VAR, SERVICE, get_milvus_token, set_api_key
from app.ui.settings_dialog import SettingsDialog
from app.ui.tasks import TaskKeeper

SERVER = "http://127.0.0.1:19530"
NO_TOKEN_FOR_LITE = "Milvus Lite (a file on this computer) needs no token."


@pytest.fixture(autouse=True)
def no_token_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MILVUS_TOKEN_VAR, raising=False)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    with using(backend):
        yield backend


async def _write(paths: AppPaths, settings: Settings) -> None:
    await asyncio.to_thread(save_settings, settings, paths.settings_file)


async def _no_models(_settings: Settings, _backend: str) -> list[str]:
    return []


def _dialog(qtbot: Any, paths: AppPaths, settings: Settings, errors: list[str]) -> SettingsDialog:
    dialog = SettingsDialog(
        settings,
        paths,
        _no_models,
        functools.partial(_write, paths),
        set_api_key,
        TaskKeeper(lambda name, exc: errors.append(f"{name}: {exc}")),
    )
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def _checked(qtbot: Any, dialog: SettingsDialog) -> None:
    task = dialog.token_field.check_task
    assert task is not None
    qtbot.waitUntil(task.done, timeout=10_000)


def test_a_token_is_kept_in_the_keyring_under_the_server_uri_and_never_in_the_file(
    qtbot: Any, aloop: Any, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    paths = app_paths().ensure()
    errors: list[str] = []
    dialog = _dialog(qtbot, paths, Settings(), errors)
    assert (
        not dialog.milvus_token.isEnabled()
        and dialog.token_field.status.text() == NO_TOKEN_FOR_LITE
    )

    dialog.milvus_uri.setText(SERVER)
    dialog.milvus_uri.editingFinished.emit()
    _checked(qtbot, dialog)
    assert dialog.milvus_token.isEnabled()
    assert dialog.token_field.status.text().startswith(f"No token is stored for {SERVER} yet;")
    dialog.milvus_token.setText("reader:s3cret-token")
    with qtbot.waitSignal(dialog.saved, timeout=10_000):
        dialog.save()

    assert memory_keyring.store[(SERVICE, SERVER)] == "reader:s3cret-token"
    saved, problem = load_settings(paths.settings_file)
    assert saved.store.milvus_uri == SERVER and not problem
    assert "s3cret" not in paths.settings_file.read_text(encoding="utf-8")
    assert memory_keyring.on_main_thread and not any(memory_keyring.on_main_thread)
    assert get_milvus_token(SERVER) == "reader:s3cret-token"  # what the library connects with

    again = _dialog(qtbot, paths, replace_setting(Settings(), "store.milvus_uri", SERVER), errors)
    _checked(qtbot, again)
    assert again.token_field.status.text().startswith(
        f"A token for {SERVER} is stored in the OS keyring"
    )
    assert again.milvus_token.text() == ""
    assert errors == []


def test_a_token_without_a_server_uri_is_refused_and_nothing_saved(
    qtbot: Any, aloop: Any, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    paths = app_paths().ensure()
    dialog = _dialog(qtbot, paths, replace_setting(Settings(), "store.milvus_uri", SERVER), [])
    _checked(qtbot, dialog)
    dialog.milvus_token.setText("reader:s3cret-token")
    dialog.milvus_uri.setText(
        str(tmp_path / "milvus.db")
    )  # back to a Lite file, the field not left yet
    dialog.save()
    assert dialog.error.text() == (
        "Settings not saved: a token is for a Milvus server. Fill in its URI (http://host:19530)."
    )
    assert memory_keyring.store == {} and not paths.settings_file.exists()


def test_without_a_keyring_the_token_field_names_the_environment_variable(
    qtbot: Any, aloop: Any
) -> None:
    with using(fail.Keyring()):
        dialog = _dialog(
            qtbot, app_paths().ensure(), replace_setting(Settings(), "store.milvus_uri", SERVER), []
        )
        _checked(qtbot, dialog)
        assert dialog.token_field.status.text() == (
            "No OS keyring on this system, so Fathom cannot keep a Milvus token. "
            f"Set the environment variable {MILVUS_TOKEN_VAR} before starting Fathom."
        )
        assert not dialog.milvus_token.isEnabled()
