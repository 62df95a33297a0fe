"""Files whose pages look different, for the tests of page pictures: a two-page PDF
written with reportlab whose page 2 holds a big black rectangle, and images with a
known colour on their left half."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

PAGE_SIZE = (612.0, 792.0)  # US Letter, points
# page 2's black rectangle in PDF points (x, y from the bottom left, width, height)
RECT = (100.0, 400.0, 300.0, 250.0)


def rect_centre() -> tuple[float, float]:
    """The rectangle's centre as fractions of the page picture (from its top left)."""
    x, y, w, h = RECT
    return (x + w / 2) / PAGE_SIZE[0], 1 - (y + h / 2) / PAGE_SIZE[1]


def marked_pdf(path: Path, *, password: str | None = None) -> Path:
    """Page 1: a line of text. Page 2: a line of text and the black rectangle ``RECT``."""
    from reportlab.pdfgen import canvas

    encrypt = None
    if password is not None:
        from reportlab.lib.pdfencrypt import StandardEncryption

        encrypt = StandardEncryption(password, canPrint=0)
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=PAGE_SIZE, encrypt=encrypt)
    pdf.setFont("Helvetica", 14)
    pdf.drawString(72, 740, "Page one: the tide gauge at Veltmoor.")
    pdf.showPage()
    pdf.setFont("Helvetica", 14)
    pdf.drawString(72, 740, "Page two: the copper beacon.")
    pdf.setFillColorRGB(0, 0, 0)
    pdf.rect(*RECT, stroke=0, fill=1)
    pdf.showPage()
    pdf.save()
    path.write_bytes(out.getvalue())
    return path


def half_image(
    path: Path, colour: tuple[int, int, int], size: tuple[int, int] = (400, 300)
) -> Path:
    """A white image whose left half is ``colour``, saved in the format its suffix names."""
    image = Image.new("RGB", size, (255, 255, 255))
    image.paste(colour, (0, 0, size[0] // 2, size[1]))
    image.save(path)
    return path


def tiff_pages(
    path: Path, colours: list[tuple[int, int, int]], size: tuple[int, int] = (200, 260)
) -> Path:
    """A multi-page TIFF (what a scanner gives), page N filled with ``colours[N - 1]``."""
    first, *rest = (Image.new("RGB", size, colour) for colour in colours)
    first.save(path, save_all=True, append_images=rest)
    return path
