"""Search filters (dates of daily logs, path prefix, source) apply before the candidate limit, on both sides."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memdex.memory_core.errors import InputError
from memdex.memory_core.search.keyword import keyword_candidates
from memdex.memory_core.stores import records
from memdex.memory_core.stores.filters import SearchFilter, log_date
from memdex.memory_core.stores.records import ChunkRow, FileChange, FileState, VectorDelta
from memdex.memory_core.stores.sqlite import db, schema
from memdex.memory_core.stores.sqlite import ops as store
from memdex.memory_core.stores.sqlite.owner import IndexDatabase
from memdex.memory_core.stores.sqlite.vector_matrix import VectorMatrix
from memdex.memory_core.text.chunking import Chunk
from memdex.memory_core.textutil import sha256_hex

needs_vectors = pytest.mark.skipif(not db.driver().vectors, reason="needs sqlite-vec")

DIMS = 8
LIMIT = 5


def _put(
    conn: Any, path: str, texts: list[str], source: str = "memory", vectors: list[list[float]] | None = None
) -> None:
    """Index one file whose chunks hold ``texts`` (and ``vectors``), as the indexer does."""
    chunks = [Chunk(i + 1, i + 1, text, sha256_hex(f"{path} {i} {text}")) for i, text in enumerate(texts)]
    with store.transaction(conn):
        _, ids = store.replace_file(conn, path, source, FileState(path, 0, 0), chunks)
        if vectors is not None:
            store.insert_vectors(conn, [(cid, [vector]) for cid, vector in zip(ids, vectors)])
            store.stamp_vectors(conn, VectorDelta())


def _paths(conn: Any, where: SearchFilter) -> set[str]:
    ids = store.chunk_ids(conn, where)
    return {row.path for row in store.chunks_by_id(conn, [(cid, 0.0) for cid in ids])}


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    connection = schema.open_index(tmp_path / "idx.sqlite")
    yield connection
    connection.close()


# Which chunks a filter allows ---------------------------------------------------------------------

_FILES = [
    "MEMORY.md",
    "memory/2026-01-30.md",
    "memory/2026-01-31.md",
    "memory/2026-02-01-standup.md",
    "memory/2026-02-02.md",
    "memory/2026-02-30.md",  # no such day: undated
    "memory/projects/a.md",
    "memory/projects/sub/b.md",
    "memory/projects/2026-01-31.md",  # dated names count only directly in a memory folder
    "memory/projects-old/x.md",
    "memory/projects.md",
    "../team/memory/2026-01-31.md",  # an extra folder's daily log is dated too
    "sessions/notes.md",  # a memory file whose path merely starts with sessions/
]


@pytest.fixture
def files(conn: Any) -> Any:
    for path in _FILES:
        _put(conn, path, ["alpha note"])
    _put(conn, "sessions/2026-01-31.jsonl", ["User: alpha"], source="sessions")
    return conn


@pytest.mark.parametrize(
    ("after", "before", "expected"),
    [
        (
            "2026-01-31",
            "2026-02-01",
            {"memory/2026-01-31.md", "memory/2026-02-01-standup.md", "../team/memory/2026-01-31.md"},
        ),
        ("2026-01-31", "2026-01-31", {"memory/2026-01-31.md", "../team/memory/2026-01-31.md"}),
        ("2026-02-01", None, {"memory/2026-02-01-standup.md", "memory/2026-02-02.md"}),
        (None, "2026-01-30", {"memory/2026-01-30.md"}),
        ("2026-03-01", None, set()),
    ],
)
def test_date_bounds_are_inclusive_and_keep_only_daily_logs(
    files: Any, after: str | None, before: str | None, expected: set[str]
) -> None:
    assert _paths(files, SearchFilter.parse(after=after, before=before)) == expected


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("memory/projects", {"memory/projects/a.md", "memory/projects/sub/b.md", "memory/projects/2026-01-31.md"}),
        ("./memory/projects/", {"memory/projects/a.md", "memory/projects/sub/b.md", "memory/projects/2026-01-31.md"}),
        ("memory/projects/sub", {"memory/projects/sub/b.md"}),
        ("memory/projects.md", {"memory/projects.md"}),
        ("MEMORY.md", {"MEMORY.md"}),
        ("memory/proj", set()),  # whole components only
        ("../team", {"../team/memory/2026-01-31.md"}),
        ("sessions", {"sessions/notes.md", "sessions/2026-01-31.jsonl"}),
    ],
)
def test_a_path_prefix_matches_whole_components_or_a_file(files: Any, prefix: str, expected: set[str]) -> None:
    assert _paths(files, SearchFilter.parse(path_prefix=prefix)) == expected


def test_the_source_filter_keeps_transcripts_or_memory_files(files: Any) -> None:
    assert _paths(files, SearchFilter.parse(source="sessions")) == {"sessions/2026-01-31.jsonl"}
    assert _paths(files, SearchFilter.parse(source="memory")) == set(_FILES)


def test_filters_combine_with_and(files: Any) -> None:
    where = SearchFilter.parse(after="2026-01-01", path_prefix="memory", source="memory")
    assert _paths(files, where) == {
        "memory/2026-01-30.md",
        "memory/2026-01-31.md",
        "memory/2026-02-01-standup.md",
        "memory/2026-02-02.md",
    }
    assert _paths(files, SearchFilter.parse(after="2026-01-01", source="sessions")) == set()


_ODD_PATHS = [
    "memory/2024-02-29.md",
    "memory/2023-02-29.md",
    "memory/2026-13-01.md",
    "memory/2026-00-10.md",
    "memory/2026-01-00.md",
    "memory/0000-01-01.md",
    "memory/0001-01-01.md",
    "memory/9999-12-31.md",
    "memory/2026-01-31.MD",
    "memory/2026-01-31.mdx",
    "memory/2026-01-31",
    "memory/2026-01-31/notes.md",
    "memory/2026-01-31x/memory/2026-02-02.md",
    "a/memory/2026-01-31x/memory/2026-02-02.md",
    "memory/memory/2026-01-31.md",
    "xmemory/2026-01-31.md",
    "Memory/2026-01-31.md",
    "2026-01-31.md",
    "memory/2026-1-31.md",
    "memory/202a-01-31.md",
    "memory/２０２６-01-31.md",
    "memory/2026-01-31.md\n",
    "memory/2026-01-31 .md",
    "memory/2026-01-31.md.md",
    "memory/é/memory/2026-03-01-ü.md",
    "memory/2026-03-01-ü/x.md",
]


@pytest.fixture(params=["sqlite", "postgres"])
def either(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """(store operations, connection) of an empty index: SQLite's, then PostgreSQL's."""
    if request.param == "sqlite":
        yield store, request.getfixturevalue("conn")
        return
    import psycopg

    from memdex.memory_core.stores.postgres import ops as pg_store
    from memdex.memory_core.stores.postgres import schema as pg_schema
    from memdex.memory_core.stores.postgres.connection import PgConn, follow_live

    with psycopg.connect(request.getfixturevalue("pg_url"), autocommit=True) as raw:
        pg = PgConn(raw, "filters")
        pg_schema.prepare(pg)
        follow_live(pg)
        yield pg_store, pg


@pytest.mark.parametrize(
    ("after", "before"), [("0001-01-01", None), ("2026-01-31", "2026-02-02"), (None, "2024-12-31")]
)
def test_the_sql_date_rule_is_the_one_temporal_decay_reads(
    either: tuple[Any, Any], after: str | None, before: str | None
) -> None:
    """Each store's filter SQL and :func:`log_date` (which ranking uses) agree on every odd path."""
    ops, conn = either
    with ops.transaction(conn):
        ops.replace_files(conn, [FileChange(p, "memory", FileState(p, 0, 0), [Chunk(1, 1, "alpha", p)]) for p in _ODD_PATHS])
    where = SearchFilter.parse(after=after, before=before)
    low, high = where.after or dt.date.min, where.before or dt.date.max
    expected = {path for path in _ODD_PATHS if (day := log_date(path)) is not None and low <= day <= high}
    assert expected  # the case tests something
    assert {row.path for row in ops.chunks_of(conn, _ODD_PATHS, 1000, where)} == expected


# Keyword side: the limit applies after the filter ---------------------------------------------------


@pytest.fixture
def decoys(conn: Any) -> Any:
    """Undated decoys outrank everything for 'kafka'; 8 allowed chunks in each of three filters score lower."""
    _put(conn, "memory/projects/hot.md", ["kafka kafka kafka kafka"] * 20)
    _put(conn, "memory/filler.md", [f"nothing to see {i}" for i in range(60)])
    for day in range(1, 9):
        _put(conn, f"memory/2026-01-0{day}.md", [f"kafka {'pad ' * (day * 3)}"])
    _put(conn, "memory/archive/old.md", [f"kafka {'word ' * (i * 3 + 1)}" for i in range(8)])
    _put(conn, "sessions/chat.jsonl", [f"User: kafka {'more ' * (i * 3 + 2)}" for i in range(8)], source="sessions")
    return conn


_FILTERS = {
    "dates": (SearchFilter.parse(after="2026-01-01", before="2026-01-31"), lambda path: path.startswith("memory/2026")),
    "prefix": (SearchFilter.parse(path_prefix="memory/archive"), lambda path: path.startswith("memory/archive/")),
    "source": (SearchFilter.parse(source="sessions"), lambda path: path.startswith("sessions/")),
}


@pytest.mark.parametrize("name", list(_FILTERS))
def test_a_filtered_keyword_search_fills_the_limit_beyond_the_unfiltered_top(decoys: Any, name: str) -> None:
    where, allowed = _FILTERS[name]
    total = store.counts(decoys)[1]
    unfiltered = store.keyword_search(decoys, ["kafka"], LIMIT)
    assert {row.path for row in unfiltered} == {"memory/projects/hot.md"}  # filtering these would leave nothing
    everything = store.keyword_search(decoys, ["kafka"], 1000)
    expected = [row.id for row in everything if allowed(row.path)][:LIMIT]
    rows, _ = keyword_candidates(store, decoys, ["kafka"], LIMIT, total, where)
    assert [row.id for row in rows] == expected and len(rows) == LIMIT


def test_the_rare_term_shortcut_never_shortens_a_filtered_list(conn: Any) -> None:
    """'kafka' is rare in the index but in only 2 allowed chunks: the search must go on to 'standup'."""
    _put(conn, "memory/projects/a.md", [f"standup kafka {i}" for i in range(12)])
    _put(conn, "memory/filler.md", [f"standup {i}" for i in range(40)])
    _put(
        conn, "memory/daily/log.md", ["standup kafka here", "standup kafka there"] + [f"standup {i}" for i in range(6)]
    )
    total = store.counts(conn)[1]
    where = SearchFilter.parse(path_prefix="memory/daily")
    rows, _ = keyword_candidates(store, conn, ["standup", "kafka"], LIMIT, total, where)
    assert len(rows) == LIMIT and {row.path for row in rows} == {"memory/daily/log.md"}
    assert {row.text for row in rows[:2]} == {"standup kafka here", "standup kafka there"}


def test_an_empty_filter_runs_the_unfiltered_query(decoys: Any) -> None:
    statements: list[str] = []
    decoys.set_trace_callback(statements.append)
    store.keyword_search(decoys, ["kafka"], LIMIT, SearchFilter())
    assert statements and not any("chunks_path" in s for s in statements)


# Vector side: RAM copy and sqlite-vec ---------------------------------------------------------------


def _toward(degrees: float, spread: int) -> list[float]:
    """A unit vector ``degrees`` away from the query (axis 0), tilted toward axis ``spread``."""
    vector = [0.0] * DIMS
    vector[0], vector[spread] = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return vector


QUERY = [1.0] + [0.0] * (DIMS - 1)


async def _vector_index(path: Path) -> IndexDatabase:
    """Decoys within 10° of the query; the allowed chunks of each filter from 40° on, 3° apart."""

    def fill(conn: Any) -> None:
        store.ensure_vector_table(conn, DIMS)
        _put(conn, "memory/projects/hot.md", ["hot"] * 20, vectors=[_toward(i / 2, 1 + i % 7) for i in range(20)])
        for day in range(1, 9):
            _put(conn, f"memory/2026-01-0{day}.md", [f"log {day}"], vectors=[_toward(40 + 3 * day, 2)])
        _put(
            conn,
            "memory/archive/old.md",
            [f"old {i}" for i in range(8)],
            vectors=[_toward(41 + 3 * i, 3) for i in range(8)],
        )
        _put(
            conn,
            "sessions/chat.jsonl",
            [f"chat {i}" for i in range(8)],
            "sessions",
            vectors=[_toward(42 + 3 * i, 4) for i in range(8)],
        )

    index = IndexDatabase(path)
    await index.open()
    await index.write(fill)
    return index


def _exact(rows: list[ChunkRow], allowed: Any) -> list[str]:
    """The texts of the LIMIT allowed rows nearest to QUERY, by their true angle."""
    return [row.text for row in sorted(rows, key=lambda row: row.rank) if allowed(row.path)][:LIMIT]


@needs_vectors
@pytest.mark.parametrize("in_ram", [True, False], ids=["ram", "sqlite-vec"])
@pytest.mark.parametrize("name", list(_FILTERS))
async def test_a_filtered_vector_search_fills_the_limit_beyond_the_unfiltered_top(
    tmp_path: Path, name: str, in_ram: bool
) -> None:
    where, allowed = _FILTERS[name]
    index = await _vector_index(tmp_path / "idx.sqlite")
    try:
        if in_ram:
            await index.load_vectors()
        unfiltered, from_ram = await index.nearest(QUERY, LIMIT)
        assert {row.path for row in unfiltered} == {"memory/projects/hot.md"} and from_ram is in_ram
        everything = await index.read(store.vector_search, QUERY, 1000)
        rows, from_ram = await index.nearest(QUERY, LIMIT, where)
        assert from_ram is in_ram
        assert [row.text for row in rows] == _exact(everything, allowed)
        assert all(allowed(row.path) for row in rows) and len(rows) == LIMIT
    finally:
        await index.close()


@needs_vectors
def test_the_ram_copy_searches_only_the_allowed_ids(conn: Any) -> None:
    """Few allowed rows are gathered, most are scanned in place: both give the exact order; none gives none."""
    store.ensure_vector_table(conn, DIMS)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, DIMS)).astype(np.float32)
    _put(conn, "memory/a.md", [f"c{i}" for i in range(300)], vectors=vectors.tolist())
    matrix = VectorMatrix()
    matrix.load(conn)
    version = store.read_meta(conn, records.VECTORS_VERSION)
    ids = np.array(store.chunk_ids(conn, SearchFilter.parse(path_prefix="memory")))
    query = rng.standard_normal(DIMS)
    cosine = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    for share in (10, 250):  # below and above half of the rows
        chosen = rng.choice(300, share, replace=False)
        expected = [int(ids[i]) for i in chosen[np.argsort(-cosine[chosen])][:LIMIT]]
        hits = matrix.search(version, query.tolist(), LIMIT, [int(ids[i]) for i in chosen] + [10**9])
        assert [cid for cid, _ in hits or []] == expected
    assert matrix.search(version, query.tolist(), LIMIT, []) == []


# Parsing ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"after": "yesterday"}, "after must be a date like 2026-01-31 (got 'yesterday')"),
        ({"before": "2026-1-31"}, "before must be a date like 2026-01-31"),
        ({"after": "2026-02-30"}, "after must be a date like 2026-01-31"),
        ({"after": "2026-01-31T10:00"}, "after must be a date like 2026-01-31"),
        ({"after": "2026-02-01", "before": "2026-01-31"}, "after (2026-02-01) is later than before (2026-01-31)"),
        ({"path_prefix": "/etc"}, "pathPrefix must be relative to the workspace, like memory/projects/"),
        ({"path_prefix": "~/notes"}, "pathPrefix must be relative to the workspace"),
        ({"path_prefix": "C:\\notes"}, "pathPrefix must be relative to the workspace"),
        ({"path_prefix": "memory/../secrets"}, "pathPrefix may not contain '..' after a folder name"),
        ({"source": "notes"}, "source must be 'memory' or 'sessions' (got 'notes')"),
    ],
)
def test_unusable_arguments_are_refused_with_one_actionable_line(arguments: dict[str, str], message: str) -> None:
    with pytest.raises(InputError) as caught:
        SearchFilter.parse(**arguments)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_arguments_are_normalised() -> None:
    where = SearchFilter.parse(
        after=" 2026-01-31 ", before="2026-01-31", path_prefix="./memory//projects/", source="Sessions"
    )
    assert where == SearchFilter(dt.date(2026, 1, 31), dt.date(2026, 1, 31), "memory/projects", "sessions")
    assert SearchFilter.parse(path_prefix="../team/").path_prefix == "../team"
    blank = SearchFilter.parse(after="", before=" ", path_prefix="./", source="")
    assert blank.empty and blank == SearchFilter() and not where.empty
