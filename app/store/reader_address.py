"""Searching a library another Fathom holds open.

One process owns a data dir (its lock, see :mod:`app.store.lock`), and the native
Milvus Lite serves each database to the process that started it, over a local
socket. The owner writes that socket's address in the data dir (a file only the
user can read, removed when it lets go); a command that only searches — ``fathom
search`` while the window is open — reads it and searches through the owner's
server, writing nothing. Milvus Lite 3.x runs inside its process and serves no
one else: with it there is no address, and the command says the library is held.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from app.core.paths import AppPaths
from app.store.lock import holder_pid

log = logging.getLogger(__name__)

ADDRESS_FILE = "milvus-reader.json"


def address_file(paths: AppPaths) -> Path:
    return paths.data_dir / ADDRESS_FILE


def publish(paths: AppPaths, lite_path: str) -> bool:
    """Write the address of the server this process runs for ``lite_path`` (the native
    Milvus Lite only); whether one was written."""
    from app.store.milvus_connection import lite_major_version

    if not 0 < lite_major_version() < 3:
        return False
    try:
        from milvus_lite.server_manager import server_manager_instance

        # the server connect() started for this path: asking again returns its address
        uri = server_manager_instance.start_and_get_uri(lite_path)
    except Exception:  # no address: readers are told the library is held, as before
        log.info("could not learn the Milvus Lite server's address", exc_info=True)
        return False
    if not uri or not uri.startswith("unix:"):
        return False
    target = address_file(paths)
    record = {"uri": uri, "database": os.path.abspath(lite_path), "pid": os.getpid()}
    temporary = target.with_name(target.name + ".tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out)
        os.replace(temporary, target)
    except OSError:
        log.info("could not write %s", target, exc_info=True)
        return False
    return True


def withdraw(paths: AppPaths) -> None:
    """Remove this process's address (another's is left alone)."""
    target = address_file(paths)
    with contextlib.suppress(OSError, ValueError):
        if json.loads(target.read_text(encoding="utf-8")).get("pid") == os.getpid():
            target.unlink()


def find(paths: AppPaths, lite_path: str) -> str | None:
    """The address of the server another process runs for ``lite_path``, or None (no
    address written, for another database, or its socket gone)."""
    try:
        record = json.loads(address_file(paths).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    uri = record.get("uri") if isinstance(record, dict) else None
    if not isinstance(uri, str) or not uri.startswith("unix:"):
        return None
    if record.get("database") != os.path.abspath(lite_path) or record.get("pid") != holder_pid(
        paths
    ):
        return None  # another database's, or left by a Fathom that was killed
    return uri if os.path.exists(uri.removeprefix("unix:")) else None
