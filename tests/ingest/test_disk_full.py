"""A disk about to fill: indexing stops with a sentence before Milvus or SQLite run out
of room (a full disk made Milvus retry for minutes, then print an RPC traceback), keeps
what was indexed, and goes on once there is room again. The free space is the real
disk's; the test raises the floor Fathom keeps free above it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.cli import main
from app.store import disk_room


def _copy(shared_data: Path, folder: Path, *names: str) -> Path:
    folder.mkdir()
    for name in names:
        shutil.copyfile(shared_data / "milvus-docs" / "about" / name, folder / name)
    return folder


def _found(query: str, capsys: pytest.CaptureFixture[str]) -> set[str]:
    """The files a keyword search of collection 'docs' finds."""
    assert main(["search", query, "-c", "docs", "--mode", "bm25", "--json", "--top-k", "20"]) == 0
    return {Path(hit["path"]).name for hit in json.loads(capsys.readouterr().out)}


def test_a_full_disk_stops_indexing_with_a_sentence_and_keeps_what_was_indexed(
    tmp_path: Path,
    shared_data: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = _copy(shared_data, tmp_path / "first", "limitations.md")
    later = _copy(shared_data, tmp_path / "later", "roadmap.md", "comparison.md")
    assert main(["ingest", str(first), "-c", "docs", "--quiet"]) == 0
    capsys.readouterr()

    free, floor = disk_room.free_bytes(tmp_path), disk_room.MIN_FREE_BYTES
    monkeypatch.setattr(
        disk_room, "MIN_FREE_BYTES", free + 1024**3
    )  # the disk is now "nearly full"
    assert main(["ingest", str(later), "-c", "docs", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert (
        "has only" in err
        and "MB free, so indexing stopped before filling it. What was indexed is kept." in err
    )
    assert "Free some space" in err and "then index again: it goes on where it stopped." in err
    assert "Traceback" not in err and "MilvusException" not in err
    assert _found("limitations", capsys) == {"limitations.md"}  # indexed before: still searchable

    monkeypatch.setattr(disk_room, "MIN_FREE_BYTES", floor)  # room again
    assert main(["ingest", str(later), "-c", "docs", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["collections", "--json"]) == 0
    (docs,) = json.loads(capsys.readouterr().out)
    assert docs["documents"] == 3
    assert {"roadmap.md", "limitations.md"} <= _found("Milvus roadmap limitations", capsys)
    assert main(["repair", "--check"]) == 0  # catalog and index agree
