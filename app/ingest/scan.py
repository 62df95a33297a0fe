"""Folders and files in, the files to index out, and a reason for every file left out.

Hidden files and folders, symlink loops, files over the size limit, file types
Fathom does not read, and names that are not valid UTF-8 are skipped, each
with a sentence. Fathom's own folders (its data, settings and cache, and any other
Fathom library's data folder) are never indexed, wherever they sit in what was given.
The walk follows symbolic links that stay inside the folder given (a link to a folder
or file elsewhere is skipped, with a sentence, unless the setting to follow them is on)
and never enters a folder twice, so a link that points back up the tree cannot loop.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.core.paths import app_paths
from app.ingest.file_types import why_not_read
from app.ingest.paths import absolute, display_path


@dataclass(frozen=True)
class ScannedFile:
    path: Path  # absolute, symlinks in the folder path kept as given
    size: int
    mtime: float


@dataclass(frozen=True)
class Skipped:
    path: str  # printable (an undecodable name is shown with escapes)
    reason: str


@dataclass
class ScanResult:
    files: list[ScannedFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def is_valid_name(path: Path) -> bool:
    try:
        str(path).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


@dataclass(frozen=True)
class _Rules:
    limit: int  # bytes: larger files are skipped
    ocr: bool  # images are read (by OCR) only when it is on
    own: tuple[Path, ...] = ()  # Fathom's own folders: never indexed
    links_outside: bool = False  # follow symbolic links that point outside the folder given


LINK_OUTSIDE = (
    "A symbolic link that points outside the folder being indexed; not followed (turn on "
    "'Follow links outside the folder' in Settings to read what it points to)."
)
OWN_FOLDER = "Fathom's own data, settings or cache: never indexed."
# a folder holding these is a Fathom library's data folder (this one's or another's)
_LIBRARY_MARKS = (("fathom.lock",), ("catalog.sqlite", "milvus.db"))


def own_folders() -> list[Path]:
    """The folders Fathom writes to, in force now."""
    paths = app_paths()
    return [Path(os.path.realpath(p)) for p in (paths.data_dir, paths.config_dir, paths.cache_dir)]


def is_own(path: Path, own: Sequence[Path]) -> bool:
    """Whether ``path`` is (inside) one of Fathom's ``own`` folders, or a library's data folder."""
    real = Path(os.path.realpath(path))
    if any(real == folder or folder in real.parents for folder in own):
        return True
    return real.is_dir() and any(
        all((real / name).exists() for name in mark) for mark in _LIBRARY_MARKS
    )


def scan(
    paths: Sequence[Path], max_file_mb: float, *, ocr: bool = True, links_outside: bool = False
) -> ScanResult:
    """Walk ``paths`` (files or folders); the files to index, sorted, each once. A
    symbolic link in a folder that points outside it is followed only with ``links_outside``."""
    result = ScanResult()
    rules = _Rules(
        limit=int(max_file_mb * 1024 * 1024),
        ocr=ocr,
        own=tuple(own_folders()),
        links_outside=links_outside,
    )
    seen_files: dict[tuple[int, int], Path] = {}
    seen_dirs: set[tuple[int, int]] = set()
    for given in paths:
        root = absolute(given)
        info = _stat(root, result)
        if info is None:
            continue
        if is_own(root, rules.own):
            result.skipped.append(Skipped(display_path(root), OWN_FOLDER))
            continue
        if stat.S_ISDIR(info.st_mode):
            _walk(root, result, rules, seen_files, seen_dirs)
        else:
            _consider_file(root, info, result, rules, seen_files)
    result.files.sort(key=lambda f: os.fsencode(f.path))
    result.skipped.sort(key=lambda s: s.path)
    return result


def _walk(
    root: Path,
    result: ScanResult,
    rules: _Rules,
    seen_files: dict[tuple[int, int], Path],
    seen_dirs: set[tuple[int, int]],
) -> None:
    stack = [root]
    real_root = Path(os.path.realpath(root))
    while stack:
        folder = stack.pop()
        info = _stat(folder, result)
        if info is None:
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen_dirs:
            if folder.is_symlink():
                result.skipped.append(
                    Skipped(
                        display_path(folder),
                        "A symbolic link loop: this folder was already scanned.",
                    )
                )
            continue
        seen_dirs.add(key)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: os.fsencode(e.name))
        except PermissionError:
            result.skipped.append(
                Skipped(display_path(folder), "Fathom has no permission to open this folder.")
            )
            continue
        except OSError as exc:
            result.skipped.append(
                Skipped(display_path(folder), f"The folder could not be read ({exc.strerror}).")
            )
            continue
        subfolders = []
        for entry in entries:
            path = folder / entry.name
            if entry.name.startswith("."):
                kind = "folder" if _is_dir(entry) else "file"
                result.skipped.append(
                    Skipped(display_path(path), f"Hidden {kind}; Fathom skips hidden items.")
                )
                continue
            entry_info = _stat(path, result)
            if entry_info is None:
                continue
            if not rules.links_outside and entry.is_symlink() and not _inside(path, real_root):
                result.skipped.append(Skipped(display_path(path), LINK_OUTSIDE))
                continue
            if stat.S_ISDIR(entry_info.st_mode):
                if is_own(path, rules.own):
                    result.skipped.append(Skipped(display_path(path), OWN_FOLDER))
                    continue
                subfolders.append(path)
            elif stat.S_ISREG(entry_info.st_mode):
                _consider_file(path, entry_info, result, rules, seen_files)
            else:
                result.skipped.append(
                    Skipped(
                        display_path(path),
                        "Not a regular file (a device, pipe or socket); Fathom skips it.",
                    )
                )
        stack.extend(reversed(subfolders))


def _inside(link: Path, real_root: Path) -> bool:
    """Whether what ``link`` points to (followed to the end) is ``real_root`` or inside it."""
    target = Path(os.path.realpath(link))
    return target == real_root or real_root in target.parents


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _consider_file(
    path: Path,
    info: os.stat_result,
    result: ScanResult,
    rules: _Rules,
    seen_files: dict[tuple[int, int], Path],
) -> None:
    if not stat.S_ISREG(info.st_mode):
        result.skipped.append(Skipped(display_path(path), "Not a regular file; Fathom skips it."))
        return
    if not is_valid_name(path):
        result.skipped.append(
            Skipped(
                display_path(path),
                "The file name is not valid UTF-8, so Fathom cannot record it; rename the file to add it.",
            )
        )
        return
    not_read = why_not_read(path, ocr=rules.ocr)
    if not_read is not None:
        result.skipped.append(Skipped(display_path(path), not_read))
        return
    if info.st_size > rules.limit:
        size_mb = info.st_size / (1024 * 1024)
        result.skipped.append(
            Skipped(
                display_path(path),
                f"The file is {size_mb:.0f} MB, over the {rules.limit // (1024 * 1024)} MB limit "
                "(raise ingest.max_file_mb in Settings to include it).",
            )
        )
        return
    # the same file under another name (a hard or symbolic link), checked only now: the
    # name Fathom can read wins, whichever sorts first (a link named .dat hid its .txt)
    key = (info.st_dev, info.st_ino)
    first = seen_files.get(key)
    if first is not None:
        if first != path:  # (the same path given twice is simply taken once)
            result.skipped.append(
                Skipped(
                    display_path(path), f"The same file as {display_path(first)}; indexed once."
                )
            )
        return
    seen_files[key] = path
    result.files.append(ScannedFile(path=path, size=info.st_size, mtime=info.st_mtime))


def _stat(path: Path, result: ScanResult) -> os.stat_result | None:
    """``os.stat`` (it follows symlinks); None, with the reason recorded, when that fails."""
    try:
        return os.stat(path)
    except OSError as exc:
        result.skipped.append(Skipped(display_path(path), _stat_reason(exc, path)))
        return None


def _stat_reason(exc: OSError, path: Path) -> str:
    if exc.errno == errno.ELOOP:
        return "A symbolic link loop: the link points back to itself."
    if exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return "A broken symbolic link: its target does not exist."
        return "The path does not exist."
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "Fathom has no permission to read this."
    return f"The path could not be read ({exc.strerror})."
