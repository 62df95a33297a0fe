"""Whether a collection's folders are there: the rule a re-scan follows
(:func:`app.ingest.pipeline.change_detection.offline_roots`), looked at without a scan,
for the watcher's periodic look and the window's mark on a collection.

A folder is *not there* when it is missing, cannot be read, or shows nothing (no
entry that is not hidden: an empty mount point, a drive unplugged under it). It is
*offline* when, besides, the catalog keeps documents under it: they are kept, not
taken for deleted. One look is an ``os.stat`` and the first entries of a folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from app.ingest.paths import display_path, is_under


def not_there(root: Path) -> bool:
    """``root`` is missing, unreadable, or a folder with nothing but hidden entries in it."""
    try:
        if not root.is_dir():
            return not root.exists()
        with os.scandir(root) as entries:
            return not any(not entry.name.startswith(".") for entry in entries)
    except OSError:  # no permission, a share gone stale: nothing the scan could read either
        return True


def offline_among(roots: Sequence[Path], documents: Iterable[str]) -> list[Path]:
    """The ``roots`` that are not there while some of ``documents`` (paths, as the
    catalog keeps them) lie under them."""
    paths = list(documents)
    offline = []
    for root in roots:
        text = display_path(root)
        if any(is_under(path, text) and path != text for path in paths) and not_there(root):
            offline.append(root)
    return offline


def offline_sentence(folders: Sequence[Path]) -> str:
    """What a user is told of offline folders (one or several), in two sentences."""
    names = [display_path(f) for f in folders]
    if len(names) == 1:
        return (
            f"The folder {names[0]} is not there (an unplugged drive or an offline network share?). "
            "Its documents are kept and searchable; Fathom picks the folder up again when it is back."
        )
    return (
        f"The folders {', '.join(names[:-1])} and {names[-1]} are not there (an unplugged drive or an offline "
        "network share?). Their documents are kept and searchable; Fathom picks each folder up again when it is back."
    )
