"""Which files Fathom reads, and how: as plain text (text and code, listed here) or
by Docling (every format the installed Docling reads: ``app.ingest.docling_formats``).

The scan skips what neither reads, saying why, and the converter picks its reader
by the same answer.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal

from app.ingest.docling_formats import (
    docling_formats,
    docling_suffixes,
    image_suffixes,
    not_read_reasons,
)

TEXT_SUFFIXES: frozenset[str] = frozenset(
    {
        ".txt",
        ".text",
        ".rst",
        ".log",
        ".org",
        ".tex",
        ".bib",
        ".srt",
        ".vtt",
        ".json",
        ".jsonl",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".env.example",
        ".properties",
        ".xml",
        ".svg",
        ".py",
        ".pyi",
        ".ipynb",
        ".r",
        ".jl",
        ".m",
        ".js",
        ".mjs",
        ".cjs",
        ".jsx",
        ".ts",
        ".tsx",
        ".vue",
        ".svelte",
        ".css",
        ".scss",
        ".less",
        ".java",
        ".kt",
        ".kts",
        ".scala",
        ".groovy",
        ".go",
        ".rs",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".cxx",
        ".hpp",
        ".hh",
        ".cs",
        ".fs",
        ".swift",
        ".rb",
        ".php",
        ".pl",
        ".pm",
        ".lua",
        ".dart",
        ".ex",
        ".exs",
        ".erl",
        ".hs",
        ".ml",
        ".clj",
        ".elm",
        ".zig",
        ".nim",
        ".v",
        ".sv",
        ".vhd",
        ".sh",
        ".bash",
        ".zsh",
        ".fish",
        ".ps1",
        ".bat",
        ".cmd",
        ".sql",
        ".graphql",
        ".proto",
        ".gradle",
        ".cmake",
        ".mk",
        ".nix",
        ".dockerfile",
        ".tf",
        ".hcl",
    }
)

TEXT_NAMES: frozenset[str] = frozenset(
    {
        "license",
        "licence",
        "readme",
        "copying",
        "notice",
        "authors",
        "changelog",
        "makefile",
        "dockerfile",
    }
)

FileKind = Literal["docling", "text", "image", "mail"]

# read by Fathom itself (app/ingest/convert/mail_files.py): messages, archives message by message
MAIL_SUFFIXES = frozenset({".eml", ".msg", ".mbox"})


def file_kind(path: Path) -> FileKind | None:
    """How a file is read, or None when Fathom does not read this type."""
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES or path.name.lower() in TEXT_NAMES:
        return "text"
    if suffix in MAIL_SUFFIXES:
        return "mail"
    if suffix in docling_suffixes():
        return "docling"
    if suffix in image_suffixes():
        return "image"
    return None


def why_not_read(path: Path, *, ocr: bool = True) -> str | None:
    """Why Fathom skips this file (a sentence to show), or None when it reads it.
    ``ocr``: whether OCR is on (images are read only with it)."""
    suffix = path.suffix.lower()
    kind = file_kind(path)
    if kind == "text":
        return None
    if kind == "mail":
        if suffix == ".msg" and importlib.util.find_spec("oxmsg") is None:
            return (
                "Reading .msg files needs the python-oxmsg package, which is not installed. "
                "Install it, then re-scan the collection."
            )
        return None
    if kind == "image":
        if ocr:
            return None
        return f"Images ({suffix}) are read by OCR, which is turned off in Settings (Indexing)."
    if kind == "docling":
        fmt = docling_suffixes()[suffix]
        if fmt.missing:
            return f"{fmt.missing_sentence(suffix)} Install it, then re-scan the collection."
        return None
    shown = suffix or path.name
    reason = not_read_reasons().get(suffix)
    if reason:
        return f"Fathom does not read '{shown}' files. {reason[0].upper()}{reason[1:]}."
    return f"Fathom does not read '{shown}' files. {supported_types_sentence()}"


def supported_types_sentence() -> str:
    kinds = [fmt.suffixes[0].lstrip(".") for fmt in docling_formats() if not fmt.missing]
    return (
        f"Fathom reads {', '.join(kinds)} (and their variants), images (OCR), mail (eml, msg, mbox), "
        "plain text and source code."
    )
