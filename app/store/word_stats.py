"""How many chunks of a collection hold each word, as BM25 counts words: what a search
over several collections needs to score keywords as if they were one library.

BM25 weighs a word by how rare it is among the chunks (its document frequency) and a
chunk's length against the average length; each Milvus collection keeps these numbers
for itself, so a BM25 score from a 10-chunk collection and one from a 100,000-chunk
collection are on different scales. :class:`WordStats` keeps a collection's numbers
(chunks, words, and the document frequency of every word, with the words cut as
:func:`app.store.bm25_analyzer.words` cuts them, like Milvus' analyzer); a search over
several collections adds them up (:class:`LibraryWords`) and scores each candidate
chunk with the library's numbers (:func:`bm25_score`).

The statistics are derived, never the record: counted from the collection's rows when
first needed (:mod:`app.store.vectors` counts a small collection on the spot and a large
one in the background), kept in step by the store's own writes, never written to disk.
Writes made while a count is under way are applied after it, so a chunk written in
that window may be counted twice: a few chunks' worth of drift in statistics of
thousands, which changes no ranking. The stores of one Milvus Lite file share their
statistics, as they share their in-memory copies (:func:`acquire`).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from app.store.bm25_analyzer import words
from app.store.milvus_schema import BM25_B, BM25_K1
from app.store.shared_by_place import SharedByPlace

log = logging.getLogger(__name__)


class WordStats:
    """One collection's chunk count, word count and document frequency per word."""

    def __init__(self) -> None:
        self.chunks = 0
        self.words = 0
        self.df: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._pending: (
            list[Callable[[], None]] | None
        ) = []  # writes while counting; None once counted
        self._ready = threading.Event()
        self.cancelled = threading.Event()
        self.counted_at = 0.0  # time.monotonic() when the count ended
        self.filler: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def fill(self, pages: Iterable[Sequence[str]]) -> bool:
        """Count the collection's chunk texts, page by page, then the writes made
        meanwhile; False (and never ready) when cancelled first."""
        for texts in pages:
            if self.cancelled.is_set():
                return False
            with self._lock:
                self._add(texts)
        with self._lock:
            if self.cancelled.is_set():
                return False
            for write in self._pending or []:
                write()
            self._pending = None
            self.counted_at = time.monotonic()
        self._ready.set()
        return True

    # -- kept in step with the store's writes ------------------------------------------

    def add(self, texts: Sequence[str]) -> None:
        kept = list(texts)
        self._write(lambda: self._add(kept))

    def remove(self, texts: Sequence[str]) -> None:
        kept = list(texts)
        self._write(lambda: self._remove(kept))

    def _write(self, write: Callable[[], None]) -> None:
        with self._lock:
            if self._pending is not None:
                self._pending.append(write)
            else:
                write()

    def _add(self, texts: Sequence[str]) -> None:
        for text in texts:
            found = words(text)
            self.chunks += 1
            self.words += len(found)
            self.df.update(set(found))

    def _remove(self, texts: Sequence[str]) -> None:
        for text in texts:
            found = words(text)
            self.chunks = max(0, self.chunks - 1)
            self.words = max(0, self.words - len(found))
            for word in set(found):
                left = self.df.get(word, 0) - 1
                if left > 0:
                    self.df[word] = left
                else:
                    self.df.pop(word, None)

    def frequencies(self, wanted: Iterable[str]) -> dict[str, int]:
        """The document frequency of each of these words (0 for a word no chunk holds)."""
        with self._lock:
            return {word: self.df.get(word, 0) for word in wanted}

    def totals(self) -> tuple[int, int]:
        """(chunks, words)."""
        with self._lock:
            return self.chunks, self.words


@dataclass(frozen=True)
class LibraryWords:
    """The statistics of several collections added up, for the words of some queries:
    what BM25 would know of them if the collections were one."""

    chunks: int
    words: int
    df: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, stats: Sequence[WordStats], queries: Sequence[str]) -> LibraryWords:
        wanted = {word for query in queries for word in words(query)}
        df: Counter[str] = Counter()
        chunks = total = 0
        for one in stats:
            df.update(one.frequencies(wanted))
            n, w = one.totals()
            chunks += n
            total += w
        return cls(chunks=chunks, words=total, df=dict(df))

    def idf(self, word: str) -> float:
        """Milvus' BM25 idf: log(1 + (N − df + 0.5) / (df + 0.5)); a word this
        library's statistics do not hold (a chunk written since they were counted)
        counts as held by one chunk."""
        df = max(1, self.df.get(word, 0))
        return math.log((max(self.chunks, df) - df + 0.5) / (df + 0.5) + 1.0)

    @property
    def average_length(self) -> float:
        return self.words / self.chunks if self.chunks else 1.0


def bm25_score(query: str, counts: Counter[str], library: LibraryWords) -> float:
    """BM25 of a chunk whose words are ``counts`` (``Counter(words(text))``) for
    ``query`` with ``library``'s statistics (Milvus' formula, Fathom's k1 and b; a word
    the query repeats counts as often as it is repeated)."""
    length = sum(counts.values())
    average = library.average_length
    score = 0.0
    for word, times in Counter(words(query)).items():
        tf = counts.get(word, 0)
        if not tf:
            continue
        norm = tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))
        score += times * library.idf(word) * norm
    return score


# -- shared by the stores of one Milvus Lite file ----------------------------------------


_STATS: SharedByPlace[WordStats] = SharedByPlace()


def acquire(place: str) -> dict[str, WordStats]:
    """The statistics of the collections at ``place`` (a Milvus Lite file, or a server's
    URI: Milvus name → statistics), shared by the stores open on it; :func:`release`
    when the store closes."""
    return _STATS.acquire(place)


def release(place: str, wait: float = 10.0) -> None:
    """A store on ``place`` closed; with the last, the statistics are dropped."""
    _STATS.release(place, wait)


def drop(stats: dict[str, WordStats], mname: str) -> None:
    """Collection ``mname`` is gone (or its statistics are out of date): forget them."""
    _STATS.drop(stats, mname)


def start_counting(
    stats: dict[str, WordStats],
    mname: str,
    read: Callable[[], Iterable[Sequence[str]]],
    *,
    background: bool,
) -> WordStats:
    """The statistics of ``mname``, counted from ``read()`` (pages of chunk texts) unless
    they are there or being counted: here and now, or on a thread when ``background``."""
    with _STATS.lock:
        existing = stats.get(mname)
        if existing is not None:
            return existing
        one = stats[mname] = WordStats()

    def run() -> None:
        try:
            one.fill(read())
        except Exception:
            with _STATS.lock:
                if stats.get(mname) is one:
                    del stats[mname]
            if not background:
                raise
            # only a ranking aid: each collection's own BM25 is compared
            if not one.cancelled.is_set():
                log.exception("the word statistics of %s could not be counted", mname)

    if background:
        one.filler = threading.Thread(target=run, name=f"fathom-word-stats-{mname}", daemon=True)
        one.filler.start()
    else:
        run()
    return one
