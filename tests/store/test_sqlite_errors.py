"""Opening the catalog (and the history, which shares its file) says what went wrong as
it is: only a file that is not a database is "damaged" (with the advice to move it
away); a full disk or a path that cannot be written is said as such, and the catalog is
left as it was. Real SQLite files; the full disk is a real, tiny tmpfs where this
machine lets a test mount one."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.errors import StoreError
from app.store.catalog import DAMAGED_HINT, Catalog
from app.store.disk_room import DiskFull
from app.store.research_runs import RunStore


def test_a_file_that_is_not_a_database_is_damaged_and_says_to_move_it_away(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    path.write_bytes(b"this is not an SQLite database, whatever its name says" * 100)
    with pytest.raises(StoreError) as caught:
        Catalog(path)
    assert (
        str(caught.value)
        == f"The catalog {path} is damaged (file is not a database). {DAMAGED_HINT}"
    )
    with pytest.raises(StoreError, match="is damaged"):
        RunStore(path)


def test_a_catalog_path_that_cannot_be_opened_is_not_called_damaged(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    path.mkdir()  # a folder where the file should be: SQLite cannot open it
    with pytest.raises(StoreError) as caught:
        Catalog(path)
    message = str(caught.value)
    assert "cannot be opened for writing" in message and "Nothing is lost." in message
    assert "damaged" not in message and "Move it away" not in message


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command here")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(
            f"this machine does not let a test mount a tmpfs: {made.stderr.decode(errors='replace').strip()}"
        )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with filler.open("wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass
    return filler


def test_a_full_disk_is_said_and_the_catalog_is_left_as_it_was(small_disk: Path) -> None:
    path = small_disk / "data" / "catalog.sqlite"
    catalog = Catalog(path)
    catalog.create_collection("notes", "field notes")
    catalog.close()
    filler = _fill(small_disk)
    for wal in path.parent.glob("catalog.sqlite-*"):
        wal.unlink()  # as after a clean close: opening must make them anew, on a full disk
    with pytest.raises(DiskFull) as caught:
        Catalog(path)
    message = str(caught.value)
    assert f"The disk that holds the library ({path.parent}) is full" in message
    assert "cannot be opened. Nothing is lost. Free some space, then open Fathom again." in message
    assert "damaged" not in message and "Move it away" not in message
    filler.unlink()  # room again: the catalog opens with what it held
    catalog = Catalog(path)
    try:
        assert [c.name for c in catalog.collections()] == ["notes"]
    finally:
        catalog.close()
