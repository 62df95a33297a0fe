"""Every format the installed Docling reads: asked of Docling, ingested for real, found by search."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from format_files import make_format_files, sentence

from app.cli import main
from app.ingest import docling_formats as formats
from app.ingest.file_types import file_kind, why_not_read


@pytest.fixture
def fresh_format_table() -> Iterator[None]:
    """The format table is built once per process; a test that changes PATH builds it again."""
    for cached in (formats.docling_formats, formats.docling_suffixes, formats.not_read_reasons):
        cached.cache_clear()
    yield
    for cached in (formats.docling_formats, formats.docling_suffixes, formats.not_read_reasons):
        cached.cache_clear()


def test_every_docling_format_is_read_or_said_why_not() -> None:
    from docling.datamodel.base_models import FormatToExtensions, InputFormat

    read = {fmt.name for fmt in formats.docling_formats()}
    for fmt in InputFormat:
        single = [e for e in FormatToExtensions.get(fmt, []) if "." not in e]
        left_to_text = all(f".{e.lower()}" in formats.TEXT_FIRST for e in single)
        assert (fmt.value in read) != (fmt.value in formats.NOT_OFFLINE or left_to_text), fmt
    for suffix in (
        ".odt",
        ".ods",
        ".odp",
        ".epub",
        ".mhtml",
        ".nxml",
        ".boxnote",
        ".pages",
        ".docm",
    ):
        assert file_kind(Path(f"a{suffix}")) == "docling", suffix
    for suffix in (
        ".eml",
        ".msg",
        ".mbox",
    ):  # Fathom's own mail reader: messages and their attachments
        assert file_kind(Path(f"a{suffix}")) == "mail", suffix
    for suffix in (".txt", ".json", ".xml", ".tex", ".vtt"):  # Fathom's own text reader keeps these
        assert file_kind(Path(f"a{suffix}")) == "text", suffix
    assert (
        file_kind(Path("scan.png")) == "image" and why_not_read(Path("scan.png")) is None
    )  # read by OCR
    assert why_not_read(Path("scan.png"), ocr=False) == (
        "Images (.png) are read by OCR, which is turned off in Settings (Indexing)."
    )
    assert why_not_read(Path("talk.mp3")) is not None and "speech-recognition" in str(
        why_not_read(Path("talk.mp3"))
    )
    unknown = str(why_not_read(Path("setup.exe")))
    assert (
        unknown.startswith("Fathom does not read '.exe' files. Fathom reads docx, ")
        and "epub" in unknown
    )


def test_each_newly_read_format_is_indexed_and_its_sentence_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "formats"
    words = make_format_files(folder)
    assert main(["ingest", str(folder), "--collection", "formats"]) == 0
    err = capsys.readouterr().err
    assert f"Collection 'formats': {len(words)} indexed" in err and "0 skipped, 0 failed" in err, (
        err
    )
    for path, word in words.items():
        assert (
            main(["search", word, "-c", "formats", "--mode", "bm25", "--top-k", "1", "--json"]) == 0
        )
        (hit,) = json.loads(capsys.readouterr().out)
        assert hit["path"] == str(path), (word, hit["path"])
        assert sentence(word) in " ".join(hit["text"].split()), (path.name, hit["text"])


def test_the_mail_headers_are_part_of_the_message_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mail"
    words = make_format_files(folder)
    for path in list(words):
        if path.suffix != ".eml":
            path.unlink()
    assert main(["ingest", str(folder), "--collection", "mail", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["search", "toadflax", "-c", "mail", "--mode", "bm25", "--json"]) == 0
    (hit,) = json.loads(capsys.readouterr().out)
    assert (
        "ana@example.org" in hit["text"]
        and hit["title"] == "The harbour ledger — Ana Berg, 1 Dec 2026"
    )


def test_legacy_office_files_without_libreoffice_are_skipped_saying_what_to_install(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fresh_format_table: None,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    folder = tmp_path / "legacy"
    folder.mkdir()
    (folder / "kelp.txt").write_text(
        "Kelp forests grow up to half a metre a day.\n", encoding="utf-8"
    )
    for name in ("memo.doc", "letter.rtf", "deck.ppt", "sheet.xls"):
        (folder / name).write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + os.urandom(512))
    assert main(["ingest", str(folder), "--collection", "legacy", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "1 indexed" in err and "4 skipped (needs software not installed), 0 failed" in err, err
    for name in ("memo.doc", "letter.rtf", "deck.ppt", "sheet.xls"):
        suffix = Path(name).suffix
        assert (
            f"{name}: Reading {suffix} files needs LibreOffice, which is not installed on this computer. "
            "Install it, then re-scan the collection." in err
        ), name


def test_a_libreoffice_on_the_path_makes_legacy_office_files_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_format_table: None
) -> None:
    programs = tmp_path / "bin"
    programs.mkdir()
    soffice = programs / "soffice"
    soffice.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    soffice.chmod(0o755)
    monkeypatch.setenv("PATH", str(programs))
    assert why_not_read(Path("memo.doc")) is None and file_kind(Path("memo.doc")) == "docling"


def test_a_file_named_like_a_zip_format_that_is_no_zip_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "fake"
    folder.mkdir()
    (folder / "minutes.odt").write_text("plain text under an OpenDocument name\n", encoding="utf-8")
    (folder / "book.epub").write_text("plain text under an EPUB name\n", encoding="utf-8")
    assert main(["ingest", str(folder), "--collection", "fake", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert (
        "minutes.odt: This file is named .odt but is not an OpenDocument file (it is not a zip package)."
        in err
    )
    assert (
        "book.epub: This file is named .epub but is not an EPUB book (it is not a zip package)."
        in err
    )
