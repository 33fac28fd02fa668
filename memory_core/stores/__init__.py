"""Where the index lives. The seam every store implements, and two stores behind it.

* :mod:`.base` — the seam: :class:`~.base.StoreOps` (operations on one connection) and
  :class:`~.base.IndexOwner` (connections, threads, rebuilds); :mod:`.records` and :mod:`.filters` are
  the values that cross it.
* :mod:`.sqlite` — the embedded default: one file, FTS5 and sqlite-vec.
* :mod:`.postgres` — one database shared by many hosts: pgvector and FTS5-equal BM25 postings.
* :mod:`.factory` — the one place that chooses a store; nothing outside this folder imports a store.
"""
