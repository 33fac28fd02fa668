"""Shared fixtures: an isolated environment, a workspace folder and a MemoryEngine factory."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from pg import PgServer

from memdex.memory_core import MemoryEngine, load_settings


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """In CI (``CI`` set), a test skipped for want of ../shared fails: CI always has ../shared beside it,
    so such a skip means a broken checkout, not an optional extra."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") and "../shared" in str(report.longrepr):
        report.outcome = "failed"
        report.longrepr = f"skipped for want of ../shared, which CI must have: {report.longrepr}"


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No MEMDEX_* variable, user config file or user state folder of the machine leaks into a test."""
    for key in list(os.environ):
        if key.startswith("MEMDEX_"):
            monkeypatch.delenv(key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no test may reach the network
    # Keyword-only unless a test chooses a provider: auto would otherwise try the default hf: model.
    monkeypatch.setenv("MEMDEX_EMBEDDING__PROVIDER", "none")
    xdg = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(xdg / "state"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace: ``<tmp>/ws`` with an empty ``memory/`` folder."""
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    return root.resolve()


@pytest.fixture
def write(workspace: Path) -> Callable[[str, str], Path]:
    """Write a UTF-8 file at a workspace-relative path, creating folders; returns its absolute path."""

    def write(rel: str, text: str) -> Path:
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        return path

    return write


@pytest.fixture
def sessions_dir(tmp_path: Path) -> Path:
    """A transcripts folder outside the workspace, as an agent runtime would keep it."""
    folder = tmp_path / "agent" / "sessions"
    folder.mkdir(parents=True)
    return folder.resolve()


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    return tmp_path / "idx.sqlite"


STORES = ("sqlite", "postgres")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked ``both_stores`` run once per store: their engines use a SQLite file, then PostgreSQL
    (a test of SQLite's own parts in such a module opts out with ``sqlite_only``)."""
    marked = metafunc.definition.get_closest_marker("both_stores")
    if marked and not metafunc.definition.get_closest_marker("sqlite_only") and "store_settings" in metafunc.fixturenames:
        metafunc.parametrize("store_settings", STORES, indirect=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One real PostgreSQL 16 + pgvector for the session (tests/pg.py)."""
    server = PgServer()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh, empty database of the session's PostgreSQL, dropped after the test."""
    with pg_server.database() as url:
        yield url


@pytest.fixture
def store_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The ``store`` settings of engines made by ``make_engine``: SQLite unless parametrised (``both_stores``)."""
    backend = getattr(request, "param", "sqlite")
    if backend == "sqlite":
        return {"backend": "sqlite"}
    return {"backend": "postgres", "postgres": {"url": request.getfixturevalue("pg_url")}}


@pytest.fixture
def make_engine(workspace: Path, index_path: Path, store_settings: dict[str, Any]) -> Callable[..., MemoryEngine]:
    """Build a MemoryEngine over ``workspace`` (no background sync); keyword overrides go to load_settings,
    ``provider_factory`` and ``clock`` to the engine. The store is ``store_settings``'."""

    def make(*, background_sync: bool = False, provider_factory: Any = None, clock: Any = None, **overrides: Any) -> MemoryEngine:
        overrides.setdefault("workspace", workspace)
        overrides.setdefault("index_path", index_path)
        overrides.setdefault("store", store_settings)
        overrides.setdefault("timezone", "UTC")
        seams = {k: v for k, v in {"provider_factory": provider_factory, "clock": clock}.items() if v is not None}
        return MemoryEngine(load_settings(**overrides), background_sync=background_sync, **seams)

    return make


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """A scripted OpenAI-compatible server on a loopback port (tests/fake_openai.py)."""
    server = FakeOpenAI()
    yield server
    server.close()
