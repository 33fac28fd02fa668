"""The index owner a memory's settings ask for: a SQLite file (the embedded default) or a PostgreSQL database."""

from __future__ import annotations

from ..config import Settings
from ..errors import ConfigError
from .base import IndexOwner
from .sqlite.owner import IndexDatabase


def index_owner(settings: Settings) -> IndexOwner:
    """The owner of the index ``settings`` describe (not yet open)."""
    store = settings.store
    if store.backend == "sqlite":
        return IndexDatabase(settings.index_file)
    try:
        from .postgres.owner import PostgresIndex
    except ImportError as exc:
        raise ConfigError(
            f"store.backend = 'postgres' needs psycopg ({exc}); install memdex with the postgres extra: "
            "pip install 'memdex-mcp[postgres]'"
        ) from exc
    pg = store.postgres
    assert pg.url is not None  # the settings refuse postgres without a url
    return PostgresIndex(
        pg.url.get_secret_value(), settings.memory_name,
        pool_size=pg.pool_size, exact_scan_rows=pg.exact_scan_rows, ef_search=pg.ef_search,
        connect_timeout=pg.connect_timeout,
    )  # fmt: skip
