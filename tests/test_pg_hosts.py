"""Several hosts, one memory in PostgreSQL: the host with the files indexes and takes appends; replicas
serve search and memory_get from the database with no files at all, hear of changes through
LISTEN/NOTIFY, and refuse writes with the reason. Real server processes over Streamable HTTP, a
stateless pair behind no shared session, and a kill -9 in the middle of a sync."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from helpers import eventually, free_port, stop_process
from mcp import Client
from pg import check_consistent

from memdex.memory_core import InputError, MemoryEngine, PathError, load_settings
from memdex.memory_core.config_sections import ChunkingSettings
from memdex.server.app import build_server

Write = Callable[[str, str], Path]


def _settings(folder: Path, url: str, **postgres: Any) -> Any:
    return load_settings(workspace=folder, store={"backend": "postgres", "postgres": {"url": url, **postgres}})


@pytest.fixture
def nowhere(tmp_path: Path) -> Path:
    """A replica's workspace: an empty folder (it never reads it)."""
    folder = tmp_path / "replica"
    folder.mkdir()
    return folder


async def test_a_replica_serves_search_and_reads_from_the_database_and_refuses_writes(
    pg_url: str, workspace: Path, write: Write, nowhere: Path
) -> None:
    write("MEMORY.md", "# Memory\n\n- The deploy key is ORBIT-7734.\n- Alice owns the backups.\n")
    write("memory/2026-03-01.md", "# 2026-03-01\n\n- Chose PostgreSQL for the shared memory.\n")
    async with MemoryEngine(_settings(workspace, pg_url), background_sync=False) as primary:
        await primary.sync()
    replica_settings = _settings(nowhere, pg_url, replica=True).model_copy(update={"chunking": ChunkingSettings(tokens=64, overlap=8)})
    async with MemoryEngine(replica_settings, background_sync=False) as replica:
        status = await replica.status()  # ready, though its own chunking settings differ from the indexing host's
        assert (status.state, status.files) == ("ready", 2)
        hit = (await replica.search("ORBIT-7734")).results[0]
        assert (hit.path, hit.start_line) == ("MEMORY.md", 1)
        excerpt = await replica.read("./MEMORY.md", 3, 1)
        assert (excerpt.path, excerpt.text, excerpt.total_lines) == ("MEMORY.md", "- The deploy key is ORBIT-7734.", 4)
        for bad in ("memory/2026-03-02.md", "../MEMORY.md", "/etc/passwd"):
            with pytest.raises(PathError):
                await replica.read(bad)
        with pytest.raises(InputError, match="replica.*append"):
            await replica.append("a note that must not vanish")
        with pytest.raises(InputError, match="replica"):
            await replica.sync()
    assert not list(nowhere.iterdir())  # nothing was written where the replica runs

    async with build_server_client(_settings(nowhere, pg_url, replica=True)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"memory_search", "memory_get"}
        refused = await client.call_tool("memory_append", {"text": "a note that must not vanish"})
        assert refused.is_error and "replica" in refused.content[0].text and "Unknown tool" not in refused.content[0].text
        edit = await client.call_tool("memory_edit", {"path": "MEMORY.md", "oldText": "a", "newText": "b"})
        assert edit.is_error and "memory_edit is off here" in edit.content[0].text
        reads = tools["memory_get"].description or ""
        assert "replica without the files" in reads and "on disk" not in reads and "{{" not in reads


@contextlib.asynccontextmanager
async def build_server_client(settings: Any) -> Any:
    async with MemoryEngine(settings, background_sync=False) as engine, Client(build_server({"default": engine})) as client:
        yield client


async def test_a_replica_hears_of_every_change_the_indexing_host_makes(
    pg_url: str, workspace: Path, write: Write, nowhere: Path
) -> None:
    """LISTEN/NOTIFY: an append, an edit, a deletion and a rebuild on the primary reach the replica's
    change listeners (resource notifications); the primary's own listeners hear them once."""
    write("MEMORY.md", "# Memory\n\n- first note\n")
    heard: list[list[str]] = []
    own: list[list[str]] = []

    async def listen(paths: list[str]) -> None:
        heard.append(paths)

    async def listen_own(paths: list[str]) -> None:
        own.append(paths)

    async with (
        MemoryEngine(_settings(workspace, pg_url), background_sync=False) as primary,
        MemoryEngine(_settings(nowhere, pg_url, replica=True), background_sync=False) as replica,
    ):
        replica.add_change_listener(listen)
        primary.add_change_listener(listen_own)
        await primary.sync()
        await eventually(lambda: _flat(heard, "MEMORY.md"), "the first sync, told to the replica")
        receipt = await primary.append("the kingfisher survey starts Monday", target="daily")
        await eventually(lambda: _flat(heard, receipt.path), "the append, told to the replica")
        assert [h.path for h in (await replica.search("kingfisher")).results] == [receipt.path]
        (workspace / receipt.path).unlink()
        await primary.sync()
        await eventually(lambda: _flat(heard, receipt.path, times=2), "the deletion, told to the replica")
        assert (await replica.search("kingfisher")).results == []
    assert sum(paths.count("MEMORY.md") for paths in own) == 1  # not told again through the database


async def test_memories_followed_by_one_process_share_one_listener(pg_url: str, tmp_path: Path) -> None:
    """Four engines on two memories in one process hold one LISTEN connection between them; each
    replica hears only its own memory's changes, and when the engine that listens for all closes,
    another takes over on a new connection."""
    folders = {name: tmp_path / name for name in ("a", "b", "replica")}
    for name, folder in folders.items():
        folder.mkdir()
        if name != "replica":
            (folder / "MEMORY.md").write_text(f"# Memory {name}\n")
    heard: dict[str, list[list[str]]] = {"a": [], "b": []}

    def listener(name: str) -> Callable[[list[str]], Any]:
        async def listen(paths: list[str]) -> None:
            heard[name].append(paths)

        return listen

    def listeners() -> list[int]:
        with psycopg.connect(pg_url) as raw:
            return [row[0] for row in raw.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"
            )]  # fmt: skip

    async def one_listener(other_than: int | None = None) -> bool:
        pids = await anyio.to_thread.run_sync(listeners)
        return len(pids) == 1 and pids[0] != other_than

    opened, close_first = anyio.Event(), anyio.Event()

    async def first_replica() -> None:  # the first to follow: it listens for all, until it closes
        async with MemoryEngine(_settings(folders["replica"], pg_url, memory="a", replica=True)) as replica_a:
            replica_a.add_change_listener(listener("a"))
            opened.set()
            await close_first.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(first_replica)
        await opened.wait()
        async with (
            MemoryEngine(_settings(folders["a"], pg_url, memory="a"), background_sync=False) as host_a,
            MemoryEngine(_settings(folders["b"], pg_url, memory="b"), background_sync=False) as host_b,
            MemoryEngine(_settings(folders["replica"], pg_url, memory="b", replica=True)) as replica_b,
        ):
            replica_b.add_change_listener(listener("b"))
            await eventually(one_listener, "one LISTEN connection for the four engines")
            (first,) = await anyio.to_thread.run_sync(listeners)
            await host_a.append("the avocet count is done", target="long_term")
            await eventually(lambda: _flat(heard["a"], "MEMORY.md"), "memory a's change, told to its replica")
            assert heard["b"] == []
            close_first.set()
            await eventually(lambda: one_listener(other_than=first), "another engine listening in its place")
            await host_b.append("the bittern count is done", target="long_term")
            await eventually(lambda: _flat(heard["b"], "MEMORY.md"), "memory b's change, told after the takeover")
            assert heard["a"] == [["MEMORY.md"]]
            assert (await replica_b.search("bittern")).results and not (await host_a.search("bittern")).results


async def _true(value: bool) -> bool:
    return value


def _flat(batches: list[list[str]], path: str, times: int = 1) -> Any:
    return _true(sum(batch.count(path) for batch in batches) >= times)


# Real processes --------------------------------------------------------------------------------


def _env(tmp_path: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    return {**env, "XDG_STATE_HOME": str(tmp_path / "state"), "MEMDEX_STORE__BACKEND": "postgres",
            "MEMDEX_STORE__POSTGRES__URL": url, "MEMDEX_EMBEDDING__PROVIDER": "none"}  # fmt: skip


@contextlib.contextmanager
def _serving(tmp_path: Path, url: str, workspace: Path, *extra: str) -> Iterator[int]:
    """``memdex serve --transport http`` against the database, until the block ends."""
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    command = [sys.executable, "-m", "memdex.server.cli", "serve", "--workspace", str(workspace),
               "--transport", "http", "--port", str(port), *extra]  # fmt: skip
    with log.open("wb") as err:
        proc = subprocess.Popen(command, env=_env(tmp_path, url), stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while not _listening(port):
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, f"no server on {port}: {log.read_text(errors='replace')}"
            time.sleep(0.05)
        yield port
    finally:
        stop_process(proc)


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


async def test_an_append_through_one_server_is_found_through_another_within_a_second(
    tmp_path: Path, pg_url: str, workspace: Path, write: Write, nowhere: Path
) -> None:
    write("MEMORY.md", "# Memory\n\n- The shared memory lives in PostgreSQL.\n")
    with _serving(tmp_path, pg_url, workspace) as primary, _serving(tmp_path, pg_url, nowhere, "--replica") as replica:
        async with (
            Client(f"http://127.0.0.1:{primary}/mcp") as writer,
            Client(f"http://127.0.0.1:{replica}/mcp") as reader,
        ):
            assert "memory_append" not in {t.name for t in (await reader.list_tools()).tools}
            appended = await writer.call_tool("memory_append", {"text": "The heron key is HERON-5521."})
            assert not appended.is_error, appended.content
            started = time.monotonic()

            async def found() -> bool:
                answer = await reader.call_tool("memory_search", {"query": "HERON-5521"})
                return bool(answer.structured_content["results"])

            assert await eventually(found, "the append, through the replica", timeout=5) < 1.0
            assert time.monotonic() - started < 1.0


async def test_stateless_replicas_answer_32_clients_spread_over_both_with_no_error(
    tmp_path: Path, pg_url: str, workspace: Path, write: Write, nowhere: Path
) -> None:
    """Two stateless replicas, as behind a load balancer: 32 clients at once, each sending 4 searches to either
    replica in turn (no session carries over); every one answered, with a hit, and not one error. How many
    requests a second they answer is a benchmark's business (bench/), not a pass/fail line here."""
    for n in range(40):
        write(f"memory/2026-01-{n % 28 + 1:02d}-{n}.md", f"- note {n}: the grebe count was {n * 7}\n")
    async with MemoryEngine(_settings(workspace, pg_url), background_sync=False) as primary:
        await primary.sync()
    with (
        _serving(tmp_path, pg_url, nowhere, "--replica", "--stateless") as one,
        _serving(tmp_path, pg_url, nowhere, "--replica", "--stateless") as two,
    ):
        urls = [f"http://127.0.0.1:{one}/mcp", f"http://127.0.0.1:{two}/mcp"]
        errors: list[str] = []
        answered = [0, 0]  # by replica

        async def client(n: int) -> None:
            async with httpx.AsyncClient(timeout=120) as http:
                for turn in range(n, n + 4):
                    try:
                        hits = await _stateless_search(http, urls[turn % 2], f"grebe note {turn % 40}")
                        answered[turn % 2] += 1
                        if not hits:
                            errors.append(f"client {n}: no hit")
                    except Exception as exc:  # every failure counts, whatever its kind
                        errors.append(f"client {n}: {exc!r}")

        async with anyio.create_task_group() as tg:
            for n in range(32):
                tg.start_soon(client, n)
        assert errors == []
        assert answered == [64, 64]


async def _stateless_search(http: httpx.AsyncClient, url: str, query: str) -> list[Any]:
    """One tools/call with no session: what a load-balanced request looks like."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_search", "arguments": {"query": query}}}
    response = await http.post(url, json=body, headers=headers)
    response.raise_for_status()
    result = response.json()["result"]
    assert not result.get("isError"), result
    return list(result["structuredContent"]["results"])


def test_kill_9_during_a_sync_leaves_the_database_consistent(
    tmp_path: Path, pg_url: str, workspace: Path, write: Write
) -> None:
    """A `memdex index` killed inside its write transaction: none of it shows (never half a file), the
    BM25 statistics match the rows, and the next sync completes the memory."""
    body = "".join(f"- line {n} of the plover census with a few more words to fill it\n" for n in range(400))
    for n in range(60):
        write(f"memory/2026-02-{n % 28 + 1:02d}-{n}.md", body)
    command = [sys.executable, "-m", "memdex.server.cli", "index", "--workspace", str(workspace)]
    proc = subprocess.Popen(command, env=_env(tmp_path, pg_url), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        deadline = time.monotonic() + 60
        while not _writing(conn):  # killed inside the sync's write transaction
            assert proc.poll() is None and time.monotonic() < deadline, "the sync never got going"
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        check_consistent(conn)
        assert _files(conn) < 60
    rerun = subprocess.run(command, env=_env(tmp_path, pg_url), capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    with psycopg.connect(pg_url, autocommit=True) as conn:
        check_consistent(conn)
        assert _files(conn) == 60


def _writing(conn: Any) -> bool:
    """True while another session of this database is inside a transaction that has written, once the
    schema exists (its creation is a write transaction too)."""
    row = conn.execute(
        "SELECT to_regclass('memdex_files') IS NOT NULL AND EXISTS (SELECT 1 FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL)"
    ).fetchone()
    return bool(row[0])


def _files(conn: Any) -> int:
    try:
        return int(conn.execute("SELECT count(*) FROM memdex_files").fetchone()[0])
    except psycopg.errors.UndefinedTable:
        return 0


def test_the_cli_indexes_searches_and_reports_a_postgres_memory(tmp_path: Path, pg_url: str, workspace: Path, write: Write) -> None:
    """`--store postgres` with the URL from the environment: index, search, status, and the password never shown."""
    write("MEMORY.md", "# Memory\n\n- The avocet census is every April.\n")
    env = {**_env(tmp_path, pg_url), "MEMDEX_STORE__BACKEND": "sqlite"}  # the flag beats the environment
    cli = [sys.executable, "-m", "memdex.server.cli"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*cli, *args, "--workspace", str(workspace), "--store", "postgres"], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    assert "indexed 1 files" in run("index").stdout
    assert "MEMORY.md" in run("search", "avocet census").stdout
    status = run("status").stdout
    assert "memory 'default' in the PostgreSQL database" in status and "1 indexed" in status
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").rglob("*.sqlite"))  # no SQLite index made


def test_doctor_reaches_the_database_or_names_the_problem(tmp_path: Path, pg_url: str, workspace: Path, write: Write) -> None:
    write("MEMORY.md", "- a note\n")
    command = [sys.executable, "-m", "memdex.server.cli", "doctor", "--workspace", str(workspace)]
    ok = subprocess.run(command, env=_env(tmp_path, pg_url), capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "PostgreSQL database" in ok.stdout and "reachable, 0 files in 0 chunks" in ok.stdout
    unreachable = f"postgresql://memdex:s3cret@/memdex?host={tmp_path}&port=1"
    bad = subprocess.run(command, env=_env(tmp_path, unreachable), capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "PROBLEMS: 1: cannot reach the PostgreSQL database" in bad.stdout
    assert "s3cret" not in bad.stdout + bad.stderr
