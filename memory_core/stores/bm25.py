"""BM25 as SQLite's FTS5 computes it: its fixed parameters and its IDF, in one place.

The SQLite store ranks with FTS5's ``bm25()``, the PostgreSQL store computes the same figure in SQL, the SQLite
store's pruning bounds it, and search scores some terms in Python alike (:mod:`..search.scoring`); each reads
these, so the four cannot drift apart.
"""

from __future__ import annotations

import math

K1 = 1.2  # term-frequency saturation
B = 0.75  # length normalisation
IDF_FLOOR = 1e-6  # the IDF of a term in half the rows or more


def floored(rows: int, total: int) -> bool:
    """Whether the IDF of a term that ``rows`` of ``total`` rows hold is :data:`IDF_FLOOR`: from half up."""
    return 2 * rows >= total


def idf(rows: int, total: int) -> float:
    """FTS5's IDF for a term that ``rows`` of ``total`` rows hold."""
    return IDF_FLOOR if floored(rows, total) else math.log((total - rows + 0.5) / (rows + 0.5))
