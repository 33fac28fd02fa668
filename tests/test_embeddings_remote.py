"""The OpenAI-compatible embedding provider, over real HTTP on 127.0.0.1.

Two servers: llama-cpp-python's own OpenAI-compatible server with a small real model, and a scripted
fake (tests/fake_openai.py) for retries, errors, batching and the Batch API.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, fake_vector
from helpers import TEST_MODEL, free_port, llama_server, shared_reason

from memdex.memory_core.config_sections import OpenAIEmbeddingSettings
from memdex.memory_core.embeddings.base import l2_normalize
from memdex.memory_core.embeddings.remote import OpenAIProvider, retry_after_seconds
from memdex.memory_core.errors import EmbeddingAuthError, EmbeddingError, EmbeddingQuotaError, EmbeddingTimeout

MakeProvider = Callable[..., Awaitable[OpenAIProvider]]
MODEL_FILE = TEST_MODEL
SECRET_KEY = "sk-test-secret-0123456789"


def expected(text: str, dims: int = 8) -> list[float]:
    """What the provider should return for ``text`` from the fake server."""
    return l2_normalize(fake_vector(text, dims))


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def listing(*embeddings: Any, indexes: list[int] | None = None) -> dict[str, Any]:
    """An /embeddings response body holding ``embeddings``, indexed 0, 1, ... unless ``indexes`` says."""
    numbers = indexes if indexes is not None else range(len(embeddings))
    return {"data": [{"index": i, "embedding": e} for i, e in zip(numbers, embeddings, strict=True)]}


@pytest.fixture
async def make_provider(fake: FakeOpenAI) -> AsyncIterator[MakeProvider]:
    """Build a provider on the fake with tiny delays; started (and the request log cleared) unless start=False."""
    providers: list[OpenAIProvider] = []

    async def make(
        *, start: bool = True, query_prefix: str = "", document_prefix: str = "", **settings: Any
    ) -> OpenAIProvider:
        settings.setdefault("base_url", fake.url)
        settings.setdefault("api_key", SECRET_KEY)
        provider = OpenAIProvider(OpenAIEmbeddingSettings(**settings), query_prefix, document_prefix)
        provider.retry_base_delay = 0.01
        provider.retry_max_delay = 0.05
        provider.batch_poll_interval = 0.01
        providers.append(provider)
        if start:
            await provider.start()
            fake.requests.clear()
        return provider

    yield make
    for provider in providers:
        await provider.aclose()


# Plain requests ---------------------------------------------------------------------------------


async def test_start_probes_once_learns_dims_and_sends_the_key_headers_and_model(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """start() makes exactly one request, is idempotent, and sets dims from the probe."""
    provider = await make_provider(start=False, headers={"X-Tenant": "t1"}, model="embed-small")
    assert provider.dims == 0
    await provider.start()
    await provider.start()
    assert provider.dims == 8
    [probe] = fake.requests
    assert probe.path == "/embeddings"
    assert probe.headers["authorization"] == f"Bearer {SECRET_KEY}"
    assert probe.headers["x-tenant"] == "t1"
    assert probe.json()["model"] == "embed-small"
    assert probe.json()["encoding_format"] == "base64"
    assert "dimensions" not in probe.json()


async def test_vectors_are_normalised_and_in_input_order_though_the_server_lists_them_reversed(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """embed_batch decodes base64, sorts by index and L2-normalises."""
    provider = await make_provider()
    vectors = await provider.embed_batch(["alpha", "beta", "gamma"])
    assert vectors == [expected("alpha"), expected("beta"), expected("gamma")]
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0) for v in vectors)
    assert fake.inputs() == [["alpha", "beta", "gamma"]]
    assert await provider.embed_batch([]) == []
    assert len(fake.requests) == 1


async def test_the_key_comes_from_openai_api_key_when_the_settings_have_none(
    fake: FakeOpenAI, make_provider: MakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without [embedding.openai] api_key the provider uses $OPENAI_API_KEY."""
    monkeypatch.setenv("OPENAI_API_KEY", "env-key-123")
    provider = await make_provider(start=False, api_key=None)
    await provider.start()
    assert fake.requests[0].headers["authorization"] == "Bearer env-key-123"


def test_without_any_key_construction_fails_saying_how_to_set_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """No api_key and no OPENAI_API_KEY is an EmbeddingAuthError naming both places."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EmbeddingAuthError) as caught:
        OpenAIProvider(OpenAIEmbeddingSettings())
    assert "[embedding.openai]" in str(caught.value)
    assert "OPENAI_API_KEY" in str(caught.value)


def test_the_fingerprint_tracks_what_shapes_vectors_but_not_secrets() -> None:
    """Model, URL, dimensions, plain headers and prefixes change it; keys and auth headers do not."""

    def fp(query_prefix: str = "", **settings: Any) -> str:
        settings.setdefault("api_key", "key-one")
        return OpenAIProvider(OpenAIEmbeddingSettings(**settings), query_prefix).fingerprint

    base = fp()
    assert fp(api_key="key-two") == base
    assert fp(headers={"Authorization": "Bearer a", "api-key": "b"}) == base
    assert fp(base_url="https://api.openai.com/v1/") == base
    changed = [
        fp(model="text-embedding-3-large"),
        fp(base_url="http://127.0.0.1:9/v1"),
        fp(dimensions=256),
        fp(headers={"X-Tenant": "t1"}),
        fp(query_prefix="query: "),
    ]
    assert len({base, *changed}) == 6


async def test_dimensions_are_requested_and_a_server_ignoring_them_fails_start(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """dimensions is sent on every request; a vector of another length makes start() fail clearly."""
    provider = await make_provider(start=False, dimensions=8)
    await provider.start()
    assert fake.requests[0].json()["dimensions"] == 8
    wrong = await make_provider(start=False, dimensions=4)
    with pytest.raises(EmbeddingError, match=r"8-dimension vectors .* dimensions is 4"):
        await wrong.start()


async def test_prefixes_are_applied_and_an_empty_text_is_sent_as_a_space(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """Queries get query_prefix, documents document_prefix; an empty text never reaches the API empty."""
    provider = await make_provider(query_prefix="query: ", document_prefix="passage: ")
    plain = await make_provider()
    assert await provider.embed_query("cats") == expected("query: cats")
    assert await provider.embed_batch(["dogs"]) == [expected("passage: dogs")]
    assert await plain.embed_batch(["", "x"]) == [expected(" "), expected("x")]
    assert fake.inputs() == [["query: cats"], ["passage: dogs"], [" ", "x"]]


@pytest.mark.parametrize(
    ("texts", "limits", "sizes"),
    [
        ([f"note {i}" for i in range(10)], {"max_batch_inputs": 4}, [4, 4, 2]),
        ([f"{i:03d}" + "x" * 397 for i in range(12)], {"max_batch_tokens": 512}, [5, 5, 2]),  # 100 tokens each
    ],
    ids=["by-inputs", "by-tokens"],
)
async def test_a_batch_is_split_into_requests_within_the_input_and_token_limits(
    fake: FakeOpenAI, make_provider: MakeProvider, texts: list[str], limits: dict[str, int], sizes: list[int]
) -> None:
    """Requests hold at most max_batch_inputs texts and max_batch_tokens estimated tokens."""
    provider = await make_provider(**limits)
    assert await provider.embed_batch(texts) == [expected(t) for t in texts]
    assert [len(inputs) for inputs in fake.inputs()] == sizes
    assert [t for inputs in fake.inputs() for t in inputs] == texts


async def test_an_overlong_text_is_cut_to_max_input_tokens(fake: FakeOpenAI, make_provider: MakeProvider) -> None:
    """A text over max_input_tokens (4 characters, or 1 CJK character, per token) is cut, never sent whole."""
    provider = await make_provider()
    provider.max_input_tokens = 100
    await provider.embed_batch(["a" + "é" * 500, "中" * 300])
    ((latin, cjk),) = fake.inputs()
    assert latin == ("a" + "é" * 500)[: len(latin)] and 380 <= len(latin) <= 400
    assert cjk == "中" * len(cjk) and 90 <= len(cjk) <= 100


# Retries and errors -----------------------------------------------------------------------------


async def test_a_429_with_retry_after_is_waited_out_then_retried_once(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """Retry-After: 1 makes the provider wait about a second (not its tiny backoff) before one retry."""
    provider = await make_provider()
    rate_limited = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    fake.script("/embeddings", Reply(429, rate_limited, headers={"Retry-After": "1"}))
    started = time.monotonic()
    assert await provider.embed_query("hello") == expected("hello")
    assert time.monotonic() - started >= 0.95
    assert fake.paths() == ["/embeddings", "/embeddings"]


async def test_server_errors_are_retried_until_success(fake: FakeOpenAI, make_provider: MakeProvider) -> None:
    """500, 503 then success: three requests and the right vector."""
    provider = await make_provider(max_retries=2)
    fake.script("/embeddings", Reply(500, {"error": {"message": "boom"}}), Reply(503, b"upstream down"))
    assert await provider.embed_batch(["hello"]) == [expected("hello")]
    assert len(fake.requests) == 3


async def test_server_errors_beyond_max_retries_raise_a_retryable_error(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """max_retries=2 means three attempts, then an EmbeddingError that may be retried later."""
    provider = await make_provider(max_retries=2)
    fake.script("/embeddings", *[Reply(502, {"error": {"message": "bad gateway"}})] * 4)
    with pytest.raises(EmbeddingError) as caught:
        await provider.embed_batch(["hello"])
    assert type(caught.value) is EmbeddingError
    assert caught.value.retryable is True
    assert "answered an embeddings request with 502 (bad gateway); 3 attempts failed" in str(caught.value)
    assert len(fake.requests) == 3


async def test_a_hanging_server_raises_embedding_timeout_after_the_retries(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """With query_timeout=0.2 and one retry, two stalled requests end in EmbeddingTimeout well under a second."""
    provider = await make_provider(query_timeout=0.2, max_retries=1)
    fake.script("/embeddings", Reply(delay=30), Reply(delay=30))
    started = time.monotonic()
    with pytest.raises(EmbeddingTimeout) as caught:
        await provider.embed_query("hello")
    assert time.monotonic() - started < 2
    assert caught.value.retryable is True
    assert "within 0.2s; 2 attempts failed" in str(caught.value)
    assert "query_timeout" in str(caught.value)
    assert len(fake.requests) == 2


async def test_an_unreachable_server_raises_a_retryable_error_naming_base_url(make_provider: MakeProvider) -> None:
    """A closed port is a connection error: retried, then reported with the URL and what to check."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    provider = await make_provider(start=False, base_url=url, max_retries=1)
    with pytest.raises(EmbeddingError) as caught:
        await provider.start()
    assert type(caught.value) is EmbeddingError
    assert caught.value.retryable is True
    assert url in str(caught.value)
    assert "could not be reached" in str(caught.value)
    assert "2 attempts failed" in str(caught.value)


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_fails_at_once_without_retrying_or_leaking_the_key(
    fake: FakeOpenAI, make_provider: MakeProvider, status: int
) -> None:
    """401/403 raise EmbeddingAuthError after exactly one request; the message never holds the key."""
    provider = await make_provider(start=False, max_retries=3)
    fake.script("/embeddings", Reply(status, {"error": {"message": f"Incorrect API key provided: {SECRET_KEY}"}}))
    with pytest.raises(EmbeddingAuthError) as caught:
        await provider.start()
    message = str(caught.value)
    assert f"({status}" in message
    assert "OPENAI_API_KEY" in message
    assert SECRET_KEY not in message
    assert caught.value.retryable is False
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, {"message": "You exceeded your current quota.", "code": "insufficient_quota"}),
        (400, {"message": "No credit left.", "type": "credit_balance_exhausted"}),
        (429, {"message": "Please check your plan and billing details."}),
        (402, {"message": "Payment required."}),
    ],
    ids=["insufficient_quota", "credit_balance_exhausted", "billing-message", "402"],
)
async def test_an_exhausted_quota_fails_at_once_without_retrying(
    fake: FakeOpenAI, make_provider: MakeProvider, status: int, error: dict[str, str]
) -> None:
    """Quota and credit errors raise EmbeddingQuotaError after exactly one request."""
    provider = await make_provider(max_retries=3)
    fake.script("/embeddings", Reply(status, {"error": error}, headers={"Retry-After": "1"}))
    with pytest.raises(EmbeddingQuotaError) as caught:
        await provider.embed_batch(["hello"])
    assert caught.value.retryable is False
    assert f"({status}: {error['message']})" in str(caught.value)
    assert len(fake.requests) == 1


async def test_another_client_error_fails_at_once_with_the_servers_message(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """A 400 (say, an unknown model) is a plain non-retryable EmbeddingError after one request."""
    provider = await make_provider(max_retries=3)
    fake.script("/embeddings", Reply(400, {"error": {"message": "The model `nope` does not exist", "code": None}}))
    with pytest.raises(EmbeddingError) as caught:
        await provider.embed_batch(["hello"])
    assert type(caught.value) is EmbeddingError
    assert caught.value.retryable is False
    assert "rejected an embeddings request (400: The model `nope` does not exist)" in str(caught.value)
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b'{"data": [', "the body is not JSON"),
        ({"object": "list"}, "no 'data' list"),
        (listing([1.0, 2.0]), "1 vectors for 2 inputs"),
        (listing(["a", "b"], [1.0, 2.0]), "an embedding that is not a list of numbers"),
        (listing("!!not base64", "AACAPw=="), "an embedding string that is not base64"),
        (listing([1.0] * 8, [1.0] * 7), "vector lengths [7, 8]"),
        (listing([1.0] * 8, [1.0] * 8, indexes=[0, 0]), "indexes [0, 0]"),
    ],
    ids=["not-json", "no-data", "wrong-count", "non-numeric", "bad-base64", "ragged", "duplicate-index"],
)
async def test_a_malformed_response_fails_at_once_and_is_not_retryable(
    fake: FakeOpenAI, make_provider: MakeProvider, body: Any, detail: str
) -> None:
    """Broken bodies raise a non-retryable EmbeddingError that says what was wrong, after one request."""
    provider = await make_provider(max_retries=3)
    fake.script("/embeddings", Reply(200, body))
    with pytest.raises(EmbeddingError) as caught:
        await provider.embed_batch(["one", "two"])
    assert type(caught.value) is EmbeddingError
    assert caught.value.retryable is False
    assert f"malformed embeddings response ({detail}" in str(caught.value)
    assert len(fake.requests) == 1


def test_retry_after_headers_are_read_as_ms_seconds_or_a_date_and_capped() -> None:
    """retry-after-ms wins, then seconds or an HTTP date; junk is ignored and long waits are capped."""
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}, 60) == 0.25
    assert retry_after_seconds({"retry-after": "2"}, 60) == 2.0
    assert retry_after_seconds({"retry-after": "3600"}, 60) == 60
    assert retry_after_seconds({"retry-after": "-5"}, 60) == 0.0
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 27 <= (retry_after_seconds({"retry-after": soon}, 60) or 0) <= 30
    assert retry_after_seconds({"retry-after": "soon-ish"}, 60) is None
    assert retry_after_seconds({}, 60) is None


def test_backoff_doubles_from_half_a_second_caps_at_30s_and_adds_up_to_a_quarter_of_jitter() -> None:
    """Default delays: 0.5, 1, 2 ... 30 s, each times 1.00-1.25."""
    provider = OpenAIProvider(OpenAIEmbeddingSettings(api_key="key"))
    for attempt, base in [(1, 0.5), (2, 1.0), (3, 2.0), (6, 16.0), (7, 30.0), (10, 30.0)]:
        delays = [provider.retry_delay(attempt) for _ in range(50)]
        assert all(base <= delay <= base * 1.25 for delay in delays)
        assert max(delays) > base * 1.05  # the jitter is really there


# Batch API --------------------------------------------------------------------------------------


async def test_the_batch_api_embeds_a_large_batch_through_an_uploaded_job(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """40 texts with max_batch_inputs=16: one JSONL of 3 requests, a job polled to completion, results in order."""
    provider = await make_provider(batch_api=True, max_batch_inputs=16)
    texts = [f"memory {i}" for i in range(40)]
    assert await provider.embed_batch(texts, bulk=True) == [expected(t) for t in texts]
    assert fake.paths() == ["/files", "/batches", "/batches/batch-1", "/batches/batch-1", "/files/file-2/content"]
    upload, create = fake.requests[0], fake.requests[1]
    assert b'name="purpose"\r\n\r\nbatch' in upload.body
    lines = [json.loads(line) for line in fake.files["file-1"].decode().splitlines()]
    assert [(line["custom_id"], line["url"], len(line["body"]["input"])) for line in lines] == [
        ("0", "/v1/embeddings", 16),
        ("1", "/v1/embeddings", 16),
        ("2", "/v1/embeddings", 8),
    ]
    assert create.json() == {"input_file_id": "file-1", "endpoint": "/v1/embeddings", "completion_window": "24h"}

    fake.requests.clear()
    assert await provider.embed_batch(texts[:16], bulk=True) == [expected(t) for t in texts[:16]]
    assert fake.paths() == ["/embeddings"]  # one request's worth goes straight to /embeddings


FAILED_RUN = ["/files", "/batches", "/batches/batch-{n}", "/batches/batch-{n}"] + ["/embeddings"] * 3


async def test_two_failed_batch_jobs_disable_the_batch_api_for_later_calls(
    fake: FakeOpenAI, make_provider: MakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """Each failed job falls back to plain requests; after two the third call never touches /batches."""
    provider = await make_provider(batch_api=True, max_batch_inputs=16)
    fake.batch_status = "failed"
    texts = [f"memory {i}" for i in range(40)]
    with caplog.at_level(logging.WARNING, logger="memdex.memory_core.embeddings.remote"):
        for n in (1, 2, 3):
            fake.requests.clear()
            assert await provider.embed_batch(texts, bulk=True) == [expected(t) for t in texts]
            run = [p.format(n=n) for p in FAILED_RUN] if n < 3 else ["/embeddings"] * 3
            assert fake.paths() == run
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2
    assert "(1/2); using plain requests this time: Batch API job batch-1 ended failed: scripted failure" in warnings[0]
    assert "(2/2), disabled until restart" in warnings[1]


async def test_a_successful_batch_job_resets_the_failure_count(fake: FakeOpenAI, make_provider: MakeProvider) -> None:
    """failed, completed, failed: the Batch API is still used on the fourth call."""
    provider = await make_provider(batch_api=True, max_batch_inputs=16)
    texts = [f"memory {i}" for i in range(20)]
    for status in ("failed", "completed", "failed", "completed"):
        fake.batch_status = status
        assert await provider.embed_batch(texts, bulk=True) == [expected(t) for t in texts]
    assert fake.paths().count("/batches") == 4


async def test_a_batch_job_that_outlives_the_wait_is_cancelled_and_disables_the_batch_api(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """A job still running at batch_wait_timeout is cancelled, the call falls back, and batch is off at once."""
    provider = await make_provider(batch_api=True, max_batch_inputs=16)
    provider.batch_wait_timeout = 0.2
    fake.batch_status = "in_progress"
    texts = [f"memory {i}" for i in range(20)]
    assert await provider.embed_batch(texts, bulk=True) == [expected(t) for t in texts]
    assert "/batches/batch-1/cancel" in fake.paths()
    assert fake.paths()[-2:] == ["/embeddings", "/embeddings"]
    fake.requests.clear()
    await provider.embed_batch(texts, bulk=True)
    assert fake.paths() == ["/embeddings", "/embeddings"]


async def test_an_endpoint_without_the_batch_api_is_tried_only_once(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """A 404 on the upload disables the Batch API straight away."""
    provider = await make_provider(batch_api=True, max_batch_inputs=16)
    fake.script("/files", Reply(404, {"error": {"message": "Not found"}}))
    texts = [f"memory {i}" for i in range(20)]
    assert await provider.embed_batch(texts, bulk=True) == [expected(t) for t in texts]
    assert fake.paths() == ["/files", "/embeddings", "/embeddings"]
    fake.requests.clear()
    await provider.embed_batch(texts, bulk=True)
    assert fake.paths() == ["/embeddings", "/embeddings"]


# llama-cpp-python's OpenAI-compatible server --------------------------------------------------


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama_cpp.server serving all-MiniLM-L6-v2 embeddings on a free loopback port."""
    if not MODEL_FILE.is_file():
        pytest.skip(shared_reason(MODEL_FILE))
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python[server]: pip install -e '.[dev]'")
    with llama_server(MODEL_FILE, tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url


@pytest.fixture
async def llama(llama_url: str) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(
        OpenAIEmbeddingSettings(base_url=llama_url, api_key="unused", model="all-MiniLM-L6-v2", max_batch_inputs=16)
    )
    await provider.start()
    yield provider
    await provider.aclose()


async def test_llama_cpp_server_gives_384_dimension_unit_vectors(llama: OpenAIProvider) -> None:
    """start() learns 384 dims from the real server and every vector has length 1."""
    assert llama.dims == 384
    query = await llama.embed_query("where did I park the car?")
    [doc] = await llama.embed_batch(["The car is parked on level 3 of the garage."])
    for vector in (query, doc):
        assert len(vector) == 384
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-6)


async def test_llama_cpp_server_batch_of_70_matches_single_embeddings_in_order(llama: OpenAIProvider) -> None:
    """70 texts in requests of 16 keep their order: around each boundary a text alone is nearest its own vector."""
    topics = ["apple pie", "tax return", "soccer final", "quantum computing", "jazz concert",
              "dentist appointment", "python bug", "mountain hike", "birthday party", "car repair"]
    frames = ["I wrote a note about the {}.", "Remind me of the {} tomorrow.", "Why did the {} go so badly?",
              "My sister loves talking about the {}.", "The {} costs more than expected.",
              "Nobody remembered the {} last year.", "We postponed the {} until spring."]
    texts = [frame.format(topic) for frame in frames for topic in topics]
    batch = await llama.embed_batch(texts)
    assert len(batch) == 70
    for i in (0, 1, 15, 16, 31, 32, 47, 48, 63, 64, 68, 69):
        [single] = await llama.embed_batch([texts[i]])
        similarities = [cosine(single, vector) for vector in batch]
        assert similarities[i] > 0.999
        assert max(range(70), key=similarities.__getitem__) == i


async def test_llama_cpp_server_puts_a_paraphrase_closer_than_an_unrelated_sentence(llama: OpenAIProvider) -> None:
    """'the cat sat on the mat' is nearer 'a kitten was sitting on the rug' than a sentence about taxes."""
    cat, kitten, taxes = await llama.embed_batch(
        ["the cat sat on the mat", "a kitten was sitting on the rug", "quarterly tax filings are due in April"]
    )
    assert cosine(cat, kitten) > cosine(cat, taxes) + 0.2


async def test_the_batch_api_serves_only_bulk_work_never_a_live_edit(
    fake: FakeOpenAI, make_provider: MakeProvider
) -> None:
    """With batch_api on, a large batch that is not marked bulk (an edit, an append) goes out as plain requests."""
    provider = await make_provider(batch_api=True, max_batch_inputs=16)
    texts = [f"memory {i}" for i in range(40)]
    assert await provider.embed_batch(texts) == [expected(t) for t in texts]
    assert set(fake.paths()) == {"/embeddings"}
