"""Manage the models an Ollama server holds: pull one, delete one (listing them, and
the errors every caller shares, are :mod:`app.llm.ollama_client`'s).

Each call opens its own ``ollama.AsyncClient`` and closes it before returning,
so nothing stays open between calls. A pull is cancelled by cancelling the
task that awaits :func:`pull_ollama_model`: the streaming response is closed at
once (Ollama then stops the download) and the ``CancelledError`` propagates.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Literal, cast

import httpx
import ollama

from app.core.errors import ModelError, ModelNotFound, ModelUnavailable
from app.llm.ollama_client import OLLAMA_ERRORS, ollama_client, ollama_error

PULL_CONNECT_TIMEOUT_S = 5.0
DELETE_TIMEOUT_S = 30.0

# Text in Ollama's error when it cannot reach the registry (Go's net errors).
_OFFLINE_MARKERS = (
    "dial tcp",
    "lookup ",
    "no such host",
    "connection refused",
    "network is unreachable",
    "i/o timeout",
    "tls handshake timeout",
)
# Text in Ollama's error when the registry has no such name or tag.
_MISSING_MARKERS = ("file does not exist", "manifest unknown", "not found")

_Action = Literal["pull", "delete"]


@dataclass(frozen=True)
class PullProgress:
    """One progress line of a pull; byte counts are summed over the layers seen so far."""

    status: str  # Ollama's line: "pulling manifest", "pulling <digest>", "verifying sha256 digest", "success"
    completed: int
    total: int


def _translate(exc: BaseException, host: str, action: _Action, name: str) -> ModelError:
    return ollama_error(exc, host, refused=lambda e: _refused(e, host, action, name))


def _refused(exc: ollama.ResponseError, host: str, action: _Action, name: str) -> ModelError:
    text = str(exc.error)
    lowered = text.lower()
    if action == "pull" and any(marker in lowered for marker in _OFFLINE_MARKERS):
        return ModelUnavailable(
            f"Ollama at {host} has no internet connection to download '{name}' ({text}).",
            "Models already pulled keep working; connect that machine to the internet to download new ones.",
        )
    missing = exc.status_code == 404 or any(marker in lowered for marker in _MISSING_MARKERS)
    if action == "pull" and missing:
        return ModelNotFound(
            f"Ollama's registry has no model '{name}'.",
            "Check the name and tag against https://ollama.com/library.",
        )
    if action == "delete" and missing:
        return ModelNotFound(
            f"Ollama at {host} has no model '{name}' to delete.",
            "Refresh the list of models; it may have been deleted already.",
        )
    return ModelError(f"Ollama at {host} could not {action} '{name}': {text}.")


async def pull_ollama_model(
    host: str, name: str, *, progress: Callable[[PullProgress], None] | None = None
) -> None:
    """Have Ollama at ``host`` download ``name``, reporting each progress line to ``progress``.

    Returns when Ollama says "success". Cancel the awaiting task to stop the pull.
    There is no read timeout: a long "verifying" step sends nothing for minutes.
    """
    host = host.rstrip("/")
    totals: dict[str, int] = {}  # digest -> bytes of that layer
    done: dict[str, int] = {}  # digest -> bytes of that layer downloaded so far
    succeeded = False
    async with ollama_client(host, httpx.Timeout(None, connect=PULL_CONNECT_TIMEOUT_S)) as client:
        try:
            # the client's stream is an async generator; closing it closes the HTTP response
            stream = cast(
                AsyncGenerator[ollama.ProgressResponse, None], await client.pull(name, stream=True)
            )
            try:
                async for part in stream:
                    if part.digest:
                        totals[part.digest] = max(totals.get(part.digest, 0), int(part.total or 0))
                        done[part.digest] = max(done.get(part.digest, 0), int(part.completed or 0))
                    status = part.status or ""
                    succeeded = succeeded or status == "success"
                    if progress is not None:
                        progress(
                            PullProgress(
                                status=status,
                                completed=sum(done.values()),
                                total=sum(totals.values()),
                            )
                        )
            finally:
                await stream.aclose()
        except OLLAMA_ERRORS as exc:
            raise _translate(exc, host, "pull", name) from exc
    if not succeeded:
        raise ModelError(
            f"Ollama at {host} stopped pulling '{name}' before it finished.", "Try the pull again."
        )


async def delete_ollama_model(host: str, name: str) -> None:
    """Have Ollama at ``host`` delete ``name`` (raises ModelNotFound when it has no such model)."""
    host = host.rstrip("/")
    async with ollama_client(
        host, httpx.Timeout(DELETE_TIMEOUT_S, connect=PULL_CONNECT_TIMEOUT_S)
    ) as client:
        try:
            await client.delete(name)
        except OLLAMA_ERRORS as exc:
            raise _translate(exc, host, "delete", name) from exc
