"""Markdown's YAML front matter kept out of the chunks; its ``title:`` kept as the title.
Markdown that is not UTF-8 is decoded as plain text is (:mod:`.text_sources`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from app.ingest.convert.text_sources import is_utf8, read_text, utf8_stream

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def markdown_source(path: Path) -> tuple[Any, str, str]:
    """What Docling should read (the file itself when it is UTF-8 with no front matter, else
    its text as UTF-8 without the front matter), the front matter, and its title if it
    has one. IngestError for binary data."""
    raw = path.read_bytes()
    text = read_text(raw)
    match = _FRONT_MATTER.match(text)
    if match is None:
        return (path if is_utf8(raw) else utf8_stream(path.name, text)), "", ""
    title_match = _FRONT_TITLE.search(match.group(1))
    title = title_match.group(1).strip().strip("'\"") if title_match else ""
    return utf8_stream(path.name, text[match.end() :]), match.group(1), title[:200]
