"""Scanned documents made from known text: a real PDF written with reportlab, its pages
rasterised with pypdfium2, then saved as an image-only PDF, images and a multi-page TIFF
(what a scanner gives). Also a PDF with one text page and one scanned page."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

SCAN_DPI = 150

PAGE_TEXTS = (
    (
        "The tide gauge at Veltmoor was read every morning at six.",
        "In the winter of 1891 the harbour froze for nineteen days.",
        "The keeper counted four hundred gannets on the western stack.",
    ),
    (
        "A copper beacon was mounted on the breakwater in 1902.",
        "Its lamp burned paraffin and was trimmed twice each night.",
        "The pilot boat Maren carried the post between the islands.",
    ),
)


def text_pdf(pages: tuple[tuple[str, ...], ...] = PAGE_TEXTS) -> bytes:
    """A PDF with a text layer: each page's lines in 14 pt Helvetica."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    for lines in pages:
        pdf.setFont("Helvetica", 14)
        y = 760
        for line in lines:
            pdf.drawString(72, y, line)
            y -= 40  # a blank line's worth between lines: each is its own paragraph
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def rasterise(pdf_bytes: bytes, dpi: int = SCAN_DPI) -> list[Image.Image]:
    """Each page of a PDF as a greyscale image, as a scanner would give it."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf_bytes)
    try:
        return [
            document[i].render(scale=dpi / 72).to_pil().convert("L") for i in range(len(document))
        ]
    finally:
        document.close()


def image_pdf(images: list[Image.Image]) -> bytes:
    """An image-only PDF (no text layer): a scanned document."""
    out = io.BytesIO()
    first, *rest = (image.copy() for image in images)
    first.save(out, format="PDF", save_all=True, append_images=rest, resolution=SCAN_DPI)
    return out.getvalue()


def mixed_pdf(text_lines: tuple[str, ...], scanned: Image.Image) -> bytes:
    """Page 1 with a text layer, page 2 a scanned image only."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    pdf.setFont("Helvetica", 14)
    y = 760
    for line in text_lines:
        pdf.drawString(72, y, line)
        y -= 40
    pdf.showPage()
    width, height = A4
    pdf.drawImage(ImageReader(scanned), 0, 0, width=width, height=height)
    pdf.showPage()
    pdf.save()
    return out.getvalue()


def make_scanned_files(folder: Path) -> dict[str, Path]:
    """scanned.pdf (2 image pages), mixed.pdf (text page + image page), page.png, pages.tiff (2 frames)."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = rasterise(text_pdf())
    files = {
        "scanned": folder / "scanned.pdf",
        "mixed": folder / "mixed.pdf",
        "png": folder / "page.png",
        "tiff": folder / "pages.tiff",
    }
    files["scanned"].write_bytes(image_pdf(pages))
    other = rasterise(
        text_pdf((("The foghorn at Skarn sounded for eleven hours on the ninth of March.",),))
    )[0]
    files["mixed"].write_bytes(
        mixed_pdf(("The mixed report opens with a typed page about rope.",), other)
    )
    # fresh copies for each save: Pillow keeps one format's encoder settings on the image
    pages[0].copy().save(files["png"])
    pages[0].copy().save(files["tiff"], save_all=True, append_images=[pages[1].copy()])
    return files


def edit_distance(found: str, truth: str) -> int:
    """Levenshtein distance between the two texts, whitespace collapsed."""
    a, b = " ".join(found.split()), " ".join(truth.split())
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def character_error_rate(found: str, truth: str) -> float:
    """Edit distance over the length of the truth (whitespace collapsed)."""
    return edit_distance(found, truth) / max(1, len(" ".join(truth.split())))
