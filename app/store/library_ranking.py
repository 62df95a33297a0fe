"""One ranking of the hits of several collections, as if they were one library.

A hybrid search fuses two rankings by reciprocal rank (RRF), and inside one collection
that is sound; but merging the fused lists of several collections by their RRF score
ranks the first hit of a 10-chunk collection level with the first hit of a
100,000-chunk one, whatever either says. So a search over several collections asks each
for its two sides apart, and ranks each side once over all of them:

- by meaning: the cosine similarities of one embedding model are comparable across
  collections, so the dense candidates are simply sorted by score (this is exactly the
  dense ranking of the library as one collection);
- by keyword: each collection's BM25 scores use its own word statistics, so the keyword
  candidates are scored again with the statistics of all the collections searched,
  added up (:mod:`app.store.word_stats`);

then the two library-wide lists are fused by reciprocal rank, as a hybrid search of one
collection fuses its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from app.core.models import Hit
from app.store.bm25_analyzer import words
from app.store.milvus_search import rrf_fuse
from app.store.word_stats import LibraryWords, bm25_score


def by_score(lists: Sequence[Sequence[Hit]], limit: int) -> list[Hit]:
    """The hits of several lists in one list, best score first, each chunk once (its
    best hit), at most ``limit``."""
    best: dict[str, Hit] = {}
    for hits in lists:
        for hit in hits:
            kept = best.get(hit.chunk.chunk_id)
            if kept is None or hit.score > kept.score:
                best[hit.chunk.chunk_id] = hit
    return sorted(best.values(), key=lambda hit: -hit.score)[:limit]


def keywords_rescored(
    query: str,
    lists: Sequence[Sequence[Hit]],
    library: LibraryWords,
    limit: int,
    counted: dict[str, Counter[str]] | None = None,
) -> list[Hit]:
    """The keyword (BM25) hits of several collections scored again with ``library``'s
    statistics, best first, at most ``limit``; a hit that shares no word with the
    query under those statistics is dropped. ``counted`` keeps each chunk's words
    between the queries of one search (a chunk is often a candidate for several)."""
    counted = {} if counted is None else counted

    def counts(hit: Hit) -> Counter[str]:
        found = counted.get(hit.chunk.chunk_id)
        if found is None:
            found = counted[hit.chunk.chunk_id] = Counter(words(hit.chunk.text))
        return found

    rescored = [
        Hit(chunk=hit.chunk, score=bm25_score(query, counts(hit), library), query=hit.query)
        for hits in lists
        for hit in hits
    ]
    return by_score([[hit for hit in rescored if hit.score > 0]], limit)


def one_ranking(
    query: str,
    dense: Sequence[Sequence[Hit]],
    keywords: Sequence[Sequence[Hit]],
    library: LibraryWords | None,
    *,
    top_k: int,
    pool: int,
    counted: dict[str, Counter[str]] | None = None,
) -> list[Hit]:
    """The ``top_k`` best hits for ``query`` over several collections: ``dense`` and
    ``keywords`` hold each collection's candidates by meaning and by keyword (either
    may be empty: a dense or a keyword search), ``pool`` of each; ``library`` the word
    statistics of them all (None: each collection's own BM25 scores are compared, the
    best that can be done while a large collection's statistics are being counted).

    With both sides, scores are the reciprocal-rank fusion of the two library-wide
    lists; with one, its scores (cosine, or BM25). ``counted``: see
    :func:`keywords_rescored`."""
    by_meaning = by_score(dense, pool) if any(dense) else []
    if any(keywords):
        by_words = (
            keywords_rescored(query, keywords, library, pool, counted)
            if library is not None
            else by_score(keywords, pool)
        )
    else:
        by_words = []
    if by_meaning and by_words:
        return rrf_fuse([by_meaning, by_words], top_k)
    return (by_meaning or by_words)[:top_k]
