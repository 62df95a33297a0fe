"""The address a Fathom holding the library serves it at is trusted only while that
Fathom holds the data dir (the live server is exercised in
tests/ingest/test_commands_while_open.py)."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.paths import app_paths
from app.store import reader_address


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A listening socket (a stand-in server) and the database it is said to serve."""
    path = tmp_path / "milvus.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen()
    try:
        yield f"unix:{path}", str(tmp_path / "milvus.db")
    finally:
        listener.close()


def _write(uri: str, database: str, pid: int, holder: int) -> None:
    paths = app_paths().ensure()
    paths.lock_file.write_text(f"{holder}\n", encoding="utf-8")
    reader_address.address_file(paths).write_text(
        json.dumps({"uri": uri, "database": database, "pid": pid}), encoding="utf-8"
    )


def test_the_holders_address_is_found(served: tuple[str, str]) -> None:
    uri, database = served
    _write(uri, database, pid=4242, holder=4242)
    assert reader_address.find(app_paths(), database) == uri


def test_an_address_left_by_a_killed_fathom_is_not_trusted(served: tuple[str, str]) -> None:
    uri, database = served
    _write(uri, database, pid=4242, holder=5151)  # another Fathom holds the data dir now
    assert reader_address.find(app_paths(), database) is None


def test_an_address_of_another_database_or_a_gone_socket_is_not_trusted(
    served: tuple[str, str],
) -> None:
    uri, database = served
    _write(uri, database + ".other", pid=4242, holder=4242)
    assert reader_address.find(app_paths(), database) is None
    _write(uri + ".gone", database, pid=4242, holder=4242)
    assert reader_address.find(app_paths(), database) is None
    _write(
        "http://example.org:19530", database, pid=4242, holder=4242
    )  # only a local socket is served
    assert reader_address.find(app_paths(), database) is None


def test_no_address_and_a_damaged_one_are_not_found() -> None:
    paths = app_paths().ensure()
    assert reader_address.find(paths, "/x/milvus.db") is None
    reader_address.address_file(paths).write_text("{not json", encoding="utf-8")
    assert reader_address.find(paths, "/x/milvus.db") is None


def test_withdraw_removes_only_this_processs_address(served: tuple[str, str]) -> None:
    uri, database = served
    _write(uri, database, pid=os.getpid() + 1, holder=os.getpid() + 1)
    reader_address.withdraw(app_paths())
    assert reader_address.address_file(app_paths()).exists()
    _write(uri, database, pid=os.getpid(), holder=os.getpid())
    reader_address.withdraw(app_paths())
    assert not reader_address.address_file(app_paths()).exists()
