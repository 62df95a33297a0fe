"""One page of a local PDF or image file as a PNG picture, for the source viewer.

:func:`render_page` blocks (it reads the file and renders): the window calls it
off the GUI loop. It reads only the local file it is given, with pypdfium2 for a
PDF and PIL for an image (a TIFF's page N is its frame N, numbered from 1);
nothing is fetched and nothing in the file is run (PDF JavaScript is not
executed by pdfium's renderer, and forms are drawn as they are).

The picture is at most ``MAX_WIDTH_PX`` wide and ``MAX_HEIGHT_PX`` tall, and a PDF
page is rendered at no more than ``MAX_DPI``, so a poster-sized page cannot eat the
memory; an image file with more than ``MAX_SOURCE_PIXELS`` pixels is not decoded.
On a PDF page with a text layer, the cited passage is washed in highlighter yellow
where the text layer has it (found by its letters, so line breaks do not matter).
Every failure a person can meet (the file is gone, the page is not in it, the PDF
is encrypted or damaged, the image cannot be read) is a :class:`PageImageError`
whose ``str()`` is a sentence to show in place of the picture.

PDFium is not thread-safe, even across documents: every pdfium call here holds
``_PDFIUM_LOCK``. (Conversion uses pdfium in its own worker processes.)
"""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from app.core.errors import FathomError

if TYPE_CHECKING:
    from PIL.Image import Image

PageKind = Literal["pdf", "image"]

PDF_SUFFIXES: frozenset[str] = frozenset({".pdf"})
IMAGE_SUFFIXES: frozenset[str] = frozenset(
    {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp", ".gif"}
)

MAX_WIDTH_PX = 1400
MAX_HEIGHT_PX = 4000
MIN_WIDTH_PX = 16
MAX_DPI = 200.0  # a PDF page is never rendered finer than this, however wide the picture asked for
MAX_SOURCE_PIXELS = (
    120_000_000  # an image file larger than this (about 11000 × 11000) is not decoded
)
HIGHLIGHT = (255, 208, 0, 96)  # the cited passage, washed over the page (RGBA)
_PDFIUM_LOCK = threading.Lock()


class PageImageError(FathomError):
    """A page cannot be shown; ``str()`` says why, and what to do."""


def page_kind(path: str) -> PageKind | None:
    """Whether ``path`` names a file whose pages can be shown (by its suffix), and how."""
    suffix = Path(path).suffix.lower()
    if suffix in PDF_SUFFIXES:
        return "pdf"
    if suffix in IMAGE_SUFFIXES:
        return "image"
    return None


def render_page(path: str, page: int, width_px: int, quote: str = "") -> bytes:
    """Page ``page`` (from 1) of the PDF or image at ``path`` as PNG bytes, at most
    ``width_px`` wide (clamped to ``MAX_WIDTH_PX``; an image is never enlarged).
    ``quote``: the cited passage, marked where the PDF's text layer has it."""
    kind = page_kind(path)
    if kind is None:
        raise PageImageError(
            f"Fathom shows pages of PDFs and images only, not of {Path(path).name}."
        )
    file = Path(path)
    if not file.is_file():  # gone, a folder, or a pipe or device that would block a read
        raise PageImageError(
            f"The file {path} is no longer there.",
            "It may have been moved or deleted; index its folder again.",
        )
    if page < 1:
        raise PageImageError(f"Page {page} is not a page number; pages are numbered from 1.")
    width = max(MIN_WIDTH_PX, min(int(width_px), MAX_WIDTH_PX))
    picture = (
        _pdf_page(file, page, width, quote) if kind == "pdf" else _image_frame(file, page, width)
    )
    return _png(_fit(picture, width))


def _pdf_page(file: Path, page: int, width: int, quote: str) -> Image:
    import pypdfium2

    with _PDFIUM_LOCK:
        try:
            document = pypdfium2.PdfDocument(str(file))
        except pypdfium2.PdfiumError as exc:
            raise _pdf_error(file, exc) from None
        try:
            count = len(document)
            if page > count:
                raise _out_of_range(file, page, count)
            pdf_page = document[page - 1]
            try:
                points_wide, points_high = pdf_page.get_size()
                if points_wide <= 0 or points_high <= 0:
                    raise PageImageError(
                        f"Page {page} of {file.name} has no size, so there is nothing to show."
                    )
                scale = min(width / points_wide, MAX_HEIGHT_PX / points_high, MAX_DPI / 72)
                picture: Image = pdf_page.render(scale=scale).to_pil().convert("RGB")
                boxes = _quote_boxes(pdf_page, quote) if quote.strip() else []
                return _marked(picture, boxes, scale, points_high) if boxes else picture
            finally:
                pdf_page.close()
        except pypdfium2.PdfiumError as exc:
            raise PageImageError(
                f"Page {page} of {file.name} cannot be rendered ({exc})."
            ) from None
        finally:
            document.close()


Box = tuple[float, float, float, float]  # left, bottom, right, top, in PDF points


def _quote_boxes(pdf_page: Any, quote: str) -> list[Box]:
    """Where the page's text layer holds ``quote``: the boxes of its lines (none when the
    page has no text layer, a scan, or the passage is not found). Letters and digits are
    compared, case folded, so line breaks, hyphen spacing and markup do not matter; a
    passage that runs on from the page before or onto the next is marked as far as it is here."""
    import pypdfium2.raw as pdfium_c

    wanted = _letters(quote)
    if len(wanted) < MIN_QUOTE_LETTERS:
        return []
    textpage = pdf_page.get_textpage()
    try:
        positions: list[int] = []
        letters: list[str] = []
        for index in range(textpage.count_chars()):
            for letter in _letters(chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, index))):
                positions.append(index)
                letters.append(letter)
        found = _span("".join(letters), wanted)
        if found is None:
            return []
        first, last = positions[found[0]], positions[found[1] - 1]
        count = textpage.count_rects(first, last - first + 1)
        return [tuple(textpage.get_rect(i)) for i in range(count)]  # type: ignore[misc]
    finally:
        textpage.close()


MIN_QUOTE_LETTERS = 12
_EDGES = (
    80,
    40,
    20,
    MIN_QUOTE_LETTERS,
)  # letters matched at an end of a passage not on the page whole


def _letters(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _span(page: str, wanted: str) -> tuple[int, int] | None:
    """Where ``wanted`` is in ``page`` (letter offsets, end excluded): whole, or by its
    first or last letters when it starts or ends on another page (the longest such
    edge found, down to ``MIN_QUOTE_LETTERS`` letters)."""
    at = page.find(wanted)
    if at >= 0:
        return at, at + len(wanted)
    for edge in _EDGES:
        if edge >= len(wanted):
            continue
        head, tail = wanted[:edge], wanted[-edge:]
        start, end = page.find(head), page.rfind(tail)
        if start >= 0 and end >= start:
            return start, end + len(tail)
        if start >= 0:  # runs on to the next page
            return start, min(len(page), start + len(wanted))
        if end >= 0:  # began on the page before
            return max(0, end + len(tail) - len(wanted)), end + len(tail)
    return None


def _marked(picture: Image, boxes: list[Box], scale: float, points_high: float) -> Image:
    """``picture`` with ``boxes`` (PDF points, origin bottom left) washed in highlighter yellow."""
    from PIL import Image as PILImage
    from PIL import ImageDraw

    layer = PILImage.new("RGBA", picture.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    pad = max(1.0, 2 * scale)
    for left, bottom, right, top in boxes:
        draw.rectangle(
            (
                left * scale - pad,
                (points_high - top) * scale - pad,
                right * scale + pad,
                (points_high - bottom) * scale + pad,
            ),
            fill=HIGHLIGHT,
        )
    return PILImage.alpha_composite(picture.convert("RGBA"), layer).convert("RGB")


def _pdf_error(file: Path, exc: Exception) -> PageImageError:
    message = str(exc)
    if "password" in message.lower():
        return PageImageError(
            f"{file.name} is encrypted; Fathom cannot show pages of password-protected PDFs.",
            "Open the original to read it.",
        )
    if "access" in message.lower():
        return PageImageError(
            f"{file.name} cannot be read ({message}).", "Check that you may read the file."
        )
    return PageImageError(
        f"{file.name} is damaged or not a PDF and cannot be shown ({message}).",
        "Open the original to check it.",
    )


def _image_frame(file: Path, page: int, width: int) -> Image:
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    try:
        with PILImage.open(file) as image:
            frames = max(1, int(getattr(image, "n_frames", 1)))
            if page > frames:
                raise _out_of_range(file, page, frames)
            if image.width * image.height > MAX_SOURCE_PIXELS:
                raise PageImageError(
                    f"{file.name} is too large to show ({image.width} × {image.height} pixels).",
                    "Open the original to see it.",
                )
            image.seek(page - 1)
            image.draft("RGB", (width, MAX_HEIGHT_PX))  # JPEG: decode at a smaller scale
            frame = image.convert("RGBA")
    except PageImageError:
        raise
    except PILImage.DecompressionBombError:
        raise PageImageError(
            f"{file.name} is too large to show.", "Open the original to see it."
        ) from None
    except PermissionError as exc:
        raise PageImageError(
            f"{file.name} cannot be read ({exc.strerror}).", "Check that you may read it."
        ) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise PageImageError(
            f"{file.name} cannot be read as an image ({exc}).",
            "It may be damaged; open the original to check.",
        ) from None
    flat = PILImage.new(
        "RGB", frame.size, (255, 255, 255)
    )  # transparency shown on white, like a page
    flat.paste(frame, mask=frame.getchannel("A"))
    return flat


def _out_of_range(file: Path, page: int, count: int) -> PageImageError:
    pages = "1 page" if count == 1 else f"{count} pages"
    return PageImageError(
        f"{file.name} has {pages}, so page {page} cannot be shown.",
        "The file may have changed since it was indexed; index it again.",
    )


def _fit(picture: Image, width: int) -> Image:
    """``picture`` shrunk (never enlarged) to fit ``width`` × ``MAX_HEIGHT_PX``."""
    if picture.width > width or picture.height > MAX_HEIGHT_PX:
        picture.thumbnail((width, MAX_HEIGHT_PX))
    return picture


def _png(picture: Image) -> bytes:
    out = io.BytesIO()
    picture.save(out, format="PNG", compress_level=1)
    return out.getvalue()
