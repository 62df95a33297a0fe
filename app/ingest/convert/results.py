"""What a conversion hands back: a document's chunk pieces, or (from a worker)
the sentence that says why there are none."""

from __future__ import annotations

from dataclasses import dataclass

from app.ingest.chunking.piece import ChunkPiece


@dataclass(frozen=True)
class ConvertedDocument:
    title: str
    pieces: tuple[ChunkPiece, ...]
    pages: int | None = None
    ocr_pages: int = 0  # pages whose text came from OCR (scanned PDF pages, image frames)
    remark: str = ""  # anything else to say beside the document ("412 messages")

    @property
    def note(self) -> str:
        """What the user should know about how the text was read ("" when nothing)."""
        if not self.ocr_pages:
            return self.remark
        if self.pages and self.pages != self.ocr_pages:
            ocr = f"{self.ocr_pages} of {self.pages} pages read by OCR"
        else:
            ocr = "read by OCR" if self.ocr_pages == 1 else f"read by OCR ({self.ocr_pages} pages)"
        return f"{ocr}; {self.remark}" if self.remark else ocr


@dataclass(frozen=True)
class ConvertOutcome:
    """A worker's answer: a document, or the sentence saying why not."""

    document: ConvertedDocument | None = None
    error: str = ""
