"""First run: the setup looks for a running Ollama (none here), offers the
starter model or a GGUF file, and saves the choice."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QDialogButtonBox

from app.core.paths import app_paths
from app.core.settings import Settings, load_settings, replace_setting
from app.ui.services import Services
from app.ui.setup_dialog import SetupDialog
from app.ui.tasks import TaskKeeper


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_without_ollama_the_setup_offers_llama_cpp_and_saves_the_choice(
    qtbot: Any, aloop: Any, starter_model_path: Path
) -> None:
    paths = app_paths().ensure()
    # an Ollama address where nothing listens: the probe must say so, quickly
    settings = replace_setting(Settings(), "model.ollama.host", f"http://127.0.0.1:{_free_port()}")
    services = Services(settings, paths)
    errors: list[str] = []
    dialog = SetupDialog(
        services,
        TaskKeeper(lambda name, exc: errors.append(f"{name}: {exc}")),
        starter=starter_model_path,
    )
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(dialog.probe_task.done, timeout=20_000)
    assert not errors
    assert dialog.status.text().startswith("No Ollama at http://127.0.0.1:")
    assert not dialog.use_ollama.isEnabled()
    assert dialog.use_starter.isEnabled() and dialog.use_starter.isChecked()

    # a GGUF path that does not exist is refused with a sentence
    dialog.use_gguf.setChecked(True)
    dialog.gguf.setText(str(paths.data_dir / "missing.gguf"))
    save = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save)
    save.click()
    qtbot.waitUntil(
        lambda: "existing .gguf" in dialog.error.text(), timeout=5000
    )  # looked for off the loop
    assert dialog.isVisible()

    # a real GGUF file is accepted
    dialog.gguf.setText(str(starter_model_path))
    with qtbot.waitSignal(dialog.saved, timeout=5000):
        save.click()
    saved, problem = load_settings(paths.settings_file)
    assert problem is None
    assert saved.model.backend == "llamacpp"
    assert saved.model.llamacpp.model_path == str(starter_model_path)
    assert saved.ui.first_run_done is True
    assert services.settings == saved
