"""A long PDF is read a window of pages at a time: the chunks' text, pages and title are
those of reading it at once, the progress says how far it is, and Docling holds one
window's pages, not the whole file's (the memory figure: README, *Measured*)."""

from __future__ import annotations

from pathlib import Path

import pypdfium2
import pytest
from ingest_files import ingest_saying

from app.core.events import IngestFinished
from app.ingest.convert import docling_files
from app.ingest.convert.converter import Converter

PAGES = 120  # three windows of 50, 50 and 20 pages


def long_pdf(shared_data: Path, target: Path) -> Path:
    source = pypdfium2.PdfDocument(str(shared_data / "pdf" / "WhatisMilvus.pdf"))
    out = pypdfium2.PdfDocument.new()
    while len(out) < PAGES:
        out.import_pages(source)
    out.save(str(target))
    assert len(pypdfium2.PdfDocument(str(target))) == PAGES
    return target


def test_a_long_pdf_read_in_windows_gives_the_chunks_of_reading_it_at_once(
    tmp_path: Path, shared_data: Path, converter: Converter, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = long_pdf(shared_data, tmp_path / "long.pdf")
    heard: list[tuple[int, int, str]] = []
    monkeypatch.setattr(converter.pages, "on_page", lambda *report: heard.append(report))
    windowed = converter.convert(path)
    assert heard == [(50, PAGES, "pdf"), (100, PAGES, "pdf"), (PAGES, PAGES, "pdf")]
    monkeypatch.setattr(docling_files, "PDF_WINDOW_PAGES", 10_000)  # all at once, as before
    heard.clear()
    whole = converter.convert(path)
    assert heard == []
    assert "\n".join(p.text for p in windowed.pieces) == "\n".join(p.text for p in whole.pieces)
    assert (
        {p.page for p in windowed.pieces}
        == {p.page for p in whole.pieces}
        == set(range(1, PAGES + 1))
    )
    assert len(windowed.pieces) <= len(whole.pieces) + 2  # at most a chunk cut at each window's end
    assert (windowed.title, windowed.pages) == (whole.title, whole.pages) == (whole.title, PAGES)


async def test_the_ingest_progress_counts_the_pages_of_a_long_pdf(
    tmp_path: Path, shared_data: Path
) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    long_pdf(shared_data, folder / "annual.pdf")
    events, said = await ingest_saying(tmp_path / "home", folder, "reports")
    assert said == ["annual.pdf: page 50 of 120", "annual.pdf: page 100 of 120"], said
    finished = events[-1]
    assert isinstance(finished, IngestFinished) and finished.indexed == 1
