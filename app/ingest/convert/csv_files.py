"""CSV files read by Fathom itself: the rows as a Markdown table, first row the header,
cut between rows with the header repeated — the chunks Docling's CSV reader gave, without
its memory. Docling makes an object per cell: an 80,000-row, 5.5 MB CSV took 1.9 GB and
29 s to convert, enough to stall a laptop on a large export.

The delimiter is found as Docling finds it (the first line, checked to parse as a whole
record, else a 4 KB sample, else a comma); text that is not UTF-8 is decoded as plain
text is (:func:`~app.ingest.convert.text_sources.read_text`)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from app.core.errors import IngestError
from app.ingest.chunking.inline_html import drop_inline_html
from app.ingest.chunking.piece import ChunkPiece
from app.ingest.chunking.tables import split_markdown_table, tidy_markdown_table
from app.ingest.chunking.tokens import TokenCounter
from app.ingest.convert.results import ConvertedDocument
from app.ingest.convert.text_files import NO_TEXT
from app.ingest.convert.text_sources import read_text
from app.ingest.file_errors import read_failed

DELIMITERS = ",;\t|:"
SNIFF_SAMPLE_CHARS = 4096


def convert_csv_file(path: Path, counter: TokenCounter, max_tokens: int) -> ConvertedDocument:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise read_failed(exc) from None
    rows = read_rows(read_text(raw))  # a byte-order mark is gone with the decoding
    if not any(cell.strip() for row in rows for cell in row):
        raise IngestError(NO_TEXT)
    texts = (
        text.strip() for text in split_markdown_table(markdown_table(rows), counter, max_tokens)
    )
    return ConvertedDocument(
        title=path.name, pieces=tuple(ChunkPiece(text=text, embed_text=text) for text in texts)
    )


def read_rows(text: str) -> list[list[str]]:
    """The records of ``text`` (blank lines left out); IngestError when it is not valid CSV."""
    dialect = sniff_dialect(text)
    reader = csv.reader(
        io.StringIO(text, newline=""), dialect=dialect, doublequote=True, strict=True
    )
    try:
        return [row for row in reader if row]
    except csv.Error as exc:
        raise IngestError(
            f"The CSV file could not be read: {exc} (line {reader.line_num}).",
            "Open it in a spreadsheet program to check it, or save it again as CSV.",
        ) from None


def sniff_dialect(text: str) -> type[csv.Dialect]:
    """The dialect of the first non-blank line when it parses as a whole record with it,
    else of the first 4 KB from there, else Excel's (a comma)."""
    lines = io.StringIO(text, newline="")
    head = lines.readline()
    while head in ("\n", "\r\n", "\r"):
        head = lines.readline()
    start = lines.tell() - len(head)
    sniffer = csv.Sniffer()
    try:
        dialect = sniffer.sniff(head, DELIMITERS)
        next(csv.reader([head], dialect=dialect, doublequote=True, strict=True))
        return dialect
    except (csv.Error, StopIteration):
        pass
    try:
        return sniffer.sniff(text[start : start + SNIFF_SAMPLE_CHARS], DELIMITERS)
    except csv.Error:
        return csv.excel


def markdown_table(rows: list[list[str]]) -> str:
    """``rows`` as a compact Markdown table (the first row its header), short rows
    padded, cells on one line with HTML dropped and "|" escaped."""
    width = max(len(row) for row in rows)
    lines = [_row(rows[0], width), "| " + " | ".join(["-"] * width) + " |"]
    lines.extend(_row(row, width) for row in rows[1:])
    return tidy_markdown_table("\n".join(lines))


def _row(row: list[str], width: int) -> str:
    return "| " + " | ".join(_cell(cell) for cell in [*row, *[""] * (width - len(row))]) + " |"


def _cell(text: str) -> str:
    one_line = " ".join(text.splitlines())
    return drop_inline_html(one_line, one_line=True).strip().replace("|", "\\|")
