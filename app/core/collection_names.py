"""A collection's name as the user sees it, and the spellings that mean it.

The window names a collection after what was dropped on it ("Project Notes" →
``project_notes``, ``milvus-docs`` → ``milvus_docs``); ``fathom ingest FOLDER`` without
``--collection`` names it the same way. Wherever a name is typed, the spelling of the
folder is accepted too: ``fathom ask -c milvus-docs`` asks ``milvus_docs``
(:func:`resolve`), so the window and the command line share one vocabulary.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

MAX_DERIVED = 60  # characters of a name made from a folder or file name


def key(name: str) -> str:
    """What a name is matched by: accents folded, lower case, every run of other
    characters than letters and digits one underscore ("Milvus Docs", ``milvus-docs``
    and ``milvus_docs`` are one name)."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii") or name
    return re.sub(r"[^A-Za-z0-9]+", "_", folded).strip("_").lower()


def name_for(paths: Sequence[Path]) -> str:
    """A collection name from what was dropped or given: the first folder's name; for
    one file, the file's own name (its stem); for several files, their folder's name;
    else ``documents``."""
    folder = next((path for path in paths if path.is_dir()), None)
    if folder is not None:
        base = folder.resolve().name if folder.name in ("", ".", "..") else folder.name
    elif len(paths) == 1:
        base = paths[0].stem
    else:
        base = paths[0].resolve().parent.name if paths else "documents"
    name = re.sub(r"[^A-Za-z0-9_]+", "_", base).strip("_").lower() or "documents"
    if name[0].isdigit():
        name = f"c_{name}"
    return name[:MAX_DERIVED]


def resolve(name: str, existing: Iterable[str]) -> str:
    """The existing collection ``name`` means: itself when it exists, else the one
    existing name it matches by :func:`key` (``milvus-docs`` → ``milvus_docs``); else
    ``name`` unchanged (a new collection, or a clear "no collection named" later)."""
    names = list(existing)
    if name in names:
        return name
    matches = [n for n in names if key(n) == key(name)]
    return matches[0] if len(matches) == 1 else name


def no_such_collection(missing: Sequence[str], known: Iterable[str]) -> str:
    """The one sentence for names that are no collection, with the collections there are
    (the search, the research run and the commands say it alike)."""
    listing = ", ".join(sorted(known)) or "none yet"
    if len(missing) == 1:
        return f"There is no collection named '{missing[0]}' (collections: {listing})."
    names = ", ".join(f"'{name}'" for name in missing)
    return f"There are no collections named {names} (collections: {listing})."
