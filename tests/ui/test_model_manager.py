"""The model manager and the first-run recommendation, driven as a user would: real
widgets, a real download of the starter's GGUF file from a loopback server (the test
catalog's model), cancel and resume, one click to make it the research model, remove —
and nothing contacted outside this machine while the manager is open."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from file_server import FileServer
from helpers import started_window
from network_guard import NetworkGuard
from PySide6.QtWidgets import QMessageBox

from app.core.paths import app_paths
from app.core.settings import Settings, replace_setting
from app.model_files.catalog import CATALOG_ENV
from app.model_files.machine_speed import Speed, keep_speed, machine_key, research_threads
from app.model_files.model_inventory import STARTER_KEY
from app.ui.model_downloads import ModelDownloads, Transfer
from app.ui.model_manager import ModelManagerDialog
from app.ui.services import Services
from app.ui.setup_dialog import SetupDialog
from app.ui.tasks import TaskKeeper

pytestmark = pytest.mark.gui

SERVED = "/files/tiny-research.gguf"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(starter_model_path: Path) -> Iterator[FileServer]:
    with FileServer() as served:
        served.add(SERVED, starter_model_path)
        yield served


@pytest.fixture
def catalog(
    server: FileServer,
    starter_model_path: Path,
    starter_sha256: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """A catalog whose one model is the starter's file on loopback (FATHOM_MODEL_CATALOG)."""
    entry = {
        "id": "tiny",
        "name": "Tiny research model",
        "url": server.url(SERVED),
        "sha256": starter_sha256,
        "size_bytes": starter_model_path.stat().st_size,
        "ram_gb": 0.6,
        "context": 8192,
        "license": "Apache-2.0",
        "reasoning": False,
        "why": "A test model served on loopback.",
    }
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"models": [entry]}), encoding="utf-8")
    monkeypatch.setenv(CATALOG_ENV, str(path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no GPT4All or LM Studio folders
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return path


def services_without_ollama() -> Services:
    """Services with no Ollama, on a computer whose speed was measured before (the suite
    never times the starter in a window test: tests/llm/test_machine_speed.py does)."""
    settings = replace_setting(Settings(), "model.ollama.host", f"http://127.0.0.1:{_free_port()}")
    settings = dataclasses.replace(
        settings, ui=dataclasses.replace(settings.ui, first_run_done=True)
    )
    paths = app_paths().ensure()
    threads = research_threads(settings.model.llamacpp.n_threads)
    keep_speed(
        paths.cache_dir,
        Speed(900.0, 60.0, model_bytes=100_000_000, threads=threads, machine=machine_key(threads)),
    )
    return Services(settings, paths)


def manager_for(
    qtbot: Any, services: Services, errors: list[str]
) -> tuple[ModelManagerDialog, ModelDownloads]:
    tasks = TaskKeeper(lambda name, exc: errors.append(f"{name}: {exc}"))
    downloads = ModelDownloads(
        tasks, lambda: services.paths.models_dir, lambda: services.settings, services.save_settings
    )
    dialog = ModelManagerDialog(services, downloads, tasks)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(dialog.refresh_task.done, timeout=20_000)
    return dialog, downloads


def keys(dialog: ModelManagerDialog) -> list[str]:
    assert dialog.inventory is not None
    return [r.key for r in dialog.inventory.rows]


def test_download_a_model_with_progress_then_use_it_and_remove_it(
    qtbot: Any, aloop: Any, catalog: Path, server: FileServer, network_guard: NetworkGuard
) -> None:
    services = services_without_ollama()
    errors: list[str] = []
    dialog, downloads = manager_for(qtbot, services, errors)
    assert keys(dialog) == [STARTER_KEY, "tiny"]
    assert (
        "no Ollama running" in dialog.machine_label.text()
        and "GB memory" in dialog.machine_label.text()
    )
    assert "in use" in dialog.table.item(0, 0).text()
    assert (
        dialog.table.item(1, 3).text() == "to download"
        and dialog.table.item(1, 9).text() == "✓ fits"
    )
    # the starter's speed, measured on this machine, scaled to each model: about how long a deep answer takes
    assert dialog.table.item(0, 10).text().startswith("about ") and "A deep answer takes" in (
        dialog.table.item(0, 10).toolTip()
    )
    assert not dialog.cancel_button.isVisible()
    assert server.requests == []  # opening the manager downloaded nothing

    assert dialog.select_key("tiny")
    assert dialog.download_use_button.isEnabled() and not dialog.use_button.isEnabled()
    server.files[SERVED].delay_per_chunk_s = 0.002  # slow enough to see it going
    seen: list[Transfer] = []
    downloads.progress.connect(seen.append)
    with qtbot.waitSignal(downloads.finished, timeout=120_000) as done:
        dialog.download_use_button.click()
        qtbot.waitUntil(lambda: any(t.done > 0 and t.speed_bps > 0 for t in seen), timeout=30_000)
        assert dialog.cancel_button.isVisible() and "MB/s" in dialog.progress_label.text()
        assert not dialog.download_button.isEnabled()  # one download of a model at a time
        screenshots = os.environ.get("FATHOM_SCREENSHOTS")
        if screenshots:
            dialog.grab().save(str(Path(screenshots) / "models-manager.png"))
    assert "downloaded and verified" in done.args[1] and "Research now uses it" in done.args[1]
    target = services.paths.models_dir / "tiny-research.gguf"
    assert services.settings.model.llamacpp.model_path == str(target) and target.is_file()
    dones = [t.done for t in seen if t.key == "tiny"]
    assert dones == sorted(dones)

    qtbot.waitUntil(
        lambda: dialog.inventory is not None and dialog.inventory.rows[0].key == "tiny",
        timeout=20_000,
    )
    row = dialog.inventory.rows[0] if dialog.inventory else None
    assert (
        row is not None
        and row.in_use
        and row.source == "fathom"
        and not dialog.cancel_button.isVisible()
    )

    # the starter again in one click, then remove the download (asked first)
    assert dialog.select_key(STARTER_KEY) and dialog.use_button.isEnabled()
    with qtbot.waitSignal(dialog.saved, timeout=10_000):
        dialog.use_button.click()
    assert services.settings.model.llamacpp.model_path == ""
    qtbot.waitUntil(
        lambda: dialog.select_key("tiny") and dialog.remove_button.isEnabled(), timeout=20_000
    )
    box = dialog.remove_selected()
    assert box is not None and "tiny-research.gguf" in box.text()
    box.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: "is removed" in dialog.message.text(), timeout=20_000)
    assert not target.exists()
    qtbot.waitUntil(
        lambda: dialog.inventory is not None and dialog.inventory.rows[1].source == "catalog",
        timeout=20_000,
    )
    assert keys(dialog) == [STARTER_KEY, "tiny"]  # offered for download again
    assert not errors and network_guard.violations == []


def test_a_cancelled_download_keeps_its_part_and_the_next_one_resumes(
    qtbot: Any, aloop: Any, catalog: Path, server: FileServer
) -> None:
    services = services_without_ollama()
    errors: list[str] = []
    dialog, downloads = manager_for(qtbot, services, errors)
    server.files[SERVED].delay_per_chunk_s = 0.05  # a slow server
    assert dialog.select_key("tiny")
    seen: list[Transfer] = []
    downloads.progress.connect(seen.append)
    with qtbot.waitSignal(downloads.failed, timeout=30_000) as failed:
        dialog.download_button.click()
        qtbot.waitUntil(lambda: any(t.done > 0 for t in seen), timeout=30_000)
        dialog.cancel_button.click()
    assert failed.args == ["tiny", ""]
    assert "cancelled" in dialog.message.text() and "resumes" in dialog.message.text()
    part = services.paths.models_dir / "tiny-research.gguf.part"
    assert part.is_file() and part.stat().st_size > 0
    kept = part.stat().st_size

    server.files[SERVED].delay_per_chunk_s = 0.0
    with qtbot.waitSignal(downloads.finished, timeout=120_000):
        dialog.download_button.click()
    assert (services.paths.models_dir / "tiny-research.gguf").is_file() and not part.exists()
    ranges = [r.range for r in server.seen(SERVED, "GET")]
    assert ranges[0] is None and ranges[-1] == f"bytes={kept}-"
    assert (
        services.settings.model.llamacpp.model_path == ""
    )  # "Download" alone does not switch models
    assert not errors


def test_the_first_run_recommends_a_model_and_downloads_it_while_the_starter_answers(
    qtbot: Any, aloop: Any, catalog: Path, server: FileServer, starter_model_path: Path
) -> None:
    services = services_without_ollama()
    errors: list[str] = []
    tasks = TaskKeeper(lambda name, exc: errors.append(f"{name}: {exc}"))
    downloads = ModelDownloads(
        tasks, lambda: services.paths.models_dir, lambda: services.settings, services.save_settings
    )
    dialog = SetupDialog(services, tasks, starter=starter_model_path, downloads=downloads)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(
        lambda: dialog.recommend_task.done() and dialog.probe_task.done(), timeout=20_000
    )
    text = dialog.recommendation.text()
    assert "Recommended: Tiny research model" in text and "download (once, then offline)" in text
    assert "would answer a deep question in about" in text  # measured here, not memory alone
    assert dialog.get_recommended.isEnabled() and "Download and use Tiny research model" in (
        dialog.get_recommended.text()
    )
    screenshots = os.environ.get("FATHOM_SCREENSHOTS")
    if screenshots:
        dialog.grab().save(str(Path(screenshots) / "first-run.png"))
    with qtbot.waitSignal(downloads.finished, timeout=120_000) as done:
        with qtbot.waitSignal(dialog.saved, timeout=10_000) as saved:
            dialog.get_recommended.click()
        # the dialog saved the starter for now and closed: the app is usable meanwhile
        assert saved.args[0].ui.first_run_done and saved.args[0].model.llamacpp.model_path == ""
    assert "Research now uses it" in done.args[1]
    assert services.settings.model.llamacpp.model_path == str(
        services.paths.models_dir / "tiny-research.gguf"
    )
    assert not errors


def test_nothing_leaves_the_machine_with_the_manager_and_first_run_open(
    qtbot: Any, aloop: Any, catalog: Path, server: FileServer, network_guard: NetworkGuard
) -> None:
    with started_window(qtbot) as window:  # first run: the setup dialog opens too
        qtbot.waitUntil(lambda: getattr(window, "setup_dialog", None) is not None, timeout=20_000)
        setup = window.setup_dialog
        task = window.open_models()
        qtbot.waitUntil(task.done, timeout=20_000)
        manager = task.result()
        qtbot.waitUntil(manager.refresh_task.done, timeout=20_000)
        qtbot.waitUntil(
            lambda: setup.recommend_task.done() and setup.probe_task.done(), timeout=20_000
        )
        assert manager.inventory is not None and "tiny" in keys(manager)
        assert window.models_action.shortcut().toString() == "Ctrl+Shift+M"
        again = window.open_models()
        qtbot.waitUntil(again.done, timeout=10_000)
        assert again.result() is manager  # a second open raises the same dialog
    assert network_guard.violations == []
    assert server.requests == []


def test_settings_keep_the_catalog_and_open_the_manager_without_overwriting_its_choice(
    qtbot: Any, aloop: Any, tmp_path: Path
) -> None:
    from PySide6.QtWidgets import QPushButton

    from app.ui.settings_dialog import SettingsDialog

    async def no_models(_settings: Settings, _backend: str) -> list[str]:
        return []

    async def write(_settings: Settings) -> None:
        return None

    opened: list[bool] = []
    dialog = SettingsDialog(
        Settings(),
        app_paths().ensure(),
        no_models,
        write,
        lambda _url, _key: None,
        TaskKeeper(lambda name, exc: None),
        open_models=lambda: opened.append(True),
    )
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.catalog.setText(f"  {tmp_path / 'ours.json'}  ")
    assert dialog.settings().models.catalog == str(tmp_path / "ours.json")
    button = dialog.findChild(QPushButton, "openModels")
    assert button is not None and button.isEnabled()
    button.click()
    assert (
        opened == [True] and not dialog.isVisible()
    )  # closed unsaved: the manager's choice stands


@pytest.mark.parametrize("link", [True, False])
def test_a_gguf_file_on_this_computer_is_added_from_the_dialog_and_used(
    qtbot: Any, aloop: Any, catalog: Path, starter_model_path: Path, tmp_path: Path, link: bool
) -> None:
    """Offline, without the terminal or Settings: "Add a GGUF file…", copy or link, use."""
    # a file the user has, outside every model folder
    elsewhere = tmp_path / "downloads" / "my-model.gguf"
    elsewhere.parent.mkdir()
    shutil.copyfile(
        starter_model_path, elsewhere
    )  # (not the starter's own file: that one is in use)
    services = services_without_ollama()
    errors: list[str] = []
    dialog, _downloads = manager_for(qtbot, services, errors)
    assert dialog.add_file_button.isVisible() and dialog.add_file_button.isEnabled()
    task = dialog._tasks.start(
        dialog.add_model_file(elsewhere, link=link), "add"
    )  # as the Copy/Link choice does
    qtbot.waitUntil(task.done, timeout=60_000)
    added = services.paths.models_dir / "my-model.gguf"
    assert (
        task.result() == added and added.is_symlink() == link and added.stat().st_size > 1_000_000
    )
    assert "my-model.gguf is added" in dialog.message.text()
    row = dialog.selected_row()
    assert row is not None and Path(row.path).name == "my-model.gguf"  # listed and selected
    with qtbot.waitSignal(dialog.saved, timeout=10_000):
        dialog.use_button.click()
    assert Path(services.settings.model.llamacpp.model_path).name == "my-model.gguf"

    # not a GGUF model: refused with the reason, nothing written
    bogus = tmp_path / "notes.gguf"
    bogus.write_bytes(b"not a model")
    task = dialog._tasks.start(dialog.add_model_file(bogus, link=link), "add")
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() is None and "notes.gguf was not added" in dialog.message.text()
    assert not (services.paths.models_dir / "notes.gguf").exists()
    assert not errors
