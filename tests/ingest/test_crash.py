"""Killing an ingest midway and running it again gives exactly the collection of a clean run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from ingest_files import copy_subset, paths_in

from app.core.ids import make_chunk_id
from app.core.settings import Settings
from app.ingest.library import Library

REPO = Path(__file__).resolve().parents[2]
FILES = (
    "userGuide/use-partition-key.md",
    "about/overview.md",
    "about/limitations.md",
    "about/comparison.md",
    "reference/sys_config/configure_tls.md",
    "adminGuide/upgrade_milvus_embedded.md",
    "fragments/faq_recall_rate_sq8_sq8h.md",
    "fragments/installation_guide.md",
    "fragments/faq_normalize_embeddings.md",
)


def _ingest_command(docs: Path) -> list[str]:
    return [sys.executable, "-m", "app", "ingest", str(docs), "--collection", "crash"]


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "FATHOM_HOME": str(home), "PYTHONPATH": str(REPO)}


def _run_to_end(docs: Path, home: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        _ingest_command(docs),
        cwd=REPO,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


def _kill_after_indexed(docs: Path, home: Path, indexed: int) -> None:
    """Start an ingest, SIGKILL it as soon as it reports ``indexed`` files done."""
    with subprocess.Popen(
        _ingest_command(docs),
        cwd=REPO,
        env=_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            assert process.stderr is not None
            seen = 0
            for line in process.stderr:
                if line.startswith("indexed"):
                    seen += 1
                    if seen == indexed:
                        process.send_signal(
                            signal.SIGKILL
                        )  # the main process only, as a crash would
                        break
            process.wait(timeout=60)
            assert process.returncode == -signal.SIGKILL, (
                "the ingest ended before it could be killed"
            )
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # conversion workers it left behind
            except ProcessLookupError:
                pass


def _snapshot(home: Path) -> dict[str, object]:
    """Documents, their chunk ids and texts, and Milvus' own count, read back through the library."""
    import asyncio

    async def read() -> dict[str, object]:
        library = Library.open(Settings(), paths_in(home))
        try:
            docs = await library.documents("crash")
            ids_in_store = [
                cid for d in docs for cid in library.store.document_chunk_ids("crash", d.doc_id)
            ]
            expected_ids = [make_chunk_id(d.doc_id, n) for d in docs for n in range(d.chunk_count)]
            chunks = await library.get_chunks(expected_ids)
            return {
                "documents": sorted(
                    (d.path, d.status.value, d.chunk_count, d.content_hash) for d in docs
                ),
                "ids": sorted(ids_in_store),
                "unique_ids": len(set(ids_in_store)),
                "expected_ids": sorted(expected_ids),
                "texts": sorted((c.chunk_id, c.text, c.page, c.headings) for c in chunks),
                "count": library.store.count("crash"),
            }
        finally:
            await library.aclose()

    return asyncio.run(read())


def test_kill_midway_then_rerun_equals_a_clean_run(tmp_path: Path, shared_data: Path) -> None:
    docs = tmp_path / "docs"
    copy_subset(shared_data, docs, FILES)

    _run_to_end(docs, tmp_path / "clean")
    clean = _snapshot(tmp_path / "clean")

    killed_home = tmp_path / "killed"
    _kill_after_indexed(docs, killed_home, indexed=3)
    with sqlite3.connect(killed_home / "data" / "catalog.sqlite") as db:
        statuses = [row[0] for row in db.execute("select status from documents")]
        runs = [row[0] for row in db.execute("select status from ingest_runs")]
    assert 3 <= statuses.count("indexed") < len(FILES), statuses  # really cut midway
    assert runs == ["running"]  # it never got to say it finished

    rerun = _run_to_end(docs, killed_home)
    assert "unchanged" in rerun.stderr  # what was done before the kill is kept
    again = _snapshot(killed_home)

    assert again["documents"] == clean["documents"]
    assert len(clean["documents"]) == len(FILES)  # type: ignore[arg-type]
    assert again["ids"] == clean["ids"] == clean["expected_ids"]
    assert again["unique_ids"] == again["count"] == clean["count"] == len(clean["ids"])  # type: ignore[arg-type]
    assert again["texts"] == clean["texts"]
