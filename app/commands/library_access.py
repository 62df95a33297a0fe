"""The library of the data dir in force, opened for one subcommand.

:func:`open_library` takes the data dir (its lock, Milvus) for commands that
change it or search it (``search`` reads through the window's Milvus Lite server
while a window holds the library). Commands that only read the record —
``collections``, ``history``, ``show``, ``export`` — use :func:`open_catalog_read_only` and
:func:`open_history_read_only` instead: SQLite opened read-only, no lock, so
they work while a Fathom window has the library open.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from app.ingest.library import Library
    from app.store.catalog import Catalog
    from app.store.research_runs import RunStore


def open_library(err: TextIO, *, search_only: bool = False) -> Library | None:
    """The library of the data dir in force, or None after printing why not;
    ``search_only``: the command only searches, and may do so while a Fathom window
    holds the library (see ``Library.open_to_search``)."""
    from app.core.errors import FathomError
    from app.core.paths import app_paths
    from app.core.settings import load_settings
    from app.ingest.library import Library

    paths = app_paths().ensure()
    settings, problem = load_settings(paths.settings_file)
    if problem:
        print(problem, file=err)
    try:
        library = (
            Library.open_to_search(settings, paths)
            if search_only
            else Library.open(settings, paths)
        )
    except FathomError as exc:
        print(str(exc), file=err)
        return None
    for notice in library.notices:
        print(notice, file=err)
    if library.recovery:
        print(
            f"Finished what an interrupted run left undone: {library.recovery.summary()}.", file=err
        )
    return library


async def resolve_names(library: Library, names: Sequence[str]) -> list[str]:
    """The collections ``names`` mean, each spelt as the library spells it (``milvus-docs``
    → ``milvus_docs``: see :mod:`app.core.collection_names`)."""
    from app.core.collection_names import resolve

    existing = [c.name for c in await library.collections()]
    return [resolve(name, existing) for name in names]


def open_catalog_read_only(err: TextIO) -> tuple[Catalog | None, bool]:
    """The catalog of the data dir in force, read-only (no lock: a window may hold the
    library): (the catalog or None, whether it could be read). ``(None, True)``: there
    is no catalog yet (no collections); ``(None, False)``: why not was printed on ``err``."""
    from app.core.errors import FathomError
    from app.core.paths import app_paths
    from app.store.catalog import Catalog

    try:
        return Catalog.open_read_only(app_paths().catalog_file), True
    except FathomError as exc:
        print(str(exc), file=err)
        return None, False


def add_run_id_argument(parser: argparse.ArgumentParser) -> None:
    """The RUN_ID argument of the commands that read one past run."""
    parser.add_argument(
        "run_id",
        metavar="RUN_ID",
        help="a run id from `fathom history` (a unique prefix is enough), or `last`",
    )


def open_history_read_only(err: TextIO) -> tuple[RunStore | None, bool]:
    """The research history of the data dir in force, read-only (no lock: a window may
    hold the library): (the store or None, whether it could be read). ``(None, True)``:
    there are no runs yet; ``(None, False)``: why not was printed on ``err``.

    For every command that only reads past runs (``history``, ``show``, ``export``);
    close the store when done."""
    from app.core.errors import FathomError
    from app.core.paths import app_paths
    from app.store.research_runs import RunStore

    try:
        return RunStore.open_read_only(app_paths()), True
    except FathomError as exc:
        print(str(exc), file=err)
        return None, False
