"""Which files Fathom reads, and how: by Docling (documents) or as plain text (text and code).

The one list of suffixes and names; the scan skips what is not on it, and the
converter picks its reader by it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

# suffix -> Docling input format name
DOCLING_SUFFIXES: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "md",
    ".markdown": "md",
    ".csv": "csv",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
}

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
    {"license", "licence", "readme", "copying", "notice", "authors", "changelog", "makefile", "dockerfile"}
)

FileKind = Literal["docling", "text"]


def file_kind(path: Path) -> FileKind | None:
    """How a file is read, or None when Fathom does not read this type."""
    suffix = path.suffix.lower()
    if suffix in DOCLING_SUFFIXES:
        return "docling"
    if suffix in TEXT_SUFFIXES or path.name.lower() in TEXT_NAMES:
        return "text"
    return None


def supported_types_sentence() -> str:
    kinds = sorted({s.lstrip(".") for s in DOCLING_SUFFIXES})
    return f"Fathom reads {', '.join(kinds)}, plain text and source code."
