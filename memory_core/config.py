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

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from .config_sections import (
    AgentSettings,
    CacheSettings,
    ChunkingSettings,
    EditsSettings,
    EmbeddingSettings,
    QuerySettings,
    RerankSettings,
    ServerSettings,
    SessionsSettings,
    StoreSettings,
    WatchSettings,
)
from .errors import ConfigError
from .limits import (
    MIN_AUTH_TOKEN_CHARS,
)

_TOML_FILE: ContextVar[Path | None] = ContextVar("memdex_toml_file", default=None)


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
    read_only: bool = Field(False, description="remove memory_append and memory_edit")
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
    edits: EditsSettings = Field(default_factory=EditsSettings)
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
        """True when memory_append and memory_edit are offered: neither read_only nor a replica."""
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
