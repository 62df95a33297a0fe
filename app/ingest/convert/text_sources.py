"""What Docling reads for a text-based format (Markdown, CSV, AsciiDoc, HTML): the file
itself when it is UTF-8 or, for HTML, says its encoding; otherwise its text decoded as
Fathom decodes plain text (:func:`decode_text`), handed over as UTF-8.

Docling decodes Markdown, CSV and AsciiDoc as UTF-8 and then Windows-1252 only, so a CSV
from a Czech Excel was refused ("neither UTF-8 nor cp1252"); HTML with no declared
encoding went to charset-normalizer's first guess ("père" as "pčre")."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from app.core.errors import IngestError
from app.ingest.convert.text_files import NOT_TEXT, decode_text

# Markdown's own (.md, .markdown) go through markdown_front_matter, which decodes the same way;
# a CSV is read by csv_files unless Docling's reader is asked for (the tests' reference).
TEXT_SUFFIXES = frozenset(
    {".qmd", ".rmd", ".csv", ".adoc", ".asciidoc", ".asc", ".html", ".htm", ".xhtml"}
)
_HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})


def read_text(raw: bytes) -> str:
    """``raw`` decoded; IngestError (in a sentence) for binary data."""
    text = decode_text(raw)
    if text is None:
        raise IngestError(*NOT_TEXT)
    return text


def text_source(path: Path) -> Any:
    """``path`` when Docling reads it right as it is, else its text as a UTF-8 stream
    (a ``DocumentStream`` named as the file). IngestError for binary data."""
    raw = path.read_bytes()
    if is_utf8(raw) or (path.suffix.lower() in _HTML_SUFFIXES and declares_encoding(raw)):
        return path
    return utf8_stream(path.name, read_text(raw))


def is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def declares_encoding(raw: bytes) -> bool:
    """Whether an HTML file names its encoding (a byte-order mark, ``<meta charset>``, or
    an XML declaration), which its parser then follows."""
    from bs4.dammit import EncodingDetector

    if raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return True
    return EncodingDetector.find_declared_encoding(raw[:65536], is_html=True) is not None


def utf8_stream(name: str, text: str) -> Any:
    from docling.datamodel.base_models import DocumentStream

    return DocumentStream(name=name, stream=io.BytesIO(text.encode("utf-8")))
