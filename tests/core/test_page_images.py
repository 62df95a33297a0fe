"""One page of a real PDF or image file as a PNG: the page asked for, within the size
cap, and a sentence (never a crash) when it cannot be shown."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from page_files import marked_pdf, rect_centre, tiff_pages
from PIL import Image

from app.core import page_images
from app.core.page_images import MAX_WIDTH_PX, PageImageError, page_kind, render_page


def picture(png: bytes) -> Image.Image:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    image = Image.open(io.BytesIO(png))
    image.load()
    return image.convert("L")


def brightness_at(image: Image.Image, fx: float, fy: float) -> int:
    value = image.getpixel((int(fx * image.width), int(fy * image.height)))
    assert isinstance(value, int)
    return value


def test_the_page_asked_for_is_rendered_at_the_width_asked_for(tmp_path: Path) -> None:
    pdf = marked_pdf(tmp_path / "marked.pdf")
    one, two = picture(render_page(str(pdf), 1, 800)), picture(render_page(str(pdf), 2, 800))
    assert one.width == two.width == 800
    assert abs(two.height / two.width - 792 / 612) < 0.01  # the page's proportions
    fx, fy = rect_centre()
    assert brightness_at(two, fx, fy) < 30  # page 2's black rectangle
    assert brightness_at(one, fx, fy) > 225  # page 1 is white there
    assert (
        brightness_at(two, 0.95, 0.95) > 225
    )  # a white corner: rendered on white, not transparent


def test_a_huge_request_is_capped(tmp_path: Path) -> None:
    pdf = marked_pdf(tmp_path / "marked.pdf")
    image = picture(render_page(str(pdf), 2, 100_000))
    assert image.width <= MAX_WIDTH_PX
    assert image.width <= 612 * page_images.MAX_DPI / 72 + 1


def test_a_tiffs_page_is_its_frame(tmp_path: Path) -> None:
    tiff = tiff_pages(tmp_path / "scan.tiff", [(255, 255, 255), (0, 0, 0), (128, 128, 128)])
    assert brightness_at(picture(render_page(str(tiff), 1, 600)), 0.5, 0.5) > 250
    assert brightness_at(picture(render_page(str(tiff), 2, 600)), 0.5, 0.5) < 5
    assert 120 < brightness_at(picture(render_page(str(tiff), 3, 600)), 0.5, 0.5) < 136
    small = picture(render_page(str(tiff), 1, 600))
    assert small.size == (200, 260)  # an image is never enlarged
    assert picture(render_page(str(tiff), 1, 100)).width == 100  # but shrunk to the width asked for


def test_a_transparent_image_is_shown_on_white(tmp_path: Path) -> None:
    path = tmp_path / "clear.png"
    Image.new("RGBA", (50, 40), (0, 0, 0, 0)).save(path)
    assert brightness_at(picture(render_page(str(path), 1, 600)), 0.5, 0.5) == 255


@pytest.mark.parametrize(
    ("name", "page", "says"),
    [
        ("gone.pdf", 1, "gone.pdf is no longer there"),
        ("marked.pdf", 3, "marked.pdf has 2 pages, so page 3 cannot be shown"),
        ("marked.pdf", 0, "pages are numbered from 1"),
        ("locked.pdf", 1, "locked.pdf is encrypted"),
        ("broken.pdf", 1, "broken.pdf is damaged or not a PDF"),
        ("broken.png", 1, "broken.png cannot be read as an image"),
        ("one.png", 2, "one.png has 1 page, so page 2 cannot be shown"),
        ("notes.md", 1, "pages of PDFs and images only"),
        ("folder.pdf", 1, "folder.pdf is no longer there"),
    ],
)
def test_what_cannot_be_shown_is_said_in_a_sentence(
    tmp_path: Path, name: str, page: int, says: str
) -> None:
    marked_pdf(tmp_path / "marked.pdf")
    marked_pdf(tmp_path / "locked.pdf", password="secret")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\nnot really a pdf\n")
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n but then nothing")
    Image.new("RGB", (20, 20)).save(tmp_path / "one.png")
    (tmp_path / "notes.md").write_text("# Notes\n", encoding="utf-8")
    (tmp_path / "folder.pdf").mkdir()
    with pytest.raises(PageImageError) as caught:
        render_page(str(tmp_path / name), page, 800)
    sentence = str(caught.value)
    assert says in sentence
    assert sentence.endswith(".")


def test_an_image_too_large_to_decode_is_refused_before_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "poster.png"
    Image.new("RGB", (300, 200), (0, 0, 0)).save(path)
    monkeypatch.setattr(page_images, "MAX_SOURCE_PIXELS", 300 * 200 - 1)
    with pytest.raises(
        PageImageError, match=r"poster.png is too large to show \(300 × 200 pixels\)"
    ):
        render_page(str(path), 1, 800)


def test_which_files_have_pages() -> None:
    assert page_kind("/d/a.PDF") == "pdf"
    assert [
        page_kind(f"/d/a{s}")
        for s in (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp", ".gif")
    ] == ["image"] * 8
    assert (
        page_kind("/d/a.md") is None
        and page_kind("/d/a.docx") is None
        and page_kind("/d/pdf") is None
    )


def _marked_rows(path: Path, page: int, quote: str) -> list[int]:
    """The rows of the rendered page that the quote's highlight changed, checking that
    what changed was washed yellow (red kept, blue taken out)."""
    plain = Image.open(io.BytesIO(render_page(str(path), page, 600))).convert("RGB")
    marked = Image.open(io.BytesIO(render_page(str(path), page, 600, quote))).convert("RGB")
    assert plain.size == marked.size
    rows, washed = [], 0
    for y in range(plain.height):
        changed = [
            x for x in range(0, plain.width, 3) if plain.getpixel((x, y)) != marked.getpixel((x, y))
        ]
        if changed:
            rows.append(y)
            for x in changed:  # white paper under the highlighter: red kept, blue taken out
                red, _, blue = marked.getpixel((x, y))  # type: ignore[misc]
                washed += plain.getpixel((x, y)) == (255, 255, 255) and red > 240 and blue < 200
    assert washed >= len(rows), (washed, len(rows))
    return rows


def _line_band(line: int) -> tuple[int, int]:
    """The rows of line ``line`` (0-based) of a text_pdf page rendered 600 px wide (A4)."""
    scale = 600 / 595.28
    baseline = 842 - (760 - 40 * line)
    return int((baseline - 16) * scale), int((baseline + 6) * scale)


def test_the_cited_passage_is_washed_yellow_where_the_page_has_it(tmp_path: Path) -> None:
    from scanned_files import PAGE_TEXTS, text_pdf

    pdf = tmp_path / "log.pdf"
    pdf.write_bytes(text_pdf())
    second_page = PAGE_TEXTS[1]
    rows = _marked_rows(
        pdf, 2, " ".join(second_page[1:])
    )  # as a chunk joins the lines: no line breaks
    top, bottom = _line_band(1)[0], _line_band(2)[1]
    assert rows and top <= rows[0] and rows[-1] <= bottom, (rows[0], rows[-1], top, bottom)
    assert any(_line_band(1)[0] <= y <= _line_band(1)[1] for y in rows)
    assert any(_line_band(2)[0] <= y <= _line_band(2)[1] for y in rows)
    assert not any(
        _line_band(0)[0] <= y <= _line_band(0)[1] for y in rows
    )  # the line before is not marked

    # a passage that began on page 1 is marked on page 2 only as far as it runs there
    run_on = f"{PAGE_TEXTS[0][-1]} {second_page[0]}"
    rows = _marked_rows(pdf, 2, run_on)
    assert rows and _line_band(0)[0] <= rows[0] and rows[-1] <= _line_band(0)[1]
    assert _marked_rows(pdf, 2, "A sentence that is nowhere in this document at all.") == []
