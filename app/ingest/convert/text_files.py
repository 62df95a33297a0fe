"""Plain text and source code files read into chunk pieces: bytes decoded
(UTF-8, UTF-16 or what charset-normalizer finds), binary data refused."""

from __future__ import annotations

from pathlib import Path

from app.core.errors import IngestError
from app.ingest.chunking.plain_text import chunk_plain_text
from app.ingest.chunking.tokens import TokenCounter
from app.ingest.convert.results import ConvertedDocument
from app.ingest.file_errors import read_failed

NO_TEXT = "The file has no text to index."


def convert_text_file(path: Path, counter: TokenCounter, max_tokens: int) -> ConvertedDocument:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise read_failed(exc) from None
    text = decode_text(raw)
    if text is None:
        raise IngestError(
            "The file looks binary, not text; Fathom cannot read it.",
            "If it is a document, save it as PDF, DOCX or text.",
        )
    pieces = chunk_plain_text(text, counter, max_tokens)
    if not pieces:
        raise IngestError(NO_TEXT)
    return ConvertedDocument(title=path.name, pieces=tuple(pieces))


def decode_text(raw: bytes) -> str | None:
    """UTF-8 (with or without BOM), else UTF-16 with BOM, else the encoding
    charset-normalizer finds; None for binary data."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if b"\x00" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(raw).best()
    if best is None:
        return None
    return str(best)
