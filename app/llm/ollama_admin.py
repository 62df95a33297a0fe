"""Manage the models an Ollama server holds: list them, pull one, delete one.

Each call opens its own ``ollama.AsyncClient`` and closes it before returning,
so nothing stays open between calls. A pull is cancelled by cancelling the
task that awaits :func:`pull_ollama_model`: the streaming response is closed at
once (Ollama then stops the download) and the ``CancelledError`` propagates.
Names are reported exactly as Ollama gives them (``llama3.2:latest`` stays so).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Literal, cast

import httpx
import ollama

from app.core.errors import ModelError, ModelNotFound, ModelTimeout, ModelUnavailable

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

_Action = Literal["list", "pull", "delete"]
# What the ollama client raises; :func:`ollama_error` translates each.
OLLAMA_ERRORS = (ConnectionError, httpx.HTTPError, ollama.ResponseError)


@dataclass(frozen=True)
class OllamaModelInfo:
    """One model Ollama holds, as ``/api/tags`` describes it."""

    name: str
    size_bytes: int
    parameter_size: str  # "8.2B"; "" when unknown
    quantization: str  # "Q4_K_M"; "" when unknown
    family: str  # "llama"; "" when unknown
    modified_at: str  # ISO 8601; "" when unknown
    digest: str = ""  # Ollama's SHA-256 of the model ("sha256:…"); "" when unknown


@dataclass(frozen=True)
class PullProgress:
    """One progress line of a pull; byte counts are summed over the layers seen so far."""

    status: str  # Ollama's line: "pulling manifest", "pulling <digest>", "verifying sha256 digest", "success"
    completed: int
    total: int


def ollama_error(
    exc: BaseException,
    host: str,
    *,
    timeout: ModelTimeout,
    refused: Callable[[ollama.ResponseError], ModelError],
) -> ModelError:
    """Turn what the ollama client raised (one of :data:`OLLAMA_ERRORS`) into an error a
    person can act on. A server that is down or unreachable reads the same for every
    caller; ``timeout`` is the caller's error for no answer in time, and ``refused``
    makes the one for Ollama's own error answer (unknown model and the like)."""
    if isinstance(exc, ConnectionError | httpx.ConnectError):
        return ModelUnavailable(
            f"Ollama is not running at {host}.",
            "Start it with `ollama serve` (or open the Ollama app), or choose another back end in Settings.",
        )
    if isinstance(exc, httpx.TimeoutException):
        return timeout
    if isinstance(exc, ollama.ResponseError):
        return refused(exc)
    if isinstance(exc, httpx.HTTPError):
        return ModelUnavailable(f"Ollama at {host} could not be reached ({exc}).")
    return ModelError(f"Ollama failed: {exc}.")


def _translate(exc: BaseException, host: str, action: _Action, name: str = "") -> ModelError:
    timeout = ModelTimeout(
        f"Ollama at {host} did not answer in time.",
        "Check that the machine is not overloaded, then try again.",
    )
    return ollama_error(exc, host, timeout=timeout, refused=lambda e: _refused(e, host, action, name))


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
    what = {"list": "list its models", "pull": f"pull '{name}'", "delete": f"delete '{name}'"}[action]
    return ModelError(f"Ollama at {host} could not {what}: {text}.")


def _client(host: str, timeout: httpx.Timeout) -> ollama.AsyncClient:
    return ollama.AsyncClient(host=host.rstrip("/"), timeout=timeout)


async def list_ollama_models(host: str, *, timeout_s: float = 5.0) -> list[OllamaModelInfo]:
    """The models Ollama at ``host`` holds, in the order it gives them."""
    host = host.rstrip("/")
    async with _client(host, httpx.Timeout(timeout_s)) as client:
        try:
            response = await client.list()
        except OLLAMA_ERRORS as exc:
            raise _translate(exc, host, "list") from exc
    models: list[OllamaModelInfo] = []
    for entry in response.models:
        if not entry.model:
            continue
        details = entry.details
        models.append(
            OllamaModelInfo(
                name=entry.model,
                size_bytes=int(entry.size or 0),
                parameter_size=(details.parameter_size or "") if details else "",
                quantization=(details.quantization_level or "") if details else "",
                family=(details.family or "") if details else "",
                modified_at=entry.modified_at.isoformat() if entry.modified_at else "",
                digest=f"sha256:{entry.digest.removeprefix('sha256:')}" if entry.digest else "",
            )
        )
    return models


async def ollama_models_if_running(host: str, *, timeout_s: float = 2.0) -> list[OllamaModelInfo] | None:
    """Ollama's models, or None when it does not answer (it is optional)."""
    try:
        return await list_ollama_models(host, timeout_s=timeout_s)
    except ModelError:
        return None


async def pull_ollama_model(host: str, name: str, *, progress: Callable[[PullProgress], None] | None = None) -> None:
    """Have Ollama at ``host`` download ``name``, reporting each progress line to ``progress``.

    Returns when Ollama says "success". Cancel the awaiting task to stop the pull.
    There is no read timeout: a long "verifying" step sends nothing for minutes.
    """
    host = host.rstrip("/")
    totals: dict[str, int] = {}  # digest -> bytes of that layer
    done: dict[str, int] = {}  # digest -> bytes of that layer downloaded so far
    succeeded = False
    async with _client(host, httpx.Timeout(None, connect=PULL_CONNECT_TIMEOUT_S)) as client:
        try:
            # the client's stream is an async generator; closing it closes the HTTP response
            stream = cast(AsyncGenerator[ollama.ProgressResponse, None], await client.pull(name, stream=True))
            try:
                async for part in stream:
                    if part.digest:
                        totals[part.digest] = max(totals.get(part.digest, 0), int(part.total or 0))
                        done[part.digest] = max(done.get(part.digest, 0), int(part.completed or 0))
                    status = part.status or ""
                    succeeded = succeeded or status == "success"
                    if progress is not None:
                        progress(PullProgress(status=status, completed=sum(done.values()), total=sum(totals.values())))
            finally:
                await stream.aclose()
        except OLLAMA_ERRORS as exc:
            raise _translate(exc, host, "pull", name) from exc
    if not succeeded:
        raise ModelError(f"Ollama at {host} stopped pulling '{name}' before it finished.", "Try the pull again.")


async def delete_ollama_model(host: str, name: str) -> None:
    """Have Ollama at ``host`` delete ``name`` (raises ModelNotFound when it has no such model)."""
    host = host.rstrip("/")
    async with _client(host, httpx.Timeout(DELETE_TIMEOUT_S, connect=PULL_CONNECT_TIMEOUT_S)) as client:
        try:
            await client.delete(name)
        except OLLAMA_ERRORS as exc:
            raise _translate(exc, host, "delete", name) from exc
