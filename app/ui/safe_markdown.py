"""Moved to :mod:`app.export.safe_markdown` (pure text, shared with the exporter); kept
so the window's modules may still import it from here."""

from app.export.safe_markdown import code_span as code_span
from app.export.safe_markdown import neutralize_inline as neutralize_inline
from app.export.safe_markdown import neutralize_markdown as neutralize_markdown
