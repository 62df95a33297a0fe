"""The export formats: their names, file suffixes and what each applies to."""

from __future__ import annotations

from pathlib import Path

REPORT_FORMATS = ("md", "html", "pdf")
TABLE_FORMATS = ("csv", "json")
FORMATS = REPORT_FORMATS + TABLE_FORMATS
TEXT_FORMATS = ("md", "html", "csv", "json")  # the ones that may go to standard output
SUFFIX = {"md": ".md", "html": ".html", "pdf": ".pdf", "csv": ".csv", "json": ".json"}
_BY_SUFFIX = {
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".csv": "csv",
    ".json": "json",
}


class ExportError(ValueError):
    """An export that cannot be made, with a sentence a person can act on."""


def format_of(path: Path | None, explicit: str | None = None) -> str:
    """The format ``explicit`` names, else the one ``path``'s suffix names."""
    if explicit:
        name = explicit.lower().lstrip(".")
        name = _BY_SUFFIX.get("." + name, name)
        if name not in FORMATS:
            raise ExportError(f"Unknown format “{explicit}”: use {', '.join(FORMATS)}.")
        return name
    suffix = path.suffix.lower() if path is not None else ""
    if suffix in _BY_SUFFIX:
        return _BY_SUFFIX[suffix]
    what = f"“{suffix}”" if suffix else "a file name without a suffix"
    raise ExportError(
        f"Cannot tell the format from {what}: name a .md, .html, .pdf, .csv or .json file."
    )
