"""PostgreSQL down and back: calls answer with an error within seconds instead of waiting for the pool's
timeout, the index is usable again within seconds of the server's return however long it was away, a
note saved during the outage reaches the other hosts without a search on its own host, and the log of
the outage has one line per failure, no tracebacks; one killed session is no outage. A real server of
this module's own, stopped with ``pg_ctl stop -m fast`` and started again on the same folder."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from helpers import eventually
from pg import PgServer

from memdex.memory_core import MemoryEngine, StoreError, load_settings

Write = Callable[[str, str], Path]

CALL_BOUND = 3.0  # seconds an answer may take while the database is down (the pool waited 30 s, then 5 s)


@pytest.fixture(scope="module")
def own_server() -> Iterator[PgServer]:
    """A server these tests may stop without disturbing the session's."""
    server = PgServer()
    yield server
    server.stop()


@pytest.fixture
def url(own_server: PgServer) -> Iterator[str]:
    with own_server.database() as database:
        yield database


def _settings(folder: Path, url: str, **postgres: Any) -> Any:
    return load_settings(workspace=folder, store={"backend": "postgres", "postgres": {"url": url, **postgres}})


async def _timed(call: Any) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        await call
    except StoreError as exc:
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


async def test_calls_fail_within_seconds_while_the_database_is_down(
    own_server: PgServer, url: str, workspace: Path, write: Write
) -> None:
    """Every search and append during an outage answers within CALL_BOUND with one line (reads come from
    the files and still work): no call waits for the pool's timeout."""
    write("MEMORY.md", "# Memory\n\n- The deploy key is ORBIT-7734.\n")
    async with MemoryEngine(_settings(workspace, url), background_sync=False) as engine:
        await engine.sync()
        with own_server.outage():
            down_at = time.monotonic()
            answers = []
            while time.monotonic() - down_at < 8:
                for call in (engine.search("ORBIT-7734"), engine.append("noted while the database is down")):
                    answers.append(await _timed(call))
                assert (await engine.read("MEMORY.md")).total_lines == 3
                await anyio.sleep(0.2)
    slowest = max(seconds for seconds, _ in answers)
    assert slowest < CALL_BOUND, answers
    assert all(isinstance(error, StoreError) for _, error in answers), answers
    assert all("\n" not in str(error) for _, error in answers)
    assert "saved to memory/" in str(answers[1][1])  # the append's note is on disk all the same


async def test_searches_and_appends_work_within_seconds_of_the_database_returning(
    own_server: PgServer, url: str, workspace: Path, write: Write
) -> None:
    """After 17 s away the database is used again within seconds of its return, by a search and by the
    first append: the pool's reconnect backoff after 17 s of failures is past 10 s (a pool of one, so no
    spare slot connects at once), and the writer's session died with the old server."""
    write("MEMORY.md", "# Memory\n\n- The deploy key is ORBIT-7734.\n")
    async with MemoryEngine(_settings(workspace, url, pool_size=1), background_sync=False) as engine:
        await engine.sync()
        with own_server.outage():
            assert (await _timed(engine.search("ORBIT-7734")))[1] is not None
            await anyio.sleep(17)

        async def search_works() -> bool:
            return (await _timed(engine.search("ORBIT-7734")))[1] is None

        assert await eventually(search_works, "a search after the restart", timeout=60) < 6
        assert (await _timed(engine.append("noted after the restart")))[1] is None
        assert [hit.path for hit in (await engine.search("restart")).results] == [f"memory/{engine.today()}.md"]


async def test_a_note_saved_during_an_outage_reaches_the_other_hosts_when_the_database_returns(
    own_server: PgServer, url: str, workspace: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Host A (watching its files) saves a note while the database is down; once it is back, a replica
    finds the note with no search or sync on A, and A's log of the outage holds no traceback."""
    (workspace / "MEMORY.md").write_text("# Memory\n\n- first note\n")
    replica_folder = tmp_path / "replica"
    replica_folder.mkdir()
    async with (
        MemoryEngine(_settings(workspace, url)) as host,
        MemoryEngine(_settings(replica_folder, url, replica=True), background_sync=False) as replica,
    ):
        await host.sync()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="memdex"), own_server.outage():
            with pytest.raises(StoreError, match="saved to .* do not append it again"):
                await host.append("the heron census moved to Thursday")
            await eventually(lambda: _logged(caplog, "changed file"), "the watcher's failed re-index, logged")

        async def replica_finds_it() -> bool:
            try:
                return bool((await replica.search("heron census")).results)
            except StoreError:
                return False

        assert await eventually(replica_finds_it, "the note, on the replica", timeout=30) < 15
    tracebacks = [r for r in caplog.records if r.exc_info and r.name.startswith("memdex")]
    assert not tracebacks, [r.getMessage() for r in tracebacks]


async def _logged(caplog: pytest.LogCaptureFixture, words: str) -> bool:
    return any(words in record.getMessage() for record in caplog.records)


async def test_a_killed_listener_session_is_not_an_outage(
    url: str, workspace: Path, write: Write, caplog: pytest.LogCaptureFixture
) -> None:
    """The change listener's session alone ends (pg_terminate_backend): it connects again at once, and as
    that works, no outage is declared or logged, and calls go on."""
    write("MEMORY.md", "# Memory\n\n- The deploy key is ORBIT-7734.\n")

    def listeners() -> list[int]:
        with psycopg.connect(url, autocommit=True) as admin:
            return [row[0] for row in admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"
            )]  # fmt: skip

    async with MemoryEngine(_settings(workspace, url), background_sync=False) as engine:
        await engine.sync()
        await eventually(lambda: anyio.to_thread.run_sync(lambda: len(listeners()) == 1), "the listener")
        (killed,) = await anyio.to_thread.run_sync(listeners)
        with caplog.at_level(logging.INFO, logger="memdex"):
            await anyio.to_thread.run_sync(lambda: _terminate(url, killed))
            await eventually(lambda: anyio.to_thread.run_sync(lambda: listeners() not in ([], [killed])), "a new listener")
            assert [hit.path for hit in (await engine.search("ORBIT-7734")).results] == ["MEMORY.md"]
    assert not [r.getMessage() for r in caplog.records if "lost the" in r.getMessage()]


def _terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


async def test_a_host_whose_writer_is_still_down_hears_the_other_hosts(url: str, workspace: Path, tmp_path: Path) -> None:
    """After an outage a host's writer stays closed until its next write (its reconnection failed while the
    database was down); the changes other hosts announce meanwhile still reach its listeners."""
    (workspace / "MEMORY.md").write_text("# Memory\n\n- first note\n")
    replica_folder = tmp_path / "replica"
    replica_folder.mkdir()
    heard: list[list[str]] = []

    async def listen(paths: list[str]) -> None:
        heard.append(paths)

    async with (
        MemoryEngine(_settings(workspace, url), background_sync=False) as host,
        MemoryEngine(_settings(replica_folder, url, replica=True), background_sync=False) as replica,
    ):
        await host.sync()
        replica.add_change_listener(listen)
        replica.index._writer.raw.pgconn.finish()  # type: ignore[attr-defined]  # as a failed reconnection leaves it
        receipt = await host.append("the kingfisher survey starts Monday")

        async def told() -> bool:
            return any(receipt.path in paths for paths in heard)

        await eventually(told, "the append, told to the replica", timeout=10)
