"""The library of the data dir in force, opened for one subcommand."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from app.ingest.library import Library


def open_library(err: TextIO) -> Library | None:
    """The library of the data dir in force, or None after printing why not."""
    from app.core.errors import FathomError
    from app.core.paths import app_paths
    from app.core.settings import load_settings
    from app.ingest.library import Library

    paths = app_paths().ensure()
    settings, problem = load_settings(paths.settings_file)
    if problem:
        print(problem, file=err)
    try:
        library = Library.open(settings, paths)
    except FathomError as exc:
        print(str(exc), file=err)
        return None
    if library.recovery:
        print(f"Finished what an interrupted run left undone: {library.recovery.summary()}.", file=err)
    return library
