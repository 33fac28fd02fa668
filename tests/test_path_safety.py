"""Reads, stats and appends never follow a symlink swapped into a memory path, however late it appears."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memdex.memory_core.errors import PathError
from memdex.memory_core.index import indexer
from memdex.memory_core.workspace import memory_file
from memdex.memory_core.workspace.appender import append_entry, format_entry
from memdex.memory_core.workspace.files import MemoryFile, Workspace
from memdex.memory_core.workspace.reader import read_excerpt

Write = Callable[[str, str], Path]

INSIDE = "inside the workspace\n"
OUTSIDE = "OUTSIDE the workspace\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the workspace shaped like memory/, holding a same-named file."""
    folder = tmp_path / "outside"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "note.md").write_text(OUTSIDE)
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def prepare_one(ws: Workspace, rel: str) -> tuple[list[indexer.Prepared], list[str]]:
    """The watcher's path: an answer path to a MemoryFile to prepared chunks."""
    return indexer.prepare([ws.file_for(rel)], {}, tokens=400, overlap=0)


# A symlink in place before the use ----------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["fd-walk", "path-fallback"])
def walk_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both ways of opening: descriptors (Linux, macOS) and checked paths (platforms without dir_fd)."""
    monkeypatch.setattr(memory_file, "FD_WALK", request.param and memory_file.FD_WALK)
    return request.param


@pytest.mark.parametrize("swapped", ["memory", "memory/sub"])
def test_a_folder_swapped_for_a_symlink_after_resolve_is_refused_by_read_append_and_prepare(
    workspace: Path, write: Write, outside: Path, walk_mode: bool, swapped: str
) -> None:
    rel = "memory/sub/note.md"
    write(rel, INSIDE)
    ws = Workspace(workspace)
    resolved = ws.resolve(rel)
    for_append = ws.resolve(rel, must_exist=False)
    from_watcher = ws.file_for(ws.classify(workspace / rel) or "")
    target = outside if swapped == "memory" else outside / "sub"
    (workspace / swapped).rename(workspace.parent / "moved-away")
    (workspace / swapped).symlink_to(target, target_is_directory=True)
    before = snapshot(outside)

    with pytest.raises(PathError, match="symlink"):
        read_excerpt(resolved)
    with pytest.raises(PathError, match="symlink"):
        append_entry(for_append, format_entry("a new note", None))
    with pytest.raises(PathError, match="symlink"):
        ws.resolve(rel, must_exist=False)
    assert indexer.prepare([from_watcher], {}, tokens=400, overlap=0) == ([], [rel])
    assert snapshot(outside) == before


def test_a_file_swapped_for_a_symlink_after_resolve_is_refused_by_read_and_prepare(
    workspace: Path, write: Write, outside: Path, walk_mode: bool
) -> None:
    rel = "memory/sub/note.md"
    write(rel, INSIDE)
    ws = Workspace(workspace)
    resolved = ws.resolve(rel)
    (workspace / rel).unlink()
    (workspace / rel).symlink_to(outside / "sub" / "note.md")
    with pytest.raises(PathError, match="symlink"):
        read_excerpt(resolved)
    assert prepare_one(ws, rel) == ([], [rel])


def test_append_creates_missing_folders_one_by_one(workspace: Path, walk_mode: bool) -> None:
    file = Workspace(workspace).resolve("memory/a/b/c.md", must_exist=False)
    receipt = append_entry(file, format_entry("deep note", None))
    assert (workspace / "memory" / "a" / "b" / "c.md").read_text() == "deep note\n"
    assert (receipt.start_line, receipt.created) == (1, True)


def test_a_memory_file_made_without_a_base_opens_from_its_own_folder(workspace: Path, write: Write) -> None:
    path = write("memory/a.md", INSIDE)
    file = MemoryFile("memory/a.md", path)
    assert read_excerpt(file).text == INSIDE.strip()
    assert append_entry(file, format_entry("more", None)).start_line == 3


def test_a_fifo_named_like_a_memory_file_is_skipped_without_blocking(workspace: Path) -> None:
    rel = "memory/pipe.md"
    fifo = workspace / rel
    os.mkfifo(fifo)
    ws = Workspace(workspace)
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(prepare_one(ws, rel)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # unblock the reader, so the thread does not outlive the test
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert result == [([], [rel])]
    with pytest.raises(PathError, match="not a regular file"):
        read_excerpt(ws.file_for(rel))


# A symlink swapped in and out while reads and appends run ------------------------------------------

# Swaps <folder>/sub and <folder>/sub.swap atomically (a real folder and a symlink to outside/sub), as
# fast as it can, until the stop file appears; it stops on an even count, leaving the real folder at sub.
FLIPPER = r"""
import ctypes, os, sys, time
folder, stop = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
if sys.platform == "darwin":
    def swap(): return libc.renamex_np(b"sub", b"sub.swap", 2)  # RENAME_SWAP
else:
    def swap(): return libc.renameat2(-100, b"sub", -100, b"sub.swap", 2)  # AT_FDCWD, RENAME_EXCHANGE
os.chdir(folder)
deadline, count = time.monotonic() + 60, 0
while not os.path.exists(stop) and time.monotonic() < deadline:
    if swap() != 0:
        raise OSError(ctypes.get_errno(), "atomic swap failed")
    count += 1
if count % 2:
    swap()
print(count)
"""


def atomic_swap_available() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return hasattr(libc, "renamex_np" if sys.platform == "darwin" else "renameat2")


@pytest.fixture
def flipping(workspace: Path, write: Write, outside: Path, tmp_path: Path) -> Iterator[Callable[[], None]]:
    """memory/sub flipping between the real folder and a symlink to outside/sub, in another process.

    Yields the function that stops it (the real folder back at memory/sub); teardown calls it too.
    """
    if not atomic_swap_available():
        pytest.skip("no atomic rename-exchange (renameat2 / renamex_np) in this C library")
    write("memory/sub/note.md", INSIDE)
    (workspace / "memory" / "sub.swap").symlink_to(outside / "sub", target_is_directory=True)
    stop_file = tmp_path / "stop"
    flipper = subprocess.Popen(
        [sys.executable, "-c", FLIPPER, str(workspace / "memory"), str(stop_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )

    def stop() -> None:
        if flipper.returncode is not None:
            return
        stop_file.touch()
        out, err = flipper.communicate(timeout=30)
        assert flipper.returncode == 0, err
        assert int(out) > 100, "the flipper hardly ran, so the race was not exercised"
        assert (workspace / "memory" / "sub").is_dir() and not (workspace / "memory" / "sub").is_symlink()

    time.sleep(0.05)  # let it get going
    try:
        yield stop
    finally:
        stop()


ROUNDS = 2000
TIME_LIMIT = 8.0


def rounds(done: Callable[[], bool] = lambda: True) -> Iterator[int]:
    """ROUNDS rounds, and more until ``done()`` (both sides of the race seen: on a loaded machine an append can
    lose every one of its rounds to the flipper), within TIME_LIMIT seconds."""
    deadline = time.monotonic() + TIME_LIMIT
    i = 0
    while time.monotonic() <= deadline and (i < ROUNDS or not done()):
        yield i
        i += 1


def test_reads_racing_a_symlink_swap_never_return_outside_text(workspace: Path, flipping: Callable[[], None]) -> None:
    ws = Workspace(workspace)
    texts: list[str] = []
    refused: list[PathError] = []
    for _ in rounds(lambda: bool(texts and refused)):
        try:
            texts.append(read_excerpt(ws.resolve("memory/sub/note.md")).text)
        except PathError as exc:
            refused.append(exc)
    assert set(texts) <= {INSIDE.strip()}
    assert texts and refused  # both sides of the race happened


def test_prepares_racing_a_symlink_swap_never_index_outside_text(
    workspace: Path, flipping: Callable[[], None]
) -> None:
    ws = Workspace(workspace)
    indexed: list[str] = []
    for _ in rounds(lambda: bool(indexed)):
        changes, _vanished = prepare_one(ws, "memory/sub/note.md")
        indexed.extend(chunk.text for change in changes for chunk in change.chunks or ())
    assert indexed and set(indexed) == {INSIDE.strip()}


def test_appends_racing_a_symlink_swap_never_write_outside(
    workspace: Path, outside: Path, flipping: Callable[[], None]
) -> None:
    before = snapshot(outside)
    ws = Workspace(workspace)
    written: list[str] = []
    for i in rounds(lambda: bool(written)):
        entry = f"note {i:05d}"
        try:
            append_entry(ws.resolve("memory/sub/note.md", must_exist=False), format_entry(entry, None))
        except PathError:
            continue
        written.append(entry)
    flipping()
    assert snapshot(outside) == before
    text = (workspace / "memory" / "sub" / "note.md").read_text()
    assert written and all(text.count(entry) == 1 for entry in written)
