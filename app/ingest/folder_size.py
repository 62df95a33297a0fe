"""How much a drop would index, counted before it starts: the window asks before a home
folder, a whole disk or a folder of thousands of files is indexed (a folder picker's
Enter once indexed a parent folder nobody meant to add)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ASK_ABOVE_FILES = 3_000  # more files than this in one drop: ask first
COUNT_LIMIT = 100_000  # counting stops here ("more than 100,000")


@dataclass(frozen=True)
class DropSize:
    files: int  # counted, at most COUNT_LIMIT + 1
    broad: Path | None = None  # a home folder or a disk's root among what was dropped

    @property
    def worth_asking(self) -> bool:
        return self.broad is not None or self.files > ASK_ABOVE_FILES

    def what(self, paths: Sequence[Path]) -> str:
        """What was dropped, as the question before indexing names it."""
        if self.broad is None:
            return str(paths[0]) if len(paths) == 1 else f"these {len(paths)} folders and files"
        if self.broad == Path(self.broad.anchor):
            return f"the whole disk {self.broad}"
        return f"your home folder {self.broad}"

    def said(self) -> str:
        """The files in words: "12,345 files", "more than 100,000 files"."""
        if self.files > COUNT_LIMIT:
            return f"more than {COUNT_LIMIT:,} files"
        return f"{self.files:,} file" + ("" if self.files == 1 else "s")


def is_broad(path: Path) -> bool:
    """Whether ``path`` is the user's home folder, another home beside it (``/home/bob``)
    or a disk's root; with a home at the top of a disk (``/root``) every top-level folder
    is not a home."""
    real = Path(os.path.realpath(path))
    home = Path(os.path.realpath(Path.home()))
    homes = home.parent if home.parent != Path(home.anchor) else None
    return real in (home, Path(real.anchor)) or (homes is not None and real.parent == homes)


def drop_size(paths: Sequence[Path]) -> DropSize:
    """The files in ``paths`` (hidden folders left out, as the scan leaves them), counted up
    to :data:`COUNT_LIMIT` + 1, and the first broad folder among them."""
    broad = next((p for p in paths if p.is_dir() and is_broad(p)), None)
    files = 0
    for path in paths:
        if not path.is_dir():
            files += 1
            continue
        for _root, folders, names in os.walk(path):
            folders[:] = [f for f in folders if not f.startswith(".")]
            files += sum(1 for n in names if not n.startswith("."))
            if files > COUNT_LIMIT:
                return DropSize(files, broad)
    return DropSize(files, broad)
