"""Text from pixels, offline: scanned PDF pages and image files.

RapidOCR runs PP-OCRv6's detection and recognition models (ONNX, shipped inside
PyPI's ``rapidocr`` wheel: nothing is downloaded) on onnxruntime. A PDF page is
rendered with pypdfium2 at ``RENDER_SCALE`` (144 dpi); an image is read as it is,
every frame of a multi-page TIFF as a page. The text-line angle classifier is
off: on rendered pages it turned whole upright lines upside down (one line of the
sample PDF came out as "n ss s ear"), and scans are seldom upside down.

Lines come back in reading order; a vertical gap wider than a line's height starts
a new paragraph, so the plain-text chunker can cut between paragraphs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from app.core.errors import IngestError
from app.core.serial_import import serial_import

RENDER_SCALE = 2.0  # pypdfium2 renders at 72 dpi × scale: 144 dpi
MIN_TEXT_CHARS = 16  # a PDF page with fewer characters in its text layer is treated as a scan
PARAGRAPH_GAP = 1.0  # a gap taller than this many line heights starts a paragraph
# The most pixels OCR reads in one page or image (an A4 page at 600 dpi is 35 million):
# a larger image is refused from its declared size before it is decoded, and a PDF page
# (whose size a file can set to anything) is rendered at a scale that stays within it.
MAX_OCR_PIXELS = 50_000_000


PageCallback = Callable[
    [int, int, str], None
]  # (read so far, to read, unit: "page" or "message") of the current file


class PageReader:
    """One OCR engine, loaded on first use (about 2 s) and reused. ``on_page`` is told
    after each page of a file (the ingest's progress counts pages while OCR runs)."""

    def __init__(self) -> None:
        self._engine: Any = None
        self._lock = threading.Lock()
        self.on_page: PageCallback | None = None

    def _ocr(self) -> Any:
        if self._engine is None:
            try:
                with serial_import("rapidocr"):
                    from rapidocr import RapidOCR
            except ImportError as exc:
                raise IngestError(
                    f"OCR is not available: the rapidocr package cannot be loaded ({exc}).",
                    "Reinstall Fathom, or turn OCR off in Settings.",
                ) from None
            self._engine = RapidOCR(params={"Global.use_cls": False, "Global.log_level": "error"})
        return self._engine

    def read(self, image: np.ndarray) -> str:
        """The text of one page image (RGB, height × width × 3), paragraphs split by blank lines."""
        with self._lock:
            result = self._ocr()(image)
        texts = list(result.txts or ())
        if not texts:
            return ""
        boxes = np.asarray(result.boxes, dtype=np.float32)
        return _paragraphs(texts, boxes)


def scanned_pages(path: Path) -> tuple[int, list[int]]:
    """A PDF's page count and the pages (numbered from 1) whose text layer is (almost) empty."""
    import pypdfium2

    document = pypdfium2.PdfDocument(str(path))
    try:
        empty = []
        for index in range(len(document)):
            text = document[index].get_textpage().get_text_range()
            if len("".join(text.split())) < MIN_TEXT_CHARS:
                empty.append(index + 1)
        return len(document), empty
    finally:
        document.close()


def pdf_page_images(path: Path, pages: list[int]) -> Iterator[tuple[int, np.ndarray]]:
    """(page number, RGB image) for each page asked for, rendered one at a time."""
    import pypdfium2

    document = pypdfium2.PdfDocument(str(path))
    try:
        for number in pages:
            page = document[number - 1]
            bitmap = page.render(scale=render_scale(*page.get_size()))
            yield number, np.asarray(bitmap.to_pil().convert("RGB"))
    finally:
        document.close()


def render_scale(width_pt: float, height_pt: float) -> float:
    """``RENDER_SCALE``, or less for a page so large that it would pass ``MAX_OCR_PIXELS``."""
    area = max(1.0, width_pt * height_pt)
    return min(RENDER_SCALE, float((MAX_OCR_PIXELS / area) ** 0.5))


def frame_count(path: Path) -> int:
    """How many frames (pages) an image file holds; 1 when it cannot tell."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            return max(1, int(getattr(image, "n_frames", 1)))
    except Exception:
        return 1


def image_frames(path: Path) -> Iterator[tuple[int, np.ndarray]]:
    """(page number, RGB image) for each frame of an image file (a TIFF may hold many)."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
                _check_pixels(*frame.size)  # declared in the header: nothing decoded yet
                yield number, np.asarray(frame.convert("RGB"))
    except Image.DecompressionBombError as exc:
        raise IngestError(f"The image is too large to read ({exc}).") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise IngestError(
            f"The image cannot be read ({exc}).",
            "It may be damaged or not an image; open it to check.",
        ) from None


def _check_pixels(width: int, height: int) -> None:
    if width * height > MAX_OCR_PIXELS:
        raise IngestError(
            f"The image is {width:,} × {height:,} pixels ({width * height / 1e6:,.0f} million), more "
            f"than the {MAX_OCR_PIXELS / 1e6:.0f} million OCR reads in one image; skipped.",
            "Scale it down (a page at 300 dpi is about 9 million pixels) and add it again.",
        )


def _paragraphs(texts: list[str], boxes: np.ndarray) -> str:
    """Lines in RapidOCR's reading order (top to bottom, left to right within a row), a blank
    line where the gap above a line is taller than the line."""
    tops = boxes[:, :, 1].min(axis=1)
    bottoms = boxes[:, :, 1].max(axis=1)
    out: list[str] = []
    previous_bottom = None
    for i in range(len(texts)):
        height = max(1.0, float(bottoms[i] - tops[i]))
        if previous_bottom is not None and tops[i] - previous_bottom > PARAGRAPH_GAP * height:
            out.append("")
        out.append(texts[i].strip())
        previous_bottom = (
            float(bottoms[i])
            if previous_bottom is None
            else max(previous_bottom, float(bottoms[i]))
        )
    return "\n".join(out).strip()
