"""Which files need work: content hashes (trusted from the catalog while size and
time match), unchanged files, duplicates of a file already indexed, and documents
whose file left the disk."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TypeGuard

from app.core.models import Document, DocumentStatus
from app.ingest.convert.limits import gave_up_on
from app.ingest.paths import display_path, is_under
from app.ingest.regular_files import open_regular
from app.ingest.scan import ScannedFile, ScanResult

HASH_BLOCK = 1 << 20


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(
        path
    ) as handle:  # a file swapped for a pipe since the scan: said, not waited on
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def looks_unchanged(scanned_file: ScannedFile, previous: Document | None) -> bool:
    """Indexed before with the same size and time: its recorded hash is trusted."""
    return (
        previous is not None
        and previous.status is DocumentStatus.INDEXED
        and previous.size == scanned_file.size
        and previous.mtime == scanned_file.mtime
        and bool(previous.content_hash)
    )


def content_hash_of(scanned_file: ScannedFile, previous: Document | None) -> str:
    """The recorded hash of an indexed file with the same size and time, else a fresh one."""
    if looks_unchanged(scanned_file, previous):
        assert previous is not None
        return previous.content_hash
    return file_hash(scanned_file.path)


def is_unchanged(previous: Document | None, content_hash: str) -> TypeGuard[Document]:
    """Indexed before with this very content: nothing to redo."""
    return (
        previous is not None
        and previous.status is DocumentStatus.INDEXED
        and previous.content_hash == content_hash
    )


def given_up_before(previous: Document | None, content_hash: str) -> TypeGuard[Document]:
    """The converter gave up on this very content before (killed past a limit, or
    crashed): not read again until it changes or the user asks."""
    return (
        previous is not None
        and previous.status is DocumentStatus.FAILED
        and previous.content_hash == content_hash
        and gave_up_on(previous.error)
    )


def duplicate_of(
    content_hash: str, path: str, known: dict[str, Document], claimed: dict[str, str]
) -> str | None:
    """Another path with this content, claimed in this run or indexed and still on disk."""
    other = claimed.get(content_hash)
    if other is not None and other != path:
        return other
    for doc in known.values():
        if (
            doc.content_hash == content_hash
            and doc.path != path
            and doc.status is DocumentStatus.INDEXED
            and os.path.exists(doc.path)
        ):
            return doc.path
    return None


OFFLINE = (
    "The folder is not there, or empty: an unplugged drive or an offline network share? "
    "Its documents are kept, and the next scan after it is back picks up what changed."
)


def offline_roots(known: dict[str, Document], scanned: ScanResult, roots: list[Path]) -> list[Path]:
    """Roots whose documents must not be taken for deleted: a folder that is not there
    (a drive unplugged, a share offline) or that shows nothing at all (an empty mount
    point), while the catalog holds documents under it."""
    seen = [display_path(f.path) for f in scanned.files] + [s.path for s in scanned.skipped]
    offline = []
    for root in roots:
        text = display_path(root)
        if not any(is_under(path, text) and path != text for path in known):
            continue  # nothing indexed under it: nothing to keep
        if not os.path.exists(root) or (root.is_dir() and not any(is_under(p, text) for p in seen)):
            offline.append(root)
    return offline


def gone_documents(
    known: dict[str, Document], scanned: ScanResult, roots: list[Path]
) -> list[Document]:
    """Documents under one of ``roots`` that the scan no longer found."""
    seen = {display_path(f.path) for f in scanned.files} | {s.path for s in scanned.skipped}
    root_texts = [display_path(r) for r in roots]
    return [
        doc
        for path, doc in known.items()
        if path not in seen and any(is_under(path, root) for root in root_texts)
    ]
