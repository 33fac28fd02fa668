"""as_memdex_error: real SQLite errors (both drivers) and OS errors become memdex errors with a next step."""

from __future__ import annotations

import errno
import importlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from memdex.memory_core.errors import (
    IndexBusy,
    IndexCorrupt,
    InputError,
    PathError,
    StoreError,
    as_memdex_error,
)
from memdex.memory_core.stores.sqlite import db


def _drivers() -> list[ModuleType]:
    found = [sqlite3]
    try:
        found.append(importlib.import_module("pysqlite3.dbapi2"))
    except ImportError:
        pass
    return found


@pytest.fixture(params=_drivers(), ids=lambda module: module.__name__)
def driver(request: pytest.FixtureRequest) -> ModuleType:
    """Each sqlite3 module importable here: their exception classes are unrelated."""
    return request.param  # type: ignore[no-any-return]


def raised(action: Callable[[], object]) -> BaseException:
    """The exception ``action`` raises."""
    try:
        action()
    except BaseException as exc:  # noqa: BLE001 - the point is to get it
        return exc
    raise AssertionError("no exception was raised")


def make_table(driver: ModuleType, path: Path, rows: int = 1) -> None:
    conn = driver.connect(path)
    conn.execute("CREATE TABLE t(x TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [("x" * 200,)] * rows)
    conn.commit()
    conn.close()


def test_a_locked_index_is_index_busy(tmp_path: Path) -> None:
    """A write while another connection holds BEGIN EXCLUSIVE (busy_timeout 0) says another process is writing."""
    path = tmp_path / "idx.sqlite"
    holder = db.connect(path)
    holder.execute("CREATE TABLE t(x)")
    holder.execute("BEGIN EXCLUSIVE")
    writer = db.connect(path)
    writer.execute("PRAGMA busy_timeout = 0")
    error = as_memdex_error(raised(lambda: writer.execute("INSERT INTO t VALUES (1)")))
    assert isinstance(error, IndexBusy)
    assert "another memdex process is writing the index" in str(error) and "retry" in str(error)


def test_a_locked_database_is_index_busy_with_either_driver(driver: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "idx.sqlite"
    make_table(driver, path)
    holder = driver.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    writer = driver.connect(path, timeout=0)
    assert isinstance(as_memdex_error(raised(lambda: writer.execute("INSERT INTO t VALUES ('y')"))), IndexBusy)


def test_random_bytes_are_index_corrupt(driver: ModuleType, tmp_path: Path) -> None:
    """'file is not a database' names the rebuild from the Markdown."""
    path = tmp_path / "idx.sqlite"
    path.write_bytes(os.urandom(8192))
    error = as_memdex_error(raised(lambda: driver.connect(path).execute("SELECT * FROM sqlite_master").fetchall()))
    assert isinstance(error, IndexCorrupt)
    assert "memdex index --force" in str(error) and "Markdown" in str(error)


def test_a_damaged_page_is_index_corrupt(driver: ModuleType, tmp_path: Path) -> None:
    """'database disk image is malformed': a valid header over garbage pages."""
    path = tmp_path / "idx.sqlite"
    make_table(driver, path, rows=200)
    data = bytearray(path.read_bytes())
    data[4096:] = os.urandom(len(data) - 4096)  # keep page 1 (header and schema), ruin the table's pages
    path.write_bytes(bytes(data))
    error = as_memdex_error(raised(lambda: driver.connect(path).execute("SELECT count(*), max(x) FROM t").fetchall()))
    assert isinstance(error, IndexCorrupt)


def test_a_full_database_is_disk_full(driver: ModuleType, tmp_path: Path) -> None:
    """SQLITE_FULL (here from max_page_count) asks to free space."""
    path = tmp_path / "idx.sqlite"
    make_table(driver, path)
    conn = driver.connect(path)
    conn.execute("PRAGMA max_page_count = 2")
    error = as_memdex_error(raised(lambda: conn.executemany("INSERT INTO t VALUES (?)", [("y" * 500,)] * 100)))
    assert type(error) is StoreError and str(error).startswith("disk full: free space")


def test_writing_a_read_only_database_is_a_store_error(driver: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "idx.sqlite"
    make_table(driver, path)
    conn = driver.connect(path.absolute().as_uri() + "?mode=ro", uri=True)
    error = as_memdex_error(raised(lambda: conn.execute("INSERT INTO t VALUES ('y')")))
    assert type(error) is StoreError and "read-only" in str(error) and "--index" in str(error)


def test_an_index_in_a_missing_folder_cannot_be_opened(driver: ModuleType, tmp_path: Path) -> None:
    error = as_memdex_error(raised(lambda: driver.connect(tmp_path / "missing" / "idx.sqlite")))
    assert type(error) is StoreError and "cannot open the index" in str(error)


def test_a_sqlite_error_memdex_cannot_explain_is_left_alone(driver: ModuleType) -> None:
    """'no such table' is a bug, not something a user can fix: no mapping."""
    conn = driver.connect(":memory:")
    assert as_memdex_error(raised(lambda: conn.execute("SELECT * FROM nowhere"))) is None


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_no_space_left_is_disk_full() -> None:
    def write() -> None:
        with open("/dev/full", "wb", buffering=0) as full:
            full.write(b"x")

    error = as_memdex_error(raised(write))
    assert type(error) is StoreError and "disk full" in str(error) and "free space" in str(error)


def test_a_symlink_refused_by_o_nofollow_is_a_path_error(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text("x")
    (tmp_path / "MEMORY.md").symlink_to(tmp_path / "real.md")
    exc = raised(lambda: os.open(tmp_path / "MEMORY.md", os.O_RDWR | os.O_NOFOLLOW))
    assert isinstance(exc, OSError) and exc.errno == errno.ELOOP
    error = as_memdex_error(exc)
    assert isinstance(error, PathError) and "symlink" in str(error)


def test_missing_paths_name_the_path_and_what_to_check(tmp_path: Path) -> None:
    """A missing memory file is a PathError; a missing index folder is a StoreError."""
    memory = as_memdex_error(raised((tmp_path / "memory" / "2026-01-01.md").read_text))
    index = as_memdex_error(raised(lambda: (tmp_path / "state" / "idx.sqlite").write_bytes(b"")))
    assert isinstance(memory, PathError) and "2026-01-01.md" in str(memory) and "memory_search" in str(memory)
    assert type(index) is StoreError and "idx.sqlite" in str(index) and "--index" in str(index)


def test_a_file_used_as_a_folder_is_explained(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("not a folder")
    error = as_memdex_error(raised(lambda: (tmp_path / "state" / "idx.sqlite").write_bytes(b"")))
    assert type(error) is StoreError and "not a folder" in str(error)


@pytest.mark.parametrize(
    ("code", "words"),
    [(errno.EACCES, "permission denied"), (errno.EPERM, "not permitted"), (errno.EROFS, "read-only")],
)
def test_access_errors_on_a_memory_file_are_path_errors(code: int, words: str) -> None:
    """The OSError Python raises for these (permissions are not enforced for root, so built here)."""
    exc = OSError(code, os.strerror(code), "/ws/memory/2026-01-01.md")
    error = as_memdex_error(exc)
    assert isinstance(error, PathError) and words in str(error) and "2026-01-01.md" in str(error)


def test_unknown_exceptions_are_not_mapped() -> None:
    assert as_memdex_error(ValueError("bug")) is None
    assert as_memdex_error(ConnectionResetError(errno.ECONNRESET, "reset")) is None


def test_memdex_errors_are_returned_as_they_are() -> None:
    original = InputError("query is empty")
    assert as_memdex_error(original) is original


def test_an_exception_group_is_mapped_only_when_all_of_it_is(driver: ModuleType) -> None:
    """Task groups wrap errors: a group of explainable errors maps, one bug in it keeps it a bug."""
    busy = driver.OperationalError("database is locked")  # as a driver without sqlite_errorcode raises it
    mapped = as_memdex_error(ExceptionGroup("sync", [busy]))
    assert isinstance(mapped, IndexBusy)
    assert as_memdex_error(ExceptionGroup("sync", [busy, KeyError("bug")])) is None
