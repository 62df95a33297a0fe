"""Fathom's folders are its user's alone: the data folder holds every passage of every
document (``milvus.db``) and every question and answer (``catalog.sqlite``). Folders are
made 0700 and files 0600 whatever the umask; a library made before is tightened when it
is opened, and said once (issue 36). Exports are left as the user's umask makes them."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600
OTHERS = stat.S_IRWXG | stat.S_IRWXO  # what group and other users may do


def private_folder(folder: Path) -> bool:
    """Create ``folder`` (and its parents) if missing and make it 0700; whether it was open to others."""
    folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
    return _tighten(folder, PRIVATE_FOLDER)


def make_private(folders: Sequence[Path], *, except_under: Sequence[Path] = ()) -> int:
    """Make ``folders`` and everything in them private (folders 0700, files 0600), except
    under ``except_under``; how many were open to other users. Links are not followed."""
    # permissions there are ACLs, private to the user under their profile
    if sys.platform == "win32":
        return 0
    kept = {str(p) for p in except_under}
    opened = 0
    for folder in folders:
        if not folder.is_dir():
            continue
        opened += _tighten(folder, PRIVATE_FOLDER)
        for root, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in kept]
            for name in dirs:
                opened += _tighten(Path(root, name), PRIVATE_FOLDER)
            for name in files:
                opened += _tighten(Path(root, name), PRIVATE_FILE)
    return opened


def _tighten(path: Path, mode: int) -> bool:
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode) or not info.st_mode & OTHERS:
            return False
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~OTHERS & 0o7777 | (mode & stat.S_IRWXU))
        return True
    except OSError:  # not ours to change (another owner), or gone meanwhile
        return False
