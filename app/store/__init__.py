"""Storage: Milvus (Lite file or server) for vectors and BM25, SQLite for the catalog."""
