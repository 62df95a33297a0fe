"""A Markdown table too long for one chunk, cut between rows: each piece is a
Markdown table with the header repeated; a row too wide to sit under its header
in a chunk becomes a plain line, "column: value; column: value"."""

from __future__ import annotations

import re

from app.ingest.chunking.tokens import TokenCounter

_SEPARATOR = re.compile(r"^\|(?:\s*:?-+:?\s*\|)+\s*$")
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_SPACES = re.compile(r"[ \t]{2,}")


def tidy_markdown_table(text: str) -> str:
    """Docling's Markdown table made plainer: a "|" in a cell as Markdown's "\\|"
    (Docling writes "&#124;"), and the runs of spaces a line break in a cell
    leaves, outside `code spans`, as one space."""
    text = text.replace("&#124;", "\\|")
    lines = []
    for line in text.split("\n"):
        if line.startswith("|") and "  " in line:
            kept = [m.span() for m in _CODE_SPAN.finditer(line)]
            line = _collapse_outside(line, kept)
        lines.append(line)
    return "\n".join(lines)


def _collapse_outside(line: str, kept: list[tuple[int, int]]) -> str:
    parts = []
    last = 0
    for start, end in kept:
        parts.append(_SPACES.sub(" ", line[last:start]))
        parts.append(line[start:end])
        last = end
    parts.append(_SPACES.sub(" ", line[last:]))
    return "".join(parts)


def split_markdown_table(text: str, counter: TokenCounter, limit: int) -> list[str]:
    """``text`` (a caption or preamble, then a Markdown table) in pieces of at most
    ``limit`` tokens, cut between rows; text that is not a table is cut as prose."""
    lines = text.split("\n")
    sep = next((i for i, line in enumerate(lines) if _SEPARATOR.match(line.strip())), None)
    if sep is None or sep == 0:
        return counter.split(text, limit)
    preamble = "\n".join(lines[: sep - 1]).strip()
    header = lines[sep - 1] + "\n" + lines[sep]
    names = _cells(lines[sep - 1])
    header_tokens = counter.count(header)
    pieces: list[str] = []
    rows: list[str] = []
    used = 0

    def flush() -> None:
        nonlocal rows, used
        if rows:
            pieces.append(header + "\n" + "\n".join(rows))
        rows, used = [], 0

    if preamble:
        pieces.extend(counter.split(preamble, limit))
    for row in (line for line in lines[sep + 1 :] if line.strip()):
        n = counter.count(row)
        if header_tokens + n + 1 > limit:  # too wide for a table under its header
            flush()
            plain = plain_row(names, _cells(row))
            pieces.extend([plain] if counter.count(plain) <= limit else counter.split(plain, limit))
            continue
        if rows and header_tokens + used + n + 1 > limit:
            flush()
        rows.append(row)
        used += n + 1
    flush()
    # a tokenizer that is not additive across lines may need one more cut
    return [
        p
        for piece in pieces
        for p in ([piece] if counter.count(piece) <= limit else counter.split(piece, limit))
    ]


def plain_row(names: list[str], values: list[str]) -> str:
    """One table row as a line of text: "column: value; ..." (values alone where a
    column has no name; empty cells left out)."""
    parts = []
    for i, value in enumerate(values):
        if not value:
            continue
        name = names[i] if i < len(names) else ""
        parts.append(f"{name}: {value}" if name and name != value else value)
    return "; ".join(parts)


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row, "\\|" read back as "|"."""
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _CELL_BORDER.split(inner)]
