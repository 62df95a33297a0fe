"""A copy of a large collection's dense vectors in memory, searched in place of Milvus Lite's scan.

Milvus Lite has no approximate index that finds the exact neighbours of
embedding-like vectors (its IVF and AUTOINDEX found 0.39 of the exact top 10 at
100k chunks), so it scans every vector, at about twice the cost of numpy's matrix
product. An HNSW or IVF index in faiss does no better on the bench's vectors
(0.4-0.9 of the exact top 10 at any usable breadth): a large library needs a scan,
and the fastest scan here is faiss' over half-precision copies of the vectors
(``QT_fp16``: two bytes a dimension, no training; 0.99 of the exact top 10, about
twice numpy's speed at 100k rows; tests/bench/bench_search.py measures it).

The copy is derived, never the record: it is filled from the collection's rows
in the background once a store opens a collection of at least :data:`MIN_ROWS`
chunks (until it is ready, searches go to Milvus), kept in step by the store's own
writes, and never written to disk. Writes made while it is being filled are
replayed, in order, once it is full: each sets or clears the rows it names, so the
copy ends as Milvus does whatever the fill read before or after them.

The stores of one Milvus Lite file share one connection, so they share their
copies too (:func:`acquire`), and a write through any of them keeps them right.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from app.core.serial_import import serial_import
from app.store.keyword_copy import KeywordIndex
from app.store.shared_by_place import SharedByPlace

log = logging.getLogger(__name__)

MIN_ROWS = 5_000  # below this Milvus Lite's own search takes a millisecond or two

# one page of a collection's rows: chunk ids, document ids, unit vectors, and the chunk
# texts when the copy keeps BM25 too (else None)
Page = tuple[Sequence[str], Sequence[str], np.ndarray, Sequence[str] | None]


def available() -> bool:
    """Whether faiss can be imported here (without it, Milvus scans as before)."""
    try:
        with serial_import("faiss"):
            import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def check() -> str | None:
    """None when a copy works here (faiss loads and finds a vector by itself), else why
    not: the self-test's check that an installed bundle carries faiss."""
    try:
        cache = DenseCache(4)
        cache.fill([(["a", "b"], ["d", "d"], np.eye(4, dtype=np.float32)[:2], None)])
        found = cache.search(np.eye(4, dtype=np.float32)[1:2], 1)
    except Exception as exc:  # ImportError, or a faiss built for another CPU
        return f"the in-memory search copy for large libraries does not work: {type(exc).__name__}: {exc}"
    if found != [[("b", 1.0)]]:
        return f"the in-memory search copy found {found}, not the vector searched for"
    return None


class DenseCache:
    """Half-precision copies of one collection's unit vectors, by chunk id; with
    ``keywords``, a BM25 index of the chunks' texts too (:mod:`app.store.keyword_copy`)."""

    def __init__(self, dimension: int, *, keywords: bool = False) -> None:
        with serial_import("faiss"):
            import faiss

        self.dimension = dimension
        quantiser = faiss.IndexScalarQuantizer(
            dimension, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
        )
        self._index = faiss.IndexIDMap2(quantiser)
        self.keywords: KeywordIndex | None = KeywordIndex() if keywords else None
        self._lock = threading.Lock()  # the faiss index and the id maps; writes take it first
        # the keyword index, so both sides can be searched at once
        self._keyword_lock = threading.Lock()
        self._label_of: dict[str, int] = {}
        self._chunk_of: dict[int, str] = {}
        self._labels_of_doc: dict[str, set[int]] = {}
        self._doc_of: dict[int, str] = {}
        self._next_label = 0
        self._pending: list[Callable[[], None]] | None = []  # writes while filling; None once full
        self._ready = threading.Event()
        self.cancelled = threading.Event()
        self.filler: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def __len__(self) -> int:
        with self._lock:
            return len(self._label_of)

    # -- filling --------------------------------------------------------------------

    def fill(self, pages: Iterable[Page]) -> bool:
        """Add the collection's rows, page by page, then the writes made meanwhile;
        False (and never ready) when cancelled first."""
        for chunk_ids, doc_ids, vectors, texts in pages:
            if self.cancelled.is_set():
                return False
            with self._lock:
                self._set(chunk_ids, doc_ids, vectors, texts)
        with self._lock:
            if self.cancelled.is_set():
                return False
            for write in self._pending or []:
                write()
            self._pending = None
        self._ready.set()
        return True

    # -- kept in step with the store's writes ------------------------------------------

    def upsert(
        self,
        chunk_ids: Sequence[str],
        doc_ids: Sequence[str],
        vectors: np.ndarray,
        texts: Sequence[str],
    ) -> None:
        """Set these chunks' vectors (unit vectors, one row each) and texts (as Milvus
        keeps them), replacing any they had."""
        ids, docs, rows, words = (
            list(chunk_ids),
            list(doc_ids),
            np.array(vectors, dtype=np.float32),
            list(texts),
        )
        self._write(lambda: self._set(ids, docs, rows, words))

    def remove_document(self, doc_id: str) -> None:
        self._write(lambda: self._remove(list(self._labels_of_doc.get(doc_id, ()))))

    def remove_chunks(self, chunk_ids: Sequence[str]) -> None:
        ids = list(chunk_ids)
        self._write(lambda: self._remove([self._label_of[c] for c in ids if c in self._label_of]))

    def _write(self, write: Callable[[], None]) -> None:
        with self._lock:
            if self._pending is not None:
                self._pending.append(write)
            else:
                write()

    def _set(
        self,
        chunk_ids: Sequence[str],
        doc_ids: Sequence[str],
        vectors: np.ndarray,
        texts: Sequence[str] | None,
    ) -> None:
        if not len(chunk_ids):
            return
        if self.keywords is not None and texts is None:
            raise ValueError("this copy keeps BM25: it needs the chunks' texts")
        self._remove([self._label_of[c] for c in chunk_ids if c in self._label_of])
        labels = np.arange(self._next_label, self._next_label + len(chunk_ids), dtype=np.int64)
        self._next_label += len(chunk_ids)
        self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), labels)
        for label, chunk_id, doc_id in zip(labels.tolist(), chunk_ids, doc_ids, strict=True):
            self._label_of[chunk_id] = label
            self._chunk_of[label] = chunk_id
            self._doc_of[label] = doc_id
            self._labels_of_doc.setdefault(doc_id, set()).add(label)
        if self.keywords is not None and texts is not None:
            with self._keyword_lock:
                self.keywords.add(labels.tolist(), texts)

    def _remove(self, labels: list[int]) -> None:
        if not labels:
            return
        self._index.remove_ids(np.array(labels, dtype=np.int64))  # type: ignore[arg-type]  # faiss wraps arrays
        if self.keywords is not None:
            with self._keyword_lock:
                self.keywords.remove(labels)
        for label in labels:
            del self._label_of[self._chunk_of.pop(label)]
            doc_id = self._doc_of.pop(label)
            of_doc = self._labels_of_doc[doc_id]
            of_doc.discard(label)
            if not of_doc:
                del self._labels_of_doc[doc_id]

    # -- reading --------------------------------------------------------------------

    def chunk_ids(self) -> set[str]:
        with self._lock:
            return set(self._label_of)

    def vector(self, chunk_id: str) -> np.ndarray:
        """The copy of one chunk's vector (half precision, widened); KeyError if absent."""
        with self._lock:
            return np.asarray(self._index.reconstruct(self._label_of[chunk_id]), dtype=np.float32)

    # -- searching ------------------------------------------------------------------

    def search(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """(chunk id, inner product) of the rows nearest each query vector, best first."""
        with self._lock:
            if not self._label_of:
                return [[] for _ in range(len(vectors))]
            scores, labels = self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
            found = []
            for row, near in zip(labels.tolist(), scores.tolist(), strict=True):
                found.append(
                    [
                        (self._chunk_of[at], score)
                        for at, score in zip(row, near, strict=True)
                        if at >= 0
                    ]
                )
            return found

    def search_keywords(self, queries: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
        """(chunk id, BM25 score) of the best rows for each query, best first (a copy
        made with ``keywords``)."""
        if self.keywords is None:
            raise ValueError("this copy keeps no BM25 index")
        with self._keyword_lock:
            found = self.keywords.search(queries, k)
        with self._lock:  # a row removed meanwhile is left out (a rewritten chunk gets a new row)
            return [
                [(self._chunk_of[row], score) for row, score in rows if row in self._chunk_of]
                for rows in found
            ]


_COPIES: SharedByPlace[DenseCache] = SharedByPlace()


def acquire(path: str) -> dict[str, DenseCache]:
    """The copies of the collections in Milvus Lite file ``path`` (Milvus name → copy),
    shared by the stores open on it; :func:`release` when the store closes."""
    return _COPIES.acquire(path)


def release(path: str, wait: float = 10.0) -> None:
    """A store on ``path`` closed; with the last, the copies are dropped: fills under way
    stop after the page they are reading (waited for up to ``wait`` seconds, so that none
    reads from a connection about to close)."""
    _COPIES.release(path, wait)


def drop(caches: dict[str, DenseCache], mname: str) -> None:
    """Collection ``mname`` is gone: forget its copy (a fill under way stops)."""
    _COPIES.drop(caches, mname)


def start_filling(
    caches: dict[str, DenseCache],
    mname: str,
    dimension: int,
    read: Callable[[], Any],
    *,
    keywords: bool = False,
) -> bool:
    """Begin a copy of collection ``mname`` unless there is one: ``read()`` yields the
    rows' pages (:meth:`DenseCache.fill`; with their texts when ``keywords``); filled on
    a background thread."""
    with _COPIES.lock:
        if mname in caches:
            return False
        cache = caches[mname] = DenseCache(dimension, keywords=keywords)

    def run() -> None:
        try:
            cache.fill(read())
        except Exception:  # a copy is only a speed-up: Milvus keeps answering
            if cache.cancelled.is_set():  # the store closed under it
                return
            log.exception(
                "the in-memory copy of %s's vectors could not be filled; Milvus searches it", mname
            )
            with _COPIES.lock:
                if caches.get(mname) is cache:
                    del caches[mname]

    cache.filler = threading.Thread(target=run, name=f"fathom-dense-copy-{mname}", daemon=True)
    cache.filler.start()
    return True
