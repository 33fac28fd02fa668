"""A query that names a day by a date written in words or in a locale's numbers ("November 19", "19.11.2026",
"11月19日") names that day's log, as its ISO date does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.search.written_dates import YEARS_BACK, written_dates

MakeEngine = Callable[..., MemoryEngine]
TODAY = dt.date(2026, 12, 1)


@pytest.mark.parametrize(
    ("query", "days", "words"),
    [
        ("What did Caroline show on October 13, 2023?", ["2023-10-13"], "October 13, 2023"),
        ("What did Gina start on May 23, 2023?", ["2023-05-23"], "May 23, 2023"),
        ("what was cleaned on 3 May 2023", ["2023-05-03"], "3 May 2023"),
        ("What did Gina find on 1 February, 2023?", ["2023-02-01"], "1 February, 2023"),
        ("the 13th of October 2026", ["2026-10-13"], "13th of October 2026"),
        ("Was war am 19. November 2026?", ["2026-11-19"], "19. November 2026"),
        ("Was war am 19. Marz 2026?", ["2026-03-19"], "19. Marz 2026"),  # written without its accent
        ("¿Qué pasó el 19 de noviembre de 2026?", ["2026-11-19"], "19 de noviembre de 2026"),
        ("le 1er décembre 2026", ["2026-12-01"], "1er décembre 2026"),
        ("что было 3 марта 2024 года", ["2024-03-03"], "3 марта 2024"),
        ("2026年11月19日の会議", ["2026-11-19"], "2026年11月19日"),
        ("２０２６年１１月１９日に何をした", ["2026-11-19"], "２０２６年１１月１９日"),  # full-width digits
        ("在2026年11月19号做了什么", ["2026-11-19"], "2026年11月19号"),
        ("2026년 11월 19일 회의", ["2026-11-19"], "2026년 11월 19일"),
        ("Besprechung am 19.11.2026", ["2026-11-19"], "19.11.2026"),
        ("2026/11/19の議事録", ["2026-11-19"], "2026/11/19"),
        ("what happened on 11/19/26", ["2026-11-19"], "11/19/26"),
        ("3/4/2026", ["2026-04-03", "2026-03-04"], "3/4/2026"),  # day first or month first: both are dates
    ],
)
def test_a_written_date_names_its_day(query: str, days: list[str], words: str) -> None:
    assert written_dates(query, TODAY) == [(day, words) for day in days]


@pytest.mark.parametrize(
    ("query", "words", "newest"),
    [
        ("what did Dana say on Nov. 19th", "Nov. 19th", "2026-11-19"),
        ("the 13th of October", "13th of October", "2026-10-13"),
        ("le 1er décembre", "1er décembre", "2026-12-01"),
        ("Was war am 19. Marz?", "19. Marz", "2026-03-19"),
        ("On May 6th, which books did I share?", "May 6th", "2026-05-06"),
        ("what was cleaned on 3 May", "3 May", "2026-05-03"),  # "May" ends the clause: a month
        ("在5月6号，我和你分享了一些书籍", "5月6号", "2026-05-06"),
        ("11월 19일 회의", "11월 19일", "2026-11-19"),
        ("Dec 25", "Dec 25", "2025-12-25"),  # not the coming one
        ("Feb 29", "Feb 29", "2024-02-29"),  # only the leap years
    ],
)
def test_a_date_without_its_year_names_that_day_in_each_year_up_to_today(query: str, words: str, newest: str) -> None:
    named = written_dates(query, TODAY)
    days = [day for day, written in named if written == words]
    years = [int(day[:4]) for day in days]
    assert len(days) == len(named) and days[0] == newest and all(day[4:] == newest[4:] for day in days)
    assert years == sorted(years, reverse=True) and TODAY.year - YEARS_BACK < years[-1] <= TODAY.year - YEARS_BACK + 4


@pytest.mark.parametrize("query", ["in December 2023", "Wie war der Dezember 2023?", "2023年12月", "в декабре 2023"])
def test_a_month_with_its_year_names_each_of_its_days(query: str) -> None:
    days = [day for day, _ in written_dates(query, TODAY)]
    assert days == [f"2023-12-{n:02}" for n in range(1, 32)]


@pytest.mark.parametrize(
    "query",
    ["in June", "May 5:30", "Step 3 may fail", "3/4", "1.5", "v1.19 November", "31 February 2026", "13/13/2026", "the decimal 12 digits", "2026-11-19"],
)
def test_what_is_no_written_date_names_nothing(query: str) -> None:
    """A month alone, a time, a fraction, a version, a day no month has; an ISO date is a file's name already."""
    assert written_dates(query, TODAY) == []


@pytest.mark.both_stores
async def test_a_date_written_in_words_ranks_its_log_first(make_engine: MakeEngine, write: Callable[[str, str], Path]) -> None:
    write("MEMORY.md", "# Memory\n\n- Lukas owns the backup jobs and the Postgres cluster.\n")
    logs = {
        "2026-03-04": "- Lukas moved the backup jobs to a new host.\n",
        "2026-04-03": "- Lukas tuned the backup retention.\n",
        "2026-11-19": "- Lukas reported the nightly backup took 3h40m.\n",
        "2026-11-20": "- Lukas reviewed the backup alerts.\n",
        "2023-12-05": "- Lukas set up the first backup job.\n",
        "2024-05-03": "- Lukas cleaned the garage.\n",
    }
    for day, text in logs.items():
        write(f"memory/{day}.md", f"# {day}\n\n{text}")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await engine.sync()

        async def first(query: str, n: int = 1) -> list[str]:
            return [hit.path.removeprefix("memory/").removesuffix(".md") for hit in (await engine.search(query)).results][:n]

        assert await first("what did Lukas say about the backup on November 19, 2026?") == ["2026-11-19"]
        assert await first("Was hat Lukas am 20.11.2026 zum Backup gesagt?") == ["2026-11-20"]
        assert await first("2026年11月19日のbackup") == ["2026-11-19"]
        assert sorted(await first("Lukas backup 3/4/2026", 2)) == ["2026-03-04", "2026-04-03"]  # both readings
        assert await first("Lukas and the backup in December 2023") == ["2023-12-05"]
        assert await first("what did Lukas do on 3 May?") == ["2024-05-03"]  # no year: that day of any year
        assert await first("Lukas: backup step 3 may fail") != ["2024-05-03"]  # "may" the verb names no day
        # a date with no log names nothing: the query is searched as it is
        assert await first("what did Lukas say about the retention on November 21, 2026?") == ["2026-04-03"]
