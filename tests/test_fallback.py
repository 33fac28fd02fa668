"""embedding.fallback: used when the primary provider fails to start or fails while indexing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply
from helpers import free_port, needs_shared
from test_hybrid import MODEL, NOTES

from memdex.memory_core import MemoryEngine, load_settings

pytestmark = needs_shared(MODEL)


@pytest.fixture
def notes(workspace: Path, write: Callable[[str, str], Path]) -> Path:
    for rel, text in NOTES.items():
        write(rel, text)
    return workspace


def _settings(workspace: Path, index: Path, base_url: str) -> object:
    return load_settings(
        workspace=workspace, index_path=index, timezone="UTC",
        embedding={
            "provider": "openai", "fallback": "local",
            "openai": {"base_url": base_url, "api_key": "test-key", "max_retries": 0, "batch_timeout": 5},
            "local": {"model": str(MODEL)},
        },
    )


def _dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there


async def test_a_primary_that_cannot_start_gives_way_to_the_fallback(notes: Path, index_path: Path) -> None:
    """An unreachable OpenAI endpoint: the local fallback runs, and the status says why."""
    async with MemoryEngine(_settings(notes, index_path, _dead_url()), background_sync=False) as engine:
        await engine.sync()
        answer = await engine.search("that database thing we picked", min_score=0.0)
        status = await engine.status()
    assert answer.mode == "hybrid" and answer.provider == "local"
    assert answer.results[0].path == "MEMORY.md"
    assert status.note and status.note.startswith("using local because openai:")


async def test_a_primary_failing_while_indexing_switches_to_the_fallback_and_rebuilds(
    notes: Path, index_path: Path, fake: FakeOpenAI
) -> None:
    """The OpenAI key is refused mid-indexing: chunks stay keyword-searchable, then local vectors arrive."""
    fake.script(
        "/embeddings",
        Reply(200, fake.embeddings_body(["probe"], as_base64=False)),  # start() succeeds
        Reply(401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}),
    )
    async with MemoryEngine(_settings(notes, index_path, fake.url), background_sync=False) as engine:
        await engine.sync()
        first = await engine.search("lentil soup")
        assert first.mode == "keyword" and first.results[0].path == "memory/2026-01-12.md"
        await engine.sync()  # the switch queued a sync; running one now brings the fallback in
        answer = await engine.search("that database thing we picked", min_score=0.0)
        status = await engine.status()
    assert answer.mode == "hybrid" and answer.provider == "local"
    assert answer.results[0].path == "MEMORY.md"
    assert status.files == len(NOTES) and status.error is None
