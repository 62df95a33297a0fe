"""Exported files get the user's normal permissions (0666 & ~umask), not the 0600
of a temporary file or of the settings, and appear whole or not at all."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from exporting import export_report

from app.core.models import Evidence
from app.export.files import current_umask, write_export


@pytest.fixture
def umask() -> Iterator[Any]:
    previous = os.umask(0o022)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    try:
        yield set_mask
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    ("mask", "expected"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600), (0o027, 0o640)]
)
def test_a_new_export_follows_the_umask(
    tmp_path: Path, umask: Any, mask: int, expected: int
) -> None:
    umask(mask)
    assert current_umask() == mask
    path = write_export(tmp_path / "out" / "report.md", b"# Report\n")
    assert mode(path) == expected
    assert path.read_bytes() == b"# Report\n"
    assert [p.name for p in path.parent.iterdir()] == ["report.md"]  # no temporary file left


def test_overwriting_a_private_file_gives_it_normal_permissions(tmp_path: Path, umask: Any) -> None:
    target = tmp_path / "report.html"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o600)
    write_export(target, b"new")
    assert mode(target) == 0o644 and target.read_bytes() == b"new"


@pytest.mark.parametrize("suffix", [".md", ".html", ".pdf"])
def test_the_windows_export_writes_normal_permissions(
    qapp: Any, tmp_path: Path, umask: Any, suffix: str
) -> None:
    evidence = [
        Evidence(1, "c1", "q", "Milvus is a vector database.", "/docs/milvus.md", title="Milvus")
    ]
    path = export_report(
        tmp_path / f"report{suffix}", "What is Milvus?", "Milvus stores vectors [1].\n", evidence
    )
    assert mode(path) == 0o644


def test_a_file_in_the_way_of_the_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a file", encoding="utf-8")
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        write_export(tmp_path / "notes.txt" / "report.md", b"x")
