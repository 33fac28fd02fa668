"""The index shared by real processes: a held write lock, eight first runs at once, damaged files,
a rebuild racing another process's writes, and ``bench/killpoints.py`` with a few kills.

Every ``memdex`` here is a subprocess (``python -m memdex.server.cli``, the console script's code) with the
repository on its path and keyword-only embeddings; the faults and helpers come from
tests/test_index_faults.py, which covers the same ground in one process.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_index_faults import (
    CORRUPTIONS,
    NOTES,
    add_cache_rows,
    cache_rows,
    checkpoint,
    chunk_rows,
    corrupt,
    file_digest,
    fill_workspace,
    found,
    no_shadows,
    quick_check,
)

from memdex.memory_core import MemoryEngine, load_settings

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 120


def env(**extra: str) -> dict[str, str]:
    """This test's environment (isolated by conftest), keyword-only, with this checkout on the path."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    base["PYTHONPATH"] = str(ROOT)
    base["MEMDEX_EMBEDDING__PROVIDER"] = "none"
    return {**base, **extra}


def memdex_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "memdex.server.cli", *args]


def memdex(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        memdex_command(*args), cwd=ROOT, env=env(**extra), capture_output=True, text=True, timeout=TIMEOUT
    )


def build(workspace: Path, index: Path, **overrides: Any) -> None:
    """A complete index, built in this process (no interpreter start-up), then closed."""

    async def run() -> None:
        settings = load_settings(workspace=workspace, index_path=index, timezone="UTC", **overrides)
        async with MemoryEngine(settings, background_sync=False) as engine:
            await engine.sync()

    anyio.run(run)


def search_paths(workspace: Path, index: Path, query: str) -> set[str]:
    async def run() -> set[str]:
        settings = load_settings(workspace=workspace, index_path=index, timezone="UTC")
        async with MemoryEngine(settings, background_sync=False) as engine:
            return await found(engine, query)

    return anyio.run(run)


# A write lock held by another process -------------------------------------------------------------

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


def test_search_answers_and_index_fails_cleanly_while_another_process_holds_the_write_lock(
    workspace: Path, index_path: Path
) -> None:
    """``memdex search`` answers from the index as it is (exit 0, results printed); ``memdex index``
    says why it cannot write in one line (exit 2); neither prints a traceback, resets or deletes the
    index, or loses its embedding cache."""
    fill_workspace(workspace, files=10)
    build(workspace, index_path)
    cache = add_cache_rows(index_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(index_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        inode, digest = index_path.stat().st_ino, file_digest(index_path)
        common = ["--workspace", str(workspace), "--index", str(index_path)]
        runs = [subprocess.Popen(memdex_command(*args, *common), cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
                for args in (["search", NOTES[0][2]], ["index"])]  # fmt: skip
        (search_out, search_err), (_, index_err) = (run.communicate(timeout=TIMEOUT) for run in runs)
        assert "Traceback" not in search_err + index_err, search_err + index_err
        assert runs[0].returncode == 0, search_err
        assert NOTES[0][0] in search_out
        assert runs[1].returncode == 2, index_err
        said = [line for line in index_err.splitlines() if not line.startswith("indexing: ")]  # progress lines
        assert len(said) == 1 and said[0].startswith("memdex: ") and "retry" in said[0], index_err
        assert (index_path.stat().st_ino, file_digest(index_path)) == (inode, digest)
    finally:
        holder.communicate("", timeout=TIMEOUT)
    assert cache_rows(index_path) == cache
    assert memdex("index", "--workspace", str(workspace), "--index", str(index_path)).returncode == 0
    assert cache_rows(index_path) == cache


# Many first runs at once ---------------------------------------------------------------------------

STAGGER = 0.03  # seconds between the racers' starts: the later ones open the index while the first write it

RACER = """
import logging, os, sys, time
import memdex.server.cli
go, trials, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
said = []  # what the SQLite store warned of: "emptying the damaged index ...", a failed quick check
handler = logging.Handler(logging.WARNING)
handler.emit = lambda record: said.append(record.getMessage())
logging.getLogger("memdex.memory_core.stores.sqlite").addHandler(handler)
print("ready", flush=True)
for trial in range(trials):
    while not os.path.exists(f"{go}{trial}"):
        time.sleep(0.001)
    time.sleep(delay)
    said.clear()
    try:
        code = memdex.server.cli.main(["index", *sys.argv[4:], "--index", f"{go}{trial}.sqlite"])
    except BaseException as exc:
        code = f"{type(exc).__name__}: {exc}"
    print(f"trial {trial}: {code} {said!r}", flush=True)
"""


def watch_inode(index: Path, inodes: set[int], stop: threading.Event) -> None:
    """Collect every inode ``index`` has until ``stop``: a deleted and recreated file shows as two."""
    while not stop.is_set():
        try:
            inodes.add(index.stat().st_ino)
        except FileNotFoundError:
            pass
        time.sleep(0.0005)


def trial_result(racer: subprocess.Popen[str]) -> str:
    """The racer's next "trial N: exit code" line (memdex's own output comes before it)."""
    assert racer.stdout is not None
    while (line := racer.stdout.readline()) and not line.startswith("trial "):
        pass
    return line.strip()


def test_eight_first_runs_of_memdex_index_at_once_make_one_sound_index(workspace: Path, tmp_path: Path) -> None:
    """Eight ``memdex index`` processes released together on a new index path (a few milliseconds apart,
    so that most open and check it while another writes), twelve times: all exit 0 without one warning
    from the store (no file taken for damaged, none emptied: a sound index that another process creates
    or writes is never reset), the index passes integrity_check, holds every file once (chunks as a single
    build makes them), and the file is never deleted or replaced (one inode from its creation on)."""
    fill_workspace(workspace, files=60)
    reference = tmp_path / "reference.sqlite"
    build(workspace, reference)
    trials, go = 12, tmp_path / "go"
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(go), str(trials), str(n * STAGGER),
                                "--workspace", str(workspace)],
                               cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
              for n in range(8)]  # fmt: skip
    results: list[str] = []
    try:
        for racer in racers:
            assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
        for trial in range(trials):
            index = Path(f"{go}{trial}.sqlite")
            inodes: set[int] = set()
            stop = threading.Event()
            watcher = threading.Thread(target=watch_inode, args=(index, inodes, stop))
            watcher.start()
            try:
                Path(f"{go}{trial}").touch()
                results += [trial_result(racer) for racer in racers]
            finally:
                stop.set()
                watcher.join()
            inodes.add(index.stat().st_ino)
            assert len(inodes) == 1, f"trial {trial}: the index file was replaced ({len(inodes)} inodes)"
            assert quick_check(index, "integrity_check") == "ok"
            assert chunk_rows(index) == chunk_rows(reference), f"trial {trial}"
            assert no_shadows(index) == []
    finally:
        for racer in racers:
            racer.kill()
            racer.communicate(timeout=TIMEOUT)
    unclean = [line for line in results if not line.endswith(": 0 []")]
    resets = [line for line in unclean if "emptying the damaged" in line]
    assert unclean == [], f"{len(unclean)} of {len(results)} runs failed or warned, {len(resets)} reset: {unclean}"


# Damaged index files -------------------------------------------------------------------------------


@pytest.mark.parametrize("force", [False, True], ids=["index", "index --force"])
def test_memdex_index_rebuilds_every_kind_of_damaged_index(workspace: Path, tmp_path: Path, force: bool) -> None:
    """Random bytes, a random or zeroed page, the FTS data's last page, a cut file: ``memdex index``
    (and ``--force``) rebuilds from the Markdown, exits 0, and search finds the notes again."""
    fill_workspace(workspace)
    healthy = tmp_path / "healthy.sqlite"
    build(workspace, healthy)
    checkpoint(healthy)
    indexes = {kind: tmp_path / kind / "idx.sqlite" for kind in CORRUPTIONS}
    for kind, index in indexes.items():
        index.parent.mkdir()
        index.write_bytes(healthy.read_bytes())
        corrupt(index, kind)
    flags = ["--force"] if force else []
    runs = {kind: subprocess.Popen(memdex_command("index", *flags, "--workspace", str(workspace), "--index", str(index)),
                                   cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for kind, index in indexes.items()}  # fmt: skip
    outputs = {kind: run.communicate(timeout=TIMEOUT) for kind, run in runs.items()}
    for kind, index in indexes.items():
        out, err = outputs[kind]
        assert runs[kind].returncode == 0 and "Traceback" not in err, f"{kind}: {err}"
        assert quick_check(index) == "ok", kind
        assert chunk_rows(index) == chunk_rows(healthy), kind
        for rel, _, query in NOTES:
            assert search_paths(workspace, index, query) == {rel}, kind
        assert no_shadows(index) == [], kind


# Stale shadows and another process's rebuild lock --------------------------------------------------

LOCKER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


def test_a_shadow_is_kept_while_another_process_holds_the_rebuild_lock_and_swept_after(
    workspace: Path, index_path: Path
) -> None:
    fill_workspace(workspace, files=3)
    shadow = Path(f"{index_path}.rebuild-1234abcd")
    leftovers = [
        shadow,
        Path(f"{shadow}-wal"),
        Path(f"{index_path}.tmp-1234abcd"),
        Path(f"{index_path}.backup-12345678"),
    ]
    for path in leftovers:
        path.write_bytes(b"left over")
    common = ["--workspace", str(workspace), "--index", str(index_path)]
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, f"{index_path}.lock"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert locker.stdout is not None and locker.stdout.readline() == "locked\n"
        run = memdex("index", *common)
        assert run.returncode == 0, run.stderr
        assert all(path.exists() for path in leftovers)
    finally:
        locker.communicate("", timeout=TIMEOUT)
    run = memdex("index", *common)
    assert run.returncode == 0, run.stderr
    assert [path.name for path in leftovers if path.exists()] == []


# A rebuild in this process, writes from another ------------------------------------------------------

WRITER = """
import json, sys
from pathlib import Path
import anyio
from memdex.memory_core import MemoryEngine, load_settings

workspace, index, report = map(Path, sys.argv[1:4])

async def main():
    settings = load_settings(workspace=workspace, index_path=index, timezone="UTC",
                             chunking={"tokens": 128, "overlap": 16})
    written = []
    async with MemoryEngine(settings, background_sync=False) as engine:

        async def told(what):  # the other process's next line
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            assert line == what + "\\n", f"expected {what!r}, got {line!r}"

        async def note():
            n = len(written)
            rel, word = f"memory/p-{n:03d}.md", f"gnu{n:03d}wombat"
            (workspace / rel).write_text(f"# note {n}\\n\\n- {word} from the writer process\\n", encoding="utf-8")
            print(f"writing {n}", flush=True)
            await engine.sync_paths([rel])
            written.append([rel, word])
            print(f"wrote {n}", flush=True)

        print("ready", flush=True)
        await told("listed")  # the other process has listed the files for its shadow
        await note()
        await told("caught up")  # its last catch-up is done: this write is held off until its install
        await note()
        await told("installed")
        await note()
        receipt = await engine.append("the serval-capybara note, appended last")
        written.append([receipt.path, "serval capybara"])
        found = {word: sorted({h.path for h in (await engine.search(word, max_results=5)).results})
                 for _, word in written}
        chunks = (await engine.status()).chunks
    report.write_text(json.dumps({"written": written, "found": found, "chunks": chunks}))

anyio.run(main)
"""


async def test_a_rebuild_here_and_writes_from_another_process_end_with_the_same_rows(
    workspace: Path, index_path: Path, tmp_path: Path
) -> None:
    """This process rebuilds for new chunking settings while another process writes new notes and appends:
    afterwards both see every note and the same chunks, which are the chunks of a fresh build, and no
    shadow file is left. Lines on the writer's stdin and stdout put its notes in each window: just after
    the rebuild listed the files for its shadow, between its last catch-up and its install, and after."""
    fill_workspace(workspace, files=60)
    await anyio.to_thread.run_sync(build, workspace, index_path)
    report = tmp_path / "report.json"
    with (tmp_path / "writer.err").open("w+") as err:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(workspace), str(index_path), str(report)], cwd=ROOT,
                                  env=env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)  # fmt: skip
        try:
            await _rebuild_beside(writer, workspace, index_path, report, err)
        finally:
            if writer.poll() is None:
                writer.kill()
            writer.communicate(timeout=TIMEOUT)
    fresh = tmp_path / "fresh.sqlite"
    await anyio.to_thread.run_sync(lambda: build(workspace, fresh, chunking={"tokens": 128, "overlap": 16}))
    assert chunk_rows(index_path) == chunk_rows(fresh)
    assert no_shadows(index_path) == []


async def _rebuild_beside(writer: subprocess.Popen[str], workspace: Path, index_path: Path, report: Path, err: Any) -> None:
    """Rebuild here, telling ``writer`` (WRITER) when to write, then check what both processes see."""
    assert writer.stdin is not None and writer.stdout is not None
    stdin, stdout = writer.stdin, writer.stdout
    lines: dict[str, anyio.Event] = collections.defaultdict(anyio.Event)

    def tell(what: str) -> None:
        stdin.write(f"{what}\n")
        stdin.flush()

    async def read_lines() -> None:
        while line := await anyio.to_thread.run_sync(stdout.readline, abandon_on_cancel=True):
            lines[line.strip()].set()
        lines["exited"].set()

    settings = load_settings(workspace=workspace, index_path=index_path, timezone="UTC",
                             chunking={"tokens": 128, "overlap": 16})  # fmt: skip
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_lines)
            await lines["ready"].wait()
            async with MemoryEngine(settings, background_sync=False) as engine:
                real_write, real_install = engine.index.write, engine.index.install

                async def write(fn: Any, *args: Any, conn: Any = None) -> Any:
                    if conn is not None and fn is engine.index.ops.file_states and not lines["listed"].is_set():
                        lines["listed"].set()  # the shadow's first pass has just listed the files
                        tell("listed")
                        await lines["wrote 0"].wait()
                    return await real_write(fn, *args, conn=conn)

                async def install_once_the_writer_tried(shadow: Any) -> None:
                    tell("caught up")
                    await lines["writing 1"].wait()
                    with anyio.move_on_after(1):  # held off, its write cannot end before the install; were it not, it would
                        await lines["wrote 1"].wait()
                    await real_install(shadow)

                engine.index.write, engine.index.install = write, install_once_the_writer_tried
                await engine.sync()
                tell("installed")
                await lines["exited"].wait()
                writer.wait(timeout=TIMEOUT)
                err.seek(0)
                assert writer.returncode == 0, err.read()
                result = json.loads(report.read_text())
                assert len(result["written"]) == 4
                for rel, word in result["written"]:
                    assert result["found"][word] == [rel], f"{word} lost for the writer process"
                    assert await found(engine, word) == {rel}, f"{word} lost for this process"
                assert result["chunks"] == (await engine.status()).chunks == len(chunk_rows(index_path))


# Kill points ---------------------------------------------------------------------------------------


def test_killpoints_with_a_few_kills() -> None:
    """bench/killpoints.py in small: four ``memdex index`` runs (first index, --force, rebuild, first index
    restarted with new chunking) killed at spread-out points, each restarted and compared with a fresh build."""
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "killpoints.py"), "--runs", "4", "--files", "300"],
                            cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "killpoints: 4 runs, 4 consistent, 0 stray files" in result.stdout, result.stdout
