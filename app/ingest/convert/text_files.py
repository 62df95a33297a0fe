"""Plain text and source code files read into chunk pieces: bytes decoded
(UTF-8, UTF-16 or UTF-32 with a byte-order mark, or what charset-normalizer finds),
binary data refused."""

from __future__ import annotations

import codecs
import locale
from functools import cache
from pathlib import Path

from app.core.errors import IngestError
from app.ingest.chunking.plain_text import chunk_plain_text
from app.ingest.chunking.tokens import TokenCounter
from app.ingest.convert.results import ConvertedDocument
from app.ingest.file_errors import read_failed

NO_TEXT = "The file has no text to index."
NOT_TEXT = (
    "The file looks binary, not text; Fathom cannot read it.",
    "If it is a document, save it as PDF, DOCX or text.",
)

# Byte-order marks, UTF-32's first: its little-endian mark starts with UTF-16's.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def convert_text_file(path: Path, counter: TokenCounter, max_tokens: int) -> ConvertedDocument:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise read_failed(exc) from None
    text = decode_text(raw)
    if text is None:
        raise IngestError(*NOT_TEXT)
    pieces = chunk_plain_text(text, counter, max_tokens)
    if not pieces:
        raise IngestError(NO_TEXT)
    return ConvertedDocument(title=path.name, pieces=tuple(pieces))


def decode_text(raw: bytes) -> str | None:
    """UTF-8 (with or without BOM), else UTF-16 or UTF-32 with BOM, else the encoding
    charset-normalizer finds; None for binary data."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(encoding)
            except UnicodeDecodeError:
                return None
    if b"\x00" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = from_bytes(raw)
    best = matches.best()
    if best is None:
        return None
    # On short or lightly accented text charset-normalizer often finds several code pages
    # exactly as likely and takes the first: French in Windows-1252 came out of Windows-1250
    # ("père" as "pčre"), "Café crème." as Urdu. Among those tied with the best, the
    # commonest legacy encoding of documents wins.
    tied = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    for preferred in preferred_legacy_encodings():
        for match in tied:
            if preferred in {_codec_name(name) for name in match.could_be_from_charset}:
                return str(match)
    return str(best)


@cache
def preferred_legacy_encodings() -> tuple[str, ...]:
    """The code pages a text file that is not UTF-8 most likely uses, first first: the
    system's own where it has one that is not UTF-8 (Windows' ANSI code page), then
    Windows-1252 (Western European), the commonest."""
    system = _codec_name(locale.getencoding())
    first = (system,) if system not in {"utf-8", "ascii", ""} else ()
    return tuple(dict.fromkeys((*first, "cp1252")))


def _codec_name(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return ""
