"""Write an exported file the way a user's own files are written.

Through a temporary file in the same folder, renamed over the target, so a
reader never sees half a file; with the permissions the user's umask gives a
new file (``0666 & ~umask``, usually 0644) rather than the 0600 that
temporary files (and the settings) get.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the OS allows."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # os.umask can only be read by setting it
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def write_export(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically with the user's normal permissions; returns ``path``.

    Raises OSError (a missing or read-only folder, a full disk, a directory in the way)."""
    for folder in (path.parent, *path.parent.parents):
        if folder.exists():
            if not folder.is_dir():
                raise NotADirectoryError(20, f"{folder} is a file, not a folder", str(path))
            break
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise IsADirectoryError(21, "it is a folder", str(path))
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o666 & ~current_umask())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return path
