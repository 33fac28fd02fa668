"""Bounded work per request: an argument's cost grows at most with its length, and its length is capped.

A path is refused over :data:`MAX_PATH_CHARS` characters or :data:`MAX_PATH_PARTS` components before any
file is touched, and checking one is linear in its components; a query is refused over
:data:`MAX_QUERY_CHARS`; a query's words that name files cost a lookup each, not a pass over the files.
CPU bounds are generous (the bench measures speed): each is several times under the cost before the fix.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from memdex.memory_core import MemoryEngine
from memdex.memory_core.errors import InputError, PathError
from memdex.memory_core.limits import MAX_PATH_CHARS, MAX_PATH_PARTS, MAX_QUERY_CHARS
from memdex.memory_core.search.named_files import NameIndex
from memdex.memory_core.stores.filters import SearchFilter
from memdex.memory_core.workspace.spelling import as_listed
from memdex.server import build_server

MakeEngine = Callable[..., MemoryEngine]
HUGE_PATH = "a/" * 50_000  # 100 KB: 15-36 s of server CPU before the limits (quadratic in the components)
DEEPEST_FOLDERS = ["f" * 30] * (MAX_PATH_PARTS - 2)  # memory/ and the file name make MAX_PATH_PARTS components


def longest_path(extra_chars: int = 0) -> str:
    """A path under memory/ of exactly ``MAX_PATH_CHARS`` (+ ``extra_chars``) characters and MAX_PATH_PARTS components."""
    folders = "/".join(["memory", *DEEPEST_FOLDERS])
    name_chars = MAX_PATH_CHARS + extra_chars - len(folders) - 1
    return f"{folders}/{'n' * (name_chars - 3)}.md"


@pytest.fixture
def deepest(workspace: Path) -> str:
    """The longest path a memory file may have, written in the workspace."""
    rel = longest_path()
    assert len(rel) == MAX_PATH_CHARS and len(rel.split("/")) == MAX_PATH_PARTS
    (workspace / rel).parent.mkdir(parents=True)
    (workspace / rel).write_text("# deep\n\n- the deepest note\n", encoding="utf-8")
    return rel


@asynccontextmanager
async def connected(make_engine: MakeEngine) -> AsyncIterator[Client]:
    engine = make_engine()
    async with Client(build_server(engine)) as client:
        await engine.sync()
        yield client


def one_line(text: str) -> str:
    assert "\n" not in text and "Traceback" not in text and len(text) < 500, text[:1000]
    return text


async def test_a_100_kb_path_is_refused_in_one_line_without_the_cpu_it_cost(make_engine: MakeEngine) -> None:
    """memory_get with "a/" x 50,000: 15-36 s of CPU and a 100 KB echo before; now a short line at once.

    process_time counts the in-process server's CPU too.
    """
    async with connected(make_engine) as client:
        started = time.process_time()
        result = await client.call_tool("memory_get", {"path": HUGE_PATH})
        spent = time.process_time() - started
    assert result.is_error and f"{MAX_PATH_CHARS:,} characters" in one_line(result.content[0].text)
    assert spent < 2.0, f"{spent:.1f} s of CPU to refuse a 100 KB path"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (longest_path(extra_chars=1), f"at most {MAX_PATH_CHARS:,} characters"),
        ("memory/" + "d/" * (MAX_PATH_PARTS - 1) + "x.md", f"has {MAX_PATH_PARTS + 1} components"),
        (HUGE_PATH, f"at most {MAX_PATH_CHARS:,} characters"),
    ],
    ids=["one-char-too-long", "one-component-too-many", "100-kb"],
)
async def test_every_path_argument_is_refused_over_its_limit_naming_it(
    make_engine: MakeEngine, path: str, expected: str
) -> None:
    """memory_get's path (tool and engine, which the CLI and resources use) and memory_search's pathPrefix."""
    engine = make_engine()
    async with engine:
        with pytest.raises(PathError, match=expected):
            await engine.read(path)
        with pytest.raises(InputError, match=f"pathPrefix .*{expected}"):
            SearchFilter.parse(path_prefix=path)
    async with connected(make_engine) as client:
        for tool, arguments in (("memory_get", {"path": path}), ("memory_search", {"query": "x", "pathPrefix": path})):
            result = await client.call_tool(tool, arguments)
            assert result.is_error and expected in one_line(result.content[0].text)


async def test_the_longest_allowed_path_is_read_and_filtered_on(make_engine: MakeEngine, deepest: str) -> None:
    """A path of exactly the limits still works, as memory_get's path and as pathPrefix."""
    async with connected(make_engine) as client:
        read = await client.call_tool("memory_get", {"path": deepest})
        found = await client.call_tool("memory_search", {"query": "deepest note", "pathPrefix": deepest})
    assert not read.is_error and "the deepest note" in read.structured_content["text"]
    assert not found.is_error and [hit["path"] for hit in found.structured_content["results"]] == [deepest]


def test_spelling_a_path_costs_linear_work_in_its_components(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check handed the file system every prefix of a missing path, from the root, for each component.

    The characters it passes to ``lstat`` for 5,000 and 10,000 components: 25M and 100M before (quadratic),
    a few dozen now. The CPU: 0.18 s, 0.63 s and 2.3 s for 5k, 10k and 20k components before, ~5 ms now.
    """
    handed: list[int] = []
    lstat = os.lstat

    def counting(path: object, *args: object, **kwargs: object) -> os.stat_result:
        handed.append(len(os.fsencode(path)))  # type: ignore[arg-type]
        return lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    work = {}
    for n in (5_000, 10_000):
        handed.clear()
        with monkeypatch.context() as patch:
            patch.setattr(os, "lstat", counting)
            spelled = as_listed(workspace, ["a"] * n)
        work[n] = sum(handed)
        assert spelled == workspace.joinpath(*["a"] * n)
    assert work[10_000] <= 2.5 * work[5_000] and work[10_000] < 100 * len(str(workspace)), work
    started = time.process_time()
    as_listed(workspace, ["a"] * 20_000)
    assert time.process_time() - started < 1.0


async def test_a_1_mb_query_is_refused_in_one_line_naming_the_limit(make_engine: MakeEngine, workspace: Path) -> None:
    """Through the tool (its schema) and the engine (the CLI's search): the limit is named, no work is done."""
    (workspace / "MEMORY.md").write_text("# Memory\n\n- a note\n", encoding="utf-8")
    query = "note/x " * (1_000_000 // 7)
    async with connected(make_engine) as client:
        started = time.process_time()
        result = await client.call_tool("memory_search", {"query": query})
        spent = time.process_time() - started
    assert result.is_error and f"at most {MAX_QUERY_CHARS:,} characters" in one_line(result.content[0].text)
    assert spent < 2.0
    async with make_engine() as engine:
        await engine.sync()
        with pytest.raises(InputError, match=f"query is {len(query.strip()):,} characters; .* at most {MAX_QUERY_CHARS:,}"):
            await engine.search(query)
        answer = await engine.search("note " * (MAX_QUERY_CHARS // 5))
    assert [hit.path for hit in answer.results] == ["MEMORY.md"]


def test_words_naming_paths_cost_a_lookup_each_not_a_pass_over_the_files() -> None:
    """A query at its length limit, all words with a slash, over 50k files: 2.3 s of CPU before, ~0 now."""
    paths = [f"memory/p{i % 100}/n{i}.md" for i in range(50_000)]
    index = NameIndex(paths)
    named = [p for p in paths if p == "memory/p7/n7.md" or p.startswith(("memory/p9/", "memory/p1/"))]
    assert index.naming("p7/n7.md memory/p9/ memory/p1")[0] == named  # a tail, folders (p1 is not p10)
    query = " ".join(f"x/y{i}" for i in range(MAX_QUERY_CHARS // 6))[:MAX_QUERY_CHARS]
    started = time.process_time()
    assert index.naming(query) == ([], [])
    assert time.process_time() - started < 0.5
    # A query that names nothing (nearly all of them) costs its lookups alone: a pass over the 50k paths per
    # query made 2,000 of them take about 6 s (2.7 ms each at 100k chunks in bench/perf.py), 0.02 s without.
    started = time.process_time()
    assert all(index.naming(f"why was the billing n{i}x rolled back") == ([], []) for i in range(2_000))
    assert time.process_time() - started < 0.5


@pytest.mark.parametrize("argument", ["after", "before", "source"])
def test_a_refused_1_mb_filter_argument_is_quoted_back_in_a_few_characters(argument: str) -> None:
    """A refusal names the argument and quotes what it got, cut short: not a 1 MB line back to the model."""
    with pytest.raises(InputError) as refused:
        SearchFilter.parse(**{argument: "x" * 1_000_000})
    assert str(refused.value).startswith(argument) and "(got 'xxx" in one_line(str(refused.value))


@pytest.mark.parametrize("argument", ["date", "timezone"])
async def test_a_refused_1_mb_prompt_argument_is_quoted_back_in_a_few_characters(
    make_engine: MakeEngine, argument: str
) -> None:
    """memory_flush's date and timezone: the same short quote as the tools' refusals."""
    async with connected(make_engine) as client:
        with pytest.raises(MCPError, match="date must look like|unknown timezone") as refused:
            await client.get_prompt("memory_flush", {argument: "x" * 1_000_000})
    one_line(str(refused.value))
