"""The "Open original" button opens documents and only shows anything that could run.

Each case is a real file in a temporary folder, with or without execute bits.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core.opening import RUNNABLE_SUFFIXES, decide_open

# the issue's list, then the other launchers and installers a desktop runs when "opened"
ISSUE_SUFFIXES = [".sh", ".bat", ".cmd", ".ps1", ".py", ".exe", ".msi", ".app", ".desktop", ".jar", ".js", ".vbs",
                  ".command"]  # fmt: skip
OTHER_SUFFIXES = [".com", ".scr", ".pif", ".lnk", ".appimage", ".run", ".bin", ".deb", ".rpm", ".pkg", ".dmg",
                  ".apk", ".hta", ".wsf", ".url", ".reg", ".cpl", ".msc", ".jse", ".vbe", ".pyw"]  # fmt: skip

DOCUMENTS = {
    "report.pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n",
    "paper.docx": b"PK\x03\x04 a zip container",
    "notes.md": b"# Notes\n\nPlain notes.\n",
    "table.csv": b"a,b\n1,2\n",
    "page.html": b"<!doctype html><title>page</title>",
    "README": b"A readme without a suffix.\n",
    "archive.tar.gz": b"\x1f\x8b\x08\x00",
}


def _file(folder: Path, name: str, content: bytes = b"plain text\n", mode: int = 0o644) -> Path:
    path = folder / name
    path.write_bytes(content)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_a_document_opens_in_its_viewer(tmp_path: Path, name: str) -> None:
    path = _file(tmp_path, name, DOCUMENTS[name])
    decision = decide_open(path)
    assert decision.action == "open", decision.reason
    assert decision.opens and decision.path == path
    assert name in decision.reason and "default application" in decision.reason


@pytest.mark.parametrize("suffix", ISSUE_SUFFIXES + OTHER_SUFFIXES)
def test_a_script_or_program_is_shown_in_the_file_manager(tmp_path: Path, suffix: str) -> None:
    # not executable, and its bytes look like a document: the name alone decides
    path = _file(tmp_path, f"update{suffix}", b"%PDF-1.7 looks harmless\n")
    decision = decide_open(path)
    assert decision.action == "reveal"
    assert not decision.opens
    assert suffix in decision.reason and "instead of running it" in decision.reason


@pytest.mark.parametrize(
    "name", ["RUN.SH", "Setup.EXE", "Launcher.Desktop", "tool.AppImage", "setup.exe.", "x.bat "]
)
def test_suffixes_are_matched_whatever_their_case_and_trailing_dots(
    tmp_path: Path, name: str
) -> None:
    path = _file(tmp_path, name)
    assert decide_open(path).action == "reveal"


def test_every_suffix_named_by_the_issue_is_covered() -> None:
    assert set(ISSUE_SUFFIXES + OTHER_SUFFIXES) <= RUNNABLE_SUFFIXES


@pytest.mark.skipif(os.name == "nt", reason="execute bits are POSIX")
@pytest.mark.parametrize("mode", [0o755, 0o744, 0o654, 0o645, 0o700])
def test_any_execute_bit_means_reveal_even_for_a_document_name(tmp_path: Path, mode: int) -> None:
    path = _file(tmp_path, "report.pdf", DOCUMENTS["report.pdf"], mode)
    decision = decide_open(path)
    assert decision.action == "reveal"
    assert "marked executable" in decision.reason
    path.chmod(0o644)
    assert decide_open(path).action == "open"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("notes", b"#!/bin/sh\nrm -rf ~\n"),
        ("data", b"\x7fELF\x02\x01\x01\x00"),
        ("letter.txt", b"MZ\x90\x00\x03\x00"),
        ("tool", b"\xcf\xfa\xed\xfe\x07\x00"),
    ],
)
def test_a_file_that_starts_like_a_program_is_revealed(
    tmp_path: Path, name: str, content: bytes
) -> None:
    path = _file(tmp_path, name, content)
    decision = decide_open(path)
    assert decision.action == "reveal"
    assert "starts like a program" in decision.reason


@pytest.mark.parametrize(
    ("name", "kind"), [("folder", "a folder"), ("Tool.app", "an application bundle")]
)
def test_a_directory_or_bundle_is_revealed(tmp_path: Path, name: str, kind: str) -> None:
    folder = tmp_path / name
    folder.mkdir()
    decision = decide_open(folder)
    assert decision.action == "reveal"
    assert kind in decision.reason


@pytest.mark.skipif(os.name == "nt", reason="symbolic links need privileges on Windows")
def test_a_link_is_judged_by_its_name_and_by_what_it_points_to(tmp_path: Path) -> None:
    payload = _file(tmp_path, "payload.sh", b"echo hi\n")
    disguised = tmp_path / "paper.pdf"
    disguised.symlink_to(payload)
    assert decide_open(disguised).action == "reveal"
    document = _file(tmp_path, "doc.pdf", DOCUMENTS["report.pdf"])
    named_like_a_script = tmp_path / "run.sh"
    named_like_a_script.symlink_to(document)
    assert decide_open(named_like_a_script).action == "reveal"
    plain_link = tmp_path / "alias.pdf"
    plain_link.symlink_to(document)
    assert decide_open(plain_link).action == "open"


def test_a_missing_file_is_neither_opened_nor_revealed(tmp_path: Path) -> None:
    decision = decide_open(tmp_path / "gone.pdf")
    assert decision.action == "missing"
    assert "gone.pdf" in decision.reason
