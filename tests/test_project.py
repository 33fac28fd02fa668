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


# memory_core's parts and what each may import besides itself (docs/architecture.md draws them). "base" is the
# top-level modules but engine.py; a part is a folder, so a new module lands in its folder's rules.
MAY_IMPORT = {
    "base": set(),
    "text": {"base"},
    "workspace": {"base", "text"},
    "stores": {"base", "text", "workspace"},
    "embeddings": {"base", "text", "stores"},
    "index": {"base", "text", "workspace", "stores", "embeddings"},
    "search": {"base", "text", "stores", "embeddings"},
    "engine": {"base", "text", "workspace", "stores", "embeddings", "index", "search"},
}
BASE_ORDER = ["limits", "errors", "textutil", "config_sections", "config", "models"]  # within base, each imports only those before it
STORES = ("stores.sqlite", "stores.postgres")
# The PostgreSQL store cuts its keyword terms with SQLite's own tokenizer, so both stores rank alike.
SQLITE_PARTS_POSTGRES_RUNS = {("stores.postgres.postings", "stores.sqlite.tokens")}


def _modules() -> dict[str, Path]:
    return {
        ".".join(p.relative_to(ROOT / "memory_core").with_suffix("").parts): p
        for p in (ROOT / "memory_core").rglob("*.py")
        if p.name != "__init__.py"
    }


def _part(module: str) -> str:
    if module == "engine":
        return "engine"
    return module.split(".")[0] if "." in module else "base"


def _local_imports(path: Path) -> set[str]:
    """memory_core modules imported by ``path`` (relative imports resolved; a name may be a module or a symbol)."""
    package = path.relative_to(ROOT / "memory_core").with_suffix("").parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(package)[: len(package) - (node.level - 1)]
            target = [*base, *(node.module.split(".") if node.module else [])]
            found.update(".".join([*target, a.name]) for a in node.names)
    return found


def _module_imports() -> dict[str, set[str]]:
    """Each memory_core module and the memory_core modules it imports (a package counts as its __init__)."""
    modules = _modules()
    packages = {".".join(p.relative_to(ROOT / "memory_core").parent.parts) for p in (ROOT / "memory_core").rglob("__init__.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for imported in _local_imports(path):
            while imported and imported not in modules and imported not in packages:
                imported = imported.rpartition(".")[0]  # from .x import name -> .x
            if imported in modules:
                found.add(imported)
        graph[name] = found
    return graph


def test_memory_core_parts_import_only_the_parts_below_them() -> None:
    """The parts read bottom-up: text, workspace, stores, embeddings, then index and search side by side
    (search never imports index), and the engine on top. A new module cannot be forgotten: its folder decides."""
    for name, imports in _module_imports().items():
        for imported in imports:
            part, other = _part(name), _part(imported)
            if other != part:
                assert other in MAY_IMPORT[part], f"{name} ({part}) imports {imported} ({other})"
            elif part == "base":
                assert BASE_ORDER.index(imported) < BASE_ORDER.index(name), f"{name} imports {imported}, above it"


def test_nothing_outside_a_store_imports_it() -> None:
    """Only a store's own modules and stores/factory.py import stores/sqlite or stores/postgres: everything else
    works through the seam (stores/base.py), so a third store plugs in beside them."""
    for name, imports in _module_imports().items():
        for imported in imports:
            store = next((s for s in STORES if imported.startswith(s + ".")), None)
            if store and not name.startswith(store + ".") and name != "stores.factory":
                assert (name, imported) in SQLITE_PARTS_POSTGRES_RUNS, f"{name} imports {imported}"


def test_memory_core_has_no_import_cycle() -> None:
    graph = _module_imports()
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join([*path, module])}"
        if module not in done:
            for imported in graph[module]:
                visit(imported, (*path, module))
            done.add(module)

    for module in graph:
        visit(module, ())


def test_server_imports_only_the_public_api() -> None:
    """server/ and prompts/ use memory_core through what its __init__ exports (an exported module included), so
    the public API is exactly what the adapter needs and internals can move freely."""
    import memdex.memory_core as api

    for path in [*(ROOT / "server").rglob("*.py"), *(ROOT / "prompts").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memdex.memory_core"):
                inner = node.module.removeprefix("memdex.memory_core").lstrip(".")
                if inner:
                    assert inner in api.__all__, f"{path.name} imports memdex.memory_core.{inner}, not exported"
                else:
                    unknown = {a.name for a in node.names} - set(api.__all__)
                    assert not unknown, f"{path.name} imports {sorted(unknown)}, which memory_core does not export"
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("memdex.memory_core.") for a in node.names), path.name


def test_the_public_api_is_sorted_and_complete() -> None:
    """__all__ is sorted, names only what exists, and every public name of the package is in it."""
    import memdex.memory_core as api

    assert api.__all__ == sorted(api.__all__, key=lambda name: (name[0].islower(), name))
    assert all(hasattr(api, name) for name in api.__all__)
    public = {n for n in vars(api) if not n.startswith("_") and n not in {"annotations"}}
    folders = {p.name for p in (ROOT / "memory_core").iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in (ROOT / "memory_core").glob("*.py")}
    assert public - folders - modules == set(api.__all__) - {"limits"}


def test_every_package_is_in_the_wheel() -> None:
    """pyproject lists packages by hand (the folders install under memdex/): a new folder must be listed."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    for folder in ("memory_core", "server", "prompts"):
        for init in (ROOT / folder).rglob("__init__.py"):
            name = ".".join(("memdex", *init.relative_to(ROOT).parent.parts))
            assert name in listed, f"{name} is missing from [tool.setuptools] packages"


def test_tool_texts_state_the_limits_the_code_enforces() -> None:
    """The descriptions the model reads quote memory_core.limits, so they cannot drift apart."""
    from memdex.memory_core import limits

    search, append, edit = (prompts.load(f"tools/{n}.md") for n in ("memory_search", "memory_append", "memory_edit"))
    get = prompts.memory_get_text(replica=False)
    assert "Reads the file on disk" in get and prompts.FRESHNESS not in get
    assert f"up to {limits.MAX_RESULTS} " in search and f"at most {limits.SNIPPET_CHARS} characters" in search
    assert f"maxChars ({limits.MIN_ANSWER_CHARS}-{limits.MAX_ANSWER_CHARS} characters)" in search
    assert f"{limits.MAX_READ_LINES} lines / {limits.MAX_READ_CHARS:,} characters" in get
    assert f"at most {limits.MAX_APPEND_BYTES // 1024} KB" in append
    assert f"at most {limits.MAX_EDIT_BYTES // 1024} KB" in edit
    assert f"a query of at most {limits.MAX_QUERY_CHARS:,} characters" in search
    paths = f"at most {limits.MAX_PATH_CHARS:,} characters and {limits.MAX_PATH_PARTS} components"
    assert paths in search and paths in get


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
