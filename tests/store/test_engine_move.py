"""A library whose search index Milvus Lite 3.x wrote (what Fathom used before the
native engine, and still uses on Windows) opens with the native Milvus Lite: its rows
are moved over without converting or embedding anything again. The library is a real
one written by Milvus Lite 3.2 (tests/store/make_lite3_library.py)."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest
from fathom_process import MODULE, REPO, run_fathom

from app.core.errors import StoreError
from app.store.engine_move import BACKUP_SUFFIX, MOVING_SUFFIX, lite3_collections, live_rows
from app.store.milvus_connection import lite_major_version
from app.store.vectors import VectorStore

LIBRARY = Path(__file__).parent / "data" / "lite3-library.tar.gz"
native_only = pytest.mark.skipif(
    lite_major_version() >= 3, reason="the move is done by the native Milvus Lite (Linux, macOS)"
)


def unpack_library(home: Path) -> Path:
    """The 3.x library unpacked into ``home`` (a Fathom home); returns its index path."""
    with tarfile.open(LIBRARY) as tar:
        tar.extractall(home, filter="data")
    return home / "data" / "milvus.db"


def test_the_rows_in_force_are_read_from_the_folder(tmp_path: Path) -> None:
    """Newest version of each chunk, deletes applied: tides.md as written, cranes.md as
    changed (its first version deleted), pilots.md removed; quay.md in its own collection."""
    index = unpack_library(tmp_path)
    collections = {c.name: c for c in lite3_collections(str(index))}
    assert sorted(collections) == ["harbour", "quay"]
    assert collections["harbour"].embedding_model and collections["harbour"].dimension == 384

    texts = {}
    for name, collection in collections.items():
        for chunks, vectors in live_rows(collection):
            assert len(vectors) == len(chunks) and all(len(v) == 384 for v in vectors)
            texts.update({(name, Path(c.path).name): c.text for c in chunks})
    assert sorted(texts) == [("harbour", "cranes.md"), ("harbour", "tides.md"), ("quay", "quay.md")]
    assert "new gantry crane" in texts[("harbour", "cranes.md")]
    assert "green ledger" in texts[("harbour", "tides.md")]


@native_only
def test_fathom_moves_the_index_once_and_searches_it_without_embedding_again(
    fathom_home: Path,
) -> None:
    index = unpack_library(fathom_home)
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def fathom(*args: str) -> subprocess.CompletedProcess[str]:
        return run_fathom(*args, env=env, cwd=REPO, program=MODULE)

    first = fathom("search", "when did the gantry crane arrive", "--collection", "harbour")
    assert first.returncode == 0, first.stderr
    assert (
        "Moved the search index to the native Milvus Lite: 3 chunks in 2 collections"
        in first.stderr
    )
    assert "cranes.md" in first.stdout and "2019" in first.stdout
    assert index.is_file() and (index.parent / f"milvus.db{BACKUP_SUFFIX}" / "collections").is_dir()

    again = fathom("search", "pilots board ships at the outer buoy", "--collection", "harbour")
    assert again.returncode == 0 and "Moved" not in again.stderr  # once
    assert "pilots.md" not in again.stdout  # it was removed before the move
    quay = fathom("search", "closed for repairs", "--collection", "quay")
    assert "quay.md" in quay.stdout
    # the catalog and the moved index agree chunk for chunk: nothing to embed again
    check = fathom("repair", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert (
        "The library is consistent: 2 collections, 3 indexed documents and 3 passages checked"
        in check.stdout
    )


@native_only
def test_a_move_cut_short_is_started_again_or_finished(tmp_path: Path) -> None:
    index = unpack_library(tmp_path)
    (tmp_path / "data" / f"milvus{MOVING_SUFFIX}").write_bytes(
        b"half a database"
    )  # killed mid-write
    with VectorStore(str(index)) as store:
        assert store.moved is not None and store.moved.chunks == 3
    # killed between the two renames: the folder is aside, the new file not yet in place
    os.replace(index, index.with_name(f"milvus{MOVING_SUFFIX}"))
    with VectorStore(str(index)) as store:
        assert store.moved is None
        assert store.list_collections() == ["harbour", "quay"] and store.count("harbour") == 2


@native_only
def test_an_old_copy_in_the_way_is_named_and_nothing_is_touched(tmp_path: Path) -> None:
    index = unpack_library(tmp_path)
    (tmp_path / "data" / f"milvus.db{BACKUP_SUFFIX}").mkdir()
    with pytest.raises(StoreError) as caught:
        VectorStore(str(index))
    assert f"milvus.db{BACKUP_SUFFIX} is in the way" in str(caught.value)
    assert index.is_dir() and not (tmp_path / "data" / f"milvus{MOVING_SUFFIX}").exists()
