"""The formats Fathom hands to Docling: asked of the installed Docling, not listed by hand.

Docling names its input formats and their file suffixes (``InputFormat``,
``FormatToExtensions``); every one of them is read, except where this module
says why not:

- ``NOT_OFFLINE``: formats whose conversion needs models Fathom cannot ship or
  fetch offline, or that Fathom reads another way (images: its own OCR);
- ``TEXT_FIRST``: suffixes Fathom reads as plain text itself (``.txt``,
  ``.json``, ``.xml``, ``.tex``, ``.vtt``): Docling would read them as Markdown,
  Docling JSON, patents or LaTeX and lose text that is not in that shape;
- ``EXTRAS``: what a format needs beyond Python's own packages — a program
  (LibreOffice converts the legacy Office formats) or a Python package the
  install may lack. A format whose extra is missing is still listed, with
  the sentence to say to the user for each such file.

Importing Docling takes about a second, so the table is built on first use.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from functools import cache

from app.core.serial_import import serial_import

# Docling formats Fathom does not read, and why (InputFormat values)
NOT_OFFLINE: dict[str, str] = {
    "audio": "it needs a speech-recognition model Fathom does not have offline",
    "video": "it needs a speech-recognition model Fathom does not have offline",
    "image": "Fathom reads images itself, with OCR (app/ingest/convert/ocr.py)",
    "mets_gbs": "Google Books page-scan archives come as .tar.gz, which Fathom does not unpack",
    "xml_xbrl": "it needs the arelle package (XBRL financial reports), which Fathom does not install",
    "ebcdic": "EBCDIC files need their record layout (a COBOL copybook) to be read",
    "json_docling": "Fathom reads .json files as text",
}

# suffixes Fathom reads as plain text even where a Docling format claims them
TEXT_FIRST: frozenset[str] = frozenset({".txt", ".text", ".json", ".xml", ".tex", ".vtt"})

LIBREOFFICE = ("LibreOffice", ("soffice", "libreoffice"))


@dataclass(frozen=True)
class Extra:
    """What a format needs beyond Fathom's own dependencies."""

    what: str  # named to the user: "LibreOffice"
    programs: tuple[str, ...] = ()  # any one of these on PATH
    modules: tuple[str, ...] = ()  # all of these importable

    def missing(self) -> bool:
        if self.programs and not any(shutil.which(p) for p in self.programs):
            return True
        return any(importlib.util.find_spec(m) is None for m in self.modules)


EXTRAS: dict[str, Extra] = {
    "doc": Extra("LibreOffice", programs=LIBREOFFICE[1]),
    "rtf": Extra("LibreOffice", programs=LIBREOFFICE[1]),
    "ppt": Extra("LibreOffice", programs=LIBREOFFICE[1]),
    "xls": Extra("LibreOffice", programs=LIBREOFFICE[1]),
    "email": Extra("the mail-parser and python-oxmsg packages", modules=("mailparser", "oxmsg")),
    "odt": Extra("the odfdo package", modules=("odfdo",)),
    "ods": Extra("the odfdo package", modules=("odfdo",)),
    "odp": Extra("the odfdo package", modules=("odfdo",)),
    "xml_jats": Extra("the lxml and beautifulsoup4 packages", modules=("lxml", "bs4")),
    "xml_uspto": Extra("the defusedxml package", modules=("defusedxml",)),
    "latex": Extra("the pylatexenc package", modules=("pylatexenc",)),
}


@dataclass(frozen=True)
class DoclingFormat:
    name: str  # Docling's InputFormat value: "docx", "email", ...
    suffixes: tuple[str, ...]  # with the dot, lower case
    needs: str  # what it needs beyond Fathom ("" when nothing)
    missing: bool  # whether that is missing here

    def missing_sentence(self, suffix: str) -> str:
        return (
            f"Reading {suffix} files needs {self.needs}, which is not installed on this computer."
        )


@cache
def docling_formats() -> tuple[DoclingFormat, ...]:
    """Every format Fathom reads with the installed Docling."""
    with serial_import("docling.datamodel.base_models"):
        from docling.datamodel.base_models import FormatToExtensions, InputFormat

    found = []
    for fmt in InputFormat:
        if fmt.value in NOT_OFFLINE:
            continue
        suffixes = tuple(
            dict.fromkeys(
                s for s in _suffixes(FormatToExtensions.get(fmt, [])) if s not in TEXT_FIRST
            )
        )
        if not suffixes:
            continue
        extra = EXTRAS.get(fmt.value)
        found.append(
            DoclingFormat(
                fmt.value,
                suffixes,
                extra.what if extra else "",
                extra.missing() if extra else False,
            )
        )
    return tuple(found)


@cache
def docling_suffixes() -> dict[str, DoclingFormat]:
    """suffix → the Docling format that reads it (the first format to claim a suffix keeps it)."""
    table: dict[str, DoclingFormat] = {}
    for fmt in docling_formats():
        for suffix in fmt.suffixes:
            table.setdefault(suffix, fmt)
    return table


@cache
def image_suffixes() -> frozenset[str]:
    """The image files Docling knows (``.png``, ``.jpg``, ``.tiff``, …): Fathom reads them with its own OCR."""
    with serial_import("docling.datamodel.base_models"):
        from docling.datamodel.base_models import FormatToExtensions, InputFormat

    return frozenset(_suffixes(FormatToExtensions.get(InputFormat.IMAGE, [])))


@cache
def not_read_reasons() -> dict[str, str]:
    """suffix → why Fathom does not read it, for Docling's suffixes Fathom leaves out."""
    with serial_import("docling.datamodel.base_models"):
        from docling.datamodel.base_models import FormatToExtensions, InputFormat

    reasons: dict[str, str] = {}
    for fmt in InputFormat:
        reason = NOT_OFFLINE.get(fmt.value)
        if reason is None:
            continue
        for suffix in _suffixes(FormatToExtensions.get(fmt, [])):
            if (
                suffix not in TEXT_FIRST
                and suffix not in docling_suffixes()
                and suffix not in image_suffixes()
            ):
                reasons.setdefault(suffix, reason)
    return reasons


def _suffixes(extensions: list[str]) -> list[str]:
    """Docling's extensions as ``Path.suffix`` gives them ("tar.gz" and "dclg.xml" cannot be one)."""
    return [f".{ext.lower()}" for ext in extensions if "." not in ext]
