"""Several agents in one server, each confined to its own memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from memdex.memory_core import ConfigError, MemoryEngine, load_settings
from memdex.server import build_server


@pytest.fixture
def two_agents(tmp_path: Path) -> dict[str, Path]:
    roots = {}
    for name, secret in (("alice", "AARDVARK77"), ("bob", "ZEBRAFINCH99")):
        root = tmp_path / name
        (root / "memory").mkdir(parents=True)
        (root / "MEMORY.md").write_text(f"# Memory of {name}\n\n- secret {secret}\n", encoding="utf-8")
        roots[name] = root
    return roots


def _settings(roots: dict[str, Path], tmp_path: Path, **extra: object) -> object:
    return load_settings(
        agents=[
            {"name": name, "workspace": str(root), "index_path": str(tmp_path / f"{name}.sqlite")}
            for name, root in roots.items()
        ],
        timezone="UTC",
        **extra,
    )


def _engines(settings: object) -> dict[str, MemoryEngine]:
    return {name: MemoryEngine(s) for name, s in settings.per_agent().items()}  # type: ignore[attr-defined]


async def _synced(engines: dict[str, MemoryEngine]) -> None:
    for engine in engines.values():
        await engine.sync()


async def test_each_tool_takes_an_agent_and_defaults_to_the_first(two_agents: dict[str, Path], tmp_path: Path) -> None:
    """The schema lists the agents; omitting agent means the first one."""
    engines = _engines(_settings(two_agents, tmp_path))
    async with Client(build_server(engines)) as client:
        await _synced(engines)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for tool in tools.values():
            assert tool.input_schema["properties"]["agent"]["anyOf"][0]["enum"] == ["alice", "bob"]
        default = await client.call_tool("memory_search", {"query": "secret"})
        bob = await client.call_tool("memory_search", {"query": "secret", "agent": "bob"})
        unknown = await client.call_tool("memory_search", {"query": "secret", "agent": "carol"})
    assert "AARDVARK77" in default.structured_content["results"][0]["snippet"]
    assert "ZEBRAFINCH99" in bob.structured_content["results"][0]["snippet"]
    assert unknown.is_error


async def test_no_agent_can_search_read_or_write_another_agents_memory(
    two_agents: dict[str, Path], tmp_path: Path
) -> None:
    """Search, get (relative and absolute paths) and append stay inside the named agent's workspace."""
    engines = _engines(_settings(two_agents, tmp_path))
    async with Client(build_server(engines)) as client:
        await _synced(engines)
        leak = await client.call_tool("memory_search", {"query": "ZEBRAFINCH99", "agent": "alice"})
        assert leak.structured_content["results"] == []
        for path in (str(two_agents["bob"] / "MEMORY.md"), "../bob/MEMORY.md"):
            result = await client.call_tool("memory_get", {"path": path, "agent": "alice"})
            assert result.is_error, path
        own = await client.call_tool("memory_get", {"path": "MEMORY.md", "agent": "bob"})
        assert "ZEBRAFINCH99" in own.structured_content["text"]
        written = await client.call_tool(
            "memory_append", {"text": "- bob likes tea", "target": "long_term", "agent": "bob"}
        )
        assert not written.is_error
        found = await client.call_tool("memory_search", {"query": "tea", "agent": "alice"})
        assert found.structured_content["results"] == []
    assert "bob likes tea" in (two_agents["bob"] / "MEMORY.md").read_text(encoding="utf-8")
    assert "tea" not in (two_agents["alice"] / "MEMORY.md").read_text(encoding="utf-8")


async def test_resources_are_named_per_agent(two_agents: dict[str, Path], tmp_path: Path) -> None:
    """Resource URIs carry the agent: memory://<agent>/<path>, memory://<agent>/status."""
    engines = _engines(_settings(two_agents, tmp_path))
    async with Client(build_server(engines)) as client:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        bob = await client.read_resource("memory://bob/MEMORY.md")
        with pytest.raises(MCPError):
            await client.read_resource("memory://alice/../bob/MEMORY.md")
    assert uris == {
        "memory://alice/MEMORY.md", "memory://alice/status", "memory://bob/MEMORY.md", "memory://bob/status",
    }
    assert "ZEBRAFINCH99" in bob.contents[0].text


async def test_a_single_agent_server_has_no_agent_argument(two_agents: dict[str, Path], tmp_path: Path) -> None:
    """With one agent, tool schemas stay as simple as before."""
    settings = load_settings(workspace=two_agents["alice"], index_path=tmp_path / "one.sqlite")
    async with Client(build_server(MemoryEngine(settings))) as client:
        tools = (await client.list_tools()).tools
    assert all("agent" not in tool.input_schema["properties"] for tool in tools)


def test_agents_inherit_top_level_settings_they_do_not_override(tmp_path: Path) -> None:
    settings = load_settings(
        extra_paths=["shared-notes"],
        query={"max_results": 9},
        agents=[
            {"name": "a", "workspace": str(tmp_path / "a")},
            {"name": "b", "workspace": str(tmp_path / "b"), "extra_paths": [], "embedding": {"provider": "none"}},
        ],
    )
    agents = settings.per_agent()
    assert list(agents) == ["a", "b"]
    assert agents["a"].extra_paths == ["shared-notes"] and agents["b"].extra_paths == []
    assert agents["a"].query.max_results == agents["b"].query.max_results == 9
    assert agents["a"].index_file != agents["b"].index_file
    assert agents["b"].embedding.provider == "none"


def test_agent_names_must_be_unique(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="repeated: a"):
        load_settings(agents=[{"name": "a", "workspace": str(tmp_path)}, {"name": "a", "workspace": str(tmp_path)}])


def _config_file(roots: dict[str, Path], tmp_path: Path) -> Path:
    lines = []
    for name, root in roots.items():
        lines += ["[[agents]]", f'name = "{name}"', f'workspace = "{root}"', f'index_path = "{tmp_path / name}.sqlite"']
    path = tmp_path / "agents.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def test_serve_agent_runs_one_agent_over_stdio(two_agents: dict[str, Path], tmp_path: Path) -> None:
    """`memdex serve --agent bob` serves bob alone: no agent argument, only bob's notes."""
    config = _config_file(two_agents, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")} | {"MEMDEX_EMBEDDING__PROVIDER": "none"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memdex.server.cli", "serve", "--config", str(config), "--agent", "bob"], env=env
    )
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        got = await client.call_tool("memory_get", {"path": "MEMORY.md"})
    assert all("agent" not in tool.input_schema["properties"] for tool in tools)
    assert "ZEBRAFINCH99" in got.structured_content["text"]


def test_an_unknown_agent_is_a_clear_cli_error(two_agents: dict[str, Path], tmp_path: Path) -> None:
    config = _config_file(two_agents, tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "memdex.server.cli", "status", "--config", str(config), "--agent", "carol"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "no agent named 'carol'; configured: alice, bob" in result.stderr
