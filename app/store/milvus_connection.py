"""Where the vector store lives and how it is opened and let go.

A store URI that is a file path means Milvus Lite, run inside this process
(one server per ``.db`` path); ``http(s)://host:19530`` means a Milvus server.
What is particular to Milvus Lite's in-process server is kept here: releasing
it when the last store on its path closes, recognising its data dir held by
another process, and quieting the traceback it logs when that happens.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, NamedTuple

from app.core.errors import StoreError, StoreLocked
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.store.lock import LOCKED_HINT, LOCKED_MESSAGE, is_locked_elsewhere


def is_server_uri(uri: str) -> bool:
    return uri.startswith(("http://", "https://", "tcp://", "unix:"))


def resolve_milvus_uri(settings: Settings, paths: AppPaths) -> str:
    """The URI in force: settings.store.milvus_uri, or the Lite file under the data dir."""
    uri = settings.store.milvus_uri.strip()
    if not uri:
        return str(paths.milvus_file)
    if is_server_uri(uri):
        return uri
    return str(Path(uri).expanduser())


class MilvusConnection(NamedTuple):
    client: Any  # pymilvus.MilvusClient
    uri: str  # what the client connected to (a Lite path made absolute)
    lite_path: str | None  # the Milvus Lite file; None on a server


def connect(uri: str, token: str) -> MilvusConnection:
    """A client for ``uri``; StoreLocked when another process has the Lite file open."""
    from pymilvus import MilvusClient
    from pymilvus.exceptions import MilvusException

    lite_path: str | None = None
    if is_server_uri(uri):
        connect_uri = uri
    else:
        path = os.path.abspath(os.path.expanduser(uri))
        if not path.endswith(".db"):
            raise StoreError(
                f"The Milvus Lite path {path} must end in '.db'.",
                "Set store.milvus_uri to a path like …/milvus.db, or leave it empty for the default.",
            )
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        connect_uri = path
        lite_path = path
    try:
        client = MilvusClient(uri=connect_uri, token=token)
    except MilvusException as exc:
        if lite_path is not None and is_locked_elsewhere(os.path.join(lite_path, "LOCK")):
            raise StoreLocked(LOCKED_MESSAGE, LOCKED_HINT) from None
        where = lite_path or uri
        raise StoreError(
            f"Could not open the vector store at {where}: {exc}.",
            "Check store.milvus_uri in Settings (a local .db path, or http://host:19530 for a server).",
        ) from exc
    if lite_path is not None:
        _LITE.acquire(lite_path)
    return MilvusConnection(client, connect_uri, lite_path)


def release_lite(path: str) -> None:
    """The store on Milvus Lite file ``path`` that :func:`connect` opened is closed."""
    _LITE.release(path)


class _LiteServers:
    """Reference counts of Milvus Lite databases this process has open.

    Milvus Lite keeps one in-process server per ``.db`` path until the process
    exits; releasing it when the last store on that path closes frees the
    directory lock and flushes the files, so a later open really re-reads them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def acquire(self, path: str) -> None:
        with self._lock:
            self._counts[path] = self._counts.get(path, 0) + 1

    def release(self, path: str) -> None:
        with self._lock:
            left = self._counts.get(path, 0) - 1
            if left > 0:
                self._counts[path] = left
                return
            self._counts.pop(path, None)
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(path)


_LITE = _LiteServers()


class _DropLockedTraceback(logging.Filter):
    """Milvus Lite logs a full traceback when its data dir is locked; Fathom
    reports that case itself, with a sentence, so the traceback is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (exc is not None and type(exc).__name__ == "DataDirLockedError")


logging.getLogger("milvus_lite.server_manager").addFilter(_DropLockedTraceback())
