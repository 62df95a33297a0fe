"""The usual bad inputs caught before a parser sees them (an empty or unreadable
file, random bytes named ``.pdf``, a truncated or encrypted PDF, an Office name on
a file that is no zip package), each turned into a sentence a person can act on."""

from __future__ import annotations

from pathlib import Path

from app.core.errors import IngestError
from app.ingest.docling_formats import docling_suffixes
from app.ingest.file_errors import EMPTY_FILE, unreadable
from app.ingest.regular_files import open_regular

# Docling formats whose files are zip packages, and what to call them
ZIP_FORMATS = {
    "docx": "an Office document",
    "pptx": "an Office document",
    "xlsx": "an Office document",
    "odt": "an OpenDocument file",
    "ods": "an OpenDocument file",
    "odp": "an OpenDocument file",
    "epub": "an EPUB book",
}


def read_head(path: Path) -> bytes:
    """The file's first 4 KiB; IngestError when it cannot be read or is empty."""
    try:
        with open_regular(
            path
        ) as handle:  # a file swapped for a pipe since the scan: said, not waited on
            head = handle.read(4096)
    except IsADirectoryError:
        raise IngestError("This is a folder, not a file.") from None
    except OSError as exc:
        raise unreadable(exc) from None
    if not head:
        raise IngestError(EMPTY_FILE)
    return head


def check_document(path: Path, head: bytes) -> None:
    """A PDF, Office, OpenDocument or EPUB file that is not what its name says, said before Docling sees it."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        _check_pdf(path, head)
        return
    fmt = docling_suffixes().get(suffix)
    what = ZIP_FORMATS.get(fmt.name) if fmt else None
    if what and not head.startswith(b"PK"):
        raise IngestError(
            f"This file is named {suffix} but is not {what} (it is not a zip package).",
            "It may be damaged, or an older format saved under a new name; open and re-save it.",
        )


def _check_pdf(path: Path, head: bytes) -> None:
    """Turn pdfium's verdict into a sentence before Docling sees the file."""
    if b"%PDF-" not in head[:1024]:
        raise IngestError(
            "This file is named .pdf but is not a PDF (it does not start with %PDF-).",
            "It may be damaged or another kind of file; open it to check.",
        )
    import pypdfium2

    try:
        document = pypdfium2.PdfDocument(str(path))
    except pypdfium2.PdfiumError as exc:
        message = str(exc).lower()
        if "password" in message:
            raise IngestError(
                "The PDF is encrypted; Fathom cannot read password-protected files.",
                "Save an unprotected copy and add that instead.",
            ) from None
        if _looks_truncated(path):
            raise IngestError(
                "The PDF is damaged or incomplete (it ends before the end of the file).",
                "Download or copy it again.",
            ) from None
        raise IngestError(f"The PDF is damaged and cannot be opened ({exc}).") from None
    try:
        if len(document) == 0:
            raise IngestError("The PDF has no pages.")
    finally:
        document.close()


def _looks_truncated(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - 2048))
            tail = handle.read()
    except OSError:
        return False
    return b"%%EOF" not in tail
