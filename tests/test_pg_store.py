"""The PostgreSQL store on a real PostgreSQL 16 + pgvector (pgserver): keyword ranking equal to SQLite's
FTS5, memories that cannot see each other, migrations, rebuilds that switch in one transaction, and
errors a user can act on."""

from __future__ import annotations

import datetime as dt
import gc
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from pg import check_consistent
from psycopg.conninfo import make_conninfo

from memdex.memory_core import ConfigError, MemdexError, MemoryEngine, StoreError, load_settings
from memdex.memory_core.search.keyword import keyword_candidates
from memdex.memory_core.stores.filters import SearchFilter
from memdex.memory_core.stores.postgres import ops as pg_store
from memdex.memory_core.stores.postgres import postings
from memdex.memory_core.stores.postgres import schema as pg_schema
from memdex.memory_core.stores.postgres.connection import PgConn, follow_live
from memdex.memory_core.stores.records import FileChange, FileState
from memdex.memory_core.stores.sqlite import ops as store
from memdex.memory_core.stores.sqlite import schema
from memdex.memory_core.stores.sqlite import tokens as fts_tokens
from memdex.memory_core.text.chunking import Chunk
from memdex.memory_core.text.segments import index_text
from memdex.memory_core.text.terms import query_terms
from memdex.memory_core.textutil import sha256_hex

MakeEngine = Callable[..., MemoryEngine]
Write = Callable[[str, str], Path]

# Words with stems in common (porter), underscores and hyphens (phrases), digits, non-ASCII folding, camelCase,
# and CJK, Korean and Thai words, which the index holds as grams and stems (text.segments).
VOCABULARY = ["乌龙茶", "咖啡", "数据库迁移", "東京", "打ち合わせ", "プロジェクト", "화요일로", "화요일", "ภาษาไทย", "BillingV2Enabled", "test_invoice.py", "backup", "backups", "backing", "deploy", "deployed", "deploys", "kafka", "grafana", "postgres_url", "e-mail", "café", "cafe", "naïve", "2026", "rollout", "migration", "migrations", "index", "indexes", "indexing", "standup", "retro", "alice", "bob", "carol", "ticket", "tickets", "YN0028", "lockfile", "lentil", "soup", "cumin", "lemon", "data", "the", "of", "and", "to", "a", "in", "is", "memory", "notes", "agent", "search", "vector"]
FILES = ["MEMORY.md", "memory/2026-01-10.md", "memory/2026-01-12-standup.md", "notes/projects/kafka.md", "notes/misc.md"]


def _corpus(seed: int = 7) -> dict[str, list[str]]:
    """Chunks per file: a Zipf-like mix of the vocabulary, so some terms are in most chunks and some in few."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
    rng.shuffle(weights)
    corpus: dict[str, list[str]] = {}
    for path in FILES:
        corpus[path] = [" ".join(rng.choices(VOCABULARY, weights, k=rng.randint(3, 60))) for _ in range(rng.randint(8, 40))]
    corpus["memory/2026-01-12-standup.md"].append("call the postgres url helper: POSTGRES_URL postgres url postgres_url")
    return corpus


def _chunks(texts: list[str]) -> list[Chunk]:
    return [Chunk(i + 1, i + 1, text, sha256_hex(text)) for i, text in enumerate(texts)]


@pytest.fixture
def pg(pg_url: str) -> Iterator[Any]:
    """A PgConn to the live index of memory 'parity' in a fresh database."""
    raw = psycopg.connect(pg_url, autocommit=True)
    conn = PgConn(raw, "parity")
    pg_schema.prepare(conn)
    follow_live(conn)
    yield conn
    raw.close()


def _fill(ops: Any, conn: Any, corpus: dict[str, list[str]]) -> None:
    with ops.transaction(conn):
        ops.replace_files(conn, [FileChange(path, "memory", FileState(path, 0, 0), _chunks(texts)) for path, texts in corpus.items()])


def _ranking(
    ops: Any, conn: Any, terms: list[str], limit: int, where: SearchFilter | None, repeats: dict[str, int] | None = None
) -> list[tuple[str, int, float]]:
    rows, _ = keyword_candidates(ops, conn, terms, limit, ops.counts(conn)[1], where, repeats)
    return [(row.path, row.start_line, row.rank) for row in rows]


@pytest.mark.parametrize("block", [5, postings.BLOCK_CHUNKS])
def test_keyword_ranking_and_term_counts_equal_sqlite_fts5(tmp_path: Path, pg: Any, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same chunks, the same queries: the same hits in the same order with the same bm25() values,
    with filters and the rare-term shortcut, and the same term counts (phrases included), whether a
    file's chunks share their doclists' blocks with other files or not."""
    monkeypatch.setattr(postings, "BLOCK_CHUNKS", block)
    corpus = _corpus()
    lite = schema.open_index(tmp_path / "idx.sqlite")
    _fill(store, lite, corpus)
    _fill(pg_store, pg, corpus)
    # Replacing a file and deleting another moves the corpus statistics BM25 reads on both.
    corpus["notes/misc.md"] = corpus["notes/misc.md"][:3]
    for ops, conn in ((store, lite), (pg_store, pg)):
        with ops.transaction(conn):
            ops.replace_files(conn, [FileChange("notes/misc.md", "memory", FileState("x", 1, 1), _chunks(corpus["notes/misc.md"]))])
            ops.delete_files(conn, ["memory/2026-01-10.md"])
    assert store.counts(lite) == pg_store.counts(pg)
    asked = [*corpus, "memory/2026-01-10.md", "nowhere.md"]  # one deleted, one never indexed
    assert pg_store.file_hashes(pg, asked) == store.file_hashes(lite, asked) == {p: "x" if p == "notes/misc.md" else p for p in corpus if p != "memory/2026-01-10.md"}
    check_consistent(pg.raw)

    rng = random.Random(11)
    filters = [
        None,
        SearchFilter(path_prefix="notes"),
        SearchFilter(after=dt.date(2026, 1, 11)),
        SearchFilter(before=dt.date(2026, 1, 31), path_prefix="memory"),
        SearchFilter(source="memory"),
        SearchFilter(source="sessions"),
    ]
    compared = scripts = 0
    for _ in range(120):
        terms = query_terms(" ".join(rng.sample(VOCABULARY, rng.randint(1, 5)))) or ["data"]
        if rng.random() < 0.2:
            terms.append("postgres_url")
        assert pg_store.term_counts(pg, terms) == store.term_counts(lite, terms)
        assert pg_store.texts_holding(pg, terms[0], 3) == store.texts_holding(lite, terms[0], 3)
        repeats = {term: rng.randint(1, 3) for term in terms}  # a term asked more than once weighs more
        for where in filters:
            for limit in (3, 10):
                ours = _ranking(pg_store, pg, terms, limit, where, repeats)
                theirs = _ranking(store, lite, terms, limit, where, repeats)
                assert [hit[:2] for hit in ours] == [hit[:2] for hit in theirs], (terms, where, limit)
                assert all(abs(a[2] - b[2]) < 1e-9 for a, b in zip(ours, theirs, strict=True)), (terms, where)
                compared += bool(theirs)
                scripts += bool(theirs) and not all(term.isascii() for term in terms)
    assert compared > 500  # most searches found something to compare
    assert scripts > 100  # many of them with CJK, Korean or Thai terms
    # the index's terms that begin with a prefix (a compound's first part: search/compounds.py), the most held first
    started = {prefix: store.terms_starting(lite, prefix, 4) for prefix in ("b", "backup", "deplo", "caf", "화요", "zz")}
    assert started == {prefix: pg_store.terms_starting(pg, prefix, 4) for prefix in started}
    assert list(started["b"]) == sorted(started["b"], key=lambda term: (-started["b"][term], term)) and len(started["b"]) == 4
    assert "backup" not in started["backup"] and started["zz"] == {}  # longer terms only
    # ... and those that end with some letters (a compound's last part), of ENDING_MIN characters or more
    suffixes = ["l", "a", "out", "lockfil", "o", "zz", "n", "a"]  # one read for all, in their order
    ended = dict(zip(suffixes, store.terms_ending(lite, suffixes, 4), strict=True))
    assert store.terms_ending(lite, suffixes, 4) == pg_store.terms_ending(pg, suffixes, 4)
    assert pg_store.terms_ending(pg, [], 4) == store.terms_ending(lite, [], 4) == []
    assert set(ended["l"]) == {"lockfil"} and set(ended["a"]) == {"grafana"} and set(ended["out"]) == {"rollout"}
    assert ended["lockfil"] == ended["zz"] == {}  # longer terms only
    assert ended["o"] == {}  # "retro" ends so, but is shorter than ENDING_MIN
    assert ended["n"] == {}  # "billingv2en" (of "BillingV2Enabled") ends so, but has a digit
    lite.close()


def test_a_phrase_term_matches_only_its_tokens_in_a_row(pg: Any) -> None:
    _fill(pg_store, pg, {"MEMORY.md": ["postgres and then url", "the postgres url is set", "url postgres"]})
    assert [row.start_line for row in pg_store.keyword_search(pg, ["postgres_url"], 10)] == [2]
    assert pg_store.term_counts(pg, ["postgres_url", "postgres", "nothing"]) == {"postgres_url": 1, "postgres": 3, "nothing": 0}


async def test_memories_in_one_database_never_see_each_other(
    pg_url: str, tmp_path: Path, write: Write, workspace: Path
) -> None:
    """Two memories, one database: each finds only its own notes, counts only its own files, and a rebuild
    of one (another chunk size) leaves the other untouched."""
    other = tmp_path / "other"
    (other / "memory").mkdir(parents=True)
    write("MEMORY.md", "The heron project belongs to team one.\n")
    (other / "MEMORY.md").write_text("The heron project, as team two knows it.\n")
    (other / "memory" / "2026-01-02.md").write_text("- team two met the osprey\n")

    def settings(folder: Path, memory: str, tokens: int = 400) -> Any:
        store_settings = {"backend": "postgres", "postgres": {"url": pg_url, "memory": memory}}
        return load_settings(workspace=folder, store=store_settings, chunking={"tokens": tokens, "overlap": 8})

    async with (
        MemoryEngine(settings(workspace, "one"), background_sync=False) as one,
        MemoryEngine(settings(other, "two"), background_sync=False) as two,
    ):
        await one.sync()
        await two.sync()
        assert [(h.path, "one" in h.snippet) for h in (await one.search("heron")).results] == [("MEMORY.md", True)]
        assert [(h.path, "two" in h.snippet) for h in (await two.search("heron")).results] == [("MEMORY.md", True)]
        assert (await one.search("osprey")).results == []
        assert ((await one.status()).files, (await two.status()).files) == (1, 2)
    async with MemoryEngine(settings(workspace, "one", tokens=64), background_sync=False) as one:
        assert (await one.sync()).changed == 1  # a new identity: rebuilt into a new index
    async with MemoryEngine(settings(other, "two"), background_sync=False) as two:
        assert (await two.sync()).changed == 0
        assert [h.path for h in (await two.search("osprey")).results] == ["memory/2026-01-02.md"]
    with psycopg.connect(pg_url) as conn:  # the rebuilt memory's old index is gone, rows and all
        per_memory = conn.execute("SELECT memory, count(*) FROM memdex_indexes GROUP BY memory ORDER BY 1").fetchall()
        assert per_memory == [("one", 1), ("two", 1)]
        live = conn.execute("SELECT array_agg(live) FROM memdex_memories").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM memdex_chunks WHERE NOT index_id = ANY(%s)", (live,)).fetchone()[0] == 0


async def test_a_rebuild_keeps_answering_from_the_old_index_until_it_switches(
    pg_url: str, write: Write, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a rebuild fills its shadow, searches answer from the live index; the switch is one transaction."""
    for n in range(30):
        write(f"memory/2026-02-{n + 1:02d}.md", f"- day {n}: the bittern survey went on\n")
    store_settings = {"backend": "postgres", "postgres": {"url": pg_url}}
    async with MemoryEngine(load_settings(workspace=workspace, store=store_settings), background_sync=False) as engine:
        await engine.sync()
    rebuilt = load_settings(workspace=workspace, store=store_settings, chunking={"tokens": 64, "overlap": 8})
    async with MemoryEngine(rebuilt, background_sync=False) as engine:
        answers: list[int] = []
        real_install = engine.index.install

        async def slow_install(shadow: Any) -> None:  # searches run while the shadow is full but not live
            for _ in range(5):
                answers.append(len((await engine.search("bittern", max_results=50)).results))
            await real_install(shadow)

        monkeypatch.setattr(engine.index, "install", slow_install)
        assert (await engine.sync()).changed == 30
        assert answers == [30] * 5
        assert len((await engine.search("bittern", max_results=50)).results) == 30


def test_migrations_apply_once_each_and_are_named(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as raw:
        for memory in ("a", "b", "a"):
            pg_schema.prepare(PgConn(raw, memory))
        names = [row[0] for row in raw.execute("SELECT name FROM memdex_migrations ORDER BY name")]
        assert names == [name for name, _ in pg_schema.MIGRATIONS]
        assert raw.execute("SELECT count(*) FROM memdex_memories").fetchone()[0] == 2


def _write_0001_layout(conn: Any, corpus: dict[str, list[str]]) -> None:
    """Index ``corpus`` as the schema of migration 0001 held it: a postings row per term per chunk, and
    each term's chunk count."""
    texts = [(path, line, text) for path, chunk_texts in corpus.items() for line, text in enumerate(chunk_texts, 1)]
    tokens = 0
    with conn.raw.transaction():
        for path, line, text in texts:
            postings = fts_tokens.doclists([1], [index_text(text)], 1)
            cid = conn.execute(
                "INSERT INTO memdex_chunks (index_id, path, source, start_line, end_line, hash, text, doc_len) "
                "VALUES (%s, %s, 'memory', %s, %s, %s, %s, %s) RETURNING id",
                (conn.index_id, path, line, line, sha256_hex(text), text, postings.lengths[0]),
            ).fetchone()[0]
            tokens += postings.lengths[0]
            for term, _, _, tf, length, places in postings.rows:
                conn.execute("INSERT INTO memdex_postings VALUES (%s, %s, %s, %s, %s, %s)",
                             (conn.index_id, term, cid, int(tf), int(length), [int(k) & ((1 << fts_tokens.POSITION_BITS) - 1) for k in places.split(",")]))  # fmt: skip
                conn.execute("INSERT INTO memdex_terms VALUES (%s, %s, 1) ON CONFLICT (index_id, term) "
                             "DO UPDATE SET chunks = memdex_terms.chunks + 1", (conn.index_id, term))  # fmt: skip
        conn.execute("UPDATE memdex_fts_stats SET rows = %s, tokens = %s WHERE index_id = %s", (len(texts), tokens, conn.index_id))
        for path in corpus:
            conn.execute("INSERT INTO memdex_files VALUES (%s, %s, 'memory', 'h', 0, 0, 0, NULL)", (conn.index_id, path))


def test_an_index_written_before_block_doclists_ranks_the_same_after_the_migration(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0002 turns every postings row into a one-chunk doclist: the upgraded index answers as
    SQLite does, and a file replaced afterwards mixes old and new blocks correctly."""
    corpus = _corpus(seed=3)
    lite = schema.open_index(tmp_path / "idx.sqlite")
    _fill(store, lite, corpus)
    with psycopg.connect(pg_url, autocommit=True) as raw:
        conn = PgConn(raw, "before")
        monkeypatch.setattr(pg_schema, "MIGRATIONS", pg_schema.MIGRATIONS[:1])
        pg_schema.prepare(conn)
        follow_live(conn)
        _write_0001_layout(conn, corpus)
        monkeypatch.undo()
        pg_schema.prepare(conn)
        assert raw.execute("SELECT count(*) FROM memdex_migrations").fetchone()[0] == len(pg_schema.MIGRATIONS)
        check_consistent(raw)
        change = FileChange("notes/misc.md", "memory", FileState("x", 1, 1), _chunks(corpus["notes/misc.md"][:2]))
        for ops, c in ((store, lite), (pg_store, conn)):
            with ops.transaction(c):
                ops.replace_files(c, [change])
        check_consistent(raw)
        for terms in (["kafka"], ["backup", "lentil"], ["postgres_url"], ["the", "cumin", "carol"], ["deploys"]):
            ours, theirs = _ranking(pg_store, conn, terms, 10, None), _ranking(store, lite, terms, 10, None)
            assert theirs and [hit[:2] for hit in ours] == [hit[:2] for hit in theirs], terms
            assert all(abs(a[2] - b[2]) < 1e-9 for a, b in zip(ours, theirs, strict=True)), terms
    lite.close()


async def test_two_engines_starting_at_once_on_a_new_database_both_open(pg_url: str, workspace: Path) -> None:
    settings = load_settings(workspace=workspace, store={"backend": "postgres", "postgres": {"url": pg_url}})
    opened: list[int] = []

    async def open_one() -> None:
        async with MemoryEngine(settings, background_sync=False) as engine:
            opened.append((await engine.status()).files)

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(open_one)
    assert opened == [0, 0, 0]


def test_postgres_without_a_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="store.postgres.url"):
        load_settings(store={"backend": "postgres"})


async def test_an_unreachable_database_is_one_clear_error_without_the_password(workspace: Path, tmp_path: Path) -> None:
    url = f"postgresql://memdex:s3cret-pw@/memdex?host={tmp_path}&port=1"  # no server at that socket
    settings = load_settings(workspace=workspace, store={"backend": "postgres", "postgres": {"url": url}})
    with pytest.raises(StoreError, match="cannot reach the PostgreSQL database memdex") as caught:
        async with MemoryEngine(settings, background_sync=False):
            pass
    assert "s3cret" not in str(caught.value)
    assert "s3cret" not in repr(settings.store)


async def test_the_writer_reconnects_after_its_connection_is_killed(pg_url: str, workspace: Path, write: Write) -> None:
    """A database restart or a dropped connection costs one failed write, not every write after it."""
    write("MEMORY.md", "- the first note\n")
    settings = load_settings(workspace=workspace, store={"backend": "postgres", "postgres": {"url": pg_url}})
    async with MemoryEngine(settings, background_sync=False) as engine:
        await engine.sync()
        killed = engine.index._writer.raw  # type: ignore[attr-defined]
        backend = killed.info.backend_pid
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        receipt = None
        for _ in range(2):  # the write that finds the connection dead may fail; the next reconnects
            try:
                receipt = await engine.append("the note after the restart")
                break
            except StoreError:
                continue
        assert receipt is not None
        assert [h.path for h in (await engine.search("restart")).results] == [receipt.path]
        assert engine.index._writer.raw is not killed  # type: ignore[attr-defined]
        assert killed.pgconn.pgconn_ptr is None  # freed by the owner, not left to the garbage collector


async def test_a_repair_starts_an_empty_index_that_a_sync_refills(pg_url: str, workspace: Path, write: Write) -> None:
    write("MEMORY.md", "- the plover nests in May\n")
    settings = load_settings(workspace=workspace, store={"backend": "postgres", "postgres": {"url": pg_url}})
    async with MemoryEngine(settings, background_sync=False) as engine:
        await engine.sync()
        await engine.index.repair()
        assert (await engine.status()).files == 0 and (await engine.search("plover")).results == []
        assert (await engine.sync()).changed == 1
        assert [h.path for h in (await engine.search("plover")).results] == ["MEMORY.md"]
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM memdex_indexes").fetchone()[0] == 1  # the old one deleted


async def test_a_failed_open_closes_the_connections_it_made(pg_url: str, workspace: Path) -> None:
    """A role allowed one connection: the writer gets in, the read pool is refused, and opening fails with one
    error. The writer is closed on that path (psycopg warns of a connection deleted while open otherwise, and
    warnings fail the tests)."""
    role, database = f"memdex_one_{os.getpid()}", f"memdex_one_db_{os.getpid()}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 1")
        admin.execute(f"CREATE DATABASE {database} OWNER {role}")
    with psycopg.connect(make_conninfo(pg_url, dbname=database), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector")  # a superuser's part; the role owns the rest
    url = make_conninfo(pg_url, dbname=database, user=role)
    settings = load_settings(workspace=workspace, store={"backend": "postgres", "postgres": {"url": url}})
    try:
        with pytest.raises(MemdexError):
            async with MemoryEngine(settings, background_sync=False):
                pass
        gc.collect()  # a connection left open would warn here
        with psycopg.connect(pg_url, autocommit=True) as admin:  # and the role would still hold its one slot
            left = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (role,)).fetchone()
        assert left == (0,)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {role}")
