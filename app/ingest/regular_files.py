"""Open a file only if it is a regular file: a path swapped for a named pipe (FIFO)
after the scan would otherwise block its reader for ever in ``open()`` (issue 36).
The open does not wait (``O_NONBLOCK``), the type is checked on what was opened, and
the file is then read as usual."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from app.core.errors import IngestError

NOT_REGULAR = "Not a regular file (a device, pipe or socket); Fathom skips it."


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading in binary; IngestError when it is not a regular file
    (OSError as ``open`` raises it)."""
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, os.O_RDONLY | nonblocking | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IngestError(NOT_REGULAR)
        if nonblocking:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
