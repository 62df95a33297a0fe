"""Where Fathom keeps its files.

All data, settings and caches live under one folder when the environment
variable ``FATHOM_HOME`` is set (tests and portable installs use it);
otherwise the platform's usual folders are used (platformdirs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "Fathom"
HOME_ENV = "FATHOM_HOME"


@dataclass(frozen=True)
class AppPaths:
    """The folders Fathom writes to."""

    config_dir: Path
    data_dir: Path
    cache_dir: Path

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.toml"

    @property
    def catalog_file(self) -> Path:
        return self.data_dir / "catalog.sqlite"

    @property
    def milvus_file(self) -> Path:
        return self.data_dir / "milvus.db"

    @property
    def lock_file(self) -> Path:
        return self.data_dir / "fathom.lock"

    @property
    def models_dir(self) -> Path:
        """Model files Fathom downloaded (GGUF)."""
        return self.data_dir / "models"

    @property
    def exports_dir(self) -> Path:
        return self.data_dir / "exports"

    @property
    def log_dir(self) -> Path:
        return self.cache_dir / "logs"

    def ensure(self) -> AppPaths:
        """Create the folders, private to the user (0700) whatever the umask."""
        from app.core.private_folders import private_folder

        for folder in (self.config_dir, self.data_dir, self.cache_dir):
            private_folder(folder)
        return self


def app_paths() -> AppPaths:
    """The paths in force now (re-read ``FATHOM_HOME`` on every call)."""
    home = os.environ.get(HOME_ENV)
    if home:
        root = Path(home).expanduser().resolve()
        return AppPaths(
            config_dir=root / "config", data_dir=root / "data", cache_dir=root / "cache"
        )
    return AppPaths(
        config_dir=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        data_dir=Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
        cache_dir=Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)),
    )
