"""Model files for the model tests and benchmarks: their sha256, and links to them."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, as hex (read a megabyte at a time)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def link_model(source: Path, target: Path) -> Path:
    """A hard link of the real model at ``target`` (a copy where links are not possible)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy(source, target)
    return target
