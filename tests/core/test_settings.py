"""Settings: what a user notices is that their choices survive, and a broken file never
stops the app."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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
    path.write_text('version = 1\n[research]\nmax_rounds = "lots"\ntop_k = 9\n', encoding="utf-8")
    settings, problem = load_settings(path)
    assert (
        problem is not None
        and "'research.max_rounds' is 'lots', not a whole number from 1 to 100" in problem
    )
    assert settings == replace_setting(
        Settings(), "research.top_k", 9
    )  # the rest of the file is kept

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
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=Path(__file__).parents[2], check=False
    )
    assert result.returncode == -9
    assert path.read_bytes() == before
    loaded, problem = load_settings(path)
    assert problem is None and loaded == original


def test_fathom_home_holds_everything(fathom_home: Path) -> None:
    paths = app_paths()
    for folder in (paths.config_dir, paths.data_dir, paths.cache_dir):
        assert fathom_home in folder.parents
    assert paths.settings_file.is_relative_to(fathom_home)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "[research]\ntop_k = -5",
            "'research.top_k' is -5, not a whole number from 1 to 200; using 6.",
        ),
        (
            "[research]\ntop_k = 0",
            "'research.top_k' is 0, not a whole number from 1 to 200; using 6.",
        ),
        (
            "[ingest]\nworkers = 100000",
            "'ingest.workers' is 100,000, not a whole number from 0 to 256; using 0.",
        ),
        (
            "[ingest]\nmax_file_mb = true",
            "'ingest.max_file_mb' is true, not a whole number from 1 to 1,000,000",
        ),
        (
            "[ingest]\nmax_file_mb = -1",
            "'ingest.max_file_mb' is -1, not a whole number from 1 to 1,000,000",
        ),
        ("[ingest]\nocr = 1", "'ingest.ocr' is 1, not true or false; using true."),
        (
            "[model]\ntemperature = nan",
            "'model.temperature' is nan, not a number from 0 to 2; using 0.2.",
        ),
        (
            "[model]\nbackend = 'gpt'",
            "'model.backend' is 'gpt', not one of 'auto', 'llamacpp', 'ollama', 'openai'",
        ),
        ("[research]\nmode = 'fast'", "'research.mode' is 'fast', not one of 'deep', 'plan'"),
    ],
    ids=[
        "negative",
        "zero",
        "huge",
        "bool-for-int",
        "minus-one",
        "int-for-bool",
        "nan",
        "backend",
        "mode",
    ],
)
def test_a_value_out_of_range_or_of_the_wrong_type_is_named_and_its_default_used(
    tmp_path: Path, line: str, said: str
) -> None:
    """Each of these was taken as it was (top_k -5: `ask` found no passage; workers 100000:
    157 processes) or reported without naming its key."""
    path = tmp_path / "settings.toml"
    path.write_text(f"version = 1\n[ui]\ntheme = 'dark'\n{line}\n", encoding="utf-8")
    settings, problem = load_settings(path)
    assert problem is not None and said in problem, problem
    assert settings.ui.theme == "dark"  # the good values of the file stay
    key = said.split("'")[1]
    section, name = key.split(".")
    assert getattr(getattr(settings, section), name) == getattr(getattr(Settings(), section), name)


def test_a_version_that_is_not_a_number_is_not_called_newer(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('version = "1"\n', encoding="utf-8")
    _, problem = load_settings(path)
    assert problem is not None and "newer" not in problem and "not a whole number" in problem


def test_the_modes_the_settings_allow_are_the_research_modes() -> None:
    from app.core.settings import RESEARCH_MODES
    from app.research.modes import MODES

    assert tuple(MODES) == RESEARCH_MODES
