"""Settings: what a user notices is that their choices survive, and a broken file never
stops the app."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from app.core.paths import app_paths
from app.core.settings import (
    Settings,
    load_settings,
    replace_setting,
    save_settings,
)


def test_defaults_when_no_file(tmp_path: Path) -> None:
    settings, problem = load_settings(tmp_path / "missing.toml")
    assert settings == Settings()
    assert problem is None


def test_round_trip_keeps_every_change(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    changed = replace_setting(Settings(), "model.ollama.host", "http://127.0.0.1:9999")
    changed = replace_setting(changed, "research.max_rounds", 7)
    changed = replace_setting(changed, "model.backend", "ollama")
    save_settings(changed, path)
    loaded, problem = load_settings(path)
    assert problem is None
    assert loaded == changed
    assert loaded.model.ollama.host == "http://127.0.0.1:9999"
    assert "version = 1" in path.read_text()


def test_invalid_toml_starts_with_defaults_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("[model\nbackend = ", encoding="utf-8")
    settings, problem = load_settings(path)
    assert settings == Settings()
    assert problem is not None
    assert str(path) in problem and "default settings" in problem


def test_wrong_type_and_unknown_key_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('version = 1\n[research]\nmax_rounds = "lots"\n', encoding="utf-8")
    settings, problem = load_settings(path)
    assert settings == Settings() and problem is not None and "wrong type" in problem

    path.write_text("version = 1\n[research]\nmax_roundz = 3\n", encoding="utf-8")
    settings, problem = load_settings(path)
    assert problem is not None and "research.max_roundz" in problem


def test_newer_version_is_refused_with_advice(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("version = 99\n", encoding="utf-8")
    _, problem = load_settings(path)
    assert problem is not None and "newer" in problem


def test_crash_mid_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    original = replace_setting(Settings(), "research.max_rounds", 5)
    save_settings(original, path)
    before = path.read_bytes()

    # A real process that dies (SIGKILL) after writing the new content to disk but
    # before the atomic rename.
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from app.core.settings import Settings, replace_setting, save_settings
        os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
        save_settings(replace_setting(Settings(), "research.max_rounds", 9), Path({str(path)!r}))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parents[2], check=False)
    assert result.returncode == -9
    assert path.read_bytes() == before
    loaded, problem = load_settings(path)
    assert problem is None and loaded == original


def test_fathom_home_holds_everything(fathom_home: Path) -> None:
    paths = app_paths()
    for folder in (paths.config_dir, paths.data_dir, paths.cache_dir):
        assert fathom_home in folder.parents
    assert paths.settings_file.is_relative_to(fathom_home)
