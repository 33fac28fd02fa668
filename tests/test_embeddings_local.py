"""The local GGUF provider, run on the real all-MiniLM-L6-v2 f16 GGUF from ``../shared/models``."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import anyio
import pytest
from helpers import TEST_MODEL, needs_shared

from memdex.memory_core.config_sections import DEFAULT_LOCAL_MODEL, LocalEmbeddingSettings
from memdex.memory_core.embeddings import EmbeddingProvider, llama_models
from memdex.memory_core.embeddings.local import LocalProvider, known_prefixes
from memdex.memory_core.errors import EmbeddingError

pytest.importorskip("llama_cpp")

MODEL = TEST_MODEL
needs_model = needs_shared(MODEL)

GEMMA_QUERY = "task: search result | query: "
GEMMA_DOCUMENT = "title: none | text: "


def settings(**overrides: object) -> LocalEmbeddingSettings:
    return LocalEmbeddingSettings(model=str(MODEL), **overrides)  # type: ignore[arg-type]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


@pytest.fixture
async def provider() -> LocalProvider:
    p = LocalProvider(settings())
    await p.start()
    yield p
    await p.aclose()


# Loading and the basics -----------------------------------------------------------------------


@needs_model
async def test_start_reports_the_model(provider: LocalProvider) -> None:
    assert isinstance(provider, EmbeddingProvider)
    assert provider.id == "local"
    assert provider.model == str(MODEL)
    assert provider.dims == 384
    assert provider.max_input_tokens == 512  # the model's training context
    assert provider.pooling == "mean"  # stored in the GGUF; CLS would be wrong for this model
    await provider.start()  # idempotent
    assert provider.dims == 384


@needs_model
async def test_vectors_are_unit_length(provider: LocalProvider) -> None:
    query = await provider.embed_query("what did we decide about the database?")
    docs = await provider.embed_batch(["We chose PostgreSQL.", "", "x" * 3, "Ünïcødé ✓ 日本語 text"])
    for vector in [query, *docs]:
        assert len(vector) == 384
        assert all(math.isfinite(x) for x in vector)
        assert norm(vector) == pytest.approx(1.0, abs=1e-5)


@needs_model
async def test_paraphrase_without_shared_keywords_is_found(
    provider: LocalProvider,
) -> None:
    query = await provider.embed_query("that database thing we picked")
    right, unrelated = await provider.embed_batch(
        [
            "We chose PostgreSQL for storage",
            "My sister's birthday party is on Saturday at the lake",
        ]
    )
    assert cosine(query, right) > cosine(query, unrelated) + 0.2


@needs_model
async def test_batch_matches_single_embeddings(provider: LocalProvider) -> None:
    texts = [f"note {i}: " + "the quick brown fox jumps over the lazy dog " * (i % 7 + 1) for i in range(30)]
    batch = await provider.embed_batch(texts)
    for text, vector in zip(texts, batch, strict=True):
        (single,) = await provider.embed_batch([text])
        assert cosine(single, vector) > 0.9999


@needs_model
async def test_empty_batch(provider: LocalProvider) -> None:
    assert await provider.embed_batch([]) == []


# Long inputs never reach llama.cpp uncut ------------------------------------------------------


@needs_model
async def test_five_thousand_words_do_not_crash(provider: LocalProvider) -> None:
    words = " ".join(f"word{i % 97} alpha beta gamma" for i in range(1250))  # 5,000 words, ~10k tokens
    assert len(words.split()) == 5000
    (doc,) = await provider.embed_batch([words])
    query = await provider.embed_query(words)
    assert norm(doc) == pytest.approx(1.0, abs=1e-5)
    assert cosine(doc, query) > 0.9999  # no prefixes for MiniLM: the same text, the same vector
    # Several long texts in one batch, mixed with short ones.
    vectors = await provider.embed_batch([words, "short", words + " tail", "another short one"])
    assert [len(v) for v in vectors] == [384] * 4


@needs_model
async def test_long_text_is_cut_to_the_model_limit(provider: LocalProvider) -> None:
    head = " ".join(f"topic{i}" for i in range(600))  # far more than 512 tokens on its own
    a, b = await provider.embed_batch([head + " about cooking pasta", head + " about quantum physics"])
    assert cosine(a, b) > 0.99999  # everything after the limit is dropped


# Concurrency and the shared instance ----------------------------------------------------------


@needs_model
async def test_concurrent_calls_complete_and_agree(provider: LocalProvider) -> None:
    queries = [f"question number {i} about the project plan" for i in range(10)]
    batches = [[f"document {i}.{j} " + "lorem ipsum dolor sit amet " * (j + 1) for j in range(4)] for i in range(10)]
    expected_queries = [await provider.embed_query(q) for q in queries]
    expected_batches = [await provider.embed_batch(b) for b in batches]

    got_queries: dict[int, list[float]] = {}
    got_batches: dict[int, list[list[float]]] = {}
    other = LocalProvider(settings())  # a second provider on the same instance joins in
    await other.start()

    async def query(i: int) -> None:
        got_queries[i] = await (provider if i % 2 else other).embed_query(queries[i])

    async def batch(i: int) -> None:
        got_batches[i] = await (other if i % 2 else provider).embed_batch(batches[i])

    try:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(query, i)
                    tg.start_soon(batch, i)
    finally:
        await other.aclose()

    for i in range(10):
        assert cosine(got_queries[i], expected_queries[i]) > 0.9999
        for got, want in zip(got_batches[i], expected_batches[i], strict=True):
            assert cosine(got, want) > 0.9999


@needs_model
async def test_same_settings_share_one_instance() -> None:
    first, second = (
        LocalProvider(settings()),
        LocalProvider(settings(), query_prefix="q: "),
    )
    different = LocalProvider(settings(flash_attn=False))
    await first.start()
    await second.start()
    await different.start()
    try:
        assert first._shared is not None and first._shared is second._shared
        assert first._shared.llm is second._shared.llm
        assert different._shared is not None and different._shared.llm is not first._shared.llm
        # flash attention changes speed, not vectors.
        text = "flash attention should not change the embedding"
        (a,), (b,) = (
            await first.embed_batch([text]),
            await different.embed_batch([text]),
        )
        assert cosine(a, b) > 0.9999
    finally:
        await first.aclose()
        await second.aclose()
        await different.aclose()
    assert not any(key[0] == str(MODEL) for key in llama_models.MODELS)  # the last user freed it


@needs_model
async def test_loading_leaves_stdout_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """llama-cpp-python's verbose=False points fds 1/2 at /dev/null while loading; stdio MCP would lose data."""
    redirected: list[int] = []
    real_dup2 = os.dup2

    def spy(fd: int, fd2: int, inheritable: bool = True) -> int:
        redirected.append(fd2)
        return real_dup2(fd, fd2, inheritable)

    monkeypatch.setattr(os, "dup2", spy)
    stdout = sys.stdout
    p = LocalProvider(settings(n_threads=1))  # its own instance: a real load happens here
    await p.start()
    try:
        assert redirected == []
        assert sys.stdout is stdout
        assert p.dims == 384
    finally:
        await p.aclose()


@needs_model
async def test_close_then_use_fails_clearly() -> None:
    p = LocalProvider(settings())
    await p.start()
    await p.aclose()
    await p.aclose()  # twice is fine
    with pytest.raises(EmbeddingError, match="not started"):
        await p.embed_query("hello")


def test_grouping_packs_short_texts_and_isolates_long_ones() -> None:
    shared = llama_models.SharedModel(
        key=(),
        llm=None,
        dims=384,
        max_tokens=512,
        n_batch=512,
        n_seq_max=4,
        pooling="mean",
        eos=102,
    )
    seqs = [[0] * n for n in (100, 100, 100, 300, 512, 10, 10, 10, 10, 10, 2)]
    groups = llama_models.groups(shared, seqs)
    assert groups == [[0, 1, 2], [3], [4], [5, 6, 7, 8], [9, 10]]
    for group in groups:  # a decode never exceeds the context, whatever the packing budget
        assert sum(len(seqs[i]) for i in group) <= shared.n_batch
        assert len(group) <= shared.n_seq_max


@needs_model
async def test_requests_after_the_model_is_freed_fail_cleanly() -> None:
    p = LocalProvider(settings())
    await p.start()
    shared = p._shared
    assert shared is not None
    await p.aclose()  # the last user: the model is freed
    with pytest.raises(EmbeddingError, match="closed"):
        llama_models.decode(shared, [[101, 102]])  # what an in-flight embed_batch would do next


# Errors ---------------------------------------------------------------------------------------


async def test_missing_model_file(tmp_path: Path) -> None:
    p = LocalProvider(LocalEmbeddingSettings(model=str(tmp_path / "nope.gguf")))
    with pytest.raises(EmbeddingError, match=r"nope\.gguf does not exist.*embedding\.local\.model"):
        await p.start()


async def test_model_path_expands_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    p = LocalProvider(LocalEmbeddingSettings(model="~/models/absent.gguf"))
    with pytest.raises(EmbeddingError, match=str(tmp_path / "models" / "absent.gguf")):
        await p.start()


async def test_undownloadable_hf_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # fail at once instead of ~20 s of retries offline
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # the variable is read at import time
    p = LocalProvider(
        LocalEmbeddingSettings(
            model="hf:nobody-here/no-such-repo-GGUF/model.gguf",
            cache_dir=tmp_path / "hf",
        )
    )
    with (
        anyio.fail_after(30),
        pytest.raises(EmbeddingError, match=r"could not download.*local \.gguf|local path"),
    ):
        await p.start()


async def test_malformed_hf_uri() -> None:
    with pytest.raises(EmbeddingError, match=r"hf:<owner>/<repo>/<file>"):
        await LocalProvider(LocalEmbeddingSettings(model="hf:owner-only/model.gguf")).start()


async def test_missing_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp -> ImportError
    p = LocalProvider(LocalEmbeddingSettings(model=str(Path(__file__))))  # any existing file
    with pytest.raises(EmbeddingError, match=r"pip install 'memdex-mcp\[local\]'"):
        await p.start()


@needs_model
async def test_not_a_gguf_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all" * 100)
    with pytest.raises(EmbeddingError, match="junk.gguf"):
        await LocalProvider(LocalEmbeddingSettings(model=str(junk))).start()


# Prefixes and the fingerprint -----------------------------------------------------------------


def test_known_prefix_table() -> None:
    assert known_prefixes(DEFAULT_LOCAL_MODEL) == (GEMMA_QUERY, GEMMA_DOCUMENT)
    assert known_prefixes("hf:nomic-ai/nomic-embed-text-v1.5-GGUF/nomic-embed-text-v1.5.Q8_0.gguf") == (
        "search_query: ",
        "search_document: ",
    )
    assert known_prefixes("/models/multilingual-e5-small-q8_0.gguf") == (
        "query: ",
        "passage: ",
    )
    assert known_prefixes("/models/e5-base-v2.gguf") == ("query: ", "passage: ")
    assert known_prefixes("hf:CompendiumLabs/bge-small-en-v1.5-gguf/bge-small-en-v1.5-q8_0.gguf") == ("", "")
    assert known_prefixes(str(MODEL)) == ("", "")
    assert known_prefixes("/models/some-other-model-e50.gguf") == ("", "")


def test_prefixes_default_override_and_fingerprint() -> None:
    gemma = LocalEmbeddingSettings(model=DEFAULT_LOCAL_MODEL)
    default = LocalProvider(gemma)
    assert (default.query_prefix, default.document_prefix) == (
        GEMMA_QUERY,
        GEMMA_DOCUMENT,
    )
    disabled = LocalProvider(gemma, query_prefix="", document_prefix="")
    assert (disabled.query_prefix, disabled.document_prefix) == ("", "")
    custom = LocalProvider(gemma, query_prefix="q: ")
    assert (custom.query_prefix, custom.document_prefix) == ("q: ", GEMMA_DOCUMENT)
    prints = {default.fingerprint, disabled.fingerprint, custom.fingerprint}
    assert len(prints) == 3
    assert LocalProvider(gemma).fingerprint == default.fingerprint  # stable
    other_model = LocalProvider(
        LocalEmbeddingSettings(model="/models/x.gguf"),
        query_prefix="",
        document_prefix="",
    )
    assert other_model.fingerprint != disabled.fingerprint


@needs_model
async def test_fingerprint_after_start_covers_the_file(provider: LocalProvider) -> None:
    fresh = LocalProvider(settings())
    assert fresh.fingerprint != provider.fingerprint  # start() adds size and pooling
    prefixed = LocalProvider(settings(), query_prefix="q: ")
    await prefixed.start()
    try:
        assert prefixed.fingerprint != provider.fingerprint
        same = LocalProvider(settings())
        await same.start()
        assert same.fingerprint == provider.fingerprint
        await same.aclose()
    finally:
        await prefixed.aclose()


@needs_model
async def test_prefixes_are_applied() -> None:
    plain = LocalProvider(settings())
    prefixed = LocalProvider(settings(), query_prefix="search_query: ", document_prefix="search_document: ")
    await plain.start()
    await prefixed.start()
    try:
        text = "we moved the meeting to Thursday"
        assert (
            cosine(
                await prefixed.embed_query(text),
                (await plain.embed_batch(["search_query: " + text]))[0],
            )
            > 0.9999
        )
        (doc,) = await prefixed.embed_batch([text])
        assert cosine(doc, (await plain.embed_batch(["search_document: " + text]))[0]) > 0.9999
        assert cosine(doc, (await plain.embed_batch([text]))[0]) < 0.999
    finally:
        await plain.aclose()
        await prefixed.aclose()
