"""Errors a person can meet, each with a sentence they can act on.

Every error Fathom raises on purpose derives from :class:`FathomError`. Its
``str()`` is the actionable sentence shown in the window and the CLI; the
optional ``hint`` says what to do next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.core.models import Usage


class FathomError(Exception):
    """Base class: ``message`` says what happened, ``hint`` what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip()


class SettingsError(FathomError):
    """The settings file could not be read or written."""


# -- models ------------------------------------------------------------------


class ModelError(FathomError):
    """A model back end failed."""


class ModelUnavailable(ModelError):
    """The back end cannot be reached (server down, file missing)."""


class ModelNotFound(ModelError):
    """The back end is up but does not have the requested model."""


class ModelTimeout(ModelError):
    """A model call took longer than its timeout."""


class StructuredOutputError(ModelError):
    """The model's reply did not match the JSON schema, even after a repair.

    ``usage`` is what the failed attempts cost: they are counted against the
    run's token budget like any other call."""

    def __init__(self, message: str, hint: str = "", *, usage: Usage | None = None) -> None:
        super().__init__(message, hint)
        self.usage = usage


# -- store / ingest ----------------------------------------------------------


class StoreError(FathomError):
    """The vector store or catalog failed."""


class StoreLocked(StoreError):
    """Another Fathom process holds the data directory."""


class EmbeddingMismatch(StoreError):
    """A collection was built with another embedding model."""


class CollectionNotFound(StoreError):
    """No collection by that name."""


class IngestError(FathomError):
    """One file could not be converted or indexed."""


# -- research ----------------------------------------------------------------


class ResearchError(FathomError):
    """A research run could not go on."""


class BudgetExhausted(ResearchError):
    """A research budget ran out (not a failure: the run stops and reports)."""
