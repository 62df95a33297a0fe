"""Milvus vectors + BM25 full text, one Milvus collection per Fathom collection.

The same code talks to Milvus Lite (a local ``….db`` path, in-process) and to a
Milvus server (``http(s)://host:19530``) through pymilvus' ``MilvusClient``.
Every method blocks; async callers run them in an executor. One store may be
used from several worker threads at once (writes are serialised here, reads
go straight to Milvus).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import sys
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from app.core.errors import CollectionNotFound, EmbeddingMismatch, StoreError, StoreLocked
from app.core.models import Chunk, Hit
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.store.lock import LOCKED_HINT, LOCKED_MESSAGE

SearchMode = Literal["hybrid", "dense", "bm25"]
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "dense", "bm25")


# Collection properties that record who a collection belongs to and how it was built.
PROP_NAME = "fathom.name"
PROP_MODEL = "fathom.embedding_model"
PROP_DIM = "fathom.dimension"

PROP_SCHEMA = "fathom.schema"
SCHEMA_VERSION = "1"

# Lucene's English stop words plus question words. Words this common say nothing
# about relevance, and Milvus Lite scores BM25 posting by posting in Python: "the"
# alone would touch nearly every chunk of every query. An explicit list (not
# "_english_") means the same analyzer on Milvus Lite and on a server.
STOP_WORDS = sorted(
    """a an and are as at be but by for if in into is it no not of on or such that the their
    then there these they this to was will with i you we he she them his her its our your
    what which who whom how when where why do does did doing done can could would should
    has have had been being were am from about so than too very just also""".split()  # noqa: SIM905
)
ANALYZER: dict[str, Any] = {
    "tokenizer": "standard",
    "filter": ["lowercase", {"type": "stop", "stop_words": STOP_WORDS}],
}

# The dense index: AUTOINDEX is HNSW (faiss) in Milvus Lite and the server's own choice
# on a server. Lite's default search breadth (ef=64) found 0.48 of the exact top 10 in
# tests/bench (20k embedding-like rows); ef=256 finds 0.75-0.9 for a few ms more, next
# to Lite's ~200 ms fixed cost per call at 100k rows. A server tunes its own AUTOINDEX.
DENSE_INDEX: dict[str, Any] = {"index_type": "AUTOINDEX", "params": {}}
DENSE_SEARCH: dict[str, Any] = {"metric_type": "IP", "params": {"ef": 256}}
SERVER_DENSE_SEARCH: dict[str, Any] = {"metric_type": "IP"}

HEADING_SEPARATOR = "\x1f"  # unit separator: never part of a heading
NO_PAGE = -1
RRF_K = 60
WRITE_BATCH = 512  # rows per insert call, well under gRPC's message limit
MAX_VARCHAR = 65_535  # bytes, Milvus' varchar ceiling
ID_MAX = 512
OUTPUT_FIELDS = ["chunk_id", "doc_id", "collection", "path", "title", "headings", "page", "chunk_no", "text"]

_log = logging.getLogger(__name__)


# -- names --------------------------------------------------------------------


def milvus_name(name: str) -> str:
    """The Milvus collection name for a Fathom collection name.

    Milvus allows letters, digits and underscores, starting with a letter or an
    underscore, at most 255 characters; Fathom names are any text. The result is
    readable (an ASCII slug) and unique (a hash of the full name), and the same
    on every run, so no separate mapping has to be kept.
    """
    if not name.strip():
        raise StoreError("A collection needs a name.", "Give it a name of at least one visible character.")
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^A-Za-z0-9]+", "_", folded).strip("_").lower()[:48]
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
    return f"fathom_{slug}_{digest}" if slug else f"fathom_{digest}"


def mismatch_message(name: str, built_model: str, built_dim: int, model: str, dim: int | None) -> EmbeddingMismatch:
    """The refusal, with the way out. ``dim`` None: the current model's dimension is not known."""
    current = model if dim is None or built_dim == dim else f"{model} ({dim} dims)"
    shown = shlex.quote(name)
    return EmbeddingMismatch(
        f"Collection '{name}' was built with {built_model} ({built_dim} dims); "
        f"the current embedding model is {current}. "
        f"Re-index it (Re-index in the library's menu, or `fathom reindex --collection {shown}`) "
        "— or switch the embedding model back in Settings."
    )


# -- where the store lives ----------------------------------------------------


def is_server_uri(uri: str) -> bool:
    return uri.startswith(("http://", "https://", "tcp://", "unix:"))


def resolve_milvus_uri(settings: Settings, paths: AppPaths) -> str:
    """The URI in force: settings.store.milvus_uri, or the Lite file under the data dir."""
    uri = settings.store.milvus_uri.strip()
    if not uri:
        return str(paths.milvus_file)
    if is_server_uri(uri):
        return uri
    return str(Path(uri).expanduser())


class _LiteServers:
    """Reference counts of Milvus Lite databases this process has open.

    Milvus Lite keeps one in-process server per ``.db`` path until the process
    exits; releasing it when the last store on that path closes frees the
    directory lock and flushes the files, so a later open really re-reads them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def acquire(self, path: str) -> None:
        with self._lock:
            self._counts[path] = self._counts.get(path, 0) + 1

    def release(self, path: str) -> None:
        with self._lock:
            left = self._counts.get(path, 0) - 1
            if left > 0:
                self._counts[path] = left
                return
            self._counts.pop(path, None)
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(path)


_LITE = _LiteServers()


class _DropLockedTraceback(logging.Filter):
    """Milvus Lite logs a full traceback when its data dir is locked; Fathom
    reports that case itself, with a sentence, so the traceback is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (exc is not None and type(exc).__name__ == "DataDirLockedError")


logging.getLogger("milvus_lite.server_manager").addFilter(_DropLockedTraceback())


def _lite_dir_is_locked(db_path: str) -> bool:
    """True when another process holds Milvus Lite's lock on ``db_path``."""
    lock_path = os.path.join(db_path, "LOCK")
    if not os.path.exists(lock_path):
        return False
    fd = os.open(lock_path, os.O_RDWR)
    try:
        if sys.platform == "win32":
            import msvcrt

            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                return True
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


# -- filters ------------------------------------------------------------------


def _literal(value: str) -> str:
    """A Milvus filter string literal."""
    return json.dumps(value, ensure_ascii=False)


def _like_prefix(prefix: str) -> str:
    # Milvus Lite's LIKE has no escapes, so a '%' or '_' in the prefix is a wildcard
    # there; search() re-checks the prefix exactly on the rows that come back.
    return _literal(_safe(prefix) + "%")


def build_filter(doc_ids: Sequence[str] | None, path_prefix: str | None) -> str:
    parts = []
    if doc_ids is not None:
        parts.append(f"doc_id in [{', '.join(_literal(d) for d in doc_ids)}]")
    if path_prefix:
        parts.append(f"path like {_like_prefix(path_prefix)}")
    return " and ".join(parts)


def _safe(text: str) -> str:
    """Text Milvus can carry: a file name that is not UTF-8 (lone surrogates from
    ``os.fsdecode``) keeps a visible, stable spelling instead of failing the insert."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clip(text: str, limit: int = MAX_VARCHAR) -> str:
    text = _safe(text)
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def _normalised(vectors: Sequence[Sequence[float]] | np.ndarray, dim: int) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != dim:
        raise StoreError(f"Expected vectors of {dim} dimensions, got an array of shape {array.shape}.")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms == 0, 1.0, norms)


def _row(chunk: Chunk, vector: np.ndarray) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "collection": _clip(chunk.collection, 1024),
        "path": _clip(chunk.path),
        "title": _clip(chunk.title),
        "headings": _clip(HEADING_SEPARATOR.join(chunk.headings)),
        "page": NO_PAGE if chunk.page is None else int(chunk.page),
        "chunk_no": int(chunk.chunk_no),
        "text": _clip(chunk.text),
        "dense": vector.tolist(),
    }


def _chunk(entity: dict[str, Any]) -> Chunk:
    headings = entity.get("headings") or ""
    page = int(entity.get("page", NO_PAGE))
    return Chunk(
        chunk_id=str(entity["chunk_id"]),
        doc_id=str(entity.get("doc_id", "")),
        collection=str(entity.get("collection", "")),
        path=str(entity.get("path", "")),
        text=str(entity.get("text", "")),
        title=str(entity.get("title", "")),
        headings=tuple(headings.split(HEADING_SEPARATOR)) if headings else (),
        page=None if page == NO_PAGE else page,
        chunk_no=int(entity.get("chunk_no", 0)),
    )


# -- the store ----------------------------------------------------------------


class VectorStore:
    """One Milvus collection per Fathom collection (dense field + BM25 sparse field +
    chunk metadata). ``uri``: a local path means Milvus Lite, ``http(s)://`` a server.
    All methods are blocking; async callers run them in an executor."""

    def __init__(self, uri: str, *, token: str = "", timeout: float | None = None) -> None:
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

        self._lite_path: str | None = None
        if is_server_uri(uri):
            connect_uri = uri
        else:
            path = os.path.abspath(os.path.expanduser(uri))
            if not path.endswith(".db"):
                raise StoreError(
                    f"The Milvus Lite path {path} must end in '.db'.",
                    "Set store.milvus_uri to a path like …/milvus.db, or leave it empty for the default.",
                )
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            connect_uri = path
            self._lite_path = path
        self.uri = connect_uri
        self._timeout = timeout
        self._write_lock = threading.RLock()
        self._meta_lock = threading.Lock()
        self._models: dict[str, tuple[str, int]] = {}
        self._loaded: set[str] = set()
        self._unflushed: set[str] = set()
        self._closed = False
        try:
            self._client = MilvusClient(uri=connect_uri, token=token)
        except MilvusException as exc:
            if self._lite_path is not None and _lite_dir_is_locked(self._lite_path):
                raise StoreLocked(LOCKED_MESSAGE, LOCKED_HINT) from None
            where = self._lite_path or uri
            raise StoreError(
                f"Could not open the vector store at {where}: {exc}.",
                "Check store.milvus_uri in Settings (a local .db path, or http://host:19530 for a server).",
            ) from exc
        if self._lite_path is not None:
            _LITE.acquire(self._lite_path)

    @classmethod
    def open(cls, settings: Settings, paths: AppPaths) -> VectorStore:
        """The store the settings point at (default: Milvus Lite under the data dir)."""
        return cls(resolve_milvus_uri(settings, paths))

    @property
    def is_lite(self) -> bool:
        return self._lite_path is not None

    # -- collections ----------------------------------------------------------

    def ensure_collection(self, name: str, dimension: int, embedding_model: str) -> None:
        """Create if missing; raise EmbeddingMismatch if it exists with another model/dimension."""
        mname = milvus_name(name)
        with self._write_lock:
            if self._client.has_collection(mname):
                self.check_model(name, embedding_model, dimension)
                self._ensure_loaded(mname)
                return
            self._create(name, mname, dimension, embedding_model)
            self._ensure_loaded(mname)

    def check_model(self, name: str, embedding_model: str, dimension: int) -> None:
        """Raise EmbeddingMismatch unless ``name`` was built with this model and dimension."""
        built_model, built_dim = self.collection_model(name)
        if built_model != embedding_model or built_dim != dimension:
            raise mismatch_message(name, built_model, built_dim, embedding_model, dimension)

    def has_collection(self, name: str) -> bool:
        return bool(self._client.has_collection(milvus_name(name)))

    def list_collections(self) -> list[str]:
        """Fathom names of the collections in this store (Milvus collections that
        Fathom did not create are left out)."""
        names = []
        for mname in self._client.list_collections():
            if not str(mname).startswith("fathom_"):
                continue
            props = self._client.describe_collection(mname).get("properties", {})
            if PROP_NAME in props:
                names.append(str(props[PROP_NAME]))
        return sorted(names)

    def collection_model(self, name: str) -> tuple[str, int]:
        """(embedding model, dimension) the collection was built with."""
        with self._meta_lock:
            cached = self._models.get(name)
        if cached is not None:
            return cached
        mname = self._require(name)
        props = self._client.describe_collection(mname).get("properties", {})
        model = (str(props.get(PROP_MODEL, "")), int(props.get(PROP_DIM, 0)))
        with self._meta_lock:
            self._models[name] = model
        return model

    def drop_collection(self, name: str) -> None:
        mname = milvus_name(name)
        with self._write_lock:
            if self._client.has_collection(mname):
                self._client.drop_collection(mname)
            with self._meta_lock:
                self._models.pop(name, None)
                self._loaded.discard(mname)
            self._unflushed.discard(mname)

    # -- writing --------------------------------------------------------------

    def insert(self, name: str, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]] | np.ndarray) -> None:
        """Add chunks with their vectors. A chunk id already present is replaced
        (upsert), so redoing a half-finished document never duplicates chunks."""
        if len(chunks) != len(vectors):
            raise StoreError(f"{len(chunks)} chunks but {len(vectors)} vectors.")
        if not chunks:
            return
        mname = self._require(name)
        _, dim = self.collection_model(name)
        array = _normalised(vectors, dim)
        rows = [_row(chunk, array[i]) for i, chunk in enumerate(chunks)]
        with self._write_lock:
            for start in range(0, len(rows), WRITE_BATCH):
                self._client.upsert(mname, rows[start : start + WRITE_BATCH], timeout=self._timeout)
            self._unflushed.add(mname)

    def delete_document(self, name: str, doc_id: str) -> None:
        mname = milvus_name(name)
        with self._write_lock:
            if not self._client.has_collection(mname):
                return
            self._client.delete(mname, filter=f"doc_id == {_literal(doc_id)}", timeout=self._timeout)
            self._unflushed.add(mname)

    def delete_chunks(self, name: str, chunk_ids: Sequence[str]) -> None:
        """Delete these chunk ids (ids not present are ignored)."""
        mname = milvus_name(name)
        with self._write_lock:
            if not chunk_ids or not self._client.has_collection(mname):
                return
            for start in range(0, len(chunk_ids), 1000):
                part = list(chunk_ids[start : start + 1000])
                self._client.delete(mname, ids=part, timeout=self._timeout)
            self._unflushed.add(mname)

    def flush(self, name: str | None = None) -> None:
        """Seal what was written into indexed segments (one collection, or all).

        Milvus Lite searches rows still in its write buffer (up to 128 MB) by brute
        force in Python, 30-40 times slower than an indexed segment; the ingest
        calls this when a run ends, and a Lite search flushes first if needed.
        A server indexes growing segments itself, so there it is only a durability point.
        """
        with self._write_lock:
            targets = [milvus_name(name)] if name is not None else sorted(self._unflushed)
            for mname in targets:
                if self._client.has_collection(mname):
                    self._client.flush(mname, timeout=self._timeout)
                self._unflushed.discard(mname)

    # -- reading --------------------------------------------------------------

    def document_chunk_ids(self, name: str, doc_id: str) -> list[str]:
        mname = self._require(name)
        self._ensure_loaded(mname)
        return [str(row["chunk_id"]) for row in self._query_all(mname, f"doc_id == {_literal(doc_id)}")]

    def chunk_ids_by_document(self, name: str) -> dict[str, set[str]]:
        """Every chunk id in the collection, grouped by document id (for consistency checks)."""
        mname = self._require(name)
        self._ensure_loaded(mname)
        found: dict[str, set[str]] = {}
        for row in self._query_all(mname, 'doc_id != ""', ["chunk_id", "doc_id"]):
            found.setdefault(str(row["doc_id"]), set()).add(str(row["chunk_id"]))
        return found

    def doc_ids(self, name: str) -> set[str]:
        """Every document id with at least one chunk (used to repair after a crash)."""
        mname = self._require(name)
        self._ensure_loaded(mname)
        return {str(row["doc_id"]) for row in self._query_all(mname, 'doc_id != ""', ["doc_id"])}

    def search(
        self,
        name: str,
        queries: Sequence[str],
        vectors: Sequence[Sequence[float]] | np.ndarray | None,
        *,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
        doc_ids: Sequence[str] | None = None,
        path_prefix: str | None = None,
        candidates: int | None = None,
    ) -> list[list[Hit]]:
        """Many queries in one call; result i answers query i, best first.

        Scores: dense → cosine similarity; bm25 → the BM25 score; hybrid →
        reciprocal-rank fusion (k=60) of the dense and BM25 lists, each
        ``candidates`` long (default: max(2·top_k, 20)).
        """
        if mode not in SEARCH_MODES:
            raise StoreError(f"Unknown search mode '{mode}'.", "Use hybrid, dense or bm25.")
        if not queries:
            return []
        if doc_ids is not None and not doc_ids:
            return [[] for _ in queries]
        mname = self._require(name)
        self._ensure_loaded(mname)
        if self.is_lite and mname in self._unflushed:
            self.flush(name)
        _, dim = self.collection_model(name)
        dense: list[list[float]] = []
        if mode != "bm25":
            if vectors is None or len(vectors) != len(queries):
                raise StoreError(f"Search mode '{mode}' needs one vector per query.")
            dense = _normalised(vectors, dim).tolist()
        expr = build_filter(doc_ids, path_prefix)
        texts = [q if q.strip() else " " for q in queries]
        pool = candidates or max(2 * top_k, 20)
        raw: Any
        if mode == "dense":
            raw = self._client.search(
                mname,
                data=dense,
                anns_field="dense",
                limit=top_k,
                filter=expr,
                output_fields=OUTPUT_FIELDS,
                search_params=self._dense_search(),
                timeout=self._timeout,
            )
        elif mode == "bm25":
            raw = self._client.search(
                mname,
                data=texts,
                anns_field="sparse",
                limit=top_k,
                filter=expr,
                output_fields=OUTPUT_FIELDS,
                search_params={"metric_type": "BM25"},
                timeout=self._timeout,
            )
        else:
            from pymilvus import AnnSearchRequest, RRFRanker

            requests = [
                AnnSearchRequest(
                    data=dense, anns_field="dense", param=self._dense_search(), limit=pool, expr=expr or None
                ),
                AnnSearchRequest(
                    data=texts,
                    anns_field="sparse",
                    param={"metric_type": "BM25"},
                    limit=pool,
                    expr=expr or None,
                ),
            ]
            raw = self._client.hybrid_search(
                mname,
                requests,
                ranker=RRFRanker(RRF_K),
                limit=top_k,
                output_fields=OUTPUT_FIELDS,
                timeout=self._timeout,
            )
        results: list[list[Hit]] = []
        for query, hits in zip(queries, raw, strict=True):
            per_query = []
            for hit in hits:
                entity = dict(hit.get("entity", {}))
                entity.setdefault("chunk_id", hit.get("id", hit.get("chunk_id")))
                score = float(hit.get("distance", 0.0))
                # Milvus Lite reports BM25 as a negated distance, a server as a score.
                per_query.append(Hit(chunk=_chunk(entity), score=abs(score) if mode == "bm25" else score, query=query))
            if path_prefix:  # ``like`` is exact on servers; keep the guarantee everywhere
                prefix = _safe(path_prefix)
                per_query = [h for h in per_query if h.chunk.path.startswith(prefix)]
            results.append(per_query)
        return results

    def get_chunks(self, name: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids, in the order asked (ids not found are left out)."""
        if not chunk_ids:
            return []
        mname = self._require(name)
        self._ensure_loaded(mname)
        found: dict[str, Chunk] = {}
        unique = list(dict.fromkeys(chunk_ids))
        for start in range(0, len(unique), 1000):
            rows = self._client.get(mname, ids=unique[start : start + 1000], output_fields=OUTPUT_FIELDS)
            for row in rows:
                chunk = _chunk(dict(row))
                found[chunk.chunk_id] = chunk
        return [found[cid] for cid in chunk_ids if cid in found]

    def sample_chunks(self, name: str, n: int = 8) -> list[Chunk]:
        """Up to ``n`` chunks spread over the collection (by chunk_no 0 first)."""
        mname = self._require(name)
        self._ensure_loaded(mname)
        rows = self._client.query(mname, filter="chunk_no >= 0", output_fields=OUTPUT_FIELDS, limit=max(n * 8, n))
        chunks = [_chunk(dict(row)) for row in rows]
        if len(chunks) <= n:
            return chunks
        step = len(chunks) / n
        return [chunks[int(i * step)] for i in range(n)]

    def count(self, name: str) -> int:
        mname = self._require(name)
        self._ensure_loaded(mname)
        rows = self._client.query(mname, filter="", output_fields=["count(*)"], timeout=self._timeout)
        return int(rows[0]["count(*)"]) if rows else 0

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._unflushed:
                self.flush()
            self._client.close()
        finally:
            if self._lite_path is not None:
                _LITE.release(self._lite_path)

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ----------------------------------------------------------------

    def _dense_search(self) -> dict[str, Any]:
        return DENSE_SEARCH if self.is_lite else SERVER_DENSE_SEARCH

    def _require(self, name: str) -> str:
        mname = milvus_name(name)
        with self._meta_lock:
            if mname in self._loaded:
                return mname
        if not self._client.has_collection(mname):
            raise CollectionNotFound(
                f"There is no collection named '{name}'.", "See `fathom collections` for the ones there are."
            )
        return mname

    def _ensure_loaded(self, mname: str) -> None:
        """Milvus serves a collection only once loaded; after a reopen it is not."""
        with self._meta_lock:
            if mname in self._loaded:
                return
        self._client.load_collection(mname, timeout=self._timeout)
        with self._meta_lock:
            self._loaded.add(mname)

    def _create(self, name: str, mname: str, dimension: int, embedding_model: str) -> None:
        from pymilvus import DataType, Function, FunctionType, MilvusClient

        if dimension <= 0:
            raise StoreError(f"An embedding dimension must be positive, not {dimension}.")
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("chunk_id", DataType.VARCHAR, is_primary=True, max_length=ID_MAX)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=ID_MAX)
        schema.add_field("collection", DataType.VARCHAR, max_length=1024)
        schema.add_field("path", DataType.VARCHAR, max_length=MAX_VARCHAR)
        schema.add_field("title", DataType.VARCHAR, max_length=MAX_VARCHAR)
        schema.add_field("headings", DataType.VARCHAR, max_length=MAX_VARCHAR)
        schema.add_field("page", DataType.INT64)
        schema.add_field("chunk_no", DataType.INT64)
        schema.add_field(
            "text",
            DataType.VARCHAR,
            max_length=MAX_VARCHAR,
            enable_analyzer=True,
            analyzer_params=ANALYZER,
        )
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dimension)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        index = self._client.prepare_index_params()
        index.add_index("dense", metric_type="IP", **DENSE_INDEX)
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        self._client.create_collection(
            mname,
            schema=schema,
            properties={
                PROP_NAME: name,
                PROP_MODEL: embedding_model,
                PROP_DIM: str(dimension),
                PROP_SCHEMA: SCHEMA_VERSION,
            },
            timeout=self._timeout,
        )
        # sync=False: pymilvus would otherwise poll AllocTimestamp, which Milvus Lite lacks.
        self._client.create_index(mname, index, timeout=self._timeout, sync=False)
        with self._meta_lock:
            self._models[name] = (embedding_model, dimension)

    def _query_all(self, mname: str, expr: str, fields: list[str] | None = None) -> Iterator[dict[str, Any]]:
        """Every row matching ``expr`` (servers cap one query at 16384 rows)."""
        if self.is_lite:  # no cap in Lite, and its iterator logs a warning per call
            yield from (
                dict(row) for row in self._client.query(mname, filter=expr, output_fields=fields or ["chunk_id"])
            )
            return
        iterator = self._client.query_iterator(
            mname, batch_size=1000, filter=expr, output_fields=fields or ["chunk_id"]
        )
        try:
            while True:
                page = iterator.next()
                if not page:
                    return
                for row in page:
                    yield dict(row)
        finally:
            iterator.close()
