"""Storage: Milvus (Lite file or server) for vectors and BM25, SQLite for the catalog.

- ``vectors``: VectorStore, the one way in to Milvus, built from
  ``milvus_connection``, ``milvus_schema``, ``milvus_search`` and ``bm25_analyzer``;
  ``dense_cache`` and ``keyword_copy`` keep a large collection's vectors (and on
  Milvus Lite 3.x its BM25) in memory for search; ``word_stats`` counts each
  collection's words, so that ``library_ranking`` ranks several collections as one.
- ``catalog``: the library's SQLite record (collections, documents, ingest runs).
- ``ledger``: the only writer of document and collection state across both stores;
  ``consistency`` compares the two; ``disk_room`` checks each write leaves room on disk.
- ``sqlite_errors``: an SQLite error on opening said as what it is (damaged, disk full,
  not writable).
- ``research_runs``: where a research run is saved; ``event_log`` reads its events back.
- ``lock``: one Fathom process per data dir.
"""
