"""memdex settings: one pydantic-settings model.

Sources, highest first: explicit overrides (CLI flags) > ``MEMDEX_*`` environment variables
(nested keys joined with ``__``, e.g. ``MEMDEX_QUERY__MAX_RESULTS``) > a TOML file > defaults.
Every key is documented, with its default, in ``config.example.toml``.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import sys
import tomllib
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from .errors import ConfigError
from .limits import (
    MAX_ANSWER_CHARS,
    MAX_CANDIDATES,
    MAX_RESULTS,
    MIN_ANSWER_CHARS,
    MIN_AUTH_TOKEN_CHARS,
    MIN_SNIPPET_CHARS,
    SNIPPET_CHARS,
)

_TOML_FILE: ContextVar[Path | None] = ContextVar("memdex_toml_file", default=None)


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

    max_results: int = Field(6, ge=1, le=MAX_RESULTS, description="results returned by default")
    min_score: float = Field(0.35, ge=0.0, le=1.0, description="a result needs this vector or keyword score")
    min_share: float = Field(
        0.15, ge=0.0, le=1.0, description="keyword-only: a result must answer this share of the query (0 = off)"
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
        700, ge=MIN_SNIPPET_CHARS, le=SNIPPET_CHARS, description="characters of one hit's snippet, its best lines"
    )
    mmr: bool = Field(False, description="re-rank for diversity (maximal marginal relevance)")
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0, description="MMR: 1 = pure relevance, 0 = pure diversity")
    temporal_decay: bool = Field(False, description="down-weight older dated notes (memory/YYYY-MM-DD*.md)")
    half_life_days: float = Field(30.0, gt=0, description="temporal decay: age at which a score halves")


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


class Settings(BaseSettings):
    """Everything memdex can be told. Build with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="MEMDEX_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    workspace: Path = Field(Path("."), description="folder holding MEMORY.md and memory/")
    extra_paths: list[str] = Field(default_factory=list, description="more folders or .md files to index")
    index_path: Path | None = Field(None, description="SQLite index file; default under the user state dir")
    timezone: str | None = Field(None, description="IANA zone for daily logs; default the system zone")
    read_only: bool = Field(False, description="remove memory_append")
    auth_token: SecretStr | None = Field(
        None, description=f"bearer token required on HTTP transports, at least {MIN_AUTH_TOKEN_CHARS} characters"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    query: QuerySettings = Field(default_factory=QuerySettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    watch: WatchSettings = Field(default_factory=WatchSettings)
    sessions: SessionsSettings = Field(default_factory=SessionsSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    agents: list[AgentSettings] = Field(default_factory=list, description="several agents in one server")

    @field_validator("agents")
    @classmethod
    def _unique_names(cls, agents: list[AgentSettings]) -> list[AgentSettings]:
        names = [a.name for a in agents]
        if duplicates := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"agent names must be unique; repeated: {', '.join(duplicates)}")
        return agents

    @field_validator("auth_token")
    @classmethod
    def _usable_token(cls, value: SecretStr | None) -> SecretStr | None:
        """A token that is set must be one: an empty ``MEMDEX_AUTH_TOKEN=$UNSET`` or ``--auth-token ""`` is refused,
        never read as "a token" that an empty ``Authorization: Bearer`` header would then match."""
        if value is None:
            return None
        token = value.get_secret_value()
        if not token:
            raise ValueError(
                "is set but empty (an unset shell variable?); give a token of at least "
                f"{MIN_AUTH_TOKEN_CHARS} characters, or unset it to serve loopback without one"
            )
        if len(token) < MIN_AUTH_TOKEN_CHARS:
            raise ValueError(
                f"is {len(token)} characters; use at least {MIN_AUTH_TOKEN_CHARS} characters "
                "(e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        if not token.isascii() or not token.isprintable() or any(ch.isspace() for ch in token):
            raise ValueError("must be printable ASCII without spaces: an HTTP header cannot carry it otherwise")
        return value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(f"unknown timezone {value!r}; use an IANA name such as 'Europe/Paris'") from exc
        return value or None

    @field_validator("extra_paths", mode="before")
    @classmethod
    def _split_env_list(cls, value: Any) -> Any:
        # MEMDEX_EXTRA_PATHS may be JSON (handled by pydantic-settings) or a plain os.pathsep list.
        if isinstance(value, str):
            return [part for part in value.split(os.pathsep) if part.strip()]
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = _TOML_FILE.get()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)

    # Derived values -------------------------------------------------------------------------

    def per_agent(self) -> dict[str, Settings]:
        """Settings for each agent, by name, in declared order (one 'default' agent when none is declared)."""
        if not self.agents:
            return {"default": self}
        result: dict[str, Settings] = {}
        for agent in self.agents:
            update: dict[str, Any] = {
                "workspace": agent.workspace, "index_path": agent.index_path, "agents": [],
                "store": self.store.model_copy(
                    update={"postgres": self.store.postgres.model_copy(update={"memory": self._memory_of(agent.name)})}
                ),
            }
            for key in ("extra_paths", "embedding", "sessions"):
                if (value := getattr(agent, key)) is not None:
                    update[key] = value
            result[agent.name] = self.model_copy(update=update)
        return result

    def _memory_of(self, agent: str) -> str:
        """An agent's memory name in a shared database: its name, under store.postgres.memory when set."""
        base = self.store.postgres.memory
        return agent if base is None else f"{base}/{agent}"

    @property
    def replica(self) -> bool:
        """True when this process serves a memory that another host indexes (store.postgres.replica)."""
        return self.store.backend == "postgres" and self.store.postgres.replica

    @property
    def appends(self) -> bool:
        """True when memory_append is offered: neither read_only nor a replica."""
        return not (self.read_only or self.replica)

    @property
    def memory_name(self) -> str:
        """This memory's name in a shared database."""
        return self.store.postgres.memory or "default"

    @property
    def workspace_dir(self) -> Path:
        """The workspace as an absolute, symlink-free path."""
        return self.workspace.expanduser().resolve()

    @property
    def zone(self) -> ZoneInfo | None:
        """The configured zone, or None for the system's local zone."""
        return ZoneInfo(self.timezone) if self.timezone else None

    @property
    def index_file(self) -> Path:
        """Where the SQLite index lives."""
        if self.index_path is not None:
            return self.index_path.expanduser().resolve()
        return default_index_path(self.workspace_dir)


def state_dir() -> Path:
    """The per-user state directory memdex keeps derived data in."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    else:
        base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "memdex"


def default_index_path(workspace: Path) -> Path:
    """A stable index file per workspace: its folder name plus a short hash of its full path."""
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:10]
    name = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in workspace.name) or "workspace"
    return state_dir() / f"{name}-{digest}.sqlite"


def default_config_file() -> Path | None:
    """``$MEMDEX_CONFIG``, else ``~/.config/memdex/config.toml`` when it exists."""
    if env := os.environ.get("MEMDEX_CONFIG"):
        return Path(env).expanduser()
    candidate = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "memdex" / "config.toml"
    return candidate if candidate.is_file() else None


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build settings from overrides > environment > TOML file > defaults.

    ``overrides`` use the model's shape (``server={"port": 9000}``); ``None`` values are dropped so an
    unset CLI flag never hides a lower source.
    """
    path = config_file if config_file is not None else default_config_file()
    if path is not None and not path.is_file():
        raise ConfigError(f"config file {path} does not exist; create it from config.example.toml or drop --config")
    if path is not None:
        _check_text(path)
    token = _TOML_FILE.set(path)
    try:
        return Settings(**_drop_none(overrides))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())
        source = f" (config file {path})" if path else ""
        raise ConfigError(f"invalid settings{source}: {problems}") from None
    except SettingsError as exc:  # an environment variable whose value is not the JSON a list or table needs
        raise ConfigError(
            f"invalid settings: {exc}; a list or table in an environment variable is JSON, e.g. "
            """MEMDEX_EXTRA_PATHS='["../notes"]'"""
        ) from None
    except tomllib.TOMLDecodeError as exc:  # its message ends "(at line L, column C)"
        raise ConfigError(f"config file {path} is not valid TOML: {exc}; fix it there") from None
    finally:
        _TOML_FILE.reset(token)


def _check_text(path: Path) -> None:
    """Refuse, in one line, a config file TOML cannot read as text: not UTF-8, or UTF-8 with a byte-order mark
    (which tomllib reports as an error at line 1, column 1)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    fix = "save it as UTF-8 (without a byte-order mark)"
    if raw.startswith(codecs.BOM_UTF8):
        raise ConfigError(f"config file {path} starts with a UTF-8 byte-order mark, which TOML does not allow; {fix}")
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ConfigError(f"config file {path} is UTF-16 text, and TOML is UTF-8; {fix}")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}; Latin-1 or another "
            f"legacy encoding?); {fix}"
        ) from None


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            value = _drop_none(value)
            if not value:
                continue
        if value is not None:
            cleaned[key] = value
    return cleaned
