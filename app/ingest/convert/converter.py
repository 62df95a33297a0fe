"""One file to chunk pieces: the reader its type calls for, after checks that
turn the usual bad inputs into a sentence a person can act on.

:class:`Converter` is created once per worker (Docling converters are costly to
build) and reused. Nothing here waits on a network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.core.errors import IngestError
from app.ingest.chunking.tokens import TokenCounter
from app.ingest.convert.csv_files import convert_csv_file
from app.ingest.convert.docling_files import DoclingFiles
from app.ingest.convert.docling_setup import pdf_pipeline_for
from app.ingest.convert.input_checks import check_document, read_head
from app.ingest.convert.mail_files import MailReader
from app.ingest.convert.ocr import PageReader
from app.ingest.convert.ocr_files import convert_image_file
from app.ingest.convert.results import ConvertedDocument
from app.ingest.convert.text_files import convert_text_file
from app.ingest.file_types import file_kind, why_not_read

MAX_ATTACHMENT_DEPTH = 2  # a message's attachments, and those of a message attached to it


@dataclass(frozen=True)
class ConverterConfig:
    """What a converter (in this or a worker process) needs; picklable."""

    tokenizer_json: str  # the embedder's tokenizers.Tokenizer as JSON
    max_tokens: int  # per chunk, without special tokens
    docling_artifacts_path: str = ""
    ocr: bool = True  # scanned PDF pages and image files read by OCR


class Converter:
    """Converts one file at a time into chunk pieces. Not thread-safe: one per worker."""

    def __init__(self, config: ConverterConfig) -> None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(config.tokenizer_json)
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.config = config
        self.counter = TokenCounter(tokenizer)
        self.pdf_pipeline = pdf_pipeline_for(config.docling_artifacts_path)
        self.pages = PageReader()
        self._docling = DoclingFiles(
            self.counter,
            config.max_tokens,
            config.docling_artifacts_path,
            self.pdf_pipeline,
            pages=self.pages if config.ocr else None,
            reporter=self.pages,
        )

    def convert(self, path: Path) -> ConvertedDocument:
        return self._convert(path, depth=0)

    def _convert(self, path: Path, depth: int) -> ConvertedDocument:
        kind = file_kind(path)
        not_read = why_not_read(path, ocr=self.config.ocr)
        if kind is None or not_read is not None:
            raise IngestError(
                not_read or f"Fathom does not read '{path.suffix or path.name}' files."
            )
        head = read_head(path)
        if kind == "text":
            return convert_text_file(path, self.counter, self.config.max_tokens)
        if kind == "image":
            return convert_image_file(path, self.pages, self.counter, self.config.max_tokens)
        if kind == "mail":
            # attachments are read like any file; a mail attached to a mail, one level down
            read_attachment = (
                (lambda copy: self._convert(copy, depth + 1))
                if depth < MAX_ATTACHMENT_DEPTH
                else None
            )
            # an archive's messages, as OCR's pages
            on_message = self._report_messages if depth == 0 else None
            return MailReader(
                self.counter, self.config.max_tokens, read_attachment, on_message
            ).convert(path)
        if path.suffix.lower() == ".csv":  # Docling's reader takes an object per cell
            return convert_csv_file(path, self.counter, self.config.max_tokens)
        check_document(path, head)
        if path.suffix.lower() != ".pdf":
            return self._docling.convert(path)
        import pypdfium2

        try:
            return self._docling.convert(path)
        except pypdfium2.PdfiumError as exc:  # a damaged page, found while reading it
            raise IngestError(
                f"The PDF is damaged and could not be read ({str(exc).rstrip('.')}).",
                "Download or copy it again.",
            ) from None

    def _report_messages(self, read: int, total: int) -> None:
        if self.pages.on_page is not None:
            self.pages.on_page(read, total, "message")
