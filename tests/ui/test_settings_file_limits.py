"""Settings → Library: the memory and time one file may take to read, and whether
links outside a folder are followed (issue 33), carried into the saved settings."""

from __future__ import annotations

from typing import Any

from app.core.paths import app_paths
from app.core.settings import Settings
from app.ui.tasks import TaskKeeper


def test_the_limits_per_file_and_the_link_rule_are_saved(qtbot: Any, aloop: Any) -> None:
    from app.ui.settings_dialog import SettingsDialog

    async def no_models(_settings: Settings, _backend: str) -> list[str]:
        return []

    async def write(_settings: Settings) -> None:
        return None

    dialog = SettingsDialog(
        Settings(),
        app_paths().ensure(),
        no_models,
        write,
        lambda _url, _key: None,
        TaskKeeper(lambda n, e: None),
    )
    qtbot.addWidget(dialog)
    dialog.show()
    defaults = dialog.settings().ingest
    assert (
        defaults.memory_per_file_mb,
        defaults.seconds_per_file,
        defaults.follow_links_outside,
    ) == (
        2048,
        120,
        False,
    )
    dialog.memory_per_file.setValue(4096)
    dialog.seconds_per_file.setValue(600)
    dialog.links_outside.setChecked(True)
    ingest = dialog.settings().ingest
    assert (ingest.memory_per_file_mb, ingest.seconds_per_file, ingest.follow_links_outside) == (
        4096,
        600,
        True,
    )
