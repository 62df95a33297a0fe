"""Start-up: one Fathom per data dir, a broken settings file never stops the
window, settings saved in the dialog survive a restart."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from helpers import await_in_test
from PySide6.QtWidgets import QDialogButtonBox, QMessageBox

from app.core.paths import app_paths
from app.core.settings import Settings, load_settings, save_settings
from app.store.lock import InstanceLock
from app.ui.main import acquire_or_explain
from app.ui.main_window import MainWindow
from app.ui.services import Services
from app.ui.settings_dialog import SettingsDialog

ROOT = Path(__file__).resolve().parents[2]


def _launch(env_extra: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", **env_extra}
    return subprocess.run(
        [sys.executable, "-c", "import sys; from app.ui.main import run_app; sys.exit(run_app())"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_second_launch_says_fathom_is_already_open(qtbot: Any) -> None:
    paths = app_paths().ensure()
    first = acquire_or_explain(paths)
    assert isinstance(first, InstanceLock)
    try:
        second = acquire_or_explain(paths)
        assert isinstance(second, QMessageBox)
        assert "already open" in second.text() and "FATHOM_HOME" in second.informativeText()
        # the real program, launched while this process holds the data dir
        result = _launch({"FATHOM_QUIT_AFTER_SHOWN": "0.3"})
        assert result.returncode == 1
        assert "Fathom is already open" in result.stderr
    finally:
        first.close()
    third = acquire_or_explain(paths)
    assert isinstance(third, InstanceLock)
    third.close()


def test_the_window_opens_and_closes_from_the_command(fathom_home: Path) -> None:
    started = time.perf_counter()
    result = _launch({"FATHOM_QUIT_AFTER_SHOWN": "0.2", "FATHOM_STARTUP_REPORT": "1"})
    assert result.returncode == 0, result.stderr
    shown = float(result.stdout.split("window shown after")[1].split()[0])
    assert 0 < shown < time.perf_counter() - started
    assert "Traceback" not in result.stderr


def test_an_invalid_settings_file_starts_with_defaults_and_says_so(qtbot: Any) -> None:
    paths = app_paths().ensure()
    paths.settings_file.write_text("[model\nbackend = ", encoding="utf-8")
    settings, problem = load_settings(paths.settings_file)
    assert settings == Settings() and problem
    window = MainWindow(Services(settings, paths), problem)
    qtbot.addWidget(window)
    window.show()
    assert window.banner.isVisible()
    assert "default settings" in window.banner.text()
    assert str(paths.settings_file) in window.banner.text()


def test_settings_survive_a_restart(qtbot: Any, aloop: Any) -> None:
    paths = app_paths().ensure()
    services = Services(Settings(), paths)
    window = MainWindow(services)
    qtbot.addWidget(window)
    dialog: SettingsDialog = await_in_test(qtbot, window.open_settings())
    dialog.backend.setCurrentIndex(dialog.backend.findData("ollama"))
    dialog.ollama_host.setText("http://127.0.0.1:11500")
    dialog.ollama_model.setCurrentText("qwen3:8b")
    dialog.milvus_uri.setText(str(paths.data_dir / "other.db"))
    dialog.max_rounds.setValue(5)
    dialog.top_k.setValue(9)
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    assert dialog.findChild(type(dialog.data_dir_label())) is not None
    assert dialog.data_dir_label().text() == str(paths.data_dir)
    with qtbot.waitSignal(dialog.saved, timeout=5000):
        save = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save)
        save.click()
    window.close()

    # "restart": read the file again, build a new window from it
    settings, problem = load_settings(paths.settings_file)
    assert problem is None
    assert settings.model.backend == "ollama"
    assert settings.model.ollama.host == "http://127.0.0.1:11500"
    assert settings.model.ollama.model == "qwen3:8b"
    assert settings.store.milvus_uri == str(paths.data_dir / "other.db")
    assert settings.research.max_rounds == 5 and settings.research.top_k == 9
    assert settings.ui.theme == "dark"
    again = MainWindow(Services(settings, paths))
    qtbot.addWidget(again)
    assert again.research_panel.rounds.value() == 5
    assert again.research_panel.top_k.value() == 9


def test_saving_settings_replaces_the_file_atomically(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    save_settings(Settings(), path)
    before = path.read_text(encoding="utf-8")
    save_settings(Settings(), path)
    assert path.read_text(encoding="utf-8") == before
    assert [p.name for p in tmp_path.iterdir()] == ["settings.toml"]  # no temp files left behind
