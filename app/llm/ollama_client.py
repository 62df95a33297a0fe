"""What every caller of an Ollama server shares: its errors in words a person can act
on, and the list of models it holds.

The chat back end (:mod:`app.llm.ollama_backend`), the model manager's pulls and
deletes (:mod:`app.model_files.ollama_admin`) and a run's provenance (Ollama's digest of
the model) all use these. :func:`list_ollama_models` opens its own ``ollama.AsyncClient``
and closes it before returning. Names are reported exactly as Ollama gives them
(``llama3.2:latest`` stays so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx
import ollama

from app.core.errors import ModelError, ModelTimeout, ModelUnavailable

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


def ollama_error(
    exc: BaseException,
    host: str,
    *,
    refused: Callable[[ollama.ResponseError], ModelError],
    timeout: ModelTimeout | None = None,
) -> ModelError:
    """Turn what the ollama client raised (one of :data:`OLLAMA_ERRORS`) into an error a
    person can act on. A server that is down or unreachable reads the same for every
    caller; ``timeout`` is the caller's error for no answer in time (by default: try
    again), and ``refused`` makes the one for Ollama's own error answer (unknown model
    and the like)."""
    if isinstance(exc, ConnectionError | httpx.ConnectError):
        return ModelUnavailable(
            f"Ollama is not running at {host}.",
            "Start it with `ollama serve` (or open the Ollama app), or choose another back end in Settings.",
        )
    if isinstance(exc, httpx.TimeoutException):
        if timeout is not None:
            return timeout
        return ModelTimeout(
            f"Ollama at {host} did not answer in time.",
            "Check that the machine is not overloaded, then try again.",
        )
    if isinstance(exc, ollama.ResponseError):
        return refused(exc)
    if isinstance(exc, httpx.HTTPError):
        return ModelUnavailable(f"Ollama at {host} could not be reached ({exc}).")
    return ModelError(f"Ollama failed: {exc}.")


def ollama_client(host: str, timeout: httpx.Timeout) -> ollama.AsyncClient:
    """A client of its own for one call (close it when done: ``async with``)."""
    return ollama.AsyncClient(host=host.rstrip("/"), timeout=timeout)


async def list_ollama_models(host: str, *, timeout_s: float = 5.0) -> list[OllamaModelInfo]:
    """The models Ollama at ``host`` holds, in the order it gives them."""
    host = host.rstrip("/")
    async with ollama_client(host, httpx.Timeout(timeout_s)) as client:
        try:
            response = await client.list()
        except OLLAMA_ERRORS as exc:
            raise ollama_error(
                exc,
                host,
                refused=lambda e: ModelError(
                    f"Ollama at {host} could not list its models: {e.error}."
                ),
            ) from exc
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


async def ollama_models_if_running(
    host: str, *, timeout_s: float = 2.0
) -> list[OllamaModelInfo] | None:
    """Ollama's models, or None when it does not answer (it is optional)."""
    try:
        return await list_ollama_models(host, timeout_s=timeout_s)
    except ModelError:
        return None
