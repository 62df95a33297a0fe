"""Bad input: each file gets a recorded reason, and the rest of the ingest is unharmed."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from fathom_process import REPO, run_fathom
from ingest_files import make_encrypted_pdf, paths_in

from app.core.events import FileDone, IngestEvent, IngestFinished
from app.core.models import DocumentStatus
from app.core.settings import Settings
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library

GOOD = "# Tide Tables\n\nThe spring tide at Skerry Point peaks at 5.2 metres.\n"


def _make_bad_folder(docs: Path, pdf: Path) -> Path:
    docs.mkdir()
    (docs / "good.md").write_text(GOOD, encoding="utf-8")
    (docs / "empty.txt").write_bytes(b"")
    (docs / "random.pdf").write_bytes(os.urandom(8192))
    (docs / "truncated.pdf").write_bytes(pdf.read_bytes()[: pdf.stat().st_size // 2])
    make_encrypted_pdf(pdf, docs / "locked.pdf")
    Path(os.fsdecode(os.fsencode(docs) + b"/r\xe9sum\xe9.md")).write_bytes(
        b"# CV\n"
    )  # a Latin-1 name
    os.symlink(docs, docs / "loop")
    return docs


async def test_each_bad_file_gets_a_reason_and_the_good_one_is_indexed(
    tmp_path: Path, shared_data: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    docs = _make_bad_folder(tmp_path / "docs", shared_data / "pdf" / "WhatisMilvus.pdf")

    library = Library.open(Settings(), paths_in(tmp_path / "home"), embedder=embedder)
    try:
        events: list[IngestEvent] = [e async for e in library.ingest([docs], "tides")]
        done = {Path(e.path).name: e for e in events if isinstance(e, FileDone)}
        expected = {
            "good.md": ("indexed", ""),
            "empty.txt": ("skipped", "The file is empty"),
            "random.pdf": ("failed", "is not a PDF"),
            "truncated.pdf": ("failed", "damaged or incomplete"),
            "locked.pdf": (
                "failed",
                "The PDF is encrypted; Fathom cannot read password-protected files.",
            ),
            "r\\xe9sum\\xe9.md": ("skipped", "not valid UTF-8"),
            "loop": ("skipped", "symbolic link loop"),
        }
        assert sorted(done) == sorted(expected)
        for name, (status, reason) in expected.items():
            assert done[name].status == status, (name, done[name])
            assert reason in done[name].reason, (name, done[name].reason)

        end = events[-1]
        assert isinstance(end, IngestFinished)
        assert (end.indexed, end.failed, end.skipped) == (1, 3, 3)
        assert sorted(Path(p).name for p, _ in end.failures) == [
            "locked.pdf",
            "random.pdf",
            "truncated.pdf",
        ]

        recorded = {Path(d.path).name: d for d in await library.documents("tides")}
        for name, (status, reason) in expected.items():
            assert recorded[name].status is DocumentStatus(status)
            assert reason in recorded[name].error
        (hits,) = await library.search(["spring tide Skerry Point"], collections=["tides"])
        assert hits and hits[0].chunk.path == str(docs / "good.md")
    finally:
        await library.aclose()


@pytest.mark.skipif(
    shutil.which("setpriv") is None, reason="needs util-linux setpriv to drop root's file access"
)
def test_an_unreadable_file_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    """The tests run as root, and root reads files whatever their mode. The ingest runs
    in a subprocess started through ``setpriv`` without CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH, so mode 000 really stops it reading the file."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text(GOOD, encoding="utf-8")
    secret = docs / "secret.md"
    secret.write_text("# Secret\n\nNot for you.\n", encoding="utf-8")
    secret.chmod(0)
    home = tmp_path / "home"
    env = {**os.environ, "FATHOM_HOME": str(home), "PYTHONPATH": str(REPO)}
    drop = "-dac_override,-dac_read_search"
    command = [
        "setpriv",
        f"--inh-caps={drop}",
        f"--bounding-set={drop}",
        sys.executable,
        "-m",
        "app",
    ]
    result = run_fathom(
        "ingest", str(docs), "--collection", "perms", env=env, cwd=REPO, program=command
    )
    assert result.returncode == 0, result.stderr
    assert f"{secret}: Fathom has no permission to read this file." in result.stderr
    assert "1 indexed" in result.stderr and "1 failed" in result.stderr
    assert "Traceback" not in result.stderr
    with sqlite3.connect(home / "data" / "catalog.sqlite") as db:
        rows = dict(db.execute("select path, status || ': ' || error from documents").fetchall())
    assert rows[str(secret)].startswith("failed: Fathom has no permission to read this file.")
    assert rows[str(docs / "good.md")] == "indexed: "
