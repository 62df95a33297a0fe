"""One search call on a Fathom collection in Milvus: dense, BM25 or hybrid.

Hybrid runs the dense and the BM25 search side by side and fuses the two
lists by reciprocal rank (k=60): in Milvus (``hybrid_search``), or, where the
engine fuses a batch of queries wrongly (the native Milvus Lite 2.5), here from
one batched dense and one batched BM25 call (``fuse_here``); or, where a large
collection's dense vectors are copied in memory, from the copy's dense list and the
BM25 list of Milvus or of the copy's own keyword index (``search_with_copy``).
Filters narrow a search to some documents or to a path prefix; hits come back as
:class:`~app.core.models.Hit` per query.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from app.core.models import Chunk, Hit
from app.store.milvus_schema import KEYWORD_FIELD, OUTPUT_FIELDS, row_to_chunk, safe_text

if TYPE_CHECKING:
    from app.store.dense_cache import DenseCache

SearchMode = Literal["hybrid", "dense", "bm25"]
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "dense", "bm25")

RRF_K = 60
BM25_SEARCH: dict[str, Any] = {"metric_type": "BM25"}

_keyword_pool: ThreadPoolExecutor | None = None
_keyword_pool_lock = threading.Lock()


def _keyword_threads() -> ThreadPoolExecutor:
    """Threads that wait on Milvus' BM25 answer while this thread scans the in-memory
    copy (both release the GIL: the scan in faiss, the wait in gRPC)."""
    global _keyword_pool
    with _keyword_pool_lock:
        if _keyword_pool is None:
            _keyword_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fathom-bm25")
        return _keyword_pool


# -- filters ------------------------------------------------------------------


def literal(value: str) -> str:
    """A Milvus filter string literal."""
    return json.dumps(value, ensure_ascii=False)


def _like_prefix(prefix: str) -> str:
    # Milvus Lite's LIKE has no escapes, so a '%' or '_' in the prefix is a wildcard
    # there; search_collection() re-checks the prefix exactly on the rows that come back.
    return literal(safe_text(prefix) + "%")


def build_filter(doc_ids: Sequence[str] | None, path_prefix: str | None) -> str:
    parts = []
    if doc_ids is not None:
        parts.append(f"doc_id in [{', '.join(literal(d) for d in doc_ids)}]")
    if path_prefix:
        parts.append(f"path like {_like_prefix(path_prefix)}")
    return " and ".join(parts)


# -- searching ------------------------------------------------------------------


def search_collection(
    client: Any,
    mname: str,
    queries: Sequence[str],
    dense: list[list[float]],
    *,
    mode: SearchMode,
    top_k: int,
    doc_ids: Sequence[str] | None,
    path_prefix: str | None,
    candidates: int | None,
    dense_search: dict[str, Any],
    timeout: float | None,
    fuse_here: bool = False,
) -> list[list[Hit]]:
    """Search Milvus collection ``mname``; result i answers query i, best first.

    ``dense`` holds one unit vector per query (empty for bm25); ``dense_search``
    is the dense field's search parameters; hybrid fuses lists ``candidates`` long
    (default: max(2·top_k, 20)); ``fuse_here``: fuse them in Python.
    """
    expr = build_filter(doc_ids, path_prefix)
    texts = [q if q.strip() else " " for q in queries]
    raw: Any
    pool = candidates or max(2 * top_k, 20)
    if mode == "hybrid" and fuse_here:
        both = [
            search_collection(
                client,
                mname,
                queries,
                dense,
                mode=single,
                top_k=pool,
                doc_ids=doc_ids,
                path_prefix=path_prefix,
                candidates=None,
                dense_search=dense_search,
                timeout=timeout,
            )
            for single in ("dense", "bm25")
        ]
        return [
            rrf_fuse([by_dense, by_bm25], top_k) for by_dense, by_bm25 in zip(*both, strict=True)
        ]
    if mode == "hybrid":
        from pymilvus import AnnSearchRequest, RRFRanker

        requests = [
            AnnSearchRequest(
                data=dense, anns_field="dense", param=dense_search, limit=pool, expr=expr or None
            ),
            AnnSearchRequest(
                data=texts,
                anns_field=KEYWORD_FIELD,
                param=BM25_SEARCH,
                limit=pool,
                expr=expr or None,
            ),
        ]
        raw = client.hybrid_search(
            mname,
            requests,
            ranker=RRFRanker(RRF_K),
            limit=top_k,
            output_fields=OUTPUT_FIELDS,
            timeout=timeout,
        )
    else:
        data, field, params = (
            (dense, "dense", dense_search)
            if mode == "dense"
            else (texts, KEYWORD_FIELD, BM25_SEARCH)
        )
        raw = client.search(
            mname,
            data=data,
            anns_field=field,
            limit=top_k,
            filter=expr,
            output_fields=OUTPUT_FIELDS,
            search_params=params,
            timeout=timeout,
        )
    return [_hits(query, hits, mode, path_prefix) for query, hits in zip(queries, raw, strict=True)]


def search_with_copy(
    client: Any,
    mname: str,
    queries: Sequence[str],
    vectors: np.ndarray | None,
    copy: DenseCache,
    *,
    mode: SearchMode,
    top_k: int,
    candidates: int | None,
    timeout: float | None,
) -> list[list[Hit]]:
    """A search of the whole collection with its dense side answered by ``copy``
    (:mod:`app.store.dense_cache`) instead of Milvus' scan, and its BM25 side by the
    copy's keyword index where it keeps one (Milvus Lite 3.x), else by Milvus, on
    another thread while the vectors are scanned; the two lists are fused here as in
    :func:`search_collection`, and the chunks are read from Milvus by id. Dense scores
    are the copy's (half precision: within about 1e-3 of the exact cosine).
    ``vectors`` may be None only for a bm25 search of a copy that keeps BM25."""
    known: dict[str, Chunk] = {}
    pool = candidates or max(2 * top_k, 20)
    if mode == "bm25":  # the store sends a bm25 search here only when the copy keeps BM25
        ranked = copy.search_keywords(queries, top_k)
    elif vectors is None:
        raise ValueError(f"a {mode} search needs the queries' vectors")
    elif mode == "dense":
        ranked = copy.search(vectors, top_k)
    else:

        def keyword_side() -> list[list[tuple[str, float]]]:
            if copy.keywords is not None:  # the copy keeps BM25 too (Milvus Lite 3.x)
                return copy.search_keywords(queries, pool)
            hits = search_collection(
                client,
                mname,
                queries,
                [],
                mode="bm25",
                top_k=pool,
                doc_ids=None,
                path_prefix=None,
                candidates=None,
                dense_search={},
                timeout=timeout,
            )
            known.update((hit.chunk.chunk_id, hit.chunk) for row in hits for hit in row)
            return [[(hit.chunk.chunk_id, hit.score) for hit in row] for row in hits]

        # the BM25 side is answered on another thread while the copy is scanned here
        # (faiss and gRPC release the GIL): a sub-query costs the longer of the two
        keyword = _keyword_threads().submit(keyword_side)
        by_dense = copy.search(vectors, pool)
        by_keyword = keyword.result()
        ranked = [
            rrf_rank(
                [[chunk_id for chunk_id, _ in near], [chunk_id for chunk_id, _ in words]], top_k
            )
            for near, words in zip(by_dense, by_keyword, strict=True)
        ]
    missing = list(
        dict.fromkeys(chunk_id for row in ranked for chunk_id, _ in row if chunk_id not in known)
    )
    if missing:
        rows = client.get(mname, ids=missing, output_fields=OUTPUT_FIELDS, timeout=timeout)
        known.update((chunk.chunk_id, chunk) for chunk in (row_to_chunk(dict(row)) for row in rows))
    # a chunk deleted since the copy was searched is left out
    return [
        [
            Hit(chunk=known[chunk_id], score=score, query=query)
            for chunk_id, score in row
            if chunk_id in known
        ]
        for query, row in zip(queries, ranked, strict=True)
    ]


def rrf_rank(lists: Sequence[Sequence[str]], top_k: int) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion as Milvus does it: an id scores Σ 1/(k + rank), rank
    counted from 1 in each list it is in; (id, score), best first, ties in order of
    first sight."""
    scores: dict[str, float] = {}
    for ids in lists:
        for rank, key in enumerate(ids, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
    ranked = sorted(scores, key=lambda key: -scores[key])[:top_k]
    return [(key, scores[key]) for key in ranked]


def rrf_fuse(lists: Sequence[Sequence[Hit]], top_k: int) -> list[Hit]:
    """:func:`rrf_rank` of lists of hits; each chunk keeps its first hit's query."""
    first: dict[str, Hit] = {}
    for hits in lists:
        for hit in hits:
            first.setdefault(hit.chunk.chunk_id, hit)
    ranked = rrf_rank([[hit.chunk.chunk_id for hit in hits] for hits in lists], top_k)
    return [
        Hit(chunk=first[key].chunk, score=score, query=first[key].query) for key, score in ranked
    ]


def _hits(query: str, raw: Any, mode: SearchMode, path_prefix: str | None) -> list[Hit]:
    found = []
    for hit in raw:
        entity = dict(hit.get("entity", {}))
        entity.setdefault("chunk_id", hit.get("id", hit.get("chunk_id")))
        score = float(hit.get("distance", 0.0))
        # Milvus Lite reports BM25 as a negated distance, a server as a score.
        found.append(
            Hit(
                chunk=row_to_chunk(entity),
                score=abs(score) if mode == "bm25" else score,
                query=query,
            )
        )
    if path_prefix:  # ``like`` is exact on servers; keep the guarantee everywhere
        prefix = safe_text(path_prefix)
        found = [h for h in found if h.chunk.path.startswith(prefix)]
    return found
