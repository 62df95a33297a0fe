"""The sentences for a file that cannot be read or converted, shared by the
pipeline (which reads files to hash them) and the converters."""

from __future__ import annotations

from app.core.errors import IngestError

EMPTY_FILE = "The file is empty; there is nothing to index."


def read_failed(exc: OSError) -> IngestError:
    return IngestError(f"The file could not be read ({exc.strerror or exc}).")


def unreadable(exc: OSError) -> IngestError:
    """Why reading a file failed: no permission (with what to do), or the system's reason."""
    if isinstance(exc, PermissionError):
        return IngestError(
            "Fathom has no permission to read this file.",
            "Change its permissions or copy it elsewhere.",
        )
    return read_failed(exc)


def short_error(exc: BaseException) -> str:
    """An exception's first line (its type when it has no message), at most 300 characters,
    without a closing full stop (the sentence it goes into ends with its own)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300].rstrip(".")
