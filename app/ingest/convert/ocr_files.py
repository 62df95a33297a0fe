"""Chunk pieces from OCR: an image file, or the scanned pages of a PDF, each piece
keeping the page it was read from."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from app.core.errors import IngestError
from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.plain_text import chunk_plain_text
from app.ingest.chunking.tokens import TokenCounter
from app.ingest.convert.ocr import PageReader, frame_count, image_frames, pdf_page_images
from app.ingest.convert.results import ConvertedDocument

NO_TEXT_IN_IMAGE = "OCR found no text in this image."


def ocr_pieces(
    pages: Iterable[tuple[int, np.ndarray]],
    total: int,
    reader: PageReader,
    counter: TokenCounter,
    max_tokens: int,
) -> tuple[list[ChunkPiece], int]:
    """Pieces of every page's OCR text, with the page numbers; and how many pages were
    read (``total``: how many there are, for the reader's ``on_page``)."""
    pieces: list[ChunkPiece] = []
    read = 0
    for number, image in pages:
        text = reader.read(image)
        read += 1
        if reader.on_page is not None:
            reader.on_page(read, max(total, read), "page")
        for piece in chunk_plain_text(text, counter, max_tokens):
            pieces.append(
                ChunkPiece(text=piece.text, embed_text=piece.embed_text, headings=(), page=number)
            )
    return pieces, read


def convert_image_file(
    path: Path, reader: PageReader, counter: TokenCounter, max_tokens: int
) -> ConvertedDocument:
    """An image (PNG, JPEG, TIFF, …) read by OCR; each frame of a multi-page TIFF is a page."""
    pieces, frames = ocr_pieces(image_frames(path), frame_count(path), reader, counter, max_tokens)
    if not pieces:
        raise IngestError(
            NO_TEXT_IN_IMAGE, "A photo or drawing without writing has nothing to index."
        )
    return ConvertedDocument(
        title=path.name,
        pieces=tuple(pieces),
        pages=frames if frames > 1 else None,
        ocr_pages=frames,
    )


def ocr_pdf_pages(
    path: Path, numbers: list[int], reader: PageReader, counter: TokenCounter, max_tokens: int
) -> list[ChunkPiece]:
    """Pieces of the OCR text of these pages of a PDF (numbered from 1)."""
    pieces, _ = ocr_pieces(
        pdf_page_images(path, numbers), len(numbers), reader, counter, max_tokens
    )
    return pieces
