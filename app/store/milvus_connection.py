"""Where the vector store lives and how it is opened and let go.

A store URI that is a file path means Milvus Lite, run inside this process
(one server per ``.db`` path); ``http(s)://host:19530`` means a Milvus server.
What is particular to Milvus Lite's in-process server is kept here: releasing
it when the last store on its path closes, recognising its data dir held by
another process, and quieting the traceback it logs when that happens. Of a
server, the version it reports is asked once: BM25 keyword search needs 2.5.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import time
import uuid
import warnings
from pathlib import Path
from typing import Any, NamedTuple

from app.core.errors import StoreError, StoreLocked
from app.core.paths import AppPaths
from app.core.serial_import import serial_import
from app.core.settings import Settings
from app.store.lock import LOCKED_HINT, LOCKED_MESSAGE, is_locked_elsewhere

log = logging.getLogger(__name__)


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
    server_version: str = ""  # what a server says it is ("v2.3.5-lite"); "" on Milvus Lite


def connect(uri: str, token: str, *, served_lite: bool = False) -> MilvusConnection:
    """A client for ``uri``; StoreLocked when another process has the Lite file open.
    ``served_lite``: ``uri`` is another process's Milvus Lite server (it reports no version)."""
    with serial_import("pymilvus.exceptions"):
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

    lite_path: str | None = None
    options: dict[str, Any] = {}
    if is_server_uri(uri):
        connect_uri = uri
        # pymilvus shares one connection among the clients of one URI, and closing any of
        # them closes it for all: each store of a server gets its own. (The stores of one
        # Milvus Lite path share theirs, closed with the last of them: release_lite.)
        options["alias"] = f"fathom-{uuid.uuid4().hex}"
    else:
        path = os.path.abspath(os.path.expanduser(uri))
        if not path.endswith(".db"):
            raise StoreError(
                f"The Milvus Lite path {path} must end in '.db'.",
                "Set store.milvus_uri to a path like …/milvus.db, or leave it empty for the default.",
            )
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        _check_engine_format(path)
        # the native Milvus Lite's server logs with glog, by default INFO and WARNING files
        # in the temp folder at every start: errors only (it inherits this environment)
        os.environ.setdefault("GLOG_minloglevel", "2")
        connect_uri = path
        lite_path = path
    # Milvus Lite 2.5 removes its lock file when an open fails, so its lock is looked at
    # first (a POSIX record lock: one this process holds is not "elsewhere")
    # (not when this process has the path open: closing any descriptor of a file drops
    # every POSIX record lock the process holds on it, and the server stops with its lock)
    if lite_path is not None and not _LITE.holds(lite_path) and _held_by_another_server(lite_path):
        raise StoreLocked(LOCKED_MESSAGE, LOCKED_HINT)
    try:
        with warnings.catch_warnings():  # the native Milvus Lite imports pkg_resources, which warns
            warnings.filterwarnings(
                "ignore", message="pkg_resources is deprecated", category=UserWarning
            )
            client = MilvusClient(uri=connect_uri, token=token, **options)
    except MilvusException as exc:
        if lite_path is not None and _lite_locked_elsewhere(lite_path):
            raise StoreLocked(LOCKED_MESSAGE, LOCKED_HINT) from None
        where = lite_path or uri
        raise StoreError(
            f"Could not open the vector store at {where}: {exc}.",
            "Check store.milvus_uri in Settings (a local .db path, or http://host:19530 for a server).",
        ) from exc
    if lite_path is not None:
        _LITE.acquire(lite_path)
        return MilvusConnection(client, connect_uri, lite_path)
    return MilvusConnection(
        client, connect_uri, None, "" if served_lite else _server_version(client)
    )


# -- a server's version -------------------------------------------------------------

BM25_SINCE = (2, 5)  # Milvus' BM25 function (and so Fathom's keyword search) came in 2.5


def _server_version(client: Any) -> str:
    from pymilvus.exceptions import MilvusException

    try:
        return str(client.get_server_version() or "")
    except MilvusException:  # a server that will not say is taken for a recent one
        log.info("the Milvus server did not report its version", exc_info=True)
        return ""


def version_number(version: str) -> str:
    """The release in a server's version text: "v2.3.5-lite" → "2.3.5" ("" when none)."""
    found = re.search(r"\d+\.\d+(?:\.\d+)?", version)
    return found.group(0) if found else ""


def has_bm25(version: str) -> bool:
    """Whether a server of ``version`` can score BM25 (an unknown version is taken for one that can)."""
    number = version_number(version)
    if not number:
        return True
    major, minor = (int(part) for part in number.split(".")[:2])
    return (major, minor) >= BM25_SINCE


def keyword_search_note(version: str) -> str:
    """What to tell people searching a server of ``version``; "" when it has BM25."""
    if has_bm25(version):
        return ""
    since = ".".join(str(part) for part in BM25_SINCE)
    return (
        f"This Milvus server ({version_number(version)}) has no BM25 keyword search "
        f"(it needs Milvus {since} or later): searching by meaning only."
    )


ORPHAN_SERVER_WAIT_S = (
    10.0  # how long a native server left by a killed Fathom takes, at most, to stop
)


def _held_by_another_server(path: str) -> bool:
    """Whether the native Milvus Lite lock of ``path`` is held by another process, after
    giving a server whose Fathom was killed the moment it takes to notice and stop (it
    watches its Fathom's lock: a reopen right after a kill found it still there)."""
    lock = lite_lock_files(path)[1]
    deadline = time.monotonic() + ORPHAN_SERVER_WAIT_S
    while is_locked_elsewhere(lock, record_lock=True):
        if time.monotonic() > deadline:
            return True
        time.sleep(0.1)
    return False


def lite_lock_files(path: str) -> tuple[str, str]:
    """The files Milvus Lite locks for database ``path``: 3.x's LOCK inside the database
    folder, the native 2.5's ``.NAME.lock`` beside the database file."""
    folder, name = os.path.split(path)
    return os.path.join(path, "LOCK"), os.path.join(folder, f".{name}.lock")


def _check_engine_format(path: str) -> None:
    """Milvus Lite 3.x keeps a database in a folder, the native 2.5 in one file: each
    cannot read the other's. Say so, and how to get the library searchable again."""
    major = lite_major_version()
    written_by = ""
    if major >= 3 and os.path.isfile(path):
        written_by, installed = "the native Milvus Lite 2.5", "Milvus Lite 3.x"
    elif 0 < major < 3 and os.path.isdir(path):
        written_by, installed = "Milvus Lite 3.x", "the native Milvus Lite 2.5"
    if written_by:
        raise StoreError(
            f"The search index {path} was written by {written_by}; this Fathom uses {installed}, "
            "which cannot read it. Your documents and their catalog are untouched.",
            f"Rename {os.path.basename(path)} (keep it until you are done), then open Fathom and run Repair "
            "(or `fathom repair`): it builds the search index again from your files.",
        )


@functools.cache
def lite_major_version() -> int:
    """The installed Milvus Lite's major version: 2 is the native engine (Linux, macOS),
    3 the pure-Python one (every platform); 0 when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("milvus-lite").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 0


def _lite_locked_elsewhere(path: str) -> bool:
    folder_lock, file_lock = lite_lock_files(path)
    return is_locked_elsewhere(folder_lock) or is_locked_elsewhere(file_lock, record_lock=True)


def release_lite(path: str, client: Any) -> None:
    """A store on Milvus Lite file ``path`` that :func:`connect` opened is closing: its
    ``client`` shares one connection with the path's other stores, so the connection is
    closed, and the server released, with the last of them."""
    _LITE.release(path, client)


class _LiteServers:
    """Reference counts of Milvus Lite databases this process has open.

    Milvus Lite keeps one in-process server per ``.db`` path until the process
    exits; releasing it when the last store on that path closes frees the
    directory lock and flushes the files, so a later open really re-reads them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def holds(self, path: str) -> bool:
        with self._lock:
            return self._counts.get(path, 0) > 0

    def acquire(self, path: str) -> None:
        with self._lock:
            self._counts[path] = self._counts.get(path, 0) + 1

    def release(self, path: str, client: Any) -> None:
        with self._lock:
            left = self._counts.get(path, 0) - 1
            if left > 0:
                self._counts[path] = left
                return
            self._counts.pop(path, None)
            from milvus_lite.server_manager import server_manager_instance

            try:
                client.close()
            finally:
                server_manager_instance.release_server(path)


_LITE = _LiteServers()


class _DropLockedTraceback(logging.Filter):
    """Milvus Lite logs a full traceback when its data dir is locked; Fathom
    reports that case itself, with a sentence, so the traceback is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (exc is not None and type(exc).__name__ == "DataDirLockedError")


logging.getLogger("milvus_lite.server_manager").addFilter(_DropLockedTraceback())
