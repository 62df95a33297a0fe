"""How a chunk gets its page number: the first page any of its Docling items
sits on (Docling's provenance, 1-based); None where the format has no pages."""

from __future__ import annotations

from typing import Any


def page_of(chunk: Any) -> int | None:
    """The page of a Docling chunk's first item that records one."""
    for item in chunk.meta.doc_items:
        for prov in getattr(item, "prov", None) or ():
            page = getattr(prov, "page_no", None)
            if isinstance(page, int) and page > 0:
                return page
    return None
