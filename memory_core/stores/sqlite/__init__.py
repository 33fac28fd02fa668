"""The SQLite store: one index file with FTS5 (BM25) and sqlite-vec (vec0), the embedded default, and its
embedding cache in a file beside it."""
