"""Why files were skipped, in a few words: the ingest summaries of the window and
of ``fathom ingest`` say "5 skipped (not a format Fathom reads)" rather than a bare
count. The full reason of each file stays in its ``FileDone`` event.

The kinds follow the sentences :mod:`app.ingest.scan` and the ingest pipeline
write; a reason none of them matches counts as "other reasons".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from app.ingest.file_errors import EMPTY_FILE

# (what the reason starts with or contains, the kind) — the first match wins
_KINDS: tuple[tuple[str, str], ...] = (
    ("Fathom does not read", "not a format Fathom reads"),
    ("which is not installed on this computer", "needs software not installed"),
    ("read by OCR, which is turned off", "OCR turned off"),
    ("The folder is not there, or empty", "folder offline"),
    ("Hidden ", "hidden"),
    (EMPTY_FILE, "empty"),
    ("Same content as", "a duplicate"),
    ("MB limit", "too large"),
    ("Not a regular file", "not a regular file"),
    ("not valid UTF-8", "name not readable"),
    ("symbolic link loop", "a link loop"),
    ("points outside the folder", "a link outside the folder"),
    ("The same file as", "another name of a file"),
    ("symbolic link", "a broken link"),
    ("no permission", "no permission"),
)
OTHER = "other reasons"


def skip_kind(reason: str) -> str:
    """The kind of one skip reason, in a few words."""
    for marker, kind in _KINDS:
        if reason.startswith(marker) or marker in reason:
            return kind
    return OTHER


def skipped_phrase(count: int, reasons: Iterable[str]) -> str:
    """ "5 skipped (not a format Fathom reads)", "5 skipped (3 not a format Fathom reads,
    2 hidden)", or "0 skipped"; ``reasons`` are the skipped files' reasons (may be fewer
    than ``count`` when not all were seen)."""
    kinds = Counter(skip_kind(r) for r in reasons)
    if count <= 0 or not kinds:
        return f"{count} skipped"
    if len(kinds) == 1 and next(iter(kinds.values())) == count:
        return f"{count} skipped ({next(iter(kinds))})"
    parts = [f"{n} {kind}" for kind, n in kinds.most_common()]
    return f"{count} skipped ({', '.join(parts)})"
