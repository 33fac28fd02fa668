"""The sections of memdex's settings (``[query]``, ``[embedding.local]``, ``[store.postgres]``, …): one model each.

:class:`~.config.Settings` holds them; every key is documented, with its default, in ``config.example.toml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from .limits import MAX_ANSWER_CHARS, MAX_CANDIDATES, MAX_RESULTS, MIN_ANSWER_CHARS, MIN_SNIPPET_CHARS, SNIPPET_CHARS


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkingSettings(_Section):
    """How Markdown files are cut into indexed chunks."""

    tokens: int = Field(400, ge=16, le=8192, description="target chunk size in tokens (~4 characters each)")
    overlap: int = Field(80, ge=0, description="tokens of context repeated from the end of the previous chunk")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingSettings:
        if self.overlap >= self.tokens:
            raise ValueError(f"chunking.overlap ({self.overlap}) must be smaller than chunking.tokens ({self.tokens})")
        return self


class QuerySettings(_Section):
    """Defaults for memory_search when the caller does not say."""

    max_results: int = Field(8, ge=1, le=MAX_RESULTS, description="results returned by default")
    min_score: float = Field(0.35, ge=0.0, le=1.0, description="a result needs this vector or keyword score")
    min_share: float = Field(
        0.15, ge=0.0, le=1.0, description="keyword answers: the results together must answer this share of the query (0 = off)"
    )
    fusion: Literal["weighted", "rrf"] = Field("weighted", description="how vector and keyword ranks combine")
    vector_weight: float = Field(0.2, ge=0.0, le=1.0, description="share of the vector score (benchmarked)")
    text_weight: float = Field(0.8, ge=0.0, le=1.0, description="share of the keyword score (benchmarked)")
    rrf_k: int = Field(60, ge=1, description="rrf fusion: the k in 1/(k + rank)")
    candidate_multiplier: int = Field(4, ge=1, le=20, description="each side fetches maxResults x this (<= 200)")
    max_chars: int = Field(
        4000, ge=MIN_ANSWER_CHARS, le=MAX_ANSWER_CHARS, description="snippet characters in one answer, best hit first"
    )
    snippet_chars: int = Field(
        700, ge=MIN_SNIPPET_CHARS, le=SNIPPET_CHARS, description="characters of the best hit's snippet (its best lines); the others share what it leaves, two thirds of it at least"
    )
    mmr: bool = Field(False, description="re-rank for diversity (maximal marginal relevance)")
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0, description="MMR: 1 = pure relevance, 0 = pure diversity")
    temporal_decay: bool = Field(False, description="down-weight older dated notes (memory/YYYY-MM-DD*.md)")
    half_life_days: float = Field(30.0, gt=0, description="temporal decay, and a query for the latest: age at which a score halves")


class RerankSettings(_Section):
    """An optional cross-encoder that reorders the best fused candidates before the cut."""

    provider: Literal["none", "http"] = Field("none", description="http = a /rerank endpoint (llama.cpp, Cohere, ...)")
    base_url: str | None = Field(None, description="API base URL; requests go to {base_url}/rerank")
    api_key: SecretStr | None = Field(None, description="sent as a Bearer token; unset = no Authorization header")
    model: str = Field("", description="reranker model name, sent as is")
    candidates: int = Field(20, ge=1, le=MAX_CANDIDATES, description="how many of the fused best are reranked")
    timeout: float = Field(2.0, gt=0, description="seconds a search waits for the reranker before using fused order")

    @model_validator(mode="after")
    def _url_when_http(self) -> RerankSettings:
        if self.provider == "http" and not (self.base_url or "").strip():
            raise ValueError("rerank.provider 'http' needs rerank.base_url, e.g. http://127.0.0.1:8080/v1")
        return self


class CacheSettings(_Section):
    """The embedding cache: unchanged text is never embedded twice."""

    max_entries: int = Field(100_000, ge=1, description="vectors kept; the least recently used go first")


DEFAULT_LOCAL_MODEL = "hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf"


class LocalEmbeddingSettings(_Section):
    """The local GGUF provider (llama-cpp-python, the `local` extra)."""

    model: str = Field(DEFAULT_LOCAL_MODEL, description="GGUF file path, or hf:<owner>/<repo>/<file> downloaded once")
    cache_dir: Path | None = Field(None, description="where hf: models are downloaded; default the Hugging Face cache")
    n_threads: int = Field(0, ge=0, description="CPU threads for llama.cpp; 0 = all cores")
    flash_attn: bool = Field(True, description="flash attention (about 3x faster for BERT-style models on CPU)")


class OpenAIEmbeddingSettings(_Section):
    """Any OpenAI-compatible embeddings endpoint."""

    base_url: str | None = Field(None, description="API base URL; unset = https://api.openai.com/v1")
    api_key: SecretStr | None = Field(None, description="API key; unset = $OPENAI_API_KEY")
    model: str = "text-embedding-3-small"
    dimensions: int | None = Field(None, ge=1, description="ask the model for shorter vectors (text-embedding-3)")
    headers: dict[str, str] = Field(default_factory=dict, description="extra HTTP headers sent with every request")
    max_input_tokens: int = Field(8191, ge=16, description="longer texts are cut to fit (the model's input limit)")
    max_batch_inputs: int = Field(64, ge=1, le=2048, description="texts per request")
    max_batch_tokens: int = Field(32_000, ge=512, description="estimated tokens per request")
    query_timeout: float = Field(30.0, gt=0, description="seconds to wait for a query embedding")
    batch_timeout: float = Field(120.0, gt=0, description="seconds to wait for one batch request")
    max_retries: int = Field(4, ge=0, le=10, description="retries of 429/5xx/timeouts, with backoff and jitter")
    batch_api: bool = Field(False, description="use the asynchronous Batch API for large indexing runs")


class EmbeddingSettings(_Section):
    """Which embedding provider search uses."""

    provider: Literal["auto", "local", "openai", "none"] = Field(
        "auto", description="auto = local if available, else openai if a key is set, else keyword-only"
    )
    fallback: Literal["none", "local", "openai"] = Field("none", description="used when the provider fails")
    query_timeout: float = Field(10.0, gt=0, description="seconds a search waits for its query embedding")
    query_prefix: str | None = Field(None, description="prepended to queries; unset = the model's known prefix, if any")
    document_prefix: str | None = Field(None, description="prepended to chunks; unset = the model's known prefix, if any")
    window_tokens: int = Field(
        0, ge=0, le=8192, description="embed a chunk as windows of whole lines of ~this many tokens, scored by the best; 0 = whole"
    )
    local: LocalEmbeddingSettings = Field(default_factory=LocalEmbeddingSettings)
    openai: OpenAIEmbeddingSettings = Field(default_factory=OpenAIEmbeddingSettings)


class WatchSettings(_Section):
    """Keeping the index in step with the files while the server runs."""

    enabled: bool = Field(True, description="watch the memory files and re-index changes as they happen")
    debounce_ms: int = Field(1500, ge=50, le=60_000, description="longest a burst of saves is grouped for")
    reconcile_minutes: float = Field(5.0, ge=0, description="periodic stat-only sync; 0 = off")


class SessionsSettings(_Section):
    """Session transcripts (JSONL) as a second, optional source of memory."""

    enabled: bool = Field(False, description="index the transcripts in sessions.dir")
    dir: Path | None = Field(None, description="folder of *.jsonl transcripts (one message per line)")
    delta_bytes: int = Field(100_000, ge=0, description="re-index a growing transcript after this much growth")
    delta_lines: int = Field(50, ge=0, description="... or after this many new lines, whichever comes first")

    @model_validator(mode="after")
    def _dir_when_enabled(self) -> SessionsSettings:
        if self.enabled and self.dir is None:
            raise ValueError("sessions.enabled needs sessions.dir, the folder of *.jsonl transcripts")
        return self


class EditsSettings(_Section):
    """memory_edit: which files an agent may change in place, and whether a person reviews it first."""

    daily_logs: bool = Field(False, description="allow edits of daily logs (memory/YYYY-MM-DD*.md); they are append-only by default")
    review: bool = Field(False, description="agent edits of MEMORY.md become proposals that `memdex review` applies or rejects")
    locked: list[str] = Field(
        default_factory=list, description="paths never edited, as memory_search returns them; shell patterns (* and ?) allowed"
    )


class AgentSettings(_Section):
    """One agent's memory, when a server holds several; unset keys inherit the top-level values."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description="the agent's name, as tools take it")
    workspace: Path = Field(description="this agent's memory folder")
    index_path: Path | None = Field(None, description="this agent's index; default derived from its workspace")
    extra_paths: list[str] | None = None
    embedding: EmbeddingSettings | None = None
    sessions: SessionsSettings | None = None


class ServerSettings(_Section):
    """How `memdex serve` listens."""

    transport: Literal["stdio", "sse", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Host header names answered besides loopback and host ('name' or 'name:port')"
    )
    allowed_origins: list[str] = Field(
        default_factory=list, description="browser Origins answered besides http(s)://<an allowed host>"
    )
    insecure_no_auth: bool = Field(False, description="serve a host other than loopback without auth_token")
    stateless: bool = Field(
        False, description="http: no per-session state, JSON answers; a load balancer may send any request anywhere"
    )


class PostgresSettings(_Section):
    """A PostgreSQL database with pgvector, shared by every host that serves the same memory."""

    url: SecretStr | None = Field(
        None, description="postgresql://user:password@host:5432/dbname (libpq URL; env MEMDEX_STORE__POSTGRES__URL)"
    )
    memory: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_./-]{0,127}$",
        description="this memory's name in the database; unset = 'default', or each agent's name",
    )
    pool_size: int = Field(4, ge=1, le=64, description="read connections this process keeps open")
    connect_timeout: int = Field(
        5, ge=2, le=60,
        description="seconds to reach the database; while it is unreachable, calls fail at once and it is tried every second",
    )  # fmt: skip
    exact_scan_rows: int = Field(
        20_000, ge=0, description="vector searches scan exactly below this many chunks, above it use HNSW"
    )
    ef_search: int = Field(100, ge=10, le=1000, description="HNSW candidates per search (at least the rows wanted)")
    replica: bool = Field(
        False, description="serve this memory from the database alone: no files, no indexing, memory_append refused"
    )


class StoreSettings(_Section):
    """Where the index lives: a SQLite file (embedded, the default) or a PostgreSQL database."""

    backend: Literal["sqlite", "postgres"] = Field("sqlite", description="sqlite = one file; postgres = shared")
    postgres: PostgresSettings = Field(default_factory=PostgresSettings)

    @model_validator(mode="after")
    def _url_when_postgres(self) -> StoreSettings:
        if self.backend == "postgres" and self.postgres.url is None:
            raise ValueError("store.backend = 'postgres' needs store.postgres.url (or MEMDEX_STORE__POSTGRES__URL)")
        if self.backend == "sqlite" and self.postgres.replica:
            raise ValueError("store.postgres.replica needs store.backend = 'postgres' (a replica serves a shared database)")
        return self
