"""SQLite's named migrations and its embedding cache file: no schema change, chunker change or reset of a
damaged index ever embeds unchanged text again (with an OpenAI-compatible provider, that is paid for).

The provider is the counting hash provider (tests/fake_provider.py); the index is a real SQLite file.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_provider import HashFactory
from test_index_faults import NOTES, chunk_rows, corrupt, fill_workspace, found, quick_check

from memdex.memory_core import MemoryEngine
from memdex.memory_core.index import syncer
from memdex.memory_core.stores.sqlite import db
from memdex.memory_core.stores.sqlite import ops as store

MakeEngine = Callable[..., MemoryEngine]


async def build(make_engine: MakeEngine, factory: HashFactory) -> int:
    """A complete index with vectors; returns how many texts the provider embedded."""
    async with make_engine(provider_factory=factory) as engine:
        await engine.sync()
        assert engine.vectors_ready
    assert factory.provider.texts_embedded > 0
    return factory.provider.texts_embedded


async def assert_hybrid(engine: MemoryEngine) -> None:
    for rel, _, query in NOTES:
        answer = await engine.search(query)
        assert answer.mode == "hybrid" and answer.results[0].path == rel, query


async def test_a_schema_and_chunker_change_rebuilds_the_index_without_embedding_again(
    make_engine: MakeEngine, workspace: Path, index_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new schema version and a new chunker version change the index identity: the index is rebuilt
    from the Markdown, every vector from the cache, none from the provider."""
    fill_workspace(workspace, files=10)
    factory = HashFactory()
    embedded = await build(make_engine, factory)
    monkeypatch.setattr(store, "SCHEMA_VERSION", store.SCHEMA_VERSION + 1)
    monkeypatch.setattr(syncer, "CHUNKER_VERSION", f"{syncer.CHUNKER_VERSION}-next")
    async with make_engine(provider_factory=factory) as engine:
        await engine.sync()
        identity = await engine.index.read(engine.index.ops.read_meta, "identity")
        assert identity["chunks"]["schema"] == store.SCHEMA_VERSION
        assert identity["chunks"]["chunker"] == syncer.CHUNKER_VERSION
        assert await engine.index.read(engine.index.ops.count_without_vectors) == 0
        await assert_hybrid(engine)
    assert factory.provider.texts_embedded == embedded


async def test_a_new_migration_is_applied_in_place_keeping_chunks_and_vectors(
    make_engine: MakeEngine, workspace: Path, index_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A migration added to the list is applied once, recorded, and changes nothing else: same chunks,
    nothing embedded, no rebuild."""
    from memdex.memory_core.stores.sqlite import schema

    fill_workspace(workspace, files=5)
    factory = HashFactory()
    embedded = await build(make_engine, factory)
    before = chunk_rows(index_path)
    step = ("9999_files_note", "ALTER TABLE files ADD COLUMN note TEXT;")
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, step])
    for _ in range(2):  # applied once, then found recorded
        async with make_engine(provider_factory=factory) as engine:
            await engine.sync()
            await assert_hybrid(engine)
    conn = db.connect(index_path, readonly=True)
    try:
        assert [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY name")] == [
            name for name, _ in schema.MIGRATIONS
        ]
        assert "note" in {r[1] for r in conn.execute("PRAGMA table_info(files)")}
    finally:
        conn.close()
    assert chunk_rows(index_path) == before
    assert factory.provider.texts_embedded == embedded


@pytest.mark.parametrize("kind", ["random_file", "random_page"])
async def test_a_damaged_index_is_rebuilt_with_the_vectors_of_its_sound_cache(
    make_engine: MakeEngine, workspace: Path, index_path: Path, kind: str
) -> None:
    """The index file is damaged (found at open, or by the forced sync's check); the cache file beside it
    is sound: the rebuild from the Markdown embeds nothing."""
    fill_workspace(workspace, files=10)
    factory = HashFactory()
    embedded = await build(make_engine, factory)
    corrupt(index_path, kind)
    async with make_engine(provider_factory=factory) as engine:
        await engine.sync(force=True)
        await assert_hybrid(engine)
    assert quick_check(index_path) == "ok"
    assert factory.provider.texts_embedded == embedded


@pytest.mark.parametrize("kind", ["random_file", "last_page"])
async def test_a_damaged_cache_is_emptied_and_the_index_kept(
    make_engine: MakeEngine, workspace: Path, index_path: Path, kind: str
) -> None:
    """The cache is derived data too: damaged, it is emptied (its vectors made again) and the index, sound,
    keeps its chunks."""
    from memdex.memory_core.stores.sqlite import schema

    fill_workspace(workspace, files=10)
    factory = HashFactory()
    embedded = await build(make_engine, factory)
    before = chunk_rows(index_path)
    cache = schema.cache_path(index_path)
    corrupt(cache, kind)
    async with make_engine(provider_factory=factory) as engine:
        await engine.sync(force=True)
        await assert_hybrid(engine)
        (workspace / "memory" / "late.md").write_text("the okapi arrived late\n", encoding="utf-8")
        await engine.sync()
        assert await found(engine, "okapi") == {"memory/late.md"}
    assert quick_check(cache) == "ok"
    assert set(before) <= set(chunk_rows(index_path))
    assert factory.provider.texts_embedded > embedded  # the cache's vectors were lost, not the index


def _as_before_keyword_terms(index: Path) -> None:
    """Turn a current index back into one memdex wrote before migration 0003: FTS5 over the raw text
    (porter unicode61), the old triggers, no record of 0003, the old tokenizer in its identity."""
    from memdex.memory_core.stores.sqlite import schema

    conn = db.connect(index)
    try:
        conn.execute("BEGIN IMMEDIATE")
        for statement in ("DROP TRIGGER chunks_fts_insert", "DROP TRIGGER chunks_fts_delete", "DROP TABLE chunks_fts"):
            conn.execute(statement)
        first = schema._statements(schema.MIGRATIONS[0][1])
        for statement in first:
            if "chunks_fts" in statement:
                conn.execute(statement)
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
        conn.execute("DELETE FROM migrations WHERE name LIKE '0003%'")
        identity = store.read_meta(conn, "identity")
        identity["chunks"]["fts_tokenizer"] = "porter unicode61"
        store.write_meta(conn, "identity", identity)
        conn.execute("COMMIT")
    finally:
        conn.close()


async def test_an_index_from_before_keyword_terms_for_every_script_is_rebuilt_from_the_cache(
    make_engine: MakeEngine, workspace: Path, index_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An index whose FTS5 table holds raw text (a CJK sentence is one token) is migrated in place, so it
    serves CJK queries at once, and rebuilt for the new identity with a log line that says why: no chunk
    is embedded again."""
    fill_workspace(workspace, files=10)
    (workspace / "memory" / "2026-07-02.md").write_text("# 2026-07-02\n\n用户喜欢喝乌龙茶，不喜欢咖啡。\n", encoding="utf-8")
    factory = HashFactory()
    embedded = await build(make_engine, factory)
    _as_before_keyword_terms(index_path)
    with caplog.at_level("INFO", logger="memdex.memory_core"):  # the CLI, run in-process by other tests, raises its level
        async with make_engine(provider_factory=factory, embedding={"provider": "none"}) as engine:
            answer = await engine.search("咖啡")  # the migrated live index, before any sync
            assert [hit.path for hit in answer.results] == ["memory/2026-07-02.md"]
    assert any("0003_keyword_terms_for_every_script" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level("INFO", logger="memdex.memory_core"):  # the CLI, run in-process by other tests, raises its level
        async with make_engine(provider_factory=factory) as engine:
            await engine.sync()
            identity = await engine.index.read(engine.index.ops.read_meta, "identity")
            assert identity["chunks"]["fts_tokenizer"] != "porter unicode61"
            assert await engine.index.read(engine.index.ops.count_without_vectors) == 0
            answer = await engine.search("乌龙茶")
            assert answer.mode == "hybrid" and answer.results[0].path == "memory/2026-07-02.md"
            await assert_hybrid(engine)
    assert any("rebuilding" in r.getMessage() and "fts_tokenizer" in r.getMessage() for r in caplog.records)
    assert factory.provider.texts_embedded == embedded


def _keyword_table_as_before(index: Path, migration: str, tokenizer: str, text: str = "text") -> None:
    """Turn a current index back into one memdex wrote before ``migration``: a keyword table cut by ``tokenizer``
    from ``text`` (an SQL expression of the chunk's text), no record of ``migration``."""
    conn = db.connect(index)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DROP TABLE chunks_fts")
        conn.execute(
            "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id', "
            f"tokenize='{tokenizer}')"
        )
        conn.execute(f"INSERT INTO chunks_fts(rowid, text) SELECT id, {text} FROM chunks")
        conn.execute("DELETE FROM migrations WHERE name LIKE ?", (f"{migration}%",))
        conn.execute("COMMIT")
    finally:
        conn.close()


async def test_an_index_from_before_stems_is_migrated_in_place(
    make_engine: MakeEngine, workspace: Path, index_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An index whose keyword table holds no Russian stems is migrated when opened, so another form of a
    Russian word finds its note at once, before any sync; a note changed after it is indexed anew."""
    fill_workspace(workspace, files=3)
    note = workspace / "memory" / "2026-07-03.md"
    note.write_text("# 2026-07-03\n\nВстреча с командой разработчиков по вторникам.\n", encoding="utf-8")
    await build(make_engine, HashFactory())
    # the tokenizer cut Indic words at their vowel signs; the terms are the text as written, no stems
    _keyword_table_as_before(index_path, "0004", "porter unicode61 remove_diacritics 2")
    with caplog.at_level("INFO", logger="memdex.memory_core"):  # the CLI, run in-process by other tests, raises its level
        async with make_engine(embedding={"provider": "none"}) as engine:
            answer = await engine.search("встречи")  # the migrated live index, before any sync
            assert [hit.path for hit in answer.results] == ["memory/2026-07-03.md"]
            note.write_text("# 2026-07-03\n\nВстречу перенесли на среду.\n", encoding="utf-8")
            await engine.sync()
            assert [hit.path for hit in (await engine.search("среды")).results] == ["memory/2026-07-03.md"]
            assert (await engine.search("разработчики")).results == []
    assert any("0004_stems_and_indic_words" in r.getMessage() for r in caplog.records)
    assert quick_check(index_path) == "ok"


async def test_an_index_from_before_thai_words_kept_their_marks_is_migrated_in_place(
    make_engine: MakeEngine, workspace: Path, index_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An index whose tokenizer cut Thai words at their vowel signs (กิน, "eat", was ก น, as กัน, "together") is
    migrated when opened: before any sync, its terms are whole words and "eat" does not find the note about a trip
    made together."""
    fill_workspace(workspace, files=3)
    (workspace / "memory" / "2026-07-04.md").write_text("# 2026-07-04\n\nเราไปเที่ยวเชียงใหม่ด้วยกัน\n", encoding="utf-8")
    await build(make_engine, HashFactory())
    indic = "".join(chr(c) for c in range(0x0900, 0x0E00) if unicodedata.category(chr(c)).startswith("M"))
    old_tokenizer = f"porter unicode61 remove_diacritics 2 tokenchars {indic}"
    _keyword_table_as_before(index_path, "0005", old_tokenizer, f"{db.INDEX_TEXT_FUNCTION}(text)")
    with caplog.at_level("INFO", logger="memdex.memory_core"):  # the CLI, run in-process by other tests, raises its level
        async with make_engine(embedding={"provider": "none"}) as engine:
            assert (await engine.search("กิน")).results == []  # the migrated live index, before any sync
            assert [hit.path for hit in (await engine.search("เชียงใหม่")).results] == ["memory/2026-07-04.md"]
    assert any("0005_thai_words_with_their_marks" in r.getMessage() for r in caplog.records)
    assert quick_check(index_path) == "ok"
    assert {"กัน", "ด้"} <= _keyword_terms(index_path) and "ก" not in _keyword_terms(index_path)


def _keyword_terms(index: Path) -> set[str]:
    """The terms the index's keyword table holds."""
    conn = db.connect(index)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, chunks_fts, 'row')")
        return {row[0] for row in conn.execute("SELECT term FROM temp.terms")}
    finally:
        conn.close()


def _old_index(path: Path, cache_rows: int) -> None:
    """An index as memdex wrote it before migrations were recorded: schema version 1, the cache inside."""
    from memdex.memory_core.stores.sqlite import schema

    conn = db.connect(path)
    try:
        for statement in schema._statements(schema.MIGRATIONS[0][1]):
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
        conn.execute("INSERT INTO meta VALUES ('identity', '{}')")
        conn.execute("INSERT INTO chunks(path, start_line, end_line, hash, text) VALUES ('MEMORY.md', 1, 2, 'h', 'kept')")
        for n in range(cache_rows):
            conn.execute(
                "INSERT INTO embedding_cache VALUES ('openai', 'text-embedding-3-small', 'fp', ?, 2, ?, 0)",
                (f"hash{n}", store.pack_vector([0.6, 0.8])),
            )
    finally:
        conn.close()


def test_an_index_from_before_recorded_migrations_is_adopted_and_its_cache_moved(tmp_path: Path) -> None:
    """No reset: its rows stay, the first migration is recorded as adopted, and the later ones move the
    cache to its own file."""
    from memdex.memory_core.stores.sqlite import schema

    index = tmp_path / "old.sqlite"
    _old_index(index, cache_rows=3)
    conn = schema.open_index(index)
    try:
        applied = [r[0] for r in conn.execute("SELECT name FROM main.migrations ORDER BY name")]
        assert applied == [name for name, _ in schema.MIGRATIONS]
        assert conn.execute("SELECT text FROM chunks").fetchall()[0][0] == "kept"
        tables = {r[0] for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
        assert "embedding_cache" not in tables
        assert conn.execute("SELECT count(*) FROM cache.embedding_cache").fetchone()[0] == 3
    finally:
        conn.close()


def test_a_file_with_unknown_migrations_or_unrecorded_tables_needs_a_reset(tmp_path: Path) -> None:
    """A newer memdex's index (a migration this one does not know) or a foreign database is never used as is."""
    from memdex.memory_core.stores.sqlite import schema

    newer = tmp_path / "newer.sqlite"
    schema.open_index(newer).close()
    conn = db.connect(newer)
    try:
        conn.execute("INSERT INTO migrations VALUES ('9999_from_the_future', 0)")
    finally:
        conn.close()
    with pytest.raises(schema.NeedsReset) as raised:
        schema.open_index(newer).close()
    assert raised.value.path == newer
    foreign = tmp_path / "foreign.sqlite"
    conn = db.connect(schema.cache_path(foreign))
    try:
        conn.execute("CREATE TABLE unrelated(x)")
    finally:
        conn.close()
    with pytest.raises(schema.NeedsReset) as raised:
        schema.open_index(foreign).close()
    assert raised.value.path == schema.cache_path(foreign)



async def test_the_chunk_ids_ends_are_read_off_the_key(make_engine: MakeEngine, workspace: Path, index_path: Path) -> None:
    """A keyword search that ranks in halves reads the chunk ids' two ends by the key: min() and max() in one select
    scanned every chunk (6 ms of each search at 100,000 chunks)."""
    fill_workspace(workspace, files=3)
    async with make_engine() as engine:
        await engine.sync()
    conn = db.connect(index_path, readonly=True)
    try:
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {store.ID_RANGE}")]
        low, high = conn.execute(store.ID_RANGE).fetchone()
        ids = [row[0] for row in conn.execute("SELECT id FROM chunks")]
    finally:
        conn.close()
    assert plan.count("SEARCH chunks") == 2 and not [step for step in plan if step.startswith("SCAN chunks")], plan
    assert (low, high) == (min(ids), max(ids))
