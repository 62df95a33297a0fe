"""Milvus Lite 3.x keeps a database in a folder, the native 2.5 in one file, and neither
reads the other's. The native engine moves a 3.x folder over (test_engine_move.py); 3.x
(Windows) refuses a native file with a sentence that says what to do — and doing it
(rename, Repair) makes the library searchable again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from fathom_process import MODULE, REPO, run_fathom

from app.core.errors import StoreError
from app.core.paths import app_paths
from app.store.milvus_connection import lite_major_version
from app.store.vectors import VectorStore

pytestmark = pytest.mark.skipif(
    lite_major_version() < 3,
    reason="the native engine moves a 3.x index over (test_engine_move.py)",
)


def write_other_engines_database(path: Path) -> None:
    """A database of the native 2.5: a single file."""
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 4080)


def test_a_search_index_written_by_the_other_engine_is_refused_with_the_way_out(
    tmp_path: Path,
) -> None:
    database = tmp_path / "milvus.db"
    write_other_engines_database(database)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(StoreError) as caught:
        VectorStore(str(database))
    message = str(caught.value)
    assert f"The search index {database} was written by" in message and "cannot read it" in message
    assert "Rename milvus.db" in message and "fathom repair" in message
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing touched


@pytest.mark.slow
def test_renaming_it_and_repairing_makes_the_library_searchable_again(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # FATHOM_HOME: this test's (tests/conftest.py)

    def fathom(*args: str) -> subprocess.CompletedProcess[str]:
        return run_fathom(*args, env=env, cwd=REPO, program=MODULE)

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "harbour.md").write_text(
        "The harbour office keeps its tide tables in a green ledger.\n\nThe ledger moved in 1987.\n",
        encoding="utf-8",
    )
    assert fathom("ingest", str(docs), "--collection", "harbour", "--quiet").returncode == 0
    database = app_paths().milvus_file
    database.rename(database.with_name("milvus.db.written-by-the-other-engine"))
    write_other_engines_database(database)

    refused = fathom("search", "green ledger", "--collection", "harbour")
    assert (
        refused.returncode != 0
        and "was written by" in refused.stderr
        and "Traceback" not in refused.stderr
    )

    aside = database.with_name("milvus.db.aside")
    database.rename(aside)  # what the message says: rename it
    repaired = fathom("repair")
    assert repaired.returncode == 0 and "Repaired" in repaired.stdout, (
        repaired.stdout + repaired.stderr
    )
    found = fathom("search", "green ledger", "--collection", "harbour")
    assert found.returncode == 0 and "harbour.md" in found.stdout, found.stderr
