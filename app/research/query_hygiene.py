"""Query hygiene: the key under which search queries count as repeats, and the
filter that keeps a model's proposed queries short, non-empty and new."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

MAX_QUERY_CHARS = 300

_PUNCT = re.compile(r"[^\w\s]")


def normalise_query(text: str) -> str:
    """Lower case, no punctuation, single spaces: the key that de-duplicates queries."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def clean_queries(candidates: Sequence[Any], seen: set[str], limit: int) -> list[str]:
    """Strings from ``candidates`` that are non-empty, not too long and not repeats of
    ``seen`` (normalised, also word-order-insensitive); adds the kept ones to ``seen``."""
    out: list[str] = []
    for item in candidates:
        if not isinstance(item, str):
            continue
        text = " ".join(item.split())[:MAX_QUERY_CHARS].strip()
        key = normalise_query(text)
        if not key:
            continue
        bag = " ".join(sorted(set(key.split())))
        if key in seen or f"bag:{bag}" in seen:
            continue
        seen.add(key)
        seen.add(f"bag:{bag}")
        out.append(text)
        if len(out) >= limit:
            break
    return out
