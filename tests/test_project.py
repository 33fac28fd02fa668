"""Project-shape checks: layering, documented settings, registered prompt texts."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from pydantic import BaseModel

from memdex import prompts
from memdex.memory_core import Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_memory_core_never_imports_mcp_or_the_server() -> None:
    """The engine stays independent of the protocol adapter and CLI."""
    for path in (ROOT / "memory_core").rglob("*.py"):
        forbidden = _imports(path) & {"mcp", "memdex", "server", "click", "argparse", "uvicorn", "starlette"}
        assert not forbidden, f"{path.relative_to(ROOT)} imports {forbidden}"


def _keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys |= _keys(annotation, f"{prefix}{name}.")
        else:
            keys.add(f"{prefix}{name}")
    return keys


def _documented_keys(text: str) -> set[str]:
    """Keys set or shown commented-out (``# key = value``) in config.example.toml."""
    uncommented = re.sub(r"(?m)^#\s*(?=[a-z_]+ = )", "", text)
    data = tomllib.loads(uncommented)

    def walk(node: dict, prefix: str = "") -> set[str]:
        found: set[str] = set()
        for key, value in node.items():
            nested = isinstance(value, dict) and value  # an empty table is a dict-valued key, e.g. headers = {}
            found |= walk(value, f"{prefix}{key}.") if nested else {f"{prefix}{key}"}
        return found

    return walk(data)


def test_every_setting_is_documented_in_config_example() -> None:
    """config.example.toml shows every key the settings model accepts, and nothing else."""
    text = (ROOT / "config.example.toml").read_text(encoding="utf-8")
    assert _documented_keys(text) == _keys(Settings)


def test_config_example_loads_and_equals_the_defaults(tmp_path: Path, monkeypatch) -> None:
    """The example file is valid and its values are the real defaults."""
    monkeypatch.chdir(tmp_path)
    from_file = load_settings(ROOT / "config.example.toml")
    assert from_file.model_dump() == load_settings().model_dump()


def test_every_prompt_file_is_used() -> None:
    """Each text under prompts/ is loaded by the server (no orphaned or missing texts)."""
    files = {p.relative_to(ROOT / "prompts").as_posix() for p in (ROOT / "prompts").rglob("*.md")}
    source = (ROOT / "server" / "app.py").read_text(encoding="utf-8") + (ROOT / "prompts" / "__init__.py").read_text(
        encoding="utf-8"
    )
    assert files == {f for f in files if f'"{f}"' in source}
    for name in files:
        assert prompts.load(name)


# memory_core's modules from the bottom up: each may import only modules listed before it.
LAYERS = [
    "limits", "errors", "textutil", "config", "models", "chunking", "fts", "named_files", "transcripts", "workspace", "filters",
    "records", "backend", "counts_cache", "write_pause", "db", "swap", "store", "fts_tokens", "pg_store", "term_stats",
    "vector_matrix", "indexer", "reader", "appender", "ranking", "snippets",
    "embeddings.base", "embeddings.local", "embeddings.remote", "embeddings.factory", "rerank",
    "index_db", "pg_index", "stores", "embedder", "changes", "syncer", "searcher", "watcher", "engine",
]


def _local_imports(path: Path) -> set[str]:
    """memory_core modules imported by ``path`` (relative imports resolved)."""
    package = path.relative_to(ROOT / "memory_core").with_suffix("").parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(package)[: len(package) - (node.level - 1)]
            target = [*base, *(node.module.split(".") if node.module else [])]
            names = [".".join(target)] if node.module else [".".join([*target, a.name]) for a in node.names]
            found.update(n for n in names if n)
    return found


def test_memory_core_modules_import_only_downwards() -> None:
    """No cycle and no upward import: the engine's parts can be read bottom-up, one job each."""
    modules = {
        ".".join(p.relative_to(ROOT / "memory_core").with_suffix("").parts): p
        for p in (ROOT / "memory_core").rglob("*.py")
        if p.name != "__init__.py"
    }
    assert set(modules) == set(LAYERS), "add new modules to LAYERS in their place"
    for name, path in modules.items():
        for imported in _local_imports(path) & set(LAYERS):
            assert LAYERS.index(imported) < LAYERS.index(name), f"{name} imports {imported}, which sits above it"


def test_tool_texts_state_the_limits_the_code_enforces() -> None:
    """The descriptions the model reads quote memory_core.limits, so they cannot drift apart."""
    from memdex.memory_core import limits

    search, append = (prompts.load(f"tools/{n}.md") for n in ("memory_search", "memory_append"))
    get = prompts.memory_get_text(replica=False)
    assert "Reads the file on disk" in get and prompts.FRESHNESS not in get
    assert f"up to {limits.MAX_RESULTS} " in search and f"at most {limits.SNIPPET_CHARS} characters" in search
    assert f"maxChars ({limits.MIN_ANSWER_CHARS}-{limits.MAX_ANSWER_CHARS} characters)" in search
    assert f"{limits.MAX_READ_LINES} lines / {limits.MAX_READ_CHARS:,} characters" in get
    assert f"at most {limits.MAX_APPEND_BYTES // 1024} KB" in append


def test_tests_skipped_for_want_of_shared_say_so_and_how_to_get_it() -> None:
    """Every test needing ../shared skips through helpers, whose reason names it and where the README says more."""
    from helpers import TEST_MODEL, shared_reason

    reason = shared_reason(TEST_MODEL)
    assert reason.startswith("needs ../shared/models/all-MiniLM-L6-v2-f16.gguf") and "README" in reason
    for path in (ROOT / "tests").glob("*.py"):
        if path.name != "helpers.py":
            assert not re.search(r'/\s*"shared"', path.read_text(encoding="utf-8")), f"{path.name}: use helpers.needs_shared"
    development = (ROOT / "README.md").read_text(encoding="utf-8").split("## Development", 1)[1]
    assert "../shared" in development and "skip" in development


def test_shared_parts_reach_the_database_only_through_the_backend_seam() -> None:
    """The syncer, embedder, indexer and searcher serve every store: they use ``index.ops`` (backend.StoreOps)
    and the owner (backend.IndexOwner), never a store's own modules."""
    store_specific = {"store", "db", "swap", "index_db", "vector_matrix", "pg_store", "pg_index", "fts_tokens"}
    for name in ("indexer", "term_stats", "embedder", "syncer", "searcher", "ranking", "snippets"):
        imported = _local_imports(ROOT / "memory_core" / f"{name}.py")
        assert not imported & store_specific, f"{name} imports {sorted(imported & store_specific)}"
