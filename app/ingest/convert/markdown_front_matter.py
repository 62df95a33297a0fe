"""Markdown's YAML front matter kept out of the chunks; its ``title:`` kept as the title."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from app.ingest.convert.text_files import decode_text

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def markdown_source(path: Path) -> tuple[Any, str, str]:
    """Markdown without its YAML front matter (kept out of the chunks), the front
    matter, and its title if it has one."""
    raw = path.read_bytes()
    text = decode_text(raw)
    if text is None:
        return path, "", ""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return path, "", ""
    from docling.datamodel.base_models import DocumentStream

    title_match = _FRONT_TITLE.search(match.group(1))
    title = title_match.group(1).strip().strip("'\"") if title_match else ""
    body = text[match.end() :]
    stream = DocumentStream(name=path.name, stream=io.BytesIO(body.encode("utf-8")))
    return stream, match.group(1), title[:200]
