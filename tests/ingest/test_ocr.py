"""Scanned PDFs and images read by OCR (RapidOCR's models from its wheel), for real:
documents made from known text, rasterised, ingested and searched, with their pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ingest_files import ingest_saying
from scanned_files import (
    PAGE_TEXTS,
    character_error_rate,
    image_pdf,
    make_scanned_files,
    rasterise,
    text_pdf,
)

from app.cli import main
from app.core.events import IngestProgress
from app.core.paths import app_paths
from app.ingest.convert.ocr import PageReader, scanned_pages
from app.store.catalog import Catalog


def hits_for(
    word: str, collection: str, capsys: pytest.CaptureFixture[str]
) -> list[dict[str, object]]:
    assert main(["search", word, "-c", collection, "--mode", "bm25", "--top-k", "8", "--json"]) == 0
    return [h for h in json.loads(capsys.readouterr().out) if word in str(h["text"])]


def test_a_rendered_page_is_read_back_almost_exactly() -> None:
    (page,) = rasterise(text_pdf((PAGE_TEXTS[0],)))
    import numpy as np

    text = PageReader().read(np.asarray(page.convert("RGB")))
    assert character_error_rate(text, "\n".join(PAGE_TEXTS[0])) < 0.03, text
    assert text.count("\n\n") == len(PAGE_TEXTS[0]) - 1  # a paragraph per line set apart


def test_scanned_pages_are_found_by_their_empty_text_layer(tmp_path: Path) -> None:
    files = make_scanned_files(tmp_path / "scans")
    assert scanned_pages(files["scanned"]) == (2, [1, 2])
    assert scanned_pages(files["mixed"]) == (2, [2])
    (tmp_path / "typed.pdf").write_bytes(text_pdf())
    assert scanned_pages(tmp_path / "typed.pdf") == (2, [])


def test_scans_and_images_are_indexed_with_their_pages_and_say_they_were_read_by_ocr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = make_scanned_files(tmp_path / "scans")
    assert main(["ingest", str(tmp_path / "scans"), "--collection", "scans"]) == 0
    err = capsys.readouterr().err
    assert "Collection 'scans': 4 indexed" in err and "0 skipped, 0 failed" in err, err
    assert f"{files['scanned']} (" in err and "chunks; read by OCR (2 pages))" in err
    assert "chunks; 1 of 2 pages read by OCR)" in err
    assert "chunks; read by OCR)" in err  # the PNG: one page

    gannets = {(h["path"], h["page"]) for h in hits_for("gannets", "scans", capsys)}
    assert gannets == {(str(files["scanned"]), 1), (str(files["png"]), 1), (str(files["tiff"]), 1)}
    beacon = {(h["path"], h["page"]) for h in hits_for("beacon", "scans", capsys)}
    assert beacon == {(str(files["scanned"]), 2), (str(files["tiff"]), 2)}
    assert {(h["path"], h["page"]) for h in hits_for("foghorn", "scans", capsys)} == {
        (str(files["mixed"]), 2)
    }
    assert {(h["path"], h["page"]) for h in hits_for("rope", "scans", capsys)} == {
        (str(files["mixed"]), 1)
    }

    catalog = Catalog(app_paths().catalog_file)
    try:
        notes = {d.path: d.error for d in catalog.documents("scans")}
    finally:
        catalog.close()
    assert (
        notes[str(files["mixed"])] == "1 of 2 pages read by OCR"
    )  # shown beside the document in the window
    assert notes[str(files["scanned"])] == "read by OCR (2 pages)"


def test_with_ocr_off_images_are_skipped_and_a_scan_says_to_turn_it_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = app_paths().ensure().settings_file
    settings.write_text("[ingest]\nocr = false\n", encoding="utf-8")
    files = make_scanned_files(tmp_path / "scans")
    assert main(["ingest", str(tmp_path / "scans"), "--collection", "scans", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "1 indexed" in err and "2 skipped" in err and "1 failed" in err, err
    assert (
        f"{files['png']}: Images (.png) are read by OCR, which is turned off in Settings (Indexing)."
        in err
    )
    assert (
        f"{files['scanned']}: No text could be extracted from this PDF; it is probably scanned images."
        in err
    )
    assert main(["search", "rope", "-c", "scans", "--mode", "bm25", "--json"]) == 0
    assert {h["page"] for h in json.loads(capsys.readouterr().out)} == {1}  # the typed page only


def test_an_image_that_is_not_one_fails_with_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "photo.jpg").write_bytes(b"not a jpeg at all, just text")
    (folder / "blank.png").write_bytes(_blank_png())
    assert main(["ingest", str(folder), "--collection", "bad", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "photo.jpg: The image cannot be read" in err
    assert "blank.png: OCR found no text in this image." in err


def _blank_png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("L", (400, 300), 255).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.asyncio
async def test_the_ingest_progress_counts_ocr_pages_while_they_are_read(tmp_path: Path) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    three = rasterise(text_pdf(tuple((line,) for line in PAGE_TEXTS[0])))  # a page a line
    (folder / "three.pdf").write_bytes(image_pdf(three))
    events, said = await ingest_saying(tmp_path / "home", folder, "scans")
    assert said == ["three.pdf: OCR, page 1 of 3", "three.pdf: OCR, page 2 of 3"], said
    last = [e for e in events if isinstance(e, IngestProgress)][-1]
    assert last.done_files == 1 and last.ocr == ""  # read: no longer said
