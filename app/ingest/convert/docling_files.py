"""Documents (PDF, Office, HTML, Markdown, CSV, AsciiDoc) read by Docling into chunk
pieces, with a title and, for PDFs, a page count."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from app.core.errors import IngestError
from app.ingest.chunking.docling_chunks import DoclingChunker
from app.ingest.chunking.plain_text import chunk_plain_text
from app.ingest.chunking.tokens import TokenCounter
from app.ingest.convert.docling_setup import build_docling_converter
from app.ingest.convert.markdown_front_matter import markdown_source
from app.ingest.convert.results import ConvertedDocument
from app.ingest.convert.text_files import NO_TEXT
from app.ingest.file_errors import short_error


class DoclingFiles:
    """Converts files with Docling; its converter and chunker are built on first use
    and reused (they are costly to build). Not thread-safe."""

    def __init__(self, counter: TokenCounter, max_tokens: int, artifacts_path: str, pdf_pipeline: str) -> None:
        self.counter = counter
        self.max_tokens = max_tokens
        self.artifacts_path = artifacts_path
        self.pdf_pipeline = pdf_pipeline
        self._chunker: DoclingChunker | None = None
        self._docling: Any = None

    def convert(self, path: Path) -> ConvertedDocument:
        from docling.datamodel.base_models import ConversionStatus

        converter = self._converter()
        source: Any = path
        front_title = front_matter = ""
        if path.suffix.lower() in {".md", ".markdown"}:
            source, front_matter, front_title = markdown_source(path)
        try:
            result = converter.convert(source, raises_on_error=False)
        except Exception as exc:  # Docling raises many types for unreadable input
            raise IngestError(f"Docling could not convert the file: {short_error(exc)}.") from None
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            detail = "; ".join(e.error_message for e in result.errors)[:300]
            raise IngestError(f"Docling could not convert the file{': ' + detail if detail else ''}.")
        document = result.document
        with warnings.catch_warnings():
            # HybridChunker warns when headings alone exceed the limit; it then drops them
            warnings.simplefilter("ignore", UserWarning)
            pieces = self._chunker_for().chunk(document)
        if not pieces:
            # e.g. a Markdown file that is only a heading: index what text there is
            pieces = chunk_plain_text(document.export_to_markdown(), self.counter, self.max_tokens)
        if not pieces and front_matter:
            pieces = chunk_plain_text(front_matter, self.counter, self.max_tokens)
        if not pieces:
            if path.suffix.lower() == ".pdf":
                raise IngestError(
                    "No text could be extracted from this PDF; it is probably scanned images.",
                    "Fathom does not run OCR; convert it with an OCR tool first.",
                )
            raise IngestError(NO_TEXT)
        pages = document.num_pages() if path.suffix.lower() == ".pdf" else None
        title = front_title or _title_of(document, path)
        return ConvertedDocument(title=title, pieces=tuple(pieces), pages=pages or None)

    def _chunker_for(self) -> DoclingChunker:
        if self._chunker is None:
            self._chunker = DoclingChunker(self.counter, self.max_tokens)
        return self._chunker

    def _converter(self) -> Any:
        if self._docling is None:
            self._docling = build_docling_converter(self.artifacts_path, self.pdf_pipeline)
        return self._docling


def _title_of(document: Any, path: Path) -> str:
    from docling_core.types.doc.labels import DocItemLabel

    for item in document.texts:
        if item.label in (DocItemLabel.TITLE, DocItemLabel.SECTION_HEADER) and item.text.strip():
            return str(item.text.strip())[:200]
    return path.name
