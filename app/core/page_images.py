"""One page of a local PDF or image file as a PNG picture, for the source viewer.

:func:`render_page` blocks (it reads the file and renders): the window calls it
off the GUI loop. It reads only the local file it is given, with pypdfium2 for a
PDF and PIL for an image (a TIFF's page N is its frame N, numbered from 1);
nothing is fetched and nothing in the file is run (PDF JavaScript is not
executed by pdfium's renderer, and forms are drawn as they are).

The picture is at most ``MAX_WIDTH_PX`` wide and ``MAX_HEIGHT_PX`` tall, and a PDF
page is rendered at no more than ``MAX_DPI``, so a poster-sized page cannot eat the
memory; an image file with more than ``MAX_SOURCE_PIXELS`` pixels is not decoded.
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
from typing import TYPE_CHECKING, Literal

from app.core.errors import FathomError

if TYPE_CHECKING:
    from PIL.Image import Image

PageKind = Literal["pdf", "image"]

PDF_SUFFIXES: frozenset[str] = frozenset({".pdf"})
IMAGE_SUFFIXES: frozenset[str] = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp", ".gif"})

MAX_WIDTH_PX = 1400
MAX_HEIGHT_PX = 4000
MIN_WIDTH_PX = 16
MAX_DPI = 200.0  # a PDF page is never rendered finer than this, however wide the picture asked for
MAX_SOURCE_PIXELS = 120_000_000  # an image file larger than this (about 11000 × 11000) is not decoded
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


def render_page(path: str, page: int, width_px: int) -> bytes:
    """Page ``page`` (from 1) of the PDF or image at ``path`` as PNG bytes, at most
    ``width_px`` wide (clamped to ``MAX_WIDTH_PX``; an image is never enlarged)."""
    kind = page_kind(path)
    if kind is None:
        raise PageImageError(f"Fathom shows pages of PDFs and images only, not of {Path(path).name}.")
    file = Path(path)
    if not file.is_file():  # gone, a folder, or a pipe or device that would block a read
        raise PageImageError(
            f"The file {path} is no longer there.", "It may have been moved or deleted; index its folder again."
        )
    if page < 1:
        raise PageImageError(f"Page {page} is not a page number; pages are numbered from 1.")
    width = max(MIN_WIDTH_PX, min(int(width_px), MAX_WIDTH_PX))
    picture = _pdf_page(file, page, width) if kind == "pdf" else _image_frame(file, page, width)
    return _png(_fit(picture, width))


def _pdf_page(file: Path, page: int, width: int) -> Image:
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
                    raise PageImageError(f"Page {page} of {file.name} has no size, so there is nothing to show.")
                scale = min(width / points_wide, MAX_HEIGHT_PX / points_high, MAX_DPI / 72)
                picture: Image = pdf_page.render(scale=scale).to_pil().convert("RGB")
                return picture
            finally:
                pdf_page.close()
        except pypdfium2.PdfiumError as exc:
            raise PageImageError(f"Page {page} of {file.name} cannot be rendered ({exc}).") from None
        finally:
            document.close()


def _pdf_error(file: Path, exc: Exception) -> PageImageError:
    message = str(exc)
    if "password" in message.lower():
        return PageImageError(
            f"{file.name} is encrypted; Fathom cannot show pages of password-protected PDFs.",
            "Open the original to read it.",
        )
    if "access" in message.lower():
        return PageImageError(f"{file.name} cannot be read ({message}).", "Check that you may read the file.")
    return PageImageError(
        f"{file.name} is damaged or not a PDF and cannot be shown ({message}).", "Open the original to check it."
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
        raise PageImageError(f"{file.name} is too large to show.", "Open the original to see it.") from None
    except PermissionError as exc:
        raise PageImageError(f"{file.name} cannot be read ({exc.strerror}).", "Check that you may read it.") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise PageImageError(
            f"{file.name} cannot be read as an image ({exc}).", "It may be damaged; open the original to check."
        ) from None
    flat = PILImage.new("RGB", frame.size, (255, 255, 255))  # transparency shown on white, like a page
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
