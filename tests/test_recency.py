"""A query that asks for the newest of what it names ("what's the latest on the pricing project?") ranks the newest
daily log that holds it first, not the one that holds it most often."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.search.recency import names_a_weekday, without_latest
from memdex.memory_core.text.terms import query_terms

MakeEngine = Callable[..., MemoryEngine]


@pytest.mark.parametrize(
    "query",
    ["what's the latest on the pricing project?", "When did I last see the physio?", "most recent news about Pimienta",
     "the last time we talked about the lease", "when was the backup last run", "newest flat listings",
     "Wann war ich zuletzt beim Arzt?", "la dernière fois qu'on a parlé du bail", "¿cuándo fue la última vez?",
     "l’ultima volta", "в последний раз", "定价项目最新进展", "上次开会说了什么", "前回の会議", "지난번 회의"],
)
def test_a_query_that_asks_for_the_newest_says_so(query: str) -> None:
    assert without_latest(query) is not None


@pytest.mark.parametrize(
    "query",
    ["What did Melanie paint recently?", "what have I been working on lately?", "the last week of March",
     "last Friday's standup", "the lease lasts a year", "what was the last step of the migration?", "最近在做什么",
     "When was the last photo of Deborah and Karlie taken?"],  # the final photo, however old the note
)
def test_other_queries_do_not(query: str) -> None:
    """"Recently" asks for the thing, whenever it was recent; "last" alone names a day or the end of something."""
    assert without_latest(query) is None


@pytest.mark.parametrize(
    ("query", "searched"),
    [("what's the latest on the pricing project?", "what's the   on the pricing project?"),
     ("when did Priya last call?", "when did Priya   call?"),  # only "last": the subject between stays
     ("Wann war zuletzt ein Ausfall?", "Wann war   ein Ausfall?"), ("定价项目最新进展", "定价项目 进展")],
)
def test_the_words_that_ask_for_the_newest_are_not_searched(query: str, searched: str) -> None:
    assert without_latest(query) == searched


@pytest.mark.both_stores
async def test_the_newest_log_that_holds_the_subject_ranks_first_for_the_latest(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """"What's the latest on the pricing project?" ranked first the September log that says "pricing" three times,
    above November's final report; "latest" itself was searched, and ranked a note that says "latest version"."""
    write("MEMORY.md", "# Memory\n\n- Keep the laptop on the latest version of macOS.\n")
    write("memory/2026-09-14.md", "# 2026-09-14\n\n- Pricing kickoff: pricing interviews planned, pricing page draft.\n")
    write("memory/2026-10-20.md", "# 2026-10-20\n\n- Pricing interviews: 5 of 12 done.\n")
    write("memory/2026-11-27.md", "# 2026-11-27\n\n- Final pricing report delivered to Priya.\n")
    write("memory/2026-11-28.md", "# 2026-11-28\n\n- Packed for Granada.\n")
    write("memory/2026-09-15.md", "- 定价项目启动：定价访谈计划，定价页面草稿。\n")  # the same in Chinese
    write("memory/2026-11-26.md", "- 最终定价报告交给了王经理。\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await engine.sync()
        subject = await engine.search("pricing project")
        latest = await engine.search("what's the latest on the pricing project?", explain=True)
        chinese = [await engine.search(query) for query in ("定价项目", "定价项目的最新进展")]
        german = await engine.search("pricing zuletzt")
        alone = await engine.search("latest")
    assert [hit.path for hit in subject.results][:1] == ["memory/2026-09-14.md"]
    paths = [hit.path for hit in latest.results]
    assert paths == ["memory/2026-11-27.md", "memory/2026-10-20.md", "memory/2026-09-14.md"]
    assert latest.results[0].explain is not None and latest.results[0].explain.decay == 1.0
    assert latest.results[2].explain is not None and latest.results[2].explain.decay == pytest.approx(
        0.5 ** ((dt.date(2026, 11, 27) - dt.date(2026, 9, 14)).days / 30)
    )
    assert german.results[0].path == "memory/2026-11-27.md" and german.warning is None  # "zuletzt" is not missing
    assert [hit.path for hit in alone.results] == ["MEMORY.md"]  # a query of those words alone searches them
    assert [[hit.path for hit in answer.results][:1] for answer in chinese] == [
        ["memory/2026-09-15.md"], ["memory/2026-11-26.md"]
    ]


@pytest.mark.parametrize(
    ("query", "named"),
    [("what did I do on Friday?", True), ("friday", True), ("Was habe ich am Freitag gemacht?", True),
     ("¿qué hice el viernes?", True), ("星期五做了什么", True), ("金曜日に何をした？", True),
     ("what do we do on Fridays?", False), ("what did I do yesterday?", False), ("Ask Domingo about the lease", False)],
)  # fmt: skip
def test_a_query_that_names_a_weekday_asks_for_the_latest_such_day(query: str, named: bool) -> None:
    """A plural ("on Fridays") asks for every Friday: it names no day."""
    assert names_a_weekday(query_terms(query)) is named


@pytest.mark.both_stores
async def test_the_latest_log_of_a_weekday_ranks_first_for_that_weekday(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """Three Fridays' logs held "what did I do on Friday?" alike, and the oldest came first: ties fell to the store's
    order."""
    for day in ("2026-11-20", "2026-11-27", "2026-12-04"):  # Fridays
        write(f"memory/{day}.md", f"# {day}\n\n- Standup; worked on the export.\n")
    write("memory/2026-12-03.md", "# 2026-12-03\n\n- Dana asked for the Friday release notes.\n")
    write("MEMORY.md", "# Memory\n\n- No deploys on Fridays.\n")
    write("memory/2026-11-23.md", "# 2026-11-23\n\n- Planned the budget.\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await engine.sync()
        named = await engine.search("what did I plan on the Monday before 24 November 2026?", explain=True)
        friday = [await engine.search(query) for query in ("what did I do on Friday?", "Was habe ich am Freitag gemacht?")]
        export = await engine.search("export on Friday", explain=True)
        plural = await engine.search("deploys on Fridays")
    fridays = ["memory/2026-12-04.md", "memory/2026-11-27.md", "memory/2026-11-20.md"]
    for answer in friday:  # the rule about Fridays may rank among them: it is undated, and short
        assert [hit.path for hit in answer.results if hit.path in fridays] == fridays
    assert [hit.path for hit in export.results][:3] == fridays
    assert export.results[0].explain is not None and export.results[0].explain.decay == 1.0
    assert [hit.path for hit in plural.results][:1] == ["MEMORY.md"]
    # a query that names a day itself asks for the days around it, not the latest Monday
    assert named.results[0].path == "memory/2026-11-23.md" and named.results[0].explain is not None
    assert {hit.explain.decay for hit in named.results if hit.explain} == {None}
