"""Moved to :mod:`app.export.md_fences` (pure text, shared with the exporter); kept so
the window's modules may still import it from here."""

from app.export.md_fences import Fence as Fence
from app.export.md_fences import LineKind as LineKind
from app.export.md_fences import classify as classify
from app.export.md_fences import closes as closes
from app.export.md_fences import fence_opener as fence_opener
