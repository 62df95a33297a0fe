"""Fathom: deep research over your own documents, fully offline."""

__version__ = "0.1.0"
