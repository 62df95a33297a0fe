"""VectorStore: the one interface the rest of Fathom uses for vectors and BM25 full text.

One Milvus collection per Fathom collection. The same code talks to Milvus Lite
(a local ``….db`` path, in-process) and to a Milvus server (``http(s)://host:19530``)
through pymilvus' ``MilvusClient``. Every method blocks; async callers run them in
an executor. One store may be used from several worker threads at once (writes are
serialised here, reads go straight to Milvus).

The parts it is built from::

    milvus_connection  where the store lives; opening and letting go of Milvus Lite
    milvus_schema      the collection's name, fields, properties and rows
    bm25_analyzer      how text is split into the words BM25 scores
    milvus_search      one dense, BM25 or hybrid search call
    dense_cache        a large collection's dense vectors copied in memory, scanned
                       faster and more exactly than Milvus Lite scans them
    keyword_copy       on Milvus Lite 3.x, that copy's BM25 too, with the whole
                       collection's word statistics (3.x keeps them per segment)
    word_stats         each collection's word statistics, for a BM25 ranking of
                       several collections as one library (library_ranking)

Here: the collections' bookkeeping (loaded, unflushed, which model built them), the
locks, and how the dense index is built and searched on Lite and on a server.

A Milvus server older than 2.5 has no BM25: there collections are made without the
keyword field, bm25 and hybrid searches are answered by meaning (dense), and
``search_note`` says so (logged once when the store opens).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from app.core.errors import CollectionNotFound, StoreError
from app.core.models import Chunk, Hit
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.store import dense_cache, word_stats
from app.store.bm25_analyzer import ANALYZER, STOP_WORDS
from app.store.engine_move import (
    MoveReport,
    finish_move,
    lite3_database_to_move,
    live_rows,
    start_move,
)
from app.store.library_ranking import one_ranking
from app.store.milvus_connection import (
    connect,
    has_bm25,
    keyword_search_note,
    lite_major_version,
    release_lite,
    resolve_milvus_uri,
)
from app.store.milvus_schema import (
    OUTPUT_FIELDS,
    PROP_DIM,
    PROP_MODEL,
    PROP_NAME,
    chunk_to_row,
    collection_metadata,
    create_indexes,
    create_milvus_collection,
    dense_dimension,
    has_keyword_field,
    milvus_name,
    mismatch_message,
    row_to_chunk,
    unit_vectors,
)
from app.store.milvus_search import (
    SEARCH_MODES,
    SearchMode,
    literal,
    search_collection,
    search_with_copy,
)
from app.store.word_stats import LibraryWords

log = logging.getLogger(__name__)

# What other packages (and the search bench) take from here.
__all__ = [
    "ANALYZER",
    "DENSE_INDEX",
    "SEARCH_MODES",
    "STOP_WORDS",
    "SearchMode",
    "VectorStore",
    "milvus_name",
    "mismatch_message",
]

# The dense index, chosen for recall first (tests/bench/bench_search.py measures it):
# - the native Milvus Lite 2.5 offers FLAT, IVF_FLAT and AUTOINDEX only, and its IVF
#   and AUTOINDEX answer from an interim index whose breadth ignores nprobe: 0.39 of
#   the exact top 10 at 100k embedding-like rows. FLAT is exact and, batched, about
#   as fast as numpy's matrix product;
# - Milvus Lite 3.x: AUTOINDEX is HNSW (faiss-cpu); its default breadth (ef=64) found
#   0.48 of the exact top 10 at 20k rows, ef=256 0.75-0.9;
# - a server tunes its own AUTOINDEX.
# (the bench swaps these to compare index types.)
NATIVE_DENSE_INDEX: dict[str, Any] = {"index_type": "FLAT", "params": {}}
NATIVE_DENSE_SEARCH: dict[str, Any] = {"metric_type": "IP", "params": {}}
DENSE_INDEX: dict[str, Any] = {"index_type": "AUTOINDEX", "params": {}}
DENSE_SEARCH: dict[str, Any] = {"metric_type": "IP", "params": {"ef": 256}}
SERVER_DENSE_SEARCH: dict[str, Any] = {"metric_type": "IP"}

WRITE_BATCH = 512  # rows per insert call, well under gRPC's message limit
QUERY_PAGE = 4096  # rows per page when reading ids (one query stops at 16384 rows)
COPY_PAGE = 256  # rows per read while copying vectors (larger reads slow Milvus Lite down sharply)
TEXT_PAGE = 1000  # chunk texts per page while counting a collection's words
# a server's collections may be written by other people's Fathoms: their word statistics
# are counted again when older than this
SERVER_WORD_STATS_AGE = 300.0


_collection_pool: ThreadPoolExecutor | None = None
_collection_pool_lock = threading.Lock()


def _collection_threads() -> ThreadPoolExecutor:
    """Threads that search several collections at once (Milvus and faiss release the GIL)."""
    global _collection_pool
    with _collection_pool_lock:
        if _collection_pool is None:
            _collection_pool = ThreadPoolExecutor(
                max_workers=4, thread_name_prefix="fathom-collections"
            )
        return _collection_pool


class VectorStore:
    """One Milvus collection per Fathom collection (dense field + BM25 sparse field +
    chunk metadata). ``uri``: a local path means Milvus Lite, ``http(s)://`` a server.
    All methods are blocking; async callers run them in an executor."""

    def __init__(
        self, uri: str, *, token: str = "", timeout: float | None = None, served_lite: bool = False
    ) -> None:
        """``served_lite``: ``uri`` is the socket of a native Milvus Lite server another
        process runs (see :mod:`app.store.reader_address`): searched as a server, with
        Milvus Lite's quirks."""
        # a library whose index Milvus Lite 3.x wrote, opened with the native engine
        lite3 = lite3_database_to_move(uri)
        self.moved: MoveReport | None = _move_from_lite3(lite3) if lite3 else None
        self._client, self.uri, self._lite_path, self.server_version = connect(
            uri, token, served_lite=served_lite
        )
        # a server older than 2.5 has no BM25: its searches go by meaning only, and say so
        self.keyword_search_available = self.is_lite or has_bm25(self.server_version)
        self.search_note = "" if self.is_lite else keyword_search_note(self.server_version)
        if self.search_note:
            log.warning("%s", self.search_note)
        self._timeout = timeout
        self._write_lock = threading.RLock()
        self._meta_lock = threading.Lock()
        self._models: dict[str, tuple[str, int]] = {}
        self._loaded: set[str] = set()
        self._keyword: dict[str, bool] = {}  # Milvus collection → has the BM25 field (servers)
        self._unflushed: set[str] = set()
        self._closed = False
        self.indexes_rebuilt: list[
            str
        ] = []  # Milvus collections whose unreadable indexes were rebuilt
        self._native_lite = self.is_lite and lite_major_version() < 3
        # the native Milvus Lite 2.5 fuses a batched hybrid search wrongly (each query after
        # the first gets ranks counted across the batch), so hybrid is fused here instead
        self._fuses_batches_wrongly = self._native_lite or served_lite
        # Milvus Lite scans every dense vector of a search; a large collection's vectors
        # are copied into memory and scanned there (shared by the stores on one file)
        self._copies: dict[str, dense_cache.DenseCache] | None = None
        if self._lite_path is not None and dense_cache.available():
            self._copies = dense_cache.acquire(self._lite_path)
        # word statistics for ranking several collections as one (shared like the copies)
        self._stats_place = self._lite_path or self.uri
        self._word_stats = word_stats.acquire(self._stats_place)

    @classmethod
    def open(cls, settings: Settings, paths: AppPaths, *, token: str = "") -> VectorStore:
        """The store the settings point at (default: Milvus Lite under the data dir);
        ``token``: a server's, if it asks for one (from the keyring, never the settings file)."""
        paths.log_dir.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault(
            "GLOG_log_dir", str(paths.log_dir)
        )  # the native server's error log, if any
        return cls(resolve_milvus_uri(settings, paths), token=token)

    @property
    def is_lite(self) -> bool:
        return self._lite_path is not None

    @property
    def lite_path(self) -> str | None:
        """The Milvus Lite database this process runs; None on a server."""
        return self._lite_path

    @property
    def lite_folder(self) -> Path | None:
        """The folder of the Milvus Lite file (where its writes take room); None on a server."""
        return Path(self._lite_path).parent if self._lite_path is not None else None

    # -- collections ----------------------------------------------------------

    def ensure_collection(self, name: str, dimension: int, embedding_model: str) -> None:
        """Create if missing; raise EmbeddingMismatch if it exists with another model/dimension."""
        mname = milvus_name(name)
        with self._write_lock:
            if self._client.has_collection(mname):
                self.check_model(name, embedding_model, dimension)
                self._ensure_loaded(mname)
                return
            create_milvus_collection(
                self._client,
                name,
                dimension,
                embedding_model,
                dense_index=self._dense_index(),
                timeout=self._timeout,
                keyword_search=self.keyword_search_available,
            )
            with self._meta_lock:
                self._models[name] = (embedding_model, dimension)
                self._keyword[mname] = self.keyword_search_available
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
            props = collection_metadata(self._client.describe_collection(mname))
            if PROP_NAME in props:
                names.append(props[PROP_NAME])
        return sorted(names)

    def collection_model(self, name: str) -> tuple[str, int]:
        """(embedding model, dimension) the collection was built with."""
        with self._meta_lock:
            cached = self._models.get(name)
        if cached is not None:
            return cached
        mname = self._require(name)
        description = self._client.describe_collection(mname)
        props = collection_metadata(description)
        model = (
            props.get(PROP_MODEL, ""),
            int(props.get(PROP_DIM, 0) or dense_dimension(description)),
        )
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
                self._keyword.pop(mname, None)
            self._unflushed.discard(mname)
            if self._copies is not None:
                dense_cache.drop(self._copies, mname)
            word_stats.drop(self._word_stats, mname)

    # -- writing --------------------------------------------------------------

    def insert(
        self, name: str, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]] | np.ndarray
    ) -> None:
        """Add chunks with their vectors. A chunk id already present is replaced
        (upsert), so redoing a half-finished document never duplicates chunks."""
        if len(chunks) != len(vectors):
            raise StoreError(f"{len(chunks)} chunks but {len(vectors)} vectors.")
        if not chunks:
            return
        mname = self._require(name)
        _, dim = self.collection_model(name)
        array = unit_vectors(vectors, dim)
        rows = [chunk_to_row(chunk, array[i]) for i, chunk in enumerate(chunks)]
        with self._write_lock:
            stats = self._word_stats.get(mname)
            if stats is not None:  # a chunk rewritten in place: its old words leave the statistics
                stats.remove(self._texts_of(mname, [c.chunk_id for c in chunks]))
            for start in range(0, len(rows), WRITE_BATCH):
                self._client.upsert(mname, rows[start : start + WRITE_BATCH], timeout=self._timeout)
            self._unflushed.add(mname)
            if stats is not None:
                stats.add([row["text"] for row in rows])
            if copy := self._copy(mname):
                copy.upsert(
                    [c.chunk_id for c in chunks],
                    [c.doc_id for c in chunks],
                    array,
                    [row["text"] for row in rows],
                )

    def delete_document(self, name: str, doc_id: str) -> None:
        mname = milvus_name(name)
        with self._write_lock:
            if not self._client.has_collection(mname):
                return
            if (stats := self._word_stats.get(mname)) is not None:
                self._ensure_loaded(mname)
                by_doc = f"doc_id == {literal(doc_id)}"
                stats.remove(
                    [
                        str(row["text"])
                        for row in self._query_all(mname, by_doc, ["chunk_id", "text"])
                    ]
                )
            self._client.delete(mname, filter=f"doc_id == {literal(doc_id)}", timeout=self._timeout)
            self._unflushed.add(mname)
            if copy := self._copy(mname):
                copy.remove_document(doc_id)

    def delete_chunks(self, name: str, chunk_ids: Sequence[str]) -> None:
        """Delete these chunk ids (ids not present are ignored)."""
        mname = milvus_name(name)
        with self._write_lock:
            if not chunk_ids or not self._client.has_collection(mname):
                return
            if (stats := self._word_stats.get(mname)) is not None:
                stats.remove(self._texts_of(mname, chunk_ids))
            for start in range(0, len(chunk_ids), 1000):
                part = list(chunk_ids[start : start + 1000])
                self._client.delete(mname, ids=part, timeout=self._timeout)
            self._unflushed.add(mname)
            if copy := self._copy(mname):
                copy.remove_chunks(chunk_ids)

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
                    self._start_copy(mname)
                self._unflushed.discard(mname)

    # -- reading --------------------------------------------------------------

    def document_chunk_ids(self, name: str, doc_id: str) -> list[str]:
        mname = self._require(name)
        self._ensure_loaded(mname)
        return [
            str(row["chunk_id"]) for row in self._query_all(mname, f"doc_id == {literal(doc_id)}")
        ]

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
        ``candidates`` long (default: max(2·top_k, 20)). A collection without BM25
        (on a server older than 2.5) answers bm25 and hybrid by meaning: dense, with
        its scores; a bm25 search there needs the queries' vectors too.
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
        if mode != "dense" and not self._has_keyword_field(name, mname):
            if vectors is None:
                raise StoreError(
                    f"{self.search_note or self._no_keyword_note(name)} A keyword (bm25) search needs "
                    "the queries' vectors here, to search by meaning instead.",
                    "Search in hybrid or dense mode.",
                )
            mode = "dense"
        array: np.ndarray | None = None
        if mode != "bm25":
            if vectors is None or len(vectors) != len(queries):
                raise StoreError(f"Search mode '{mode}' needs one vector per query.")
            array = unit_vectors(vectors, dim)
        copy = self._copy(mname) if doc_ids is None and not path_prefix else None
        if copy is not None and copy.ready and (mode != "bm25" or copy.keywords is not None):
            return search_with_copy(
                self._client,
                mname,
                queries,
                array,
                copy,
                mode=mode,
                top_k=top_k,
                candidates=candidates,
                timeout=self._timeout,
            )
        dense: list[list[float]] = [] if array is None else array.tolist()
        from pymilvus import MilvusException

        try:
            return search_collection(
                self._client,
                mname,
                queries,
                dense,
                mode=mode,
                top_k=top_k,
                doc_ids=doc_ids,
                path_prefix=path_prefix,
                candidates=candidates,
                dense_search=self._dense_search(),
                timeout=self._timeout,
                fuse_here=self._fuses_batches_wrongly,
            )
        except MilvusException:
            # Milvus Lite 2.5 cannot score BM25 over no rows at all ("Invalid sparse row:
            # NaN or Inf value"); an empty collection simply finds nothing
            if mode != "dense" and self.count(name) == 0:
                return [[] for _ in queries]
            raise

    def search_library(
        self,
        names: Sequence[str],
        queries: Sequence[str],
        vectors: Sequence[Sequence[float]] | np.ndarray | None,
        *,
        mode: SearchMode = "hybrid",
        top_k: int = 10,
    ) -> list[list[Hit]]:
        """:meth:`search` over several collections, ranked as if they were one
        (:mod:`app.store.library_ranking`): each collection gives its candidates by
        meaning and by keyword apart, ``max(2·top_k, 20)`` of each (the pool a hybrid
        search fuses), all at once; the cosines are ranked as they are, the keyword
        candidates scored again with the word statistics of all the collections, and
        the two lists fused by reciprocal rank. Scores: as :meth:`search` gives them."""
        if mode not in SEARCH_MODES:
            raise StoreError(f"Unknown search mode '{mode}'.", "Use hybrid, dense or bm25.")
        if not queries or not names:
            return [[] for _ in queries]
        pool = max(2 * top_k, 20)
        keyworded = [n for n in names if mode != "dense" and self.has_keywords(n)]
        # a bm25 search of a collection without keywords is answered by meaning, as search() does
        lacking = [n for n in names if n not in keyworded]
        by_meaning = list(names) if mode != "bm25" else (lacking if vectors is not None else [])
        if by_meaning and vectors is None:
            raise StoreError(f"Search mode '{mode}' needs one vector per query.")
        sides = [(n, "dense") for n in by_meaning] + [(n, "bm25") for n in keyworded]
        found = list(
            _collection_threads().map(
                lambda side: self.search(
                    side[0],
                    queries,
                    vectors if side[1] == "dense" else None,
                    mode=side[1],
                    top_k=pool,
                ),
                sides,
            )
        )
        dense_lists, keyword_lists = found[: len(by_meaning)], found[len(by_meaning) :]
        stats = [self.word_stats(n) for n in keyworded]
        ready = [s for s in stats if s is not None]
        library = (
            LibraryWords.of(ready, queries) if keyworded and len(ready) == len(stats) else None
        )
        counted: dict[str, Counter[str]] = {}
        return [
            one_ranking(
                query,
                [hits[i] for hits in dense_lists],
                [hits[i] for hits in keyword_lists],
                library,
                top_k=top_k,
                pool=pool,
                counted=counted,
            )
            for i, query in enumerate(queries)
        ]

    def get_chunks(self, name: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids, in the order asked (ids not found are left out)."""
        if not chunk_ids:
            return []
        mname = self._require(name)
        self._ensure_loaded(mname)
        found: dict[str, Chunk] = {}
        unique = list(dict.fromkeys(chunk_ids))
        for start in range(0, len(unique), 1000):
            rows = self._client.get(
                mname, ids=unique[start : start + 1000], output_fields=OUTPUT_FIELDS
            )
            for row in rows:
                chunk = row_to_chunk(dict(row))
                found[chunk.chunk_id] = chunk
        return [found[cid] for cid in chunk_ids if cid in found]

    def has_keywords(self, name: str) -> bool:
        """Whether a keyword (BM25) search of collection ``name`` is answered by keyword
        (not on a server older than 2.5, nor for a collection made on one)."""
        return self.keyword_search_available and self._has_keyword_field(name, self._require(name))

    def word_stats(self, name: str) -> word_stats.WordStats | None:
        """Collection ``name``'s word statistics (:mod:`app.store.word_stats`), for a
        keyword ranking of several collections as one library; None while they are
        being counted. A collection of fewer than :data:`dense_cache.MIN_ROWS` chunks
        is counted here and now (a few tenths of a second); a larger one in the
        background, from the first time it is asked for."""
        mname = self._require(name)
        self._ensure_loaded(mname)
        stats = self._word_stats.get(mname)
        stale = (
            stats is not None
            and stats.ready
            and time.monotonic() - stats.counted_at > SERVER_WORD_STATS_AGE
        )
        if stale and not self.is_lite:
            word_stats.drop(self._word_stats, mname)  # others may have written to it since
            stats = None
        if stats is None:
            large = self.count(name) >= dense_cache.MIN_ROWS
            stats = word_stats.start_counting(
                self._word_stats, mname, lambda: self._text_pages(mname), background=large
            )
            if large:
                log.info("counting the words of %s for searches over several collections", mname)
        return stats if stats.ready else None

    def _text_pages(self, mname: str) -> Iterator[list[str]]:
        page: list[str] = []
        for row in self._query_all(mname, 'doc_id != ""', ["chunk_id", "text"]):
            if self._closed:
                return
            page.append(str(row["text"]))
            if len(page) >= TEXT_PAGE:
                yield page
                page = []
        if page:
            yield page

    def _texts_of(self, mname: str, chunk_ids: Sequence[str]) -> list[str]:
        """The texts of those of these chunks that are stored (for the word statistics)."""
        self._ensure_loaded(mname)
        texts: list[str] = []
        unique = list(dict.fromkeys(chunk_ids))
        for start in range(0, len(unique), 1000):
            rows = self._client.get(mname, ids=unique[start : start + 1000], output_fields=["text"])
            texts.extend(str(row["text"]) for row in rows)
        return texts

    def sample_chunks(self, name: str, n: int = 8) -> list[Chunk]:
        """Up to ``n`` chunks spread over the collection (by chunk_no 0 first)."""
        mname = self._require(name)
        self._ensure_loaded(mname)
        rows = self._client.query(
            mname, filter="chunk_no >= 0", output_fields=OUTPUT_FIELDS, limit=max(n * 8, n)
        )
        chunks = [row_to_chunk(dict(row)) for row in rows]
        if len(chunks) <= n:
            return chunks
        step = len(chunks) / n
        return [chunks[int(i * step)] for i in range(n)]

    def count(self, name: str) -> int:
        mname = self._require(name)
        self._ensure_loaded(mname)
        rows = self._client.query(
            mname, filter="", output_fields=["count(*)"], timeout=self._timeout
        )
        return int(rows[0]["count(*)"]) if rows else 0

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._unflushed:
                self.flush()
        finally:
            if self._copies is not None and self._lite_path is not None:
                dense_cache.release(self._lite_path)
            word_stats.release(self._stats_place)
            if self._lite_path is None:
                self._client.close()
            else:  # the connection is shared with the path's other stores: closed with the last
                release_lite(self._lite_path, self._client)

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ----------------------------------------------------------------

    def _dense_index(self) -> dict[str, Any]:
        return NATIVE_DENSE_INDEX if self._native_lite else DENSE_INDEX

    def _dense_search(self) -> dict[str, Any]:
        if not self.is_lite:
            return SERVER_DENSE_SEARCH
        return NATIVE_DENSE_SEARCH if self._native_lite else DENSE_SEARCH

    def _has_keyword_field(self, name: str, mname: str) -> bool:
        """Whether collection ``name`` has the BM25 field: always on Milvus Lite; on a
        server, not when it was made on one older than 2.5 (even if upgraded since)."""
        if self.is_lite:
            return True
        with self._meta_lock:
            known = self._keyword.get(mname)
        if known is None:
            known = has_keyword_field(self._client.describe_collection(mname))
            # said once: the store's own note says the rest
            if not known and self.keyword_search_available:
                log.warning("%s", self._no_keyword_note(name))
            with self._meta_lock:
                self._keyword[mname] = known
        return known

    @staticmethod
    def _no_keyword_note(name: str) -> str:
        return (
            f"Collection '{name}' was made on a Milvus server without BM25 keyword search: it is searched "
            "by meaning only. Re-index it to search it by keyword too."
        )

    def _require(self, name: str) -> str:
        mname = milvus_name(name)
        with self._meta_lock:
            if mname in self._loaded:
                return mname
        if not self._client.has_collection(mname):
            raise CollectionNotFound(
                f"There is no collection named '{name}'.",
                "See `fathom collections` for the ones there are.",
            )
        return mname

    def _ensure_loaded(self, mname: str) -> None:
        """Milvus serves a collection only once loaded; after a reopen it is not.

        Milvus Lite writes an index file in place: a process killed while it writes
        one leaves it cut short, and loading then fails ("No data left in file"). The
        indexes are derived from the rows, so they are rebuilt from them, once."""
        with self._meta_lock:
            if mname in self._loaded:
                return
        try:
            self._client.load_collection(mname, timeout=self._timeout)
        except Exception as exc:  # pymilvus raises MilvusException; Lite's cause is in its text
            if not self.is_lite:
                raise
            log.warning(
                "the search indexes of %s could not be loaded (%s); rebuilding them from its rows",
                mname,
                exc,
            )
            self._rebuild_indexes(mname)
            self._client.load_collection(mname, timeout=self._timeout)
            self.indexes_rebuilt.append(mname)
        with self._meta_lock:
            self._loaded.add(mname)
        self._start_copy(mname)

    # -- the in-memory copy of a large collection's dense vectors (Milvus Lite) ---------

    def _copy(self, mname: str) -> dense_cache.DenseCache | None:
        return None if self._copies is None else self._copies.get(mname)

    def _start_copy(self, mname: str) -> None:
        """Copy ``mname``'s dense vectors into memory in the background, once it holds
        :data:`dense_cache.MIN_ROWS` chunks; its searches use the copy once it is full."""
        if self._copies is None or self._closed or mname in self._copies:
            return
        rows = self._client.query(
            mname, filter="", output_fields=["count(*)"], timeout=self._timeout
        )
        if not rows or int(rows[0]["count(*)"]) < dense_cache.MIN_ROWS:
            return
        dimension = dense_dimension(self._client.describe_collection(mname))
        # 3.x scores BM25 with each segment's own word statistics: the copy keeps BM25 too
        keywords = not self._native_lite
        if dense_cache.start_filling(
            self._copies,
            mname,
            dimension,
            lambda: self._copy_pages(mname, dimension, keywords),
            keywords=keywords,
        ):
            log.info("copying the dense vectors of %s into memory for faster search", mname)

    def _copy_pages(self, mname: str, dimension: int, texts: bool) -> Iterator[dense_cache.Page]:
        """The collection's (chunk ids, document ids, vectors, texts or None), a page at a
        time. Read by id: Milvus Lite returns a few hundred rows with their vectors in
        milliseconds, but takes minutes over ten thousand in one query."""
        copy = self._copy(mname)
        chunk_ids: list[str] = []
        for row in self._query_all(mname, 'doc_id != ""'):
            # a million ids take a minute to read: stop as soon as the store closes
            if copy is None or copy.cancelled.is_set():
                return
            chunk_ids.append(str(row["chunk_id"]))
        fields = ["chunk_id", "doc_id", "dense", *(["text"] if texts else [])]
        for start in range(0, len(chunk_ids), COPY_PAGE):
            rows = self._client.get(
                mname,
                ids=chunk_ids[start : start + COPY_PAGE],
                output_fields=fields,
                timeout=self._timeout,
            )
            vectors = np.asarray([row["dense"] for row in rows], dtype=np.float32).reshape(
                len(rows), dimension
            )
            yield (
                [str(row["chunk_id"]) for row in rows],
                [str(row["doc_id"]) for row in rows],
                vectors,
                [str(row["text"]) for row in rows] if texts else None,
            )

    def _rebuild_indexes(self, mname: str) -> None:
        with contextlib.suppress(Exception):  # not loaded: nothing to release
            self._client.release_collection(mname, timeout=self._timeout)
        # Lite writes index files for the dense field only (BM25 is kept with the rows: its
        # index cannot be dropped, "no index to drop"); a rebuilt dense index is read afresh.
        if "dense" in self._client.list_indexes(mname):
            self._client.drop_index(mname, "dense", timeout=self._timeout)
        create_indexes(
            self._client,
            mname,
            dense_index=self._dense_index(),
            timeout=self._timeout,
            fields=("dense",),
        )

    def _query_all(
        self, mname: str, expr: str, fields: list[str] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every row matching ``expr``. One query returns at most 16384 rows on a server
        and on the native Milvus Lite (which says nothing and stops there), so those are
        read page by page; Milvus Lite 3.x has no cap, and its iterator warns per call."""
        if self.is_lite and not self._native_lite:
            yield from (
                dict(row)
                for row in self._client.query(
                    mname, filter=expr, output_fields=fields or ["chunk_id"]
                )
            )
            return
        with _quiet_iterator_warning():
            iterator = self._client.query_iterator(
                mname, batch_size=QUERY_PAGE, filter=expr, output_fields=fields or ["chunk_id"]
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


class _NoMvccWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "mvccTs" not in record.getMessage()


@contextlib.contextmanager
def _quiet_iterator_warning() -> Iterator[None]:
    """pymilvus warns at every iterator on Milvus Lite that it keeps its own timestamp
    ("failed to get mvccTs …"): true, and of no consequence to a reader of one process."""
    logger, quiet = logging.getLogger("pymilvus.orm.iterator"), _NoMvccWarning()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _move_from_lite3(path: str) -> MoveReport:
    """Write the rows of Milvus Lite 3.x's database at ``path`` into a native one, and
    put it in its place (:mod:`app.store.engine_move`)."""
    started = time.perf_counter()
    moving, collections = start_move(path)
    report = MoveReport()
    with VectorStore(moving) as store:
        for collection in collections:
            store.ensure_collection(
                collection.name, collection.dimension, collection.embedding_model
            )
            moved = 0
            for chunks, vectors in live_rows(collection):
                store.insert(collection.name, chunks, vectors)
                moved += len(chunks)
            store.flush(collection.name)
            report.collections[collection.name] = moved
    report.backup = finish_move(path)
    report.seconds = time.perf_counter() - started
    log.info("%s", report.describe())
    return report
