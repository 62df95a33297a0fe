"""The BM25 analyzer: how Milvus splits a chunk's text into the words BM25 scores.

Milvus runs it on the ``text`` field when a chunk is written and on the query
when a BM25 or hybrid search runs, so changing it means re-indexing.
"""

from __future__ import annotations

import re
from typing import Any

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

# words as Milvus' standard tokenizer cuts them: runs of letters and digits ("love's" is
# love + s, "a_b" is a + b, "2.5" is 2 + 5), lower-cased, stop words out. Fathom's own
# BM25 (the in-memory copy on Milvus Lite 3.x, and the search bench) cuts words so.
WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(STOP_WORDS)


def words(text: str) -> list[str]:
    """The words BM25 scores in ``text``, in order, repeats kept."""
    return [w for w in WORD.findall(text.lower()) if w not in _STOP]
