"""The optional rerank stage, over real HTTP on 127.0.0.1 against a fake ``/rerank`` endpoint.

The fake (a FakeOpenAI that also answers ``/rerank``) scores a document by how many of the query's
words it contains and lists the results best first, as real rerankers do; scripted replies make it
slow, fail or answer nonsense.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, Seen
from helpers import free_port

from memdex.memory_core import ConfigError, load_settings
from memdex.memory_core.config_sections import RerankSettings
from memdex.memory_core.errors import RerankError
from memdex.memory_core.limits import MAX_CANDIDATES
from memdex.memory_core.search.rerank import Reranker, open_reranker, rerank_order

MakeReranker = Callable[..., Awaitable[Reranker]]
FUSED = "fused order"


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class FakeReranker(FakeOpenAI):
    """FakeOpenAI plus ``POST /rerank``; ``shape`` names the list the answer uses ("results" or "data")."""

    shape = "results"

    def _default(self, seen: Seen) -> Reply:
        if seen.method != "POST" or seen.path != "/rerank":
            return super()._default(seen)
        request = seen.json()
        query = _words(request["query"])
        scored = [(float(len(query & _words(doc))), i) for i, doc in enumerate(request["documents"])]
        ranked = sorted(scored, key=lambda pair: -pair[0])[: request["top_n"]]
        return Reply(body={self.shape: [{"index": i, "relevance_score": score} for score, i in ranked]})


@pytest.fixture
def server() -> Iterator[FakeReranker]:
    fake = FakeReranker()
    yield fake
    fake.close()


@pytest.fixture
async def make_reranker(server: FakeReranker) -> AsyncIterator[MakeReranker]:
    """Build a reranker on the fake from RerankSettings keywords; closed after the test."""
    made: list[Reranker] = []

    async def make(**settings: Any) -> Reranker:
        settings = {"provider": "http", "base_url": server.url, **settings}
        reranker = open_reranker(RerankSettings(**settings))
        assert reranker is not None
        made.append(reranker)
        return reranker

    yield make
    for reranker in made:
        await reranker.aclose()


DOCS = ["the cat sat", "cat food for a hungry cat at night", "dogs bark", "hungry at night"]
QUERY = "hungry cat at night"


async def test_scores_are_per_document_in_input_order(server: FakeReranker, make_reranker: MakeReranker) -> None:
    """The fake lists results best first; scores come back in the documents' order all the same."""
    reranker = await make_reranker(model="bge-reranker-v2-m3")
    assert await reranker.scores(QUERY, DOCS) == [1.0, 4.0, 0.0, 3.0]
    [seen] = server.requests
    assert seen.path == "/rerank"
    assert seen.json() == {"model": "bge-reranker-v2-m3", "query": QUERY, "documents": DOCS, "top_n": 4}


@pytest.mark.parametrize("shape", ["results", "data"])
async def test_rerank_order_puts_the_best_first(server: FakeReranker, make_reranker: MakeReranker, shape: str) -> None:
    """Both answer shapes (llama.cpp/Cohere/Jina ``results``, Voyage ``data``) give the same order."""
    server.shape = shape
    reranker = await make_reranker()
    assert await rerank_order(reranker, QUERY, DOCS, timeout=5) == ([1, 3, 0, 2], None)


async def test_ties_keep_the_fused_order(make_reranker: MakeReranker) -> None:
    reranker = await make_reranker()
    order, note = await rerank_order(reranker, "cat", ["dogs", "a cat", "dogs bark", "the cat"], timeout=5)
    assert (order, note) == ([1, 3, 0, 2], None)


async def test_no_documents_need_no_request(server: FakeReranker, make_reranker: MakeReranker) -> None:
    reranker = await make_reranker()
    assert await rerank_order(reranker, QUERY, [], timeout=5) == ([], None)
    assert server.requests == []


async def test_api_key_from_the_environment_is_sent_as_a_bearer_token(
    server: FakeReranker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDEX_RERANK__API_KEY", "rr-secret-123")
    monkeypatch.setenv("MEMDEX_RERANK__PROVIDER", "http")
    monkeypatch.setenv("MEMDEX_RERANK__BASE_URL", server.url)
    settings = load_settings().rerank
    assert "rr-secret-123" not in repr(settings)
    reranker = open_reranker(settings)
    assert reranker is not None
    try:
        await reranker.scores(QUERY, DOCS)
    finally:
        await reranker.aclose()
    assert server.requests[-1].headers["authorization"] == "Bearer rr-secret-123"


async def test_no_api_key_sends_no_authorization(server: FakeReranker, make_reranker: MakeReranker) -> None:
    reranker = await make_reranker()
    await reranker.scores(QUERY, DOCS)
    assert "authorization" not in server.requests[-1].headers


async def test_a_slow_reranker_falls_back_to_the_fused_order(server: FakeReranker, make_reranker: MakeReranker) -> None:
    server.script("/rerank", Reply(delay=5, body={"results": []}))
    reranker = await make_reranker(timeout=0.3)
    started = time.monotonic()
    order, note = await rerank_order(reranker, QUERY, DOCS, timeout=reranker.timeout)
    assert time.monotonic() - started < 2
    assert (order, note) == (None, "the reranker took over 0.3s; results are in fused order")
    assert await rerank_order(reranker, QUERY, DOCS, timeout=5) == ([1, 3, 0, 2], None)  # the client still works


async def test_scores_alone_time_out_with_a_rerank_error(server: FakeReranker, make_reranker: MakeReranker) -> None:
    """Called without rerank_order's deadline, the client's own timeout still ends the wait."""
    server.script("/rerank", Reply(delay=5, body={"results": []}))
    reranker = await make_reranker(timeout=0.3)
    with pytest.raises(RerankError, match=r"no answer from the reranker at .* within 0\.3s"):
        await reranker.scores(QUERY, DOCS)


async def test_a_server_error_falls_back_with_a_note(server: FakeReranker, make_reranker: MakeReranker) -> None:
    server.script("/rerank", Reply(500, {"error": {"message": "model not loaded"}}))
    reranker = await make_reranker()
    order, note = await rerank_order(reranker, QUERY, DOCS, timeout=5)
    assert order is None and note is not None
    assert note.startswith("the reranker failed (HTTP 500 from the reranker at http://127.0.0.1:")
    assert "model not loaded" in note and note.endswith("); results are in fused order")
    assert "\n" not in note


async def test_an_unreachable_reranker_is_a_rerank_error() -> None:
    reranker = Reranker(RerankSettings(provider="http", base_url=f"http://127.0.0.1:{free_port()}/v1"))
    try:
        with pytest.raises(RerankError, match="cannot reach the reranker"):
            await reranker.scores(QUERY, DOCS)
        _, note = await rerank_order(reranker, QUERY, DOCS, timeout=5)
        assert note is not None and note.startswith("the reranker failed (cannot reach")
    finally:
        await reranker.aclose()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>not json</html>", "malformed answer"),
        ({"object": "list"}, "no 'results' or 'data' list"),
        ({"results": [{"index": 0}]}, "bad relevance_score"),
        ({"results": [{"index": 0, "relevance_score": True}]}, "bad relevance_score"),
        (b'{"results": [{"index": 0, "relevance_score": NaN}]}', "bad relevance_score"),
        ({"results": [{"index": 9, "relevance_score": 1.0}]}, "bad or repeated index 9"),
        ({"results": [{"index": "0", "relevance_score": 1.0}]}, "bad or repeated index '0'"),
        ({"results": [{"index": 0, "relevance_score": 1.0}] * 4}, "bad or repeated index 0"),
        ({"results": [{"index": i, "relevance_score": 1.0} for i in range(3)]}, "scored 3 of 4 documents"),
    ],
)
async def test_a_malformed_answer_falls_back_with_a_note(
    server: FakeReranker, make_reranker: MakeReranker, body: Any, problem: str
) -> None:
    server.script("/rerank", Reply(body=body), Reply(body=body))
    reranker = await make_reranker()
    with pytest.raises(RerankError, match=re.escape(problem)):
        await reranker.scores(QUERY, DOCS)
    order, note = await rerank_order(reranker, QUERY, DOCS, timeout=5)
    assert order is None and note is not None
    assert note.startswith("the reranker failed (malformed answer") and problem in note and FUSED in note


def test_rerank_is_off_by_default() -> None:
    settings = load_settings().rerank
    assert (settings.provider, settings.base_url, settings.api_key, settings.model) == ("none", None, None, "")
    assert (settings.candidates, settings.timeout) == (20, 2.0)
    assert open_reranker(settings) is None


@pytest.mark.parametrize(
    ("rerank", "fragment"),
    [
        ({"provider": "http"}, "needs rerank.base_url"),
        ({"provider": "http", "base_url": "  "}, "needs rerank.base_url"),
        ({"provider": "cohere", "base_url": "http://x"}, "rerank.provider"),
        ({"candidates": 0}, "rerank.candidates"),
        ({"candidates": MAX_CANDIDATES + 1}, "rerank.candidates"),
        ({"timeout": 0}, "rerank.timeout"),
        ({"top_n": 5}, "rerank.top_n"),
    ],
)
def test_bad_rerank_settings_are_clear_errors(rerank: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        load_settings(rerank=rerank)
