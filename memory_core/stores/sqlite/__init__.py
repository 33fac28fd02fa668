"""The SQLite store: one index file with FTS5 (BM25) and sqlite-vec (vec0), the embedded default."""
