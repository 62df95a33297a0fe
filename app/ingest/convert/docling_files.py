"""Documents read by Docling into chunk pieces, with a title and, for PDFs, a page
count; a PDF's scanned pages (no text layer) are read by OCR when it is on.

A long PDF is read :data:`PDF_WINDOW_PAGES` pages at a time (the text-only pipeline
keeps no reading order or headings across pages, so the chunks' text is the same):
Docling's memory is that of one window, not of the whole file (a 400-page PDF peaked at
+1.85 GB read at once, +0.48 GB in windows, in the same time: bench_long_pdf.py), and the progress says how
far it is."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from app.core.errors import IngestError
from app.ingest.chunking.docling_chunks import DoclingChunker
from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.plain_text import chunk_plain_text
from app.ingest.chunking.tokens import TokenCounter
from app.ingest.convert.docling_setup import build_docling_converter
from app.ingest.convert.markdown_front_matter import markdown_source
from app.ingest.convert.ocr import PageReader, scanned_pages
from app.ingest.convert.ocr_files import ocr_pdf_pages
from app.ingest.convert.pdf_damage import damage_note
from app.ingest.convert.results import ConvertedDocument
from app.ingest.convert.text_files import NO_TEXT
from app.ingest.convert.text_sources import TEXT_SUFFIXES, text_source
from app.ingest.file_errors import short_error

PDF_WINDOW_PAGES = 50


class DoclingFiles:
    """Converts files with Docling; its converter and chunker are built on first use
    and reused (they are costly to build). Not thread-safe."""

    def __init__(
        self,
        counter: TokenCounter,
        max_tokens: int,
        artifacts_path: str,
        pdf_pipeline: str,
        pages: PageReader | None = None,
        reporter: PageReader | None = None,
    ) -> None:
        """``pages``: the OCR reader for scanned PDF pages (None: OCR is off);
        ``reporter``: whose ``on_page`` hears how far a long PDF is read."""
        self.pages = pages
        self.reporter = reporter
        self.counter = counter
        self.max_tokens = max_tokens
        self.artifacts_path = artifacts_path
        self.pdf_pipeline = pdf_pipeline
        self._chunker: DoclingChunker | None = None
        self._docling: Any = None

    def convert(self, path: Path) -> ConvertedDocument:
        converter = self._converter()
        source: Any = path
        front_title = front_matter = ""
        if path.suffix.lower() in {".md", ".markdown"}:
            source, front_matter, front_title = markdown_source(path)
        elif path.suffix.lower() in TEXT_SUFFIXES:
            source = text_source(path)
        is_pdf = path.suffix.lower() == ".pdf"
        page_count = pdf_page_count(path) if is_pdf else 0
        windows = pdf_windows(page_count) if is_pdf and self.pdf_pipeline == "native" else [None]
        pieces: list[ChunkPiece] = []
        title, read_pages = "", 0
        report = self.reporter.on_page if self.reporter is not None else None
        for window in windows:  # [None] for all at once
            document = self._document(converter, source, window)
            if window is None or window[0] == 1:
                title, read_pages = _title_of(document, path), document.num_pages()
            pieces.extend(self._pieces(document))
            del document  # a window's pages are let go before the next is read
            if window is not None and report is not None:
                report(window[1], page_count, "pdf")
        if not pieces and front_matter:
            pieces = chunk_plain_text(front_matter, self.counter, self.max_tokens)
        ocr_pages = 0
        if is_pdf and self.pages is not None:
            pieces, ocr_pages = self._with_scanned_pages(path, pieces)
        if not pieces:
            if is_pdf and self.pages is None:
                raise IngestError(
                    "No text could be extracted from this PDF; it is probably scanned images.",
                    "Turn on OCR in Settings (Indexing) to read scanned pages, then re-scan.",
                )
            if is_pdf:
                raise IngestError("Neither the PDF's text layer nor OCR found any text in it.")
            raise IngestError(NO_TEXT)
        pages = (page_count or read_pages) if is_pdf else None
        title = front_title or title
        damage = damage_note(path) if is_pdf else ""
        return ConvertedDocument(
            title=title,
            pieces=tuple(pieces),
            pages=pages or None,
            ocr_pages=ocr_pages,
            remark=damage,
        )

    def _document(self, converter: Any, source: Any, window: tuple[int, int] | None) -> Any:
        """Docling's document of ``source`` (of the pages in ``window``, from 1, when given)."""
        from docling.datamodel.base_models import ConversionStatus

        pages = {"page_range": window} if window is not None else {}
        try:
            with warnings.catch_warnings():
                # its Markdown reader says "Detected potentially incorrect Markdown, correcting..."
                # on stderr for a run of underscores or dashes: noise between the progress lines
                warnings.filterwarnings("ignore", message="Detected potentially incorrect Markdown")
                result = converter.convert(source, raises_on_error=False, **pages)
        except Exception as exc:  # Docling raises many types for unreadable input
            raise IngestError(f"Docling could not convert the file: {short_error(exc)}.") from None
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            detail = "; ".join(e.error_message for e in result.errors)[:300]
            raise IngestError(
                f"Docling could not convert the file{': ' + detail if detail else ''}."
            )
        return result.document

    def _pieces(self, document: Any) -> list[ChunkPiece]:
        with warnings.catch_warnings():
            # HybridChunker warns when headings alone exceed the limit; it then drops them
            warnings.simplefilter("ignore", UserWarning)
            pieces = list(self._chunker_for().chunk(document))
        if not pieces:
            # e.g. a Markdown file that is only a heading: index what text there is (not the
            # "<!-- image -->" a picture would leave: a scanned PDF has nothing else)
            text = document.export_to_markdown(image_placeholder="")
            pieces = list(chunk_plain_text(text, self.counter, self.max_tokens))
        return pieces

    def _with_scanned_pages(
        self, path: Path, pieces: list[ChunkPiece]
    ) -> tuple[list[ChunkPiece], int]:
        """The pieces with those of the PDF's scanned pages (no text layer) added, read by
        OCR, in page order; and how many pages that was."""
        assert self.pages is not None
        _, scanned = scanned_pages(path)
        if not scanned:
            return pieces, 0
        read = ocr_pdf_pages(path, scanned, self.pages, self.counter, self.max_tokens)
        merged = sorted(
            [*pieces, *read], key=lambda piece: piece.page or 0
        )  # stable: text order within a page
        return merged, len(scanned)

    def _chunker_for(self) -> DoclingChunker:
        if self._chunker is None:
            self._chunker = DoclingChunker(self.counter, self.max_tokens)
        return self._chunker

    def _converter(self) -> Any:
        if self._docling is None:
            self._docling = build_docling_converter(self.artifacts_path, self.pdf_pipeline)
        return self._docling


def pdf_page_count(path: Path) -> int:
    import pypdfium2

    document = pypdfium2.PdfDocument(str(path))
    try:
        return len(document)
    finally:
        document.close()


def pdf_windows(page_count: int) -> list[tuple[int, int] | None]:
    """The page ranges (from 1, inclusive) a PDF is read in; [None] (all at once) when short."""
    size = PDF_WINDOW_PAGES
    if page_count <= size:
        return [None]
    return [(start, min(page_count, start + size - 1)) for start in range(1, page_count + 1, size)]


def _title_of(document: Any, path: Path) -> str:
    from docling_core.types.doc.labels import DocItemLabel

    for item in document.texts:
        if item.label in (DocItemLabel.TITLE, DocItemLabel.SECTION_HEADER) and item.text.strip():
            return str(item.text.strip())[:200]
    return path.name
