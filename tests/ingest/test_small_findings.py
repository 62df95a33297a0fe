"""The red team's smaller findings (issue 36, point 7), each as the user met it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fathom_process import run_fathom

from app.core.errors import IngestError
from app.ingest.convert import Converter
from app.ingest.convert.pdf_damage import broken_streams
from app.ingest.skip_reasons import skipped_phrase


def test_docling_s_markdown_warning_does_not_reach_the_terminal(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "form.md").write_text(
        "# Form\n\nName: ______________________\n\nSigned: ____________\n"
    )
    env = {**os.environ, "FATHOM_HOME": str(tmp_path / "home")}
    done = run_fathom("ingest", str(docs), "--collection", "forms", env=env)
    assert done.returncode == 0, done.stderr
    assert "1 indexed" in done.stderr
    assert "Warning" not in done.stderr and "potentially incorrect Markdown" not in done.stderr, (
        done.stderr
    )


def test_link_loops_and_links_outside_are_not_counted_as_broken_links() -> None:
    reasons = [
        "A symbolic link loop: this folder was already scanned.",
        "A symbolic link loop: the link points back to itself.",
        "A broken symbolic link: its target does not exist.",
        "A symbolic link that points outside the folder being indexed; not followed (turn on …).",
    ]
    assert (
        skipped_phrase(4, reasons)
        == "4 skipped (2 a link loop, 1 a broken link, 1 a link outside the folder)"
    )


def _flipped(source: Path, target: Path, every: int) -> Path:
    damaged = bytearray(source.read_bytes())
    for offset in range(2000, len(damaged), every):
        damaged[offset] ^= 0xFF
    target.write_bytes(bytes(damaged))
    return target


def test_a_damaged_pdf_read_in_part_says_it_is_damaged_and_what_was_read(
    tmp_path: Path, shared_data: Path, converter: Converter
) -> None:
    """Read in part, it said only "1 of 4 pages read by OCR"."""
    pdf = shared_data / "pdf" / "WhatisMilvus.pdf"
    intact = converter.convert(pdf)
    assert intact.note == ""
    damaged = converter.convert(_flipped(pdf, tmp_path / "damaged.pdf", 997))
    assert len(damaged.pieces) < len(intact.pieces)
    assert (
        "the file is damaged: 7 of 15 compressed parts could not be read; indexed what could be read"
        in (damaged.note)
    ), damaged.note
    with pytest.raises(IngestError, match="The PDF is damaged and could not be read"):
        converter.convert(_flipped(pdf, tmp_path / "worse.pdf", 211))  # a page pdfium cannot load


def test_a_pdf_encrypted_with_an_owner_password_only_is_not_called_damaged(tmp_path: Path) -> None:
    from pypdf import PdfWriter
    from reportlab.pdfgen import canvas

    plain = tmp_path / "plain.pdf"
    page = canvas.Canvas(str(plain))
    page.drawString(72, 720, "The wombat ledger.")
    page.save()
    writer = PdfWriter()
    writer.append(str(plain))
    writer.encrypt("", "owner")
    writer.write(str(tmp_path / "locked.pdf"))
    assert broken_streams(tmp_path / "locked.pdf") == (0, 0)


def test_probing_a_large_pdf_for_damage_reads_little_of_it(tmp_path: Path) -> None:
    """The damage probe maps the file and inflates each stream's first 64 KiB: a 48 MB
    stream costs no more memory than a small one (it was read whole, and copied)."""
    import tracemalloc

    big = tmp_path / "big.pdf"
    with big.open("wb") as handle:
        handle.write(b"%PDF-1.4\n1 0 obj\n<< /Length 50331648 /Filter /FlateDecode >>\nstream\n")
        for _ in range(48):
            handle.write(os.urandom(1024 * 1024))  # not a Flate stream: broken
        handle.write(b"\nendstream\nendobj\n%%EOF\n")
    tracemalloc.start()
    try:
        assert broken_streams(big) == (1, 1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak
