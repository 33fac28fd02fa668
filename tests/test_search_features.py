"""memory_search's features end to end: filters, named files, rerank, the answer budget, explain, abstention.

Everything is real: the SQLite index, the engine, the MCP server through the SDK's in-process client,
the ``memdex`` command as a subprocess, and the reranker as an HTTP server on 127.0.0.1. Hybrid runs
use the deterministic hash provider (tests/fake_provider.py).
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, Seen
from fake_provider import HashFactory
from helpers import eventually, keyword_answer
from mcp import Client

from memdex.memory_core import MemoryEngine
from memdex.memory_core.models import SearchAnswer
from memdex.memory_core.search.named_files import NameIndex
from memdex.memory_core.stores.filters import SearchFilter
from memdex.server import build_server

pytestmark = pytest.mark.both_stores

MakeEngine = Callable[..., MemoryEngine]
WEAK_MATCHES_TOO = {"min_share": 0.0}  # these corpora rank weak one-word matches on purpose: no abstention bar
Write = Callable[[str, str], Path]

QUERY = "kayak paddle river"
STRONG = (
    "# Trip {n}\n\n- Kayak paddle river trip {n}: kayak, paddle and river again.\n- The river kayak paddle held up.\n"
)
DECOYS = [f"memory/other/trip-{n:02}.md" for n in range(1, 41)]  # the unfiltered top, all outside every filter
IN_RANGE = [f"memory/2026-02-{day:02}.md" for day in range(1, 9)]  # weak matches: kayak and river only
AFTER, BEFORE = "2026-02-01", "2026-02-08"
BORDERS = ["memory/2026-01-31.md", "memory/2026-02-09.md"]  # strong matches one day outside the range
PROJECTS = [f"memory/projects/p{n}.md" for n in range(1, 7)]  # weak matches: paddle and river only
LOOKALIKE = "memory/projects-archive/trip.md"  # a strong match that only shares the prefix's spelling
TRANSCRIPTS = [f"s{n}.jsonl" for n in range(1, 7)]  # weak matches: kayak and river only
DATED_LOG = "memory/2026-01-15.md"
NUMBERED = "memory/148.md"
LONG_TERM = "MEMORY.md"
GIBBERISH = "qzxv wplk"
HIT_LINE = re.compile(r"^\d\.\d{3}  (\S+):(\d+)-(\d+)$")  # the CLI's line per hit: score, path:lines


def _transcript(*messages: tuple[str, str]) -> str:
    return "".join(json.dumps({"role": role, "content": text}) + "\n" for role, text in messages)


@pytest.fixture
def corpus(write: Write, sessions_dir: Path) -> None:
    """40 strong matches for QUERY outside every filter below, and weak ones inside each filter."""
    for n, rel in enumerate(DECOYS, start=1):
        write(rel, STRONG.format(n=n))
    for rel in BORDERS:
        write(rel, STRONG.format(n=rel[-8:-3]))
    write(LOOKALIKE, STRONG.format(n="archive"))
    for rel in IN_RANGE:
        write(rel, f"# {rel[7:17]}\n\n- Groceries, laundry and a call to the bank.\n- Saw a kayak near the river.\n")
    for n, rel in enumerate(PROJECTS, start=1):
        write(rel, f"# Project {n}\n\n- Budget review with a paddle maker down by the river.\n")
    for n, name in enumerate(TRANSCRIPTS, start=1):
        text = _transcript(("user", f"Did you see kayak number {n} on the river?"), ("assistant", "Yes, by the dock."))
        (sessions_dir / name).write_text(text, encoding="utf-8")
    write(LONG_TERM, "# Long-term\n\n- Owns an old kayak.\n")
    write(DATED_LOG, "- Dentist at noon, then drove past the kayak shop.\n")
    write(NUMBERED, "- Spare kayak parts list.\n")


def _engine(make_engine: MakeEngine, sessions_dir: Path, mode: str, **overrides: Any) -> MemoryEngine:
    """An engine over the corpus with transcripts on: keyword-only, or hybrid with the hash provider."""
    sessions = {"enabled": True, "dir": sessions_dir}
    if mode == "hybrid":
        return make_engine(provider_factory=HashFactory(), sessions=sessions, **overrides)
    return make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO, sessions=sessions, **overrides)


@asynccontextmanager
async def connected(engine: MemoryEngine) -> AsyncIterator[Client]:
    """An in-process MCP client on a synced index (opened in the test's own task, as anyio requires)."""
    async with Client(build_server(engine)) as client:
        await synced(engine)
        yield client


async def synced(engine: MemoryEngine) -> None:
    """Sync the index; with a provider, also wait until searches use its vectors from the RAM copy."""
    await engine.sync()
    if (await engine.status()).provider is not None:  # a provider_factory serves vectors whatever the setting says

        async def ready() -> bool:  # in RAM too: a search answered by sqlite-vec may order ties otherwise
            scans_its_own = engine.settings.store.backend == "postgres"  # no RAM copy to wait for
            return engine.vectors_ready and (scans_its_own or await engine.vectors_in_ram())

        await eventually(ready, "the vectors, in RAM")


async def _search(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("memory_search", arguments)
    assert not result.is_error, result.content[0].text
    answer = result.structured_content
    assert answer is not None
    return answer


async def _refused(client: Client, **arguments: Any) -> str:
    """The text of a tool error, checked to be a readable message rather than a crash."""
    result = await client.call_tool("memory_search", arguments)
    assert result.is_error, result.structured_content
    text = result.content[0].text
    assert "Traceback" not in text and "memdex failed internally" not in text, text
    return text


def _paths(answer: SearchAnswer | dict[str, Any]) -> list[str]:
    if isinstance(answer, SearchAnswer):
        return [hit.path for hit in answer.results]
    return [hit["path"] for hit in answer["results"]]


# 1. Filters apply before the candidate limit ----------------------------------------------------


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_a_filtered_search_fills_max_results_from_beyond_the_unfiltered_top(
    corpus: None, make_engine: MakeEngine, sessions_dir: Path, mode: str
) -> None:
    """Each side takes 5 x 4 = 20 candidates; the 43 strong matches outside the filter fill any unfiltered
    top 20, so a filter applied after the cut would leave nothing. Applied before, it fills all 5 places."""
    async with _engine(make_engine, sessions_dir, mode) as engine:
        await synced(engine)
        unfiltered = await engine.search(QUERY, max_results=5)
        assert unfiltered.mode == mode
        assert set(_paths(unfiltered)) <= {*DECOYS, *BORDERS, LOOKALIKE}  # the premise: the top is all decoys

        dated = await engine.search(QUERY, max_results=5, where=SearchFilter.parse(AFTER, BEFORE), explain=True)
        assert dated.mode == mode and dated.warning is None
        assert len(dated.results) == 5 and set(_paths(dated)) <= set(IN_RANGE), _paths(dated)
        for hit in dated.results:  # both sides ranked the allowed chunks, not the survivors of their top 20
            assert hit.explain is not None and hit.explain.keyword_rank is not None
            if mode == "hybrid":
                assert hit.explain.vector_rank is not None, hit.path

        whole_range = await engine.search(QUERY, max_results=10, where=SearchFilter.parse(AFTER, BEFORE))
        assert sorted(_paths(whole_range)) == IN_RANGE  # both bounds inclusive; the days beside them left out

        under = await engine.search(QUERY, max_results=5, where=SearchFilter.parse(path_prefix="memory/projects/"))
        assert len(under.results) == 5 and set(_paths(under)) <= set(PROJECTS), _paths(under)

        sessions = await engine.search(QUERY, max_results=5, where=SearchFilter.parse(source="sessions"))
        assert len(sessions.results) == 5, _paths(sessions)
        assert {hit.source for hit in sessions.results} == {"sessions"}
        assert all(path.startswith("sessions/") for path in _paths(sessions))


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_the_tools_filter_arguments_fill_max_results_inside_the_filter(
    corpus: None, make_engine: MakeEngine, sessions_dir: Path, mode: str
) -> None:
    async with connected(_engine(make_engine, sessions_dir, mode)) as client:
        dated = await _search(client, query=QUERY, maxResults=5, after=AFTER, before=BEFORE)
        assert dated["mode"] == mode
        assert len(dated["results"]) == 5 and set(_paths(dated)) <= set(IN_RANGE), _paths(dated)

        under = await _search(client, query=QUERY, maxResults=5, pathPrefix="memory/projects")
        assert len(under["results"]) == 5 and set(_paths(under)) <= set(PROJECTS), _paths(under)

        sessions = await _search(client, query=QUERY, maxResults=5, source="sessions")
        assert len(sessions["results"]) == 5 and {hit["source"] for hit in sessions["results"]} == {"sessions"}

        both = await _search(
            client, query=QUERY, maxResults=5, after=AFTER, before=BEFORE, pathPrefix="memory/projects"
        )
        assert both["results"] == []  # filters combine with AND: no daily log lies under memory/projects
        assert "nothing in memory matches this query within the filter" in (both["warning"] or "")


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        ({"after": "yesterday"}, ["after", "'yesterday'", "2026-01-31"]),
        ({"before": "2026-02-30"}, ["before", "'2026-02-30'"]),
        ({"after": BEFORE, "before": AFTER}, ["after", "later than before", "swap"]),
        ({"pathPrefix": "/etc"}, ["pathPrefix", "relative"]),
        ({"pathPrefix": "../"}, ["pathPrefix '..'", "outside the workspace and holds no memory files"]),
    ],
)
async def test_a_bad_filter_argument_is_a_one_line_tool_error_naming_it(
    corpus: None, make_engine: MakeEngine, sessions_dir: Path, arguments: dict[str, str], fragments: list[str]
) -> None:
    async with connected(_engine(make_engine, sessions_dir, "keyword")) as client:
        text = await _refused(client, query=QUERY, **arguments)
        assert "\n" not in text.strip(), text
        for fragment in fragments:
            assert fragment in text, text


def _memdex(workspace: Path, index: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``memdex search`` as a subprocess, keyword-only (the environment conftest set up)."""
    command = [sys.executable, "-m", "memdex.server.cli", "search", "--workspace", str(workspace), "--index", str(index)]
    env = {**os.environ, "MEMDEX_EMBEDDING__PROVIDER": "none"}
    return subprocess.run([*command, *arguments], env=env, capture_output=True, text=True, timeout=120)


def _cli_hits(stdout: str) -> list[tuple[str, list[str]]]:
    """Each hit the CLI printed: its path and the lines under it up to the next hit."""
    hits: list[tuple[str, list[str]]] = []
    for line in stdout.splitlines():
        match = HIT_LINE.match(line)
        if match:
            hits.append((match[1], []))
        elif hits:
            hits[-1][1].append(line)
    return hits


def test_the_cli_filters_explains_and_refuses_a_bad_date_in_one_line(
    corpus: None, workspace: Path, tmp_path: Path
) -> None:
    index = tmp_path / "cli-idx.sqlite"
    dated = _memdex(workspace, index, "--after", AFTER, "--before", BEFORE, "--path", "memory", "-n", "5", QUERY)
    assert dated.returncode == 0, dated.stderr
    hits = _cli_hits(dated.stdout)
    assert len(hits) == 5 and {path for path, _ in hits} <= set(IN_RANGE), dated.stdout

    explained = _memdex(workspace, index, "--path", "memory/projects", "--explain", "-n", "5", QUERY)
    assert explained.returncode == 0, explained.stderr
    hits = _cli_hits(explained.stdout)
    assert len(hits) == 5 and {path for path, _ in hits} <= set(PROJECTS), explained.stdout
    for path, lines in hits:  # the why: line comes first, then the indented snippet
        assert lines and lines[0].startswith("       why: keyword #"), (path, lines)
        assert "snippet: " in lines[0]
        assert sum(line.lstrip().startswith("why:") for line in lines) == 1

    refused = _memdex(workspace, index, "--after", "yesterday", QUERY)
    assert refused.returncode != 0
    assert refused.stdout == ""
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert refused.stderr.startswith("memdex: after must be a date like 2026-01-31"), refused.stderr
    assert "Traceback" not in refused.stderr


# 2. Named files rank first ---------------------------------------------------------------------


async def test_a_named_file_ranks_first_and_is_marked_so(
    corpus: None, make_engine: MakeEngine, sessions_dir: Path
) -> None:
    """The named files match QUERY's words weakly (one word of three), so only the naming lifts them."""
    async with connected(_engine(make_engine, sessions_dir, "keyword")) as client:
        plain = await _search(client, query=QUERY, maxResults=10, explain=True)
        assert not {DATED_LOG, LONG_TERM, NUMBERED} & set(_paths(plain)[:3])
        assert not any(hit["explain"]["namedFile"] for hit in plain["results"])

        for query, named in [(f"{QUERY} 2026-01-15", DATED_LOG), (f"what did the MEMORY say about {QUERY}", LONG_TERM)]:
            answer = await _search(client, query=query, maxResults=10, explain=True)
            top, *rest = answer["results"]
            assert top["path"] == named, (query, _paths(answer))
            assert top["explain"]["namedFile"] is True
            assert not any(hit["explain"]["namedFile"] for hit in rest), query
            assert [hit["path"] for hit in rest].count(named) == 0

        for query, unnamed in [(f"what did memory say about {QUERY}", LONG_TERM), (f"148 {QUERY}", NUMBERED)]:
            answer = await _search(client, query=query, maxResults=10, explain=True)
            assert answer["results"][0]["path"] != unnamed, (query, _paths(answer))
            assert not any(hit["explain"]["namedFile"] for hit in answer["results"]), query
    # The rule itself, where the memory/ folder does not hold most files (which would hide a case slip):
    others = ["notes/a.md", "notes/b.md", "notes/c.md"]
    assert NameIndex([LONG_TERM, *others]).naming("what does memory say")[0] == []
    assert NameIndex([LONG_TERM, *others]).naming("what does MEMORY say")[0] == [LONG_TERM]
    assert NameIndex(["notes/148.md", *others]).naming("the 148 parts")[0] == []


async def test_a_folder_is_named_by_its_path_not_by_the_word_alone(make_engine: MakeEngine, write: Write) -> None:
    """"projects" is a word as often as a folder: it put the folder's notes, on whatever topic, before every
    answer to a question that held the word (a folder of fewer than half the files)."""
    logs = [f"memory/2026-03-0{n}.md" for n in range(1, 5)]
    projects = [f"memory/projects/p{n}.md" for n in range(1, 4)]
    for rel in logs:
        write(rel, STRONG.format(n=rel[7:17]))
    for rel in projects:
        write(rel, "# Budget\n\n- Review the budget with the bank.\n- The river office pays.\n")
    async with make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO) as engine:
        await engine.sync()
        for query in (f"{QUERY} projects", f"what do the projects say about {QUERY}"):
            answer = await engine.search(query, max_results=7, explain=True)
            assert set(_paths(answer)[:4]) == set(logs), (query, _paths(answer))
            assert not any(hit.explain and hit.explain.named_file for hit in answer.results), query
        for query in (f"{QUERY} in projects/", f"{QUERY} in memory/projects"):
            answer = await engine.search(query, max_results=7, explain=True)
            assert set(_paths(answer)[:3]) == set(projects), (query, _paths(answer))
            assert all(hit.explain and hit.explain.named_file for hit in answer.results[:3]), query
    assert NameIndex([*projects, *logs]).naming("notes on projects")[0] == []
    assert NameIndex([*projects, LOOKALIKE, *logs]).naming("projects/ notes")[0] == projects  # a folder, not a prefix of a name


async def test_a_long_named_file_ranks_its_chunks_that_answer_first(make_engine: MakeEngine, write: Write) -> None:
    """The chunks of a named file that answer the rest of the query come first, wherever they are in it:
    before, the file's first chunks did (24 of 40, none of them about the heron)."""
    topics = [f"## Topic {n}\n\n" + "".join(f"- Filler line {n}.{i} about the garden shed.\n" for i in range(40)) for n in range(40)]
    topics[35] = "## Birds\n\n- A heron stood in the pond by the boathouse.\n"
    write(LONG_TERM, "# Long-term\n\n" + "\n".join(topics))
    write("memory/birds.md", "# Heron\n\n- Heron, heron: a grey heron at the pond.\n")  # the best match unnamed
    async with make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO) as engine:
        await engine.sync()
        assert (await engine.status()).chunks > 40
        unnamed = await engine.search("heron pond")
        assert _paths(unnamed)[0] == "memory/birds.md"
        named = await engine.search("what did MEMORY say about the heron pond")
        top = named.results[0]
        assert top.path == LONG_TERM and "heron" in top.snippet, [(hit.path, hit.start_line) for hit in named.results]
        whole = await engine.search("MEMORY")  # a query of names alone: the file from its start
        assert [(hit.path, hit.start_line) for hit in whole.results][0] == (LONG_TERM, 1)


# 3. Rerank -------------------------------------------------------------------------------------

MARKER = "heron"
RERANK_FILES = {
    "memory/a.md": "- Kayak paddle river: the kayak, the paddle, the river.\n",
    "memory/b.md": "- Kayak and paddle down the river.\n",
    "memory/c.md": "- Kayak and paddle in the garage.\n",
    "memory/d.md": "- A kayak on the roof.\n",
    "memory/e.md": f"- A {MARKER} watched the kayak from the far bank of the pond all morning long.\n"
    "- Then it flew off over the reeds, past the old boathouse and the broken fence.\n",
}
HERON = "memory/e.md"


class MarkerReranker(FakeOpenAI):
    """FakeOpenAI plus ``POST /rerank``: a document holding MARKER scores 1, every other 0."""

    def _default(self, seen: Seen) -> Reply:
        if seen.method != "POST" or seen.path != "/rerank":
            return super()._default(seen)
        documents = seen.json()["documents"]
        return Reply(
            body={"results": [{"index": i, "relevance_score": float(MARKER in d)} for i, d in enumerate(documents)]}
        )


@pytest.fixture
def reranker() -> Iterator[MarkerReranker]:
    server = MarkerReranker()
    yield server
    server.close()


async def _fused_order(make_engine: MakeEngine, write: Write) -> list[str]:
    """The order without a reranker, on the same index; the marked file must come last in it."""
    for rel, text in RERANK_FILES.items():
        write(rel, text)
    async with make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO) as engine:
        await synced(engine)
        order = _paths(await engine.search(QUERY, max_results=10))
    assert sorted(order) == sorted(RERANK_FILES) and order[-1] == HERON, order
    return order


@asynccontextmanager
async def _closes_cleanly(engine: MemoryEngine) -> AsyncIterator[MemoryEngine]:
    """The engine, checked after closing: its reranker's HTTP client is closed and nothing leaks."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with engine:
            assert engine.searcher.reranker is not None
            client = engine.searcher.reranker._client
            yield engine
        assert engine.searcher.reranker is None and client.is_closed
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]


async def test_the_rerankers_order_wins_and_explain_shows_its_places(
    make_engine: MakeEngine, write: Write, reranker: MarkerReranker
) -> None:
    fused = await _fused_order(make_engine, write)
    engine = make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO, rerank={"provider": "http", "base_url": reranker.url})
    async with _closes_cleanly(engine), Client(build_server(engine)) as client:
        await synced(engine)
        answer = await _search(client, query=QUERY, maxResults=10, explain=True)
    assert _paths(answer) == [HERON, *fused[:-1]]  # the marked file first, the ties in fused order
    assert [hit["explain"]["rerankRank"] for hit in answer["results"]] == list(range(1, len(fused) + 1))
    assert answer["warning"] is None
    [request] = [seen for seen in reranker.requests if seen.path == "/rerank"]
    documents = request.json()["documents"]
    assert len(documents) == len(fused) and MARKER in documents[-1]  # it was sent the fused order
    assert request.json()["query"] == QUERY


@pytest.mark.parametrize(
    ("reply", "warning"),
    [
        (Reply(delay=5, body={"results": []}), r"the reranker took over 0\.3s; results are in fused order"),
        (
            Reply(500, {"error": {"message": "model not loaded"}}),
            r"the reranker failed \(HTTP 500 from the reranker at http://127\.0\.0\.1:\d+/v1/rerank: .*model not loaded.*\); "
            r"results are in fused order",
        ),
    ],
    ids=["slow", "http-500"],
)
async def test_a_slow_or_failing_reranker_keeps_the_fused_order_with_a_warning(
    make_engine: MakeEngine, write: Write, reranker: MarkerReranker, reply: Reply, warning: str
) -> None:
    fused = await _fused_order(make_engine, write)
    reranker.script("/rerank", reply)
    rerank = {"provider": "http", "base_url": reranker.url, "timeout": 0.3}
    async with _closes_cleanly(make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO, rerank=rerank)) as engine:
        await synced(engine)
        started = time.monotonic()
        answer = await engine.search(QUERY, max_results=10, explain=True)
        assert time.monotonic() - started < 3  # the 5 s reply is not waited for
    assert _paths(answer) == fused
    assert answer.warning is not None and re.fullmatch(warning, answer.warning), answer.warning
    assert all(hit.explain is not None and hit.explain.rerank_rank is None for hit in answer.results)
    assert [seen.path for seen in reranker.requests].count("/rerank") == 1


# 4. The answer's budget through the tool -------------------------------------------------------

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"


@pytest.fixture
def long_notes(write: Write) -> None:
    """60 files of long chunks, every line a match: far more snippet text than any budget."""
    for n in range(60):
        write(f"memory/n{n:02}.md", "".join(f"- harvest line {i} of note {n}: {FILLER}\n" for i in range(24)))


@pytest.mark.parametrize("max_chars", [200, 12_000])
async def test_max_chars_at_its_bounds_is_accepted(long_notes: None, make_engine: MakeEngine, max_chars: int) -> None:
    async with connected(make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO)) as client:
        answer = await _search(client, query="harvest", maxResults=50, maxChars=max_chars)
        assert answer["results"] and sum(len(hit["snippet"]) for hit in answer["results"]) <= max_chars


@pytest.mark.parametrize(("max_chars", "bound"), [(199, "200"), (12_001, "12000")])
async def test_max_chars_out_of_bounds_is_refused_naming_it(
    long_notes: None, make_engine: MakeEngine, max_chars: int, bound: str
) -> None:
    async with connected(make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO)) as client:
        text = await _refused(client, query="harvest", maxChars=max_chars)
        assert "maxChars" in text and bound in text, text


@pytest.mark.parametrize("max_chars", [199, 12_001])
async def test_max_chars_out_of_bounds_is_a_one_line_error(
    long_notes: None, make_engine: MakeEngine, max_chars: int
) -> None:
    async with connected(make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO)) as client:
        text = await _refused(client, query="harvest", maxChars=max_chars)
        assert "\n" not in text.strip(), text


async def _full_budget(client: Client, explain: bool = False) -> tuple[Any, dict[str, Any]]:
    arguments = {"query": "harvest", "maxResults": 50, "maxChars": 12_000, "explain": explain}
    result = await client.call_tool("memory_search", arguments)
    assert not result.is_error and result.structured_content is not None
    return result, result.structured_content


async def test_a_full_budget_answer_keeps_its_snippets_within_max_chars_and_counts_the_rest(
    long_notes: None, make_engine: MakeEngine
) -> None:
    async with connected(make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO)) as client:
        _, answer = await _full_budget(client)
    hits, left_out = answer["results"], answer["leftOut"]
    assert sum(len(hit["snippet"]) for hit in hits) <= 12_000
    assert all(len(hit["snippet"]) <= 700 for hit in hits)
    assert left_out > 0 and len(hits) + left_out == 50  # 60 matching files: 50 ranked, the rest counted
    assert f"{left_out} more result(s) left out to keep within maxChars=12000" in (answer["warning"] or "")


@pytest.fixture
def short_notes(write: Write) -> None:
    """60 one-line notes of about 200 characters, every one a match: 50 of them fit 12,000 characters of snippets,
    but not the fields each result carries beside its snippet."""
    for n in range(60):
        write(f"memory/n{n:02}.md", f"- harvest note {n}: " + " ".join(["grain"] * 30) + "\n")


@pytest.fixture
def escaped_notes(write: Write) -> None:
    """60 one-line notes of quotes and backslashes (Windows paths, JSON), which JSON inside JSON sends at four times
    their length."""
    for n in range(60):
        write(f"memory/n{n:02}.md", f"- harvest note {n}: " + '\\"' * 90 + "\n")


@pytest.mark.parametrize("explain", [False, True])
@pytest.mark.parametrize("notes", ["long_notes", "short_notes", "escaped_notes"])
async def test_a_full_budget_tool_result_stays_under_40000_characters(
    notes: str, explain: bool, request: pytest.FixtureRequest, make_engine: MakeEngine
) -> None:
    """Whatever the notes hold, explained or not: 50 short results once made 42,781 characters (43,548
    explained), and notes of quotes and backslashes 60,348, past what hosts accept."""
    request.getfixturevalue(notes)
    async with connected(make_engine(embedding={"provider": "none"}, query=WEAK_MATCHES_TOO)) as client:
        result, answer = await _full_budget(client, explain=explain)
    blocks = json.dumps([block.model_dump(mode="json", by_alias=True) for block in result.content], ensure_ascii=False)
    whole = blocks + json.dumps(answer, ensure_ascii=False)
    assert len(whole) < 40_000, (len(blocks), len(whole) - len(blocks))
    assert all((hit["explain"] is not None) == explain for hit in answer["results"])
    assert answer["leftOut"] > 0 and len(answer["results"]) + answer["leftOut"] == 50
    assert f"{answer['leftOut']} more result(s) left out" in (answer["warning"] or "")


# 5. Explain ------------------------------------------------------------------------------------


async def test_explain_gives_each_hit_its_places_and_snippet_reason_only_when_asked(
    corpus: None, make_engine: MakeEngine, sessions_dir: Path
) -> None:
    async with connected(_engine(make_engine, sessions_dir, "hybrid")) as client:
        explained = await _search(client, query=QUERY, maxResults=8, explain=True)
        plain = await _search(client, query=QUERY, maxResults=8)
    assert explained["mode"] == "hybrid" and len(explained["results"]) == 8
    for hit in explained["results"]:
        why = hit["explain"]
        assert set(why) >= {"keywordRank", "vectorRank", "namedFile", "decay", "rerankRank", "snippet"}
        # a place on a side exactly when that side scored the hit
        assert (why["keywordRank"] is None) == (hit["textScore"] is None), hit
        assert (why["vectorRank"] is None) == (hit["vectorScore"] is None), hit
        assert isinstance(why["snippet"], str) and why["snippet"], hit
        assert why["namedFile"] is False and why["rerankRank"] is None and why["decay"] is None
    top = explained["results"][0]["explain"]
    assert isinstance(top["keywordRank"], int) and isinstance(top["vectorRank"], int)
    assert explained["results"][0]["explain"]["snippet"] == "the whole chunk (it fits)"
    assert _paths(plain) == _paths(explained), [[(h["path"], h["score"], h["textScore"], h["vectorScore"], h["startLine"]) for h in a["results"]] for a in (plain, explained)]
    assert all(hit["explain"] is None for hit in plain["results"])


# 6. Abstention ---------------------------------------------------------------------------------


async def test_gibberish_finds_nothing_in_keyword_mode(
    corpus: None, make_engine: MakeEngine, sessions_dir: Path
) -> None:
    async with _engine(make_engine, sessions_dir, "keyword") as engine:
        await synced(engine)
        answer = await engine.search(GIBBERISH)
        filtered = await engine.search(GIBBERISH, where=SearchFilter.parse(AFTER, BEFORE))
    assert answer.mode == "keyword" and answer.index_status.chunks > 0
    assert answer.results == [] and "nothing in memory matches this query" in (answer.warning or "")
    assert filtered.results == [] and "nothing in memory matches this query within the filter" in (
        filtered.warning or ""
    )


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("others", [0, 12], ids=["one note", "thirteen notes"])
async def test_a_word_finds_the_note_that_holds_another_form_of_it(
    make_engine: MakeEngine, write: Write, others: int, mode: str
) -> None:
    """FTS5's porter stemmer finds "databases" for "database", and memdex then said "nothing in memory matches":
    its abstention held a word by a cruder stem, in a memory of one note (where it scores BM25 itself) as in a
    larger one."""
    write(LONG_TERM, "# Memory\n\n- We moved all databases to the new cluster.\n- Sarah decided to archive the old invoices.\n")
    for n in range(others):
        write(f"memory/2026-03-{n + 1:02}.md", f"- Walked the dog, day {n}.\n")
    engine = make_engine(provider_factory=HashFactory()) if mode == "hybrid" else make_engine(embedding={"provider": "none"})
    async with engine:
        await synced(engine)
        for query in ("database", "invoice", "when did Sarah decide"):
            answer = await engine.search(query)
            assert answer.mode == mode
            assert [hit.path for hit in answer.results] == [LONG_TERM], (query, answer.warning)
            assert (answer.results[0].text_score or 0.0) > 0.5, query
        other = await engine.search("quantum chromodynamics")
    assert other.results == [] and "nothing in memory matches this query" in (other.warning or "")


async def test_a_note_that_holds_only_a_word_of_the_same_root_is_no_hit(make_engine: MakeEngine, write: Write) -> None:
    """FTS5's porter stems take "informal" for "information"; memdex's scores do not, and in a small memory, where
    the word is in most notes and FTS5 weighs it at 1e-6, the lunch note was shown with a score of 0.000."""
    write(LONG_TERM, "# Memory\n\n- Dana wants information before any offsite.\n")
    write("memory/2026-11-18.md", "# 2026-11-18\n\n- Sent the information pack to legal.\n")
    write("memory/2026-11-19.md", "# 2026-11-19\n\n- Informal lunch with Sam at the canteen.\n")
    write("memory/2026-11-20.md", "# 2026-11-20\n\n- Load test: 450 req/s on staging.\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        answer = await engine.search("information pack")
    assert [hit.path for hit in answer.results] == ["memory/2026-11-18.md", LONG_TERM], answer
    assert all((hit.text_score or 0.0) > 0.1 for hit in answer.results), answer


DAILY_NOTES = {  # a month of one-line notes, as memory is written: the billing decision is one line among them
    "memory/2026-09-14.md": "- Chose PostgreSQL 17 as the billing database: its logical replication feeds the reports.\n",
    "memory/2026-09-15.md": "- The search service caches its results in Redis for an hour.\n- Dana reviewed the onboarding flow.\n",
    "memory/2026-09-16.md": "- Billing emails the invoices on the first day of each month.\n- Lukas rotated the backup keys.\n",
    "memory/2026-09-17.md": "- The analytics database moved to the new cluster.\n- Standup is at 10:00 from now on.\n",
    "memory/2026-09-18.md": "- Every service logs to Loki; alerts go to the on-call channel.\n",
    "memory/2026-09-19.md": "- Dana asked for written proposals before any meeting about pricing.\n",
}
def _write_logs(write: Write, notes: dict[str, str]) -> None:
    """Write each daily log of ``notes`` (path: lines) under a heading of its date."""
    for path, text in notes.items():
        write(path, f"# {Path(path).stem}\n\n{text}")


LONG_QUESTIONS = (
    "what did we decide about the database for the billing service and why?",
    "remind me what we decided about which database the billing service should use, who chose it, what the "
    "alternatives were and why we went with it in the end",
)


@pytest.mark.parametrize("asked", LONG_QUESTIONS, ids=["the issue's question", "a thirty-word question"])
async def test_a_long_question_ranks_first_the_one_line_note_that_answers_it(
    make_engine: MakeEngine, write: Write, asked: str
) -> None:
    """Long questions over short notes: the note that holds the question's two rarest words ("billing",
    "database") is answered first, though it holds a small share of a long question's words; the notes that
    hold one of them follow it with lower scores, and a question as long on another topic gets nothing."""
    _write_logs(write, DAILY_NOTES)
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        answer = await engine.search(asked)
        other = await engine.search(
            "which recipe did grandma use for the apple pie she baked at the family reunion by the lake last summer?"
        )
    paths = [hit.path for hit in answer.results]
    assert paths[0] == "memory/2026-09-14.md", answer.warning
    assert {"memory/2026-09-16.md", "memory/2026-09-17.md"} <= set(paths[1:])  # "billing" alone, "database" alone
    scores = [hit.score for hit in answer.results]
    assert scores[0] > scores[1] and scores[0] < 1.0, scores
    assert other.results == [] and "nothing in memory matches this query" in (other.warning or "")


async def _search_the_month(make_engine: MakeEngine, write: Write, asked: str, also: tuple[str, str]) -> SearchAnswer:
    """The keyword-only answer to ``asked`` from :data:`DAILY_NOTES` and one more file (``also``: path, text)."""
    _write_logs(write, DAILY_NOTES)
    write(*also)
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        return await engine.search(asked)


@pytest.mark.parametrize(
    ("asked", "answer"),
    [("can you tell me when the invoices are due?", "memory/2026-09-16.md"),
     ("what did I mention about Loki?", "memory/2026-09-18.md")],
    ids=["tell me", "mention"],
)  # fmt: skip
async def test_a_question_is_answered_by_what_it_asks_for_not_by_the_word_that_frames_it(
    make_engine: MakeEngine, write: Write, asked: str, answer: str
) -> None:
    """In a small memory a note that says "tell" or "mention" is as rare as the one about invoices: the framing
    word ranked it first, or level with the answer."""
    also = (LONG_TERM, "# Memory\n\n- Tell Dana about outages at once.\n- Mention the release in every standup.\n")
    found = await _search_the_month(make_engine, write, asked, also)
    assert [hit.path for hit in found.results][:1] == [answer], found.warning
    assert LONG_TERM not in [hit.path for hit in found.results]


@pytest.mark.parametrize(
    ("asked", "answer"),
    [("standup time", "memory/2026-09-17.md"),
     ("when do the invoices go out?", "memory/2026-09-16.md")],
    ids=["time", "go"],
)  # fmt: skip
async def test_in_a_small_memory_a_common_english_word_weighs_less_than_the_rare_one_beside_it(
    make_engine: MakeEngine, write: Write, asked: str, answer: str
) -> None:
    """In seven notes "time" and "go" are each in one note, as rare as "standup" and "invoices": the note that
    said "last time" or "alerts go" ranked first, or level with the answer. Everyday English weighs them now."""
    also = ("memory/2026-09-20.md", "# 2026-09-20\n\n- The pricing meeting went badly, like last time.\n")
    found = await _search_the_month(make_engine, write, asked, also)
    assert [hit.path for hit in found.results][:1] == [answer], found.warning
    assert found.results[0].score > found.results[1].score, [(hit.path, hit.score) for hit in found.results]


NAMED_THINGS = {  # each name the second and third notes hold in parts, the first written together
    LONG_TERM: "# Memory\n\n- Ask Jonas before touching libs/auth/jwt.py: he wrote the key rotation.\n",
    "memory/2026-03-03.md": "# 2026-03-03\n\n- The auth service logs JWT errors through libs/logging/setup.py; py-spy "
    "showed the hot loop in the auth libs.\n",
    "memory/2026-03-04.md": "# 2026-03-04\n\n- Moved the staging database to pg-prod-02's old disk; pg-prod-01 stays the "
    "primary.\n- Dana set the prod alert threshold to 2% for the pg exporter.\n",
    "memory/2026-03-05.md": "# 2026-03-05\n\n- The pg exporter on prod scrapes every 01 minute; alerts page Dana.\n- "
    "pg-prod-03 is the analytics replica.\n",
}


@pytest.mark.parametrize(
    ("asked", "answer"),
    [("libs/auth/jwt.py", LONG_TERM),
     ("pg-prod-01", "memory/2026-03-04.md"),
     ("jwt.py", LONG_TERM)],
    ids=["path", "host", "file"],
)  # fmt: skip
async def test_a_name_written_joined_ranks_first_the_note_that_writes_it_so(
    make_engine: MakeEngine, write: Write, asked: str, answer: str
) -> None:
    """A path or a host name is words joined by / . or -; its words searched apart ranked first the note that
    holds them all apart, more often ("libs", "auth", "py"; "pg", "prod", "01"). The name is also searched as
    the phrase it is."""
    found = await keyword_answer(make_engine, write, NAMED_THINGS, asked)
    assert [hit.path for hit in found.results][:1] == [answer], [(hit.path, hit.score) for hit in found.results]
    assert found.results[0].score - found.results[1].score > 0.05, [(hit.path, hit.score) for hit in found.results]


ACRONYMS = {  # the acronyms are in the first note; the logs write the same letters as everyday words
    LONG_TERM: "# Work\n\n- IT helpdesk: Marco, ext. 4410.\n- The US office is in Austin.\n- Bought a UPS for the NAS.\n",
    "memory/2026-10-01.md": "# 2026-10-01\n\n- Dana wants us to ship it before the freeze; it is on us to write it up.\n",
    "memory/2026-10-02.md": "# 2026-10-02\n\n- Let us move it: it clashes with the review. Backed up the laptop.\n",
}


@pytest.mark.parametrize("asked", ["who is IT?", "anything about the US?", "how much was the UPS?"])
async def test_an_acronym_that_reads_as_a_word_ranks_first_the_note_that_writes_it_in_capitals(
    make_engine: MakeEngine, write: Write, asked: str
) -> None:
    """FTS5 folds case, and porter folds "UPS" into "up": "who is IT?" ranked first the logs that say "it" most
    often, "how much was the UPS?" the log that says "backed up". The index marks such acronyms."""
    found = await keyword_answer(make_engine, write, ACRONYMS, asked)
    assert [hit.path for hit in found.results][:1] == [LONG_TERM], [(hit.path, hit.score) for hit in found.results]


async def test_an_acronym_no_note_writes_in_capitals_is_asked_as_its_word(make_engine: MakeEngine, write: Write) -> None:
    notes = {"memory/2026-10-01.md": "# 2026-10-01\n\n- The ups delivery came late again.\n"}
    found = await keyword_answer(make_engine, write, notes, "what about UPS?")
    assert [hit.path for hit in found.results] == ["memory/2026-10-01.md"], found.warning


async def test_a_table_row_named_in_the_question_outranks_the_header_that_holds_its_other_word(
    make_engine: MakeEngine, write: Write
) -> None:
    """A 300-row table of services: "port" is only in the header, so the header's chunk outranked the chunk of the
    row the question names ("maple-zephyr-150"), whose parts other rows hold too."""
    parts = ["alpha", "cedar", "ember", "maple", "onyx", "raven", "tundra", "zephyr"]
    rows = [f"| {parts[n % 8]}-{parts[n * 3 % 7]}-{n} | team {n % 5} | {9000 + n} |" for n in range(300)]
    rows[150] = "| maple-zephyr-150 | team 0 | 9150 |"
    write(LONG_TERM, "# Service registry\n\n| service | owner | port |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        found = await engine.search("what port does maple-zephyr-150 use?")
    first = found.results[0]
    assert "maple-zephyr-150 | team 0 | 9150" in first.snippet, [(hit.start_line, hit.score) for hit in found.results]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_the_query_words_no_note_holds_are_named_beside_the_hits_for_the_rest(
    make_engine: MakeEngine, write: Write, mode: str
) -> None:
    """"redis eviction policy and maxmemory" gets the note on Redis's port; the memory says nothing of eviction, and
    the answer says so, so an agent need not read the note to learn it. Common English words ("policy", a
    question's "use") are not named, nor is a typo, which gets its hint."""
    write(LONG_TERM, "# Memory\n\n- Redis runs on port 6380 because of the legacy cache.\n- Postgres is version 16.\n")
    engine = make_engine(provider_factory=HashFactory()) if mode == "hybrid" else make_engine(embedding={"provider": "none"})
    async with engine:
        await synced(engine)
        partly = await engine.search("redis eviction policy and maxmemory")
        held = await engine.search("what port does redis use?")
        typo = await engine.search("postgress version")
    assert partly.mode == mode and [hit.path for hit in partly.results] == [LONG_TERM]
    rest = "the rest of the query or its meaning" if mode == "hybrid" else "the rest of the query"
    assert partly.warning == f'no note holds "eviction", "maxmemory": these results match {rest}'
    assert held.results and held.warning is None
    assert typo.results and "no note holds" in (typo.warning or "") and "did you mean" in (typo.warning or "")
    assert "these results match" not in (typo.warning or "")


async def test_a_chinese_query_s_grams_no_note_holds_are_not_named_as_words(make_engine: MakeEngine, write: Write) -> None:
    """Chinese is searched by overlapping character pairs: "谁负责监控告警系统" holds 控告 and 警系, which are no words.
    The answer named them as words no note holds."""
    write(LONG_TERM, "# 记忆\n\n- 张伟负责后端服务的监控。\n- 数据库迁移推迟到下个月。\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        found = await engine.search("谁负责监控告警系统？")
    assert [hit.path for hit in found.results] == [LONG_TERM] and found.warning is None, found.warning


async def test_a_function_word_of_another_language_is_not_named_as_a_word_no_note_holds(
    make_engine: MakeEngine, write: Write
) -> None:
    """ "Wogegen ist Katrin allergisch?" has one German function word, too few to tell German, so "ist" is searched;
    the answer named it beside "wogegen" as a word no note holds."""
    write(LONG_TERM, "# Gedächtnis\n\n- Katrin: allergisch gegen Haselnüsse.\n- Das Team trifft sich montags.\n")
    write("memory/2026-11-02.md", "- Katrin hat Urlaub beantragt.\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        found = await engine.search("Wogegen ist Katrin allergisch, laut Arztbrief?")
    assert found.results[0].path == LONG_TERM
    assert found.warning == 'no note holds "wogegen", "laut", "arztbrief": these results match the rest of the query'


async def test_a_word_no_note_holds_is_named_as_the_query_writes_it(make_engine: MakeEngine, write: Write) -> None:
    """A Russian word is searched by its stem: the answer named "миграци" where the query wrote "миграцию", and
    "кластрер" where it wrote the misspelt "кластрерами"."""
    write(LONG_TERM, "# Память\n\n- Обновили кластер Kubernetes до версии 1.31.\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        found = await engine.search("Kubernetes миграцию")
        typo = await engine.search("Kubernetes кластрерами")
    assert found.results and found.warning == 'no note holds "миграцию": these results match the rest of the query'
    assert typo.results and (typo.warning or "").startswith('no note holds "кластрерами" (did you mean "кластер"?)')


TEAM_NOTES = {  # every note says "team", and each says "it's", "Dana's", "I'm" or the like
    "memory/2026-10-05.md": "- The team shipped the billing fix. It's live.\n",
    "memory/2026-10-06.md": "- Dana's team moved standup to 10:00.\n",
    "memory/2026-10-07.md": "- The team's offsite is in May; we'll vote on the venue.\n",
    "memory/2026-10-08.md": "- I'm pairing with the search team this week.\n",
    "memory/2026-10-09.md": "- The team agreed on code review rules; that's settled.\n",
}


async def test_a_possessive_asks_what_the_same_words_without_it_ask(make_engine: MakeEngine, write: Write) -> None:
    """The "s" of "Lisbon's" is in every note that says "it's" or "Dana's": as a query word the memory held, it
    made "Lisbon's team" a question the memory answers (two of its three words held), though no note mentions
    Lisbon. Without the apostrophe the same question got nothing, as it does now."""
    _write_logs(write, TEAM_NOTES)
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        possessive, plain = await engine.search("Lisbon's team?"), await engine.search("Lisbon team?")
        held = await engine.search("Dana's team?")
    for answer in (possessive, plain):
        assert answer.results == [] and "nothing in memory matches" in (answer.warning or ""), answer.results
    assert [hit.path for hit in held.results][:1] == ["memory/2026-10-06.md"], held.warning


FUND_NOTES = {  # every note names Dana and says "capital", and none says "role" or "Peru"
    "memory/2026-10-05.md": "- Dana pitched the seed round to two venture capital funds.\n",
    "memory/2026-10-06.md": "- Dana leads the capital plan: two engineers hired in Q1.\n",
    "memory/2026-10-07.md": "- Met Dana and the capital partners about pricing.\n",
    "memory/2026-10-08.md": "- Dana wants the capital budget reviewed every month.\n",
}


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_a_question_about_the_name_every_note_holds_is_answered(
    make_engine: MakeEngine, write: Write, mode: str
) -> None:
    """Every note names Dana, so her name tells no note from another and weighed next to nothing beside "role",
    which no note holds: "what is Dana's role?" got nothing. A name (the notes write it with a capital, however
    the query writes it) counts for the memory's answer as a rare word does; "capital", as common in these
    notes, does not, and "Peru's capital" still gets nothing, as does a name no note holds."""
    _write_logs(write, FUND_NOTES)
    engine = make_engine(provider_factory=HashFactory()) if mode == "hybrid" else make_engine(embedding={"provider": "none"})
    async with engine:
        await synced(engine)
        named = [await engine.search(query) for query in ("what is Dana's role?", "Dana role", "dana role")]
        others = [await engine.search(query) for query in ("what is Peru's capital?", "what is Maria's role?")]
    for answer in named:
        assert answer.mode == mode and sorted(hit.path for hit in answer.results) == sorted(FUND_NOTES), answer.warning
    for answer in others:
        assert answer.results == [] and "nothing in memory matches" in (answer.warning or ""), answer.results


TEAM_NOTES_DE = {  # German: every note says "Team", with a capital, as German writes every noun
    "memory/2026-10-05.md": "- Das Team hat die Abrechnung mit PostgreSQL gebaut.\n",
    "memory/2026-10-06.md": "- Anna sagt, das Team trifft sich am Dienstag.\n",
    "memory/2026-10-07.md": "- Mit dem Team die Preise besprochen.\n",
    "memory/2026-10-08.md": "- Das Team plant die Migration der Datenbank.\n",
}


NAME_NOTES_RU = {  # Russian: every note names Natasha, in one case or another; none says "role" (роль)
    "memory/2026-10-05.md": "- Наташа отвечает за биллинг.\n",
    "memory/2026-10-06.md": "- Наташа попросила прислать предложение по ценам.\n",
    "memory/2026-10-07.md": "- Обсудили с Наташей резервные копии.\n",
    "memory/2026-10-08.md": "- Отправил предложение Наташе на проверку.\n",
}


@pytest.mark.parametrize(
    ("notes", "asked", "answer", "other"),
    [(NAME_NOTES_RU, "какая роль у Наташи?", sorted(NAME_NOTES_RU), "какая роль у Маши?"),
     (TEAM_NOTES_DE, "Wann trifft sich das Team?", ["memory/2026-10-06.md"], "Welches Team gewann die Weltmeisterschaft?")],
    ids=["a Russian name in any of its forms", "a German noun is no name"],
)  # fmt: skip
async def test_a_word_every_note_holds_is_a_name_as_the_notes_language_writes_it(
    make_engine: MakeEngine, write: Write, notes: dict[str, str], asked: str, answer: list[str], other: str
) -> None:
    """A Russian query asks for the stem "наташ" of "у Наташи", which the notes write "Наташа", "с Наташей": matched
    whole, it was never a name, and the question got nothing. German writes every noun with a capital: read as
    a name, "Team" made a question on another topic that shares it answer with every note."""
    _write_logs(write, notes)
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        found, unrelated = await engine.search(asked), await engine.search(other)
    assert sorted(hit.path for hit in found.results[: len(answer)]) == answer, found.warning
    assert unrelated.results == [] and "nothing in memory matches" in (unrelated.warning or ""), unrelated.results


LANGUAGES = {  # notes, a question they answer, a question on another topic, a query of function words only
    "French": (
        "- Nous avons choisi PostgreSQL pour la facturation.\n- La réunion de l'équipe a lieu le mardi.\n",
        "quand a lieu la réunion de l'équipe ?", "quelle est la couleur du ciel ?", "les de la",
    ),
    "German": (
        "- Wir haben PostgreSQL für die Abrechnung gewählt.\n- Das Teamtreffen ist am Dienstag um zehn Uhr.\n",
        "Wann ist das Teamtreffen?", "Wie hoch ist der Eiffelturm in Paris?", "der das und",
    ),
    "Spanish": (
        "- Elegimos PostgreSQL para la facturación.\n- La reunión del equipo es el martes.\n",
        "¿Cuándo es la reunión del equipo?", "¿Dónde está la torre Eiffel?", "de la los",
    ),
}


@pytest.mark.parametrize("language", list(LANGUAGES))
@pytest.mark.parametrize("others", [0, 12], ids=["one note", "thirteen notes"])
async def test_a_question_in_another_language_finds_its_note_and_abstains_on_another_topic(
    make_engine: MakeEngine, write: Write, others: int, language: str
) -> None:
    """Its articles and prepositions ("la", "de", "der") are in every note, so a question on another topic
    answered with every note, scored near 1, and a query of them alone matched everything."""
    notes, asked, other_topic, function_words = LANGUAGES[language]
    write(LONG_TERM, f"# Memory\n\n{notes}")
    for n in range(others):
        write(f"memory/2026-03-{n + 1:02}.md", f"- Walked the dog, day {n}.\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await synced(engine)
        answered = await engine.search(asked)
        other = await engine.search(other_topic)
        common = await engine.search(function_words)
    assert [hit.path for hit in answered.results] == [LONG_TERM], answered.warning
    assert other.results == [] and "nothing in memory matches this query" in (other.warning or "")
    assert common.results == [] and "only common words" in (common.warning or "")


async def test_gibberish_finds_nothing_in_hybrid_mode(
    corpus: None, make_engine: MakeEngine, sessions_dir: Path
) -> None:
    async with _engine(make_engine, sessions_dir, "hybrid") as engine:
        await synced(engine)
        answer = await engine.search(GIBBERISH)
        loose = await engine.search(GIBBERISH, min_score=0.0)
    # The premise: the vector side always has neighbours, none sharing a word; the score bar drops them.
    assert loose.mode == "hybrid" and loose.results
    assert all(hit.text_score is None and (hit.vector_score or 0.0) < 0.35 for hit in loose.results)
    assert answer.mode == "hybrid"
    assert answer.results == [], [(hit.path, hit.vector_score) for hit in answer.results]
    assert "nothing in memory matches this query" in (answer.warning or "")
