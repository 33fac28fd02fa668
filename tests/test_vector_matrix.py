"""The in-memory int8 copy of the vectors: ranks like sqlite-vec, follows the index, knows when it is behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memdex.memory_core.stores import records
from memdex.memory_core.stores.records import FileState, VectorDelta
from memdex.memory_core.stores.sqlite import db, schema
from memdex.memory_core.stores.sqlite import ops as store
from memdex.memory_core.stores.sqlite.vector_matrix import VectorMatrix
from memdex.memory_core.text.chunking import Chunk
from memdex.memory_core.textutil import sha256_hex

pytestmark = pytest.mark.skipif(not db.driver().vectors, reason="needs sqlite-vec")

DIMS = 48


def _vectors(n: int, seed: int) -> np.ndarray:
    """Clustered vectors (like embeddings, many near neighbours), not uniform noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((8, DIMS))
    return (centres[rng.integers(0, 8, n)] + 0.5 * rng.standard_normal((n, DIMS))).astype(np.float32)


def _put(conn: Any, path: str, vectors: np.ndarray) -> VectorDelta:
    """Index one file whose chunks have these vectors, as the indexer does (one transaction)."""
    chunks = [Chunk(i + 1, i + 1, f"{path} {i}", sha256_hex(f"{path} {i}")) for i in range(len(vectors))]
    delta = VectorDelta()
    with store.transaction(conn):
        gone, ids = store.replace_file(conn, path, "memory", FileState(path, 0, 0), chunks)
        delta.removed(gone)
        rows = [(cid, [v.tolist()]) for cid, v in zip(ids, vectors)]
        store.insert_vectors(conn, rows)
        delta.added(rows)
        store.stamp_vectors(conn, delta)
    return delta


def _remove(conn: Any, path: str) -> VectorDelta:
    delta = VectorDelta()
    with store.transaction(conn):
        delta.removed(store.delete_files(conn, [path]))
        store.stamp_vectors(conn, delta)
    return delta


@pytest.fixture
def conn(tmp_path: Path) -> Any:
    connection = schema.open_index(tmp_path / "idx.sqlite")
    store.ensure_vector_table(connection, DIMS)
    yield connection
    connection.close()


def _version(conn: Any) -> str:
    return store.read_meta(conn, records.VECTORS_VERSION)  # type: ignore[no-any-return]


def _exact(conn: Any, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    return [(row.id, row.rank) for row in store.vector_search(conn, query.tolist(), k)]


def test_the_copy_finds_what_sqlite_vec_finds(conn: Any) -> None:
    """Same neighbours as sqlite-vec's exact KNN, up to int8 rounding at the cut; distances within 0.01."""
    for f in range(20):
        _put(conn, f"memory/{f}.md", _vectors(100, seed=f))
    matrix = VectorMatrix()
    matrix.load(conn)
    assert matrix.rows == 2000
    overlap = []
    for query in _vectors(30, seed=99):
        exact = _exact(conn, query, 20)
        approx = matrix.search(_version(conn), query.tolist(), 20)
        assert approx is not None and len(approx) == 20
        true_distance = dict(_exact(conn, query, 2000))
        for cid, distance in approx:
            assert abs(distance - true_distance[cid]) < 0.01
        assert approx[0][0] == exact[0][0] or abs(true_distance[approx[0][0]] - exact[0][1]) < 0.01
        overlap.append(len({c for c, _ in approx} & {c for c, _ in exact}) / 20)
    assert np.mean(overlap) >= 0.95


def test_deltas_keep_the_copy_equal_to_a_fresh_load(conn: Any) -> None:
    """Adding, replacing (ids reused) and removing files: the followed copy answers like a reloaded one."""
    _put(conn, "a.md", _vectors(50, 1))
    _put(conn, "b.md", _vectors(50, 2))
    followed = VectorMatrix()
    followed.load(conn)
    followed.apply(_put(conn, "c.md", _vectors(30, 3)))
    followed.apply(_put(conn, "c.md", _vectors(40, 4)))  # the newest ids are freed and reused
    followed.apply(_remove(conn, "a.md"))  # c.md's rows move into the holes
    followed.apply(_put(conn, "b.md", _vectors(10, 5)))
    followed.apply(_put(conn, "c.md", _vectors(20, 6)))  # ...and then go
    fresh = VectorMatrix()
    fresh.load(conn)
    assert followed.rows == fresh.rows == 30
    every = _vectors(1, 7)[0].tolist()
    assert {c for c, _ in followed.search(_version(conn), every, 1000) or []} == {
        c for c, _ in fresh.search(_version(conn), every, 1000) or []
    }
    for query in _vectors(10, 6):
        ours = followed.search(_version(conn), query.tolist(), 15) or []
        theirs = fresh.search(_version(conn), query.tolist(), 15) or []
        assert [c for c, _ in ours] == [c for c, _ in theirs]
        assert np.allclose([d for _, d in ours], [d for _, d in theirs], atol=1e-6)


def test_a_change_the_copy_did_not_see_puts_it_out_of_step(conn: Any) -> None:
    """A delta that does not follow on from the copy's version is not applied; search says so with None."""
    _put(conn, "a.md", _vectors(20, 1))
    matrix = VectorMatrix()
    matrix.load(conn)
    _put(conn, "b.md", _vectors(20, 2))  # e.g. another process wrote
    matrix.apply(_put(conn, "c.md", _vectors(20, 3)))
    query = _vectors(1, 4)[0].tolist()
    assert matrix.search(_version(conn), query, 5) is None
    matrix.load(conn)
    assert matrix.search(_version(conn), query, 5) is not None and matrix.rows == 60


def test_changes_committed_while_loading_are_replayed(conn: Any, tmp_path: Path) -> None:
    """The load reads one snapshot; a write committed meanwhile reaches the copy as a delta."""
    _put(conn, "a.md", _vectors(20, 1))
    matrix = VectorMatrix()
    reader = db.connect(tmp_path / "idx.sqlite", readonly=True)

    class WriteMidLoad:
        """A read connection that commits a write just after the load's snapshot began."""

        def execute(self, sql: str, *args: Any) -> Any:
            if sql.startswith("SELECT rowid, embedding"):
                matrix.apply(_put(conn, "b.md", _vectors(7, 2)))
            return reader.execute(sql, *args)

    try:
        matrix.load(WriteMidLoad())
    finally:
        reader.close()
    assert matrix.rows == 27
    assert matrix.search(_version(conn), _vectors(1, 3)[0].tolist(), 3) is not None


def test_odd_queries_return_nothing_rather_than_fail(conn: Any) -> None:
    _put(conn, "a.md", _vectors(5, 1))
    matrix = VectorMatrix()
    matrix.load(conn)
    assert matrix.search(_version(conn), [0.0] * DIMS, 3) == []
    assert matrix.search(_version(conn), [1.0] * (DIMS + 1), 3) == []
    assert [c for c, _ in matrix.search(_version(conn), [1.0] * DIMS, 10) or []] != []
    assert len(matrix.search(_version(conn), [1.0] * DIMS, 10) or []) == 5


def test_an_index_without_vectors_loads_empty(tmp_path: Path) -> None:
    connection = schema.open_index(tmp_path / "plain.sqlite")
    try:
        matrix = VectorMatrix()
        matrix.load(connection)
        assert matrix.rows == 0 and matrix.search(None, [1.0, 0.0], 3) == []
    finally:
        connection.close()


def test_vectors_of_another_size_put_the_copy_out_of_step(conn: Any) -> None:
    _put(conn, "a.md", _vectors(5, 1))
    matrix = VectorMatrix()
    matrix.load(conn)
    version = _version(conn)
    matrix.apply(VectorDelta({999: [1.0, 0.0]}, before=version, after="next"))
    assert not matrix.loaded and matrix.search("next", [1.0, 0.0], 3) is None


def test_a_vector_without_a_chunk_is_still_loaded(conn: Any) -> None:
    """The load sizes its arrays by the chunk count, but never writes past them."""
    _put(conn, "a.md", _vectors(3, 1))
    with store.transaction(conn):
        store.insert_vectors(conn, [(1000 + i, [v.tolist()]) for i, v in enumerate(_vectors(5, 2))])
    matrix = VectorMatrix()
    matrix.load(conn)
    assert matrix.rows == 8
    assert len(matrix.search(_version(conn), _vectors(1, 3)[0].tolist(), 10) or []) == 8


def test_a_search_scans_a_snapshot_without_holding_the_lock(conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mid-scan the lock is free: deltas that move, drop and overwrite rows the scan still reads go
    through at once, and the scan answers from the rows it began with; the next search sees the change."""
    for f in range(3):
        _put(conn, f"{f}.md", _vectors(1000, seed=f))  # two scan blocks
    matrix = VectorMatrix()
    matrix.load(conn)
    before, query = _version(conn), _vectors(1, seed=99)[0].tolist()
    answer_before = matrix.search(before, query, 10)
    deltas = [_remove(conn, "0.md"), _put(conn, "3.md", _vectors(600, seed=3))]  # holes filled, rows rewritten
    fresh = VectorMatrix()
    fresh.load(conn)
    answer_after = fresh.search(_version(conn), query, 10)
    assert answer_before is not None and answer_after is not None and answer_after != answer_before

    lock_free: list[bool] = []
    real_matmul = np.matmul

    def matmul_then_deltas(*args: Any, **kwargs: Any) -> Any:
        if not lock_free:  # the first block: rows of every file are still to be read
            lock_free.append(matrix._lock.acquire(blocking=False))
            if lock_free[0]:
                matrix._lock.release()
                for delta in deltas:
                    matrix.apply(delta)
        return real_matmul(*args, **kwargs)

    monkeypatch.setattr(np, "matmul", matmul_then_deltas)
    during = matrix.search(before, query, 10)
    monkeypatch.undo()
    assert lock_free == [True]
    assert during == answer_before
    assert matrix.rows == fresh.rows == 2600
    after = matrix.search(_version(conn), query, 10) or []
    assert [c for c, _ in after] == [c for c, _ in answer_after]
    assert np.allclose([d for _, d in after], [d for _, d in answer_after], atol=1e-6)


BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")  # a user's choice of threads
BLAS_PROBE = """
import json, os, sys
from pathlib import Path
from threadpoolctl import threadpool_info
before = dict(os.environ)
import memdex.memory_core
from memdex.memory_core.stores.sqlite import schema, vector_matrix
imported = dict(os.environ) == before
threads = lambda: [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
at_import = threads()
conn = schema.open_index(Path(sys.argv[1]))
vector_matrix.VectorMatrix().load(conn)
print(json.dumps({"environ_unchanged": imported and dict(os.environ) == before,
                  "at_import": at_import, "after_load": threads()}))
"""


@pytest.mark.parametrize("chosen", [None, "2"])
def test_importing_changes_no_environment_and_the_first_load_limits_blas(tmp_path: Path, chosen: str | None) -> None:
    """Importing memory_core leaves os.environ as it was (in a fresh process); the first load limits BLAS
    to one thread, unless OPENBLAS_NUM_THREADS chose otherwise."""
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    if chosen:
        env["OPENBLAS_NUM_THREADS"] = chosen
    out = subprocess.run([sys.executable, "-c", BLAS_PROBE, str(tmp_path / "blas.sqlite")],
                         env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    probe = json.loads(out.stdout)
    assert probe["environ_unchanged"] is True
    if chosen:
        assert probe["after_load"] == probe["at_import"] == [int(chosen)]
    else:
        assert probe["after_load"] == [1] * len(probe["at_import"]) and probe["after_load"]
