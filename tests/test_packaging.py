"""The distributions and the install paths: the wheel and sdist as `python -m build` makes them (contents,
metadata, `twine check`), the wheel served by `uvx` in a clean environment, server.json for the MCP
registry (against its published schema, vendored in tests/data) and the Claude Desktop bundle's manifest.

The distributions are built once per module, from a copy of the repository (the work tree is not
written to). Building and uvx fetch packages from the index, as pip and uv are configured to.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.request
import zipfile
from collections.abc import Iterator
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from packaging.requirements import Requirement
from uv import find_uv_bin

from memdex.memory_core.config import Settings
from memdex.server.cli import DISTRIBUTION

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
NAME: str = PYPROJECT["project"]["name"]
VERSION: str = PYPROJECT["project"]["version"]
DIST = re.sub(r"[-_.]+", "_", NAME).lower()  # the normalised name in file names: memdex_mcp-0.1.0-…whl
WHEEL = f"{DIST}-{VERSION}-py3-none-any.whl"
# The repository's folders and what they install as (pyproject.toml's package-dir).
PACKAGE_DIRS = {"memory_core": "memdex/memory_core", "server": "memdex/server", "prompts": "memdex/prompts"}
TOOLS = {"memory_search", "memory_get", "memory_append", "memory_edit"}


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(wheel, sdist) built by `python -m build` (sdist first, the wheel from the unpacked sdist)."""
    source = tmp_path_factory.mktemp("source") / "memdex"
    junk = shutil.ignore_patterns(".git", ".venv", "node_modules", "dist", "build", "*.egg-info", "__pycache__",
                                  ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", "*.sqlite*")
    shutil.copytree(ROOT, source, ignore=junk)
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"python -m build failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert sorted(p.name for p in out.iterdir()) == [WHEEL, f"{DIST}-{VERSION}.tar.gz"]
    return out / WHEEL, out / f"{DIST}-{VERSION}.tar.gz"


def _expected_package_files() -> set[str]:
    """Every module, prompt text and data file (the English word counts, the Chinese character forms) of the three
    folders, at its installed path."""
    files = set()
    for folder, installed in PACKAGE_DIRS.items():
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".md", ".txt"} and "__pycache__" not in path.parts:
                files.add(f"{installed}/{path.relative_to(ROOT / folder).as_posix()}")
    return files


def test_the_wheel_holds_exactly_the_memdex_namespace(dists: tuple[Path, Path]) -> None:
    """memdex/{memory_core (with embeddings), server, prompts (with the .md texts)} and the dist-info;
    nothing top-level called server, prompts or memory_core, no tests, no caches."""
    with zipfile.ZipFile(dists[0]) as wheel:
        names = set(wheel.namelist())
        top_level = wheel.read(f"{DIST}-{VERSION}.dist-info/top_level.txt").decode()
    dist_info = {n for n in names if n.startswith(f"{DIST}-{VERSION}.dist-info/")}
    assert dist_info == {f"{DIST}-{VERSION}.dist-info/{f}" for f in
                         ("METADATA", "WHEEL", "entry_points.txt", "top_level.txt", "RECORD", "licenses/LICENSE",
                          "licenses/LICENSES/Apache-2.0.txt")}
    assert names - dist_info == _expected_package_files()
    assert {n.split("/")[0] for n in names - dist_info} == {"memdex"}
    assert top_level.split() == ["memdex"]
    for must in ("memdex/memory_core/embeddings/local.py", "memdex/memory_core/embeddings/remote.py",
                 "memdex/server/cli.py", "memdex/prompts/memory_flush.md", "memdex/prompts/instructions.md",
                 "memdex/memory_core/text/english_frequencies.txt",
                 *(f"memdex/prompts/tools/{tool}.md" for tool in sorted(TOOLS))):
        assert must in names, must


def test_the_wheel_metadata_matches_pyproject(dists: tuple[Path, Path]) -> None:
    """Name, version, Python floor, licence, README and every requirement, plus the `memdex` command."""
    with zipfile.ZipFile(dists[0]) as wheel:
        meta = HeaderParser().parsestr(wheel.read(f"{DIST}-{VERSION}.dist-info/METADATA").decode())
        entry_points = wheel.read(f"{DIST}-{VERSION}.dist-info/entry_points.txt").decode()
    assert meta["Name"] == NAME and meta["Version"] == VERSION
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["License-Expression"] == "MIT AND Apache-2.0"  # Apache-2.0: OpenCC's table of Chinese characters
    assert meta.get_all("License-File") == ["LICENSE", "LICENSES/Apache-2.0.txt"]
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith("# memdex\n")
    requires = {Requirement(r) for r in meta.get_all("Requires-Dist")}
    core = {str(Requirement(r)) for r in PYPROJECT["project"]["dependencies"]}
    assert {str(r) for r in requires if r.marker is None or "extra" not in str(r.marker)} == core
    assert set(meta.get_all("Provides-Extra")) == set(PYPROJECT["project"]["optional-dependencies"])
    assert entry_points.split() == ["[console_scripts]", "memdex", "=", "memdex.server.cli:main",
                                   "memdex-mcp", "=", "memdex.server.cli:main"]


def test_the_sdist_carries_what_a_build_needs_and_no_more(dists: tuple[Path, Path]) -> None:
    """README, config.example.toml, server.json, the prompts' .md texts and every module; no tests,
    benchmarks, node packaging or caches."""
    with tarfile.open(dists[1]) as sdist:
        names = {n.removeprefix(f"{DIST}-{VERSION}/") for n in sdist.getnames()}
    for must in ("PKG-INFO", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "LICENSES/Apache-2.0.txt",
                 "config.example.toml", "server.json"):
        assert must in names, must
    sources = {f"{folder}/{p.split('/', 2)[2]}" for folder, installed in PACKAGE_DIRS.items()
               for p in _expected_package_files() if p.startswith(installed + "/")}
    assert sources <= names, sorted(sources - names)
    for unwanted in ("tests/", "bench/", "packaging/", "node_modules/", ".venv/", "__pycache__/", "dist/"):
        assert not [n for n in names if f"/{unwanted}" in f"/{n}"], unwanted


def test_twine_check_passes_on_both(dists: tuple[Path, Path]) -> None:
    """PyPI would accept the metadata and render the long description."""
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def _index_unreachable() -> str | None:
    """Why uv could not reach its package index, or None when it can."""
    index = os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") or "https://pypi.org/simple"
    url = f"{index.rstrip('/')}/mcp/"
    try:
        with urllib.request.urlopen(url, timeout=20) as answer:
            answer.read(1)
    except OSError as exc:
        return f"the package index {index} is unreachable ({exc}); uvx cannot resolve memdex's dependencies"
    return None


async def _search_until_found(client: Client, query: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        result = await client.call_tool("memory_search", {"query": query})
        assert not result.is_error, result.content
        answer: dict[str, Any] = result.structured_content or {}
        if answer["results"] or time.monotonic() > deadline:
            return answer
        await anyio.sleep(0.2)


@pytest.fixture
def uvx_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A clean uv: its own empty cache, no config files, no managed-Python downloads, no active venv."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMDEX_") and k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_CACHE_DIR"}}
    env.update(UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never")
    yield env


async def test_uvx_serves_the_wheel_in_a_clean_environment(
    dists: tuple[Path, Path], tmp_path: Path, uvx_env: dict[str, str]
) -> None:
    """`uvx --from <wheel> memdex` installs the wheel and its dependencies from the index into a fresh
    environment; `memdex serve` there, configured as server.json says (the folder in MEMDEX_WORKSPACE),
    answers an MCP client over stdio."""
    if (reason := _index_unreachable()) is not None:
        pytest.skip(reason)
    uvx = Path(find_uv_bin()).with_name("uvx")
    base = [str(uvx), "--isolated", "--python", sys.executable, "--from", str(dists[0])]
    workspace = tmp_path / "ws"
    shutil.copytree(ROOT / "examples" / "workspace", workspace)

    where = subprocess.run([*base, "python", "-c", "import memdex.server.cli as m; print(m.__file__)"],
                           cwd=tmp_path, env=uvx_env, capture_output=True, text=True, timeout=600)
    assert where.returncode == 0, where.stderr[-4000:]
    served_from = Path(where.stdout.strip())
    assert served_from.is_relative_to(tmp_path / "uv-cache"), served_from  # the wheel's copy, not the repository
    assert served_from.parts[-3:] == ("memdex", "server", "cli.py")

    helped = subprocess.run([*base, "memdex", "--help"], cwd=tmp_path, env=uvx_env,
                            capture_output=True, text=True, timeout=300)
    assert helped.returncode == 0, helped.stderr[-4000:]
    assert "serve" in helped.stdout and "usage: memdex" in helped.stdout

    params = StdioServerParameters(command=base[0], args=[*base[1:], "memdex", "serve"], cwd=tmp_path,
                                   env={**uvx_env, "MEMDEX_WORKSPACE": str(workspace)})
    with anyio.fail_after(180):
        async with Client(params) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            assert [p.name for p in (await client.list_prompts()).prompts] == ["memory_consolidate", "memory_flush"]
            answer = await _search_until_found(client, "PostgreSQL billing service")
            assert answer["mode"] == "keyword"  # no local model, no API key: keyword search
            assert answer["results"][0]["path"] == "MEMORY.md"


def _server_json() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    return data


def _registry_validator() -> jsonschema.Draft7Validator:
    schema = json.loads((ROOT / "tests" / "data" / "server.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def test_server_json_is_valid_for_the_mcp_registry() -> None:
    """server.json passes the registry's published schema and agrees with the package it describes."""
    server = _server_json()
    validator = _registry_validator()
    assert [e.message for e in validator.iter_errors(server)] == []
    assert server["$schema"] == validator.schema["$id"]
    assert server["version"] == VERSION
    # The registry checks ownership of a PyPI package through "mcp-name: <name>" in its README.
    assert f"<!-- mcp-name: {server['name']} -->" in (ROOT / "README.md").read_text(encoding="utf-8")
    (package,) = server["packages"]
    assert (package["registryType"], package["identifier"], package["version"]) == ("pypi", NAME, VERSION)
    assert package["runtimeHint"] == "uvx"
    assert package["transport"] == {"type": "stdio"}
    assert package["packageArguments"] == [{"type": "positional", "value": "serve"}]
    variables = {v["name"]: v for v in package["environmentVariables"]}
    assert variables["MEMDEX_WORKSPACE"]["isRequired"] is True
    for name in variables:  # each MEMDEX_* variable is one memdex reads
        if name.startswith("MEMDEX_") and name != "MEMDEX_CONFIG":
            assert name.removeprefix("MEMDEX_").lower() in Settings.model_fields, name


def test_the_vendored_registry_schema_rejects_a_broken_server_json() -> None:
    """The validation above can fail: the schema refuses a name without a namespace, a "latest" package
    version, an over-long description and a package without a transport."""
    validator = _registry_validator()
    breakages = {
        "name": lambda s: s.update(name="memdex"),
        "version": lambda s: s["packages"][0].update(version="latest"),
        "description": lambda s: s.update(description="x" * 101),
        "transport": lambda s: s["packages"][0].pop("transport"),
    }
    for what, breaks in breakages.items():
        server = copy.deepcopy(_server_json())
        breaks(server)
        assert list(validator.iter_errors(server)), what


def _mcpb_manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "packaging" / "mcpb" / "manifest.json").read_text(encoding="utf-8"))
    return data


def test_the_mcpb_manifest_runs_this_release_on_the_chosen_folder() -> None:
    """The Claude Desktop bundle starts the wheel it carries (this version) with uvx, on the folder the user picks."""
    manifest = _mcpb_manifest()
    assert manifest["manifest_version"] == "0.3"
    assert (manifest["name"], manifest["version"]) == (NAME, VERSION)
    server = manifest["server"]
    assert server["type"] == "python"
    assert (ROOT / "packaging" / "mcpb" / server["entry_point"]).is_file()
    config = server["mcp_config"]
    assert config["command"] == "uvx"
    assert config["args"] == ["--from", f"${{__dirname}}/server/{WHEEL}", "memdex", "serve", "--workspace",
                              "${user_config.workspace}"]
    assert config["env"] == {"MEMDEX_READ_ONLY": "${user_config.read_only}"}
    assert manifest["user_config"]["workspace"]["type"] == "directory"
    assert manifest["user_config"]["workspace"]["required"] is True
    assert manifest["user_config"]["read_only"]["type"] == "boolean"
    assert {tool["name"] for tool in manifest["tools"]} == TOOLS == {p.stem for p in (ROOT / "prompts" / "tools").glob("*.md")}


def test_the_pinned_mcpb_cli_validates_the_manifest_and_refuses_a_broken_one(tmp_path: Path) -> None:
    """`mcpb validate` from packaging/ (the version `make mcpb` uses) accepts the manifest and refuses one
    whose workspace option has an unknown type."""
    cli = _mcpb_cli()
    good = subprocess.run([str(cli), "validate", str(ROOT / "packaging" / "mcpb" / "manifest.json")],
                          capture_output=True, text=True, timeout=120)
    assert good.returncode == 0, good.stdout + good.stderr
    broken = _mcpb_manifest()
    broken["user_config"]["workspace"]["type"] = "folder"
    (tmp_path / "manifest.json").write_text(json.dumps(broken), encoding="utf-8")
    bad = subprocess.run([str(cli), "validate", str(tmp_path / "manifest.json")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "user_config.workspace.type" in bad.stdout, bad.stdout + bad.stderr


def test_one_distribution_name_everywhere() -> None:
    """pyproject's name is the one README's install lines, server.json, the bundle's manifest and Makefile's
    file names use, and every `pip install '…[extra]'` hint in the code; and it is not `memdex`, which on PyPI
    is another project's package."""
    assert NAME == "memdex-mcp"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme[readme.index("## Install"):readme.index("## Connect a client")]
    commands = [line.split("#")[0].split() for line in install.splitlines()
                if line.startswith(("uvx ", "pipx ", "pip "))]
    assert commands == [["uvx", NAME, "serve", "--workspace", "~/agent-memory"], ["pipx", "install", NAME]]
    assert f"pip install {NAME};" in install
    # The bare name is never what a reader is told to install, anywhere in the README or the code's hints.
    texts = {path: path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *ROOT.glob("server/*.py"),
             *ROOT.glob("memory_core/**/*.py"), *ROOT.glob("packaging/mcpb/server/*.py")]}
    for path, text in texts.items():
        for hint in re.findall(r"(?:pip|pipx) install '?([A-Za-z0-9_.-]+)", text):
            assert hint == NAME or not hint.startswith("memdex"), (path, hint)
        assert not re.search(r"uvx (?:--from )?memdex(?:[=\s`]|$)", text), path
    extras = re.findall(r"pip install '([a-z-]+)\[", "\n".join(texts.values()))
    assert extras and set(extras) == {NAME}
    assert (_server_json()["packages"][0]["identifier"], _server_json()["packages"][0]["version"]) == (NAME, VERSION)
    manifest = _mcpb_manifest()
    assert manifest["name"] == NAME and manifest["server"]["mcp_config"]["args"][1].endswith(f"/server/{WHEEL}")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"WHEEL := {DIST}-$(VERSION)-py3-none-any.whl" in makefile
    assert f"twine check --strict dist/$(WHEEL) dist/{DIST}-$(VERSION).tar.gz" in makefile
    # The `memdex` command the registry's `uvx memdex-mcp` and README run exists under both names.
    assert PYPROJECT["project"]["scripts"] == {"memdex": "memdex.server.cli:main", NAME: "memdex.server.cli:main"}
    assert DISTRIBUTION == NAME  # `memdex --version` asks the installed metadata by this name


def _mcpb_cli() -> Path:
    cli = ROOT / "packaging" / "node_modules" / ".bin" / "mcpb"
    if shutil.which("node") is None or not cli.exists():
        reason = "the mcpb CLI is not installed: run `npm ci --prefix packaging` (make mcpb does)"
        if os.environ.get("CI"):
            pytest.fail(f"CI runs `make mcpb` before the tests, yet: {reason}")
        pytest.skip(reason)
    return cli


def _bundle_command(root: Path, workspace: Path) -> tuple[str, list[str], dict[str, str]]:
    """The unpacked bundle's mcp_config as Claude Desktop runs it: ${__dirname} and ${user_config.*} filled in."""
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    config = manifest["server"]["mcp_config"]
    values = {"${__dirname}": str(root), "${user_config.workspace}": str(workspace), "${user_config.read_only}": "false"}

    def fill(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        assert "${" not in text, text
        return text

    return fill(config["command"]), [fill(a) for a in config["args"]], {k: fill(v) for k, v in config["env"].items()}


async def test_the_bundle_serves_its_own_wheel_with_no_index_reachable(
    dists: tuple[Path, Path], tmp_path: Path, uvx_env: dict[str, str]
) -> None:
    """The .mcpb, packed as `make mcpb` packs it, carries the wheel; unpacked, its command runs memdex from that
    wheel (memdex-mcp need not be on any index). Once uv's cache holds the dependencies (a first start with the
    index), the same command with UV_OFFLINE=1 and every proxy pointing at a closed port answers MCP over stdio."""
    cli = _mcpb_cli()
    stage = tmp_path / "stage"
    shutil.copytree(ROOT / "packaging" / "mcpb", stage)
    shutil.copy2(dists[0], stage / "server" / WHEEL)
    bundle = tmp_path / f"memdex-{VERSION}.mcpb"
    packed = subprocess.run([str(cli), "pack", str(stage), str(bundle)], capture_output=True, text=True, timeout=300)
    assert packed.returncode == 0, packed.stdout + packed.stderr
    unpacked = tmp_path / "installed bundle"  # a space, as in Claude Desktop's own folders
    with zipfile.ZipFile(bundle) as archive:
        assert f"server/{WHEEL}" in archive.namelist()
        archive.extractall(unpacked)
    assert (unpacked / "server" / WHEEL).read_bytes() == dists[0].read_bytes()
    workspace = tmp_path / "ws"
    shutil.copytree(ROOT / "examples" / "workspace", workspace)
    command, args, env = _bundle_command(unpacked, workspace)
    assert Path(command).name == "uvx"
    uvx = str(Path(find_uv_bin()).with_name("uvx"))
    # The test's Python, so uv need not download one; otherwise the manifest's arguments exactly.
    argv = [uvx, "--python", sys.executable, *args]

    if (reason := _index_unreachable()) is not None:
        pytest.skip(reason)
    first = subprocess.run([*argv[:-3], "--version"], cwd=tmp_path, env=uvx_env, capture_output=True, text=True,
                           timeout=600)  # the first start: dependencies into uv's cache
    assert first.returncode == 0 and first.stdout.strip() == f"memdex {VERSION}", first.stderr[-4000:]

    closed = "http://127.0.0.1:9"  # the discard port: nothing listens
    offline = {**uvx_env, **env, "UV_OFFLINE": "1", "PIP_NO_INDEX": "1", "HTTP_PROXY": closed, "HTTPS_PROXY": closed,
               "ALL_PROXY": closed, "http_proxy": closed, "https_proxy": closed, "all_proxy": closed}
    for key in ("NO_PROXY", "no_proxy"):
        offline.pop(key, None)
    where = subprocess.run([*argv[:-4], "python", "-c", "import memdex.server.cli as m; print(m.__file__)"],
                           cwd=tmp_path, env=offline, capture_output=True, text=True, timeout=300)
    assert where.returncode == 0, where.stderr[-4000:]
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "uv-cache")  # the wheel's copy, not the repository
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=tmp_path, env=offline)
    with anyio.fail_after(180):
        async with Client(params) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            answer = await _search_until_found(client, "PostgreSQL billing service")
            assert answer["results"][0]["path"] == "MEMORY.md"
